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
	"SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_ASKPASS", "GIT_ASKPASS", "GPG_AGENT_INFO", "GH_TOKEN", "GITHUB_TOKEN",
	"GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS",
	"XAUTHORITY", "XDG_RUNTIME_DIR", "DOCKER_HOST", "KUBECONFIG", "SLUICE_",
}

var neverPassPrefixes = []string{"GIT_", "GH_", "AWS_", "AZURE_", "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_", "SLUICE_"}

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

// PlanPlaces decides what a session's sandbox hides and shows again. home
// is the person's HOME; getenv reads their environment; sluiceDirs are
// Sluice's own directories and files (config, state, a key kept
// elsewhere); roots are the allowed roots; tools are directories of
// programs the agent needs (its own, the toolchains on PATH).
func PlanPlaces(home string, getenv func(string) string, sluiceDirs, roots, tools []string) Places {
	var p Places
	add := func(list *[]string, d string) {
		d = filepath.Clean(d)
		if !filepath.IsAbs(d) || d == "/" || slices.Contains(*list, d) {
			return
		}
		*list = append(*list, d)
	}
	add(&p.Hide, home)
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"} {
		if v := getenv(k); v != "" && !insideAny(filepath.Clean(v), p.Hide) {
			add(&p.Hide, v)
		}
	}
	for _, d := range sluiceDirs {
		if !insideAny(filepath.Clean(d), p.Hide) {
			add(&p.Hide, d)
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
	for _, c := range CredentialPaths {
		add(&p.Secret, filepath.Join(home, c))
	}
	for _, a := range connect.Agents() {
		for _, c := range a.ConfigPaths {
			add(&p.Secret, filepath.Join(home, c))
		}
	}
	for _, d := range p.Hide {
		if d != home {
			add(&p.Secret, d)
		}
	}
	return p
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
