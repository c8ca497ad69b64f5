package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/connect"
)

func claude(t *testing.T) *connect.Agent {
	t.Helper()
	a, ok := connect.AgentByName("claude")
	if !ok {
		t.Fatal("claude is not in the client table")
	}
	return &a
}

// The environment is an allow-list: the agent's own variables (its model
// key among them) and what a terminal needs pass; the account's
// credentials and session never do, whatever prefix or --env names them.
func TestEnvironment_AllowList(t *testing.T) {
	person := []string{
		"PATH=/usr/bin:/bin", "TERM=xterm-256color", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "HOME=/home/p",
		"ANTHROPIC_API_KEY=sk-ant-secret", "ANTHROPIC_BASE_URL=http://127.0.0.1:9", "CLAUDE_CODE_USE_BEDROCK=0",
		"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", "GH_TOKEN=ghp_x", "GITHUB_TOKEN=ghp_y", "GIT_ASKPASS=/bin/askpass",
		"SSH_ASKPASS=/bin/ssh-askpass", "GIT_SSH_COMMAND=ssh -i k", "GIT_CONFIG_GLOBAL=/x", "AWS_ACCESS_KEY_ID=AKIA",
		"AWS_SECRET_ACCESS_KEY=s", "GOOGLE_APPLICATION_CREDENTIALS=/k.json", "HTTPS_PROXY=http://corp:3128",
		"no_proxy=localhost", "DISPLAY=:0", "WAYLAND_DISPLAY=wayland-0", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1/bus",
		"XDG_RUNTIME_DIR=/run/user/1", "OPENAI_API_KEY=sk-other", "SLUICE_ALLOWED_ROOTS=/home/p/src", "MY_VAR=1",
	}
	env := Environment(person, claude(t), []string{"MY_VAR", "GH_TOKEN"}, "/home/p")
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s is set twice", k)
		}
		got[k] = v
	}
	for k, want := range map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-secret", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "CLAUDE_CODE_USE_BEDROCK": "0",
		"PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LC_ALL": "C.UTF-8", "MY_VAR": "1", "HOME": "/home/p",
		"HTTPS_PROXY": "http://127.0.0.1:3128", "https_proxy": "http://127.0.0.1:3128", "NO_PROXY": "",
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %q (set %v), want %q", k, v, ok, want)
		}
	}
	for _, k := range []string{"SSH_AUTH_SOCK", "GH_TOKEN", "GITHUB_TOKEN", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_SSH_COMMAND",
		"GIT_CONFIG_GLOBAL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "DISPLAY",
		"WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "OPENAI_API_KEY", "SLUICE_ALLOWED_ROOTS"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s entered the sandbox's environment", k)
		}
	}
	if got["HTTPS_PROXY"] == "http://corp:3128" || got["no_proxy"] == "localhost" {
		t.Errorf("the person's proxy settings replaced the sandbox's")
	}
}

// HOME, the XDG directories and Sluice's own directories are hidden; an
// allowed root inside HOME is shown again (read-only), a root that holds
// HOME is not (it would show HOME whole); credentials inside what is
// shown again are hidden again.
func TestPlanPlaces_HidesHomeShowsRoots(t *testing.T) {
	home := "/home/p"
	env := map[string]string{"XDG_CONFIG_HOME": "/srv/conf", "XDG_RUNTIME_DIR": "/run/user/1", "XDG_DATA_HOME": "/home/p/.data"}
	getenv := func(k string) string { return env[k] }
	p := PlanPlaces(home, getenv, []string{"/srv/conf/sluice", "/var/sluice-state"},
		[]string{"/home/p/src", "/home", "/opt/repos", "/tmp/ci/src"}, []string{"/home/p/.nvm/versions/node/v22/bin", "/usr/bin", "/tmp/ci/tools/node_modules"})
	for _, h := range []string{"/home/p", "/srv/conf", "/run/user/1", "/var/sluice-state"} {
		if !slices.Contains(p.Hide, h) {
			t.Errorf("%s is not hidden: %v", h, p.Hide)
		}
	}
	if slices.Contains(p.Hide, "/home/p/.data") || slices.Contains(p.Hide, "/srv/conf/sluice") {
		t.Errorf("a directory inside a hidden one is listed again: %v", p.Hide)
	}
	for _, e := range []string{"/home/p/src", "/home/p/.nvm/versions/node/v22/bin", "/tmp/ci/src", "/tmp/ci/tools/node_modules"} {
		if !slices.Contains(p.Expose, e) {
			t.Errorf("%s, inside HOME or /tmp, is not shown again: %v", e, p.Expose)
		}
	}
	for _, e := range []string{"/home", "/opt/repos", "/usr/bin"} {
		if slices.Contains(p.Expose, e) {
			t.Errorf("%s is shown again, but it is not inside a hidden directory or holds one: %v", e, p.Expose)
		}
	}
	for _, s := range []string{"/home/p/.ssh", "/home/p/.config/gh", "/home/p/.aws", "/home/p/.git-credentials", "/home/p/.claude", "/srv/conf"} {
		if !slices.Contains(p.Secret, s) {
			t.Errorf("%s is not among the paths hidden again: %v", s, p.Secret)
		}
	}
}

// The sandbox's command line: every namespace, the host read-only, the
// person's sockets and HOME covered, the copy writable at the
// repository's path, the model key nowhere in it.
func TestAgentArgs_Layout(t *testing.T) {
	home := t.TempDir()
	root := filepath.Join(home, "src")
	repo := filepath.Join(root, "shop")
	ssh := filepath.Join(root, ".ssh")
	for _, d := range []string{repo, ssh} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := &Spec{
		Session: &Session{ID: "s1", Repo: repo, Objects: "/objects"},
		Copy:    "/state/sessions/s1/copy", Home: "/state/sessions/homes/claude-code", HomePath: home,
		Hide: []string{home}, Expose: []string{root}, Secret: []string{ssh, filepath.Join(home, ".aws")},
		Sidecar: "/opt/sluice/sluice-sidecar", EgressSocket: "/tmp/x/egress.sock", MCPSocket: "/tmp/x/mcp.sock",
		Forwards: []string{"127.0.0.1:4123"}, Dir: repo, Argv: []string{"/usr/bin/claude", "-p", "hi"},
		Env: []string{"ANTHROPIC_API_KEY=sk-ant-secret"},
	}
	args, err := AgentArgs(spec)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	for _, want := range []string{"--unshare-all --unshare-user --disable-userns", "--die-with-parent --new-session",
		"--ro-bind / /", "--tmpfs /tmp", "--tmpfs /run", "--tmpfs " + home, "--bind /state/sessions/homes/claude-code " + home,
		"--ro-bind " + root + " " + root, "--tmpfs " + ssh, "--bind /state/sessions/s1/copy " + repo,
		"--ro-bind /objects " + repo + "/.git/sluice-origin", "--ro-bind /opt/sluice/sluice-sidecar " + InsideSidecar,
		"--bind /tmp/x/egress.sock " + InsideEgress, "--chdir " + repo, "sandbox-init --proxy-port 3128 --started-fd 4 --forward 127.0.0.1:4123 -- /usr/bin/claude -p hi"} {
		if !strings.Contains(line, want) {
			t.Errorf("the command line lacks %q:\n%s", want, line)
		}
	}
	// A secret outside what is shown again needs no mount of its own
	// (HOME already hides it), and a missing one none either.
	if strings.Contains(line, ".aws") {
		t.Errorf("a path already hidden is mounted again:\n%s", line)
	}
	if strings.Contains(line, "sk-ant-secret") {
		t.Fatalf("the model key is on the command line:\n%s", line)
	}
	order := func(a, b string) {
		if strings.Index(line, a) > strings.Index(line, b) {
			t.Errorf("%q must come before %q", a, b)
		}
	}
	order("--tmpfs "+home, "--bind /state/sessions/homes/claude-code "+home)
	order("--bind /state/sessions/homes/claude-code "+home, "--ro-bind "+root+" "+root)
	order("--ro-bind "+root+" "+root, "--tmpfs "+ssh)
	order("--tmpfs "+ssh, "--bind /state/sessions/s1/copy "+repo)
}

// ToolDirs names the program's own install (for a package under
// node_modules, that whole node_modules), and no other PATH entry: the
// person's own bin directories hold their credential helpers.
func TestToolDirs_ProgramAndPath(t *testing.T) {
	home := t.TempDir()
	pkg := filepath.Join(home, ".nvm", "lib", "node_modules", "@x", "agent")
	bin := filepath.Join(home, ".nvm", "bin")
	for _, d := range []string{pkg, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(pkg, "cli.js"), []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(pkg, "cli.js"), filepath.Join(bin, "agent")); err != nil {
		t.Fatal(err)
	}
	got := ToolDirs("agent", bin+":/usr/bin")
	want := []string{filepath.Join(home, ".nvm", "lib", "node_modules")}
	if !slices.Equal(got, want) {
		t.Fatalf("ToolDirs = %v, want %v", got, want)
	}
}
