package session

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/connect"
)

// What of the person's machine a confined agent sees. The file system is
// the host's, read-only, so toolchains work; the person's HOME and every
// XDG directory are replaced (the confined HOME takes the HOME path);
// Sluice's own directories are hidden wherever they are; allowed roots and
// toolchains inside HOME are shown again, read-only; credentials inside
// what is shown again are hidden once more. The environment is built from
// an allow-list: what a terminal program needs, the client's own variables
// (its model key among them), the proxy, and what the person names with
// --env; nothing else of the account's (no SSH_AUTH_SOCK, GH_*,
// GITHUB_TOKEN, GIT_*, AWS_*, DISPLAY, DBUS_SESSION_BUS_ADDRESS, …).

// Emptied are the directories every sandbox replaces with an empty tmpfs:
// the person's session's sockets (X11, Wayland, D-Bus, ssh and gpg
// agents, Docker) live there.
var Emptied = []string{"/tmp", "/run", "/var/run"}

// DaemonSockets are where daemons keep the Unix sockets that make whoever
// reaches them root on the machine, or let a build past the sandbox's
// network (the Nix daemon fetches with its own): a read-only file system
// does not stop connect(2), and the account's supplementary groups
// (docker, lxd, incus-admin, libvirt) stay in force in bubblewrap's user
// namespace. Every sandbox hides those that exist; the ones under /run go
// with it (Emptied) and are listed so that this is the one list. A
// container binds none of them, nor a root or tool directory that holds
// one.
var DaemonSockets = []string{
	"/run/docker.sock", "/run/containerd", "/run/podman", "/run/libvirt", "/run/snapd.socket", "/run/snapd-snap.socket",
	"/var/snap/lxd/common/lxd", "/var/lib/lxd", "/var/lib/incus", "/nix/var/nix/daemon-socket",
}

// CredentialPaths are, relative to HOME, where an account keeps
// credentials and sessions. They are hidden inside any allowed root that
// reaches them (a root is never HOME itself: see Expose).
var CredentialPaths = []string{
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub",
	".git-credentials", ".gitconfig", ".config/git", ".netrc", ".docker", ".kube", ".terraform.d", ".vault-token",
	".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".m2/settings.xml", ".gradle/gradle.properties",
	".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge",
	".password-store", ".local/share/keyrings", ".pki", ".config/op", ".config/Bitwarden",
	".Xauthority", ".ICEauthority", ".bash_history", ".zsh_history", ".python_history",
	".config/sluice", ".local/state/sluice",
}

// passEnv are the variables of the person's environment a terminal
// program needs; they carry no credential.
var passEnv = []string{
	"PATH", "TERM", "COLORTERM", "TERM_PROGRAM", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", "SHELL",
	"EDITOR", "VISUAL", "PAGER", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CI",
}

// neverPass are never passed, whatever a client's prefixes or the person's
// --env say: the account's own credentials and the person's session.
var neverPass = []string{
	"SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_ASKPASS", "GPG_AGENT_INFO", "GITHUB_TOKEN", "GITHUB_ENTERPRISE_TOKEN",
	"DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY", "XDG_RUNTIME_DIR", "DOCKER_HOST", "KUBECONFIG",
}

// neverPassPrefixes: the account's git, GitHub and cloud credentials,
// Sluice's own settings, and the dynamic linker's (LD_PRELOAD,
// LD_LIBRARY_PATH, …: bwrap itself runs, as the person, with the
// sandbox's environment), as workspace runs refuse them.
var neverPassPrefixes = []string{"GIT_", "GH_", "AWS_", "AZURE_", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_", "SLUICE_", "LD_"}

// Refused reports whether a variable may never enter a sandbox.
func Refused(name string) bool {
	if slices.Contains(neverPass, name) {
		return true
	}
	for _, p := range neverPassPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	u := strings.ToUpper(name)
	return strings.HasSuffix(u, "_PROXY") || u == "NO_PROXY"
}

// Environment builds a sandbox's environment from the person's: the
// allow-list, agent's own variables, the names in extra, and what
// Sluice sets (HOME, the proxy, TMPDIR). environ is KEY=VALUE pairs.
func Environment(environ []string, agent *connect.Agent, extra []string, home string) []string {
	var out []string
	seen := map[string]bool{}
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || seen[k] || Refused(k) {
			continue
		}
		pass := slices.Contains(passEnv, k) || strings.HasPrefix(k, "LC_") || slices.Contains(extra, k)
		if agent != nil && agent.PassesEnv(k) {
			pass = true
		}
		if pass {
			seen[k] = true
			out = append(out, kv)
		}
	}
	proxy := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
	out = append(out,
		"HOME="+home, "TMPDIR=/tmp",
		"HTTPS_PROXY="+proxy, "HTTP_PROXY="+proxy, "https_proxy="+proxy, "http_proxy="+proxy,
		// Loopback too goes through the proxy: inside, 127.0.0.1 is the
		// sandbox's own.
		"NO_PROXY=", "no_proxy=",
		"SLUICE_SESSION=1",
	)
	return out
}

// Places are the host paths a sandbox hides and shows again.
type Places struct {
	Hide, Expose, Secret []string
}

// xdgDirs are the XDG base directories, with where each is when its
// variable is unset (relative to HOME).
var xdgDirs = []struct{ env, def string }{
	{"XDG_CONFIG_HOME", ".config"}, {"XDG_DATA_HOME", ".local/share"}, {"XDG_STATE_HOME", ".local/state"},
	{"XDG_CACHE_HOME", ".cache"}, {"XDG_RUNTIME_DIR", ""},
}

// PlanPlaces decides what a session's sandbox hides and shows again. home
// is the person's HOME; getenv reads their environment; sluiceDirs are
// Sluice's own directories and files (config, state, a key kept
// elsewhere); roots are the allowed roots; tools are directories of
// programs the agent needs (its own, the toolchains on PATH).
//
// Paths are compared as the kernel resolves them, not as they are
// written: HOME, every XDG directory, every one of Sluice's and every
// credential path is taken both as named and with its links resolved
// (HOME is /var/home/p on Fedora, where /home is a link; ~/.config may be
// a link to /data/dot/config, which a hidden HOME would not cover). A
// resolved place outside what is hidden is hidden too. Every XDG and
// Sluice place is also hidden again wherever a root shows it (an audit key
// at ~/code/keys, with ~/code allowed), in both forms.
func PlanPlaces(home string, getenv func(string) string, sluiceDirs, roots, tools []string) Places {
	var p Places
	add := func(list *[]string, d string) {
		d = filepath.Clean(d)
		if !filepath.IsAbs(d) || d == "/" || slices.Contains(*list, d) {
			return
		}
		*list = append(*list, d)
	}
	// hide hides d (both forms) unless something hidden already covers
	// it; secret also hides it again inside any root that shows it.
	hide := func(d string, secret bool) {
		for _, f := range forms(d) {
			if !insideAny(f, p.Hide) {
				add(&p.Hide, f)
			}
			if secret {
				add(&p.Secret, f)
			}
		}
	}
	home = filepath.Clean(home)
	hide(home, false)
	canonHome := Canonical(home)
	for _, x := range xdgDirs {
		v := getenv(x.env)
		if v == "" && x.def != "" {
			v = filepath.Join(home, x.def)
		}
		if filepath.IsAbs(v) {
			hide(v, true)
		}
	}
	for _, d := range sluiceDirs {
		if filepath.IsAbs(d) {
			hide(d, true)
		}
	}
	for _, c := range credentialPaths() {
		for _, h := range []string{home, canonHome} {
			hide(filepath.Join(h, c), true)
		}
	}
	// A root or tool directory under a hidden one (or under /tmp or /run,
	// which every sandbox empties) is shown again; one that contains a
	// hidden directory (a root at HOME or above) is not, or it would show
	// HOME whole. What it holds outside HOME stays visible.
	emptied := slices.Concat(p.Hide, Emptied)
	for _, d := range slices.Concat(roots, tools) {
		d = filepath.Clean(d)
		if insideAny(d, emptied) && !slices.ContainsFunc(emptied, func(h string) bool { return Within(h, d) }) {
			add(&p.Expose, d)
		}
	}
	return p
}

// credentialPaths are CredentialPaths and every client's own settings,
// relative to HOME.
func credentialPaths() []string {
	out := slices.Clone(CredentialPaths)
	for _, a := range connect.Agents() {
		out = append(out, a.ConfigPaths...)
	}
	return out
}

// forms are p as named and p with its links resolved, when that differs.
func forms(p string) []string {
	p = filepath.Clean(p)
	if c := Canonical(p); c != p {
		return []string{p, c}
	}
	return []string{p}
}

// Canonical is p with every link resolved, as far as it exists: a path
// whose last components do not exist yet keeps them, below its resolved
// parent.
func Canonical(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for q := p; ; q = filepath.Dir(q) {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if q == filepath.Dir(q) {
			return p
		}
		rest = append([]string{filepath.Base(q)}, rest...)
	}
}

// ToolDirs are the directories a program needs to run: its own install
// (the directory of its resolved file and, for a package under
// node_modules, the whole node_modules it is in, which holds its
// dependencies). PlanPlaces shows them again where the sandbox hides
// them. Other PATH entries are not among them: inside HOME they hold
// whatever the person put there, credential helpers and wrappers that
// reach their accounts among them.
func ToolDirs(program, path string) []string {
	var out []string
	add := func(d string) {
		if d != "" && d != "/" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if program == "" {
		return out
	}
	if !filepath.IsAbs(program) {
		for _, d := range filepath.SplitList(path) {
			c := filepath.Join(d, program)
			if st, err := os.Stat(c); err == nil && !st.IsDir() {
				program = c
				break
			}
		}
	}
	real, err := filepath.EvalSymlinks(program)
	if err != nil {
		return out
	}
	if i := strings.Index(real, "/node_modules/"); i >= 0 {
		add(real[:i+len("/node_modules")])
	} else {
		add(filepath.Dir(real))
	}
	return out
}
