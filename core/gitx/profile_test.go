package gitx

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/profiles.golden from the profiles")

// TestProfiles_Pinned renders every profile as git receives it — the
// command line of a diff and the full environment, with an opened
// repository that configures a filter driver — and compares it with
// testdata/profiles.golden. Values that depend on the machine (HOME, PATH,
// the ceiling) are shown by name only. A change to any profile is a diff
// of that file, for a reviewer to see; -update rewrites it.
func TestProfiles_Pinned(t *testing.T) {
	h := gitxtest.NewHostile(t)
	home := t.TempDir()
	// Every variable some profile keeps is set, so that the golden file
	// shows all of them; and a variable no profile keeps, which must not
	// appear.
	for _, spec := range profiles {
		for _, k := range spec.keep {
			t.Setenv(k, "machine-"+strings.ToLower(k))
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv("SLUICE_NOT_KEPT", "x")
	run := newRunner(t)
	repo := openIn(t, run, h.Dir)

	var b strings.Builder
	b.WriteString("# Every profile git runs under (core/gitx/profile.go), as git receives it:\n")
	b.WriteString("# the command line of `git diff`, then the environment. Refresh with\n")
	b.WriteString("# go test ./core/gitx -run TestProfiles_Pinned -update, and review the diff.\n")
	for _, p := range Profiles {
		spec := profiles[p]
		c := Call{Profile: p, Args: []string{"diff"}}
		for _, k := range spec.given {
			c.Env = append(c.Env, k+"=given")
		}
		if err := spec.checkCall(&c); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		fmt.Fprintf(&b, "\n[%s]\n", p)
		argv := commandLine(spec, &c)
		for i := 0; i < len(argv); i++ {
			if argv[i] == "-c" {
				fmt.Fprintf(&b, "-c %s\n", argv[i+1])
				i++
				continue
			}
			fmt.Fprintf(&b, "%s\n", argv[i])
		}
		var env []string
		for _, kv := range run.environment(spec, &c, repo) {
			k, v, _ := strings.Cut(kv, "=")
			switch {
			case k == "PATH":
				env = append(env, "env PATH (the absolute entries of the process's PATH)")
			case slices.Contains(spec.keep, k):
				env = append(env, "env "+k+" (kept from the process environment)")
			case slices.Contains(spec.given, k):
				env = append(env, "env "+k+" (given by the call)")
			case k == "GIT_CEILING_DIRECTORIES":
				env = append(env, "env "+k+" (the parent of the root that allows the repository)")
			default:
				env = append(env, "env "+k+"="+v)
			}
		}
		sort.Strings(env)
		for _, e := range env {
			b.WriteString(e + "\n")
		}
		if spec.fileTransport {
			b.WriteString("allows per call: -c protocol.file.allow=always (AllowFileTransport)\n")
		}
		if spec.safeDirs {
			b.WriteString("allows per call: -c safe.directory=DIR and GIT_CONFIG_GLOBAL=a file holding only those (SafeDirs)\n")
		}
	}
	got := b.String()
	if strings.Contains(got, "SLUICE_NOT_KEPT") {
		t.Fatal("a variable no profile keeps reached git")
	}
	golden := filepath.Join("testdata", "profiles.golden")
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("the profiles differ from %s (run with -update and review the diff):\n%s", golden, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// TestProfiles_KeysDeclaredOnce: each -c key is declared in exactly one
// piece, and no profile sets a key twice (a later value would silently
// win).
func TestProfiles_KeysDeclaredOnce(t *testing.T) {
	pieces := map[string][]string{
		"noPrograms": noPrograms, "noCommandTransport": noCommandTransport, "noNetworkTransport": noNetworkTransport,
		"noHousekeeping": noHousekeeping, "plainOutput": plainOutput, "noSigning": noSigning, "parseable": parseable,
		"writing": writing, "ownRepository": ownRepository,
	}
	seen := map[string]string{}
	for name, piece := range pieces {
		for _, kv := range piece {
			if other, ok := seen[configKey(kv)]; ok {
				t.Errorf("%s is declared in %s and %s", configKey(kv), other, name)
			}
			seen[configKey(kv)] = name
		}
	}
	for _, p := range Profiles {
		keys := map[string]bool{}
		for _, kv := range profiles[p].config {
			if keys[configKey(kv)] {
				t.Errorf("%s sets %s twice", p, configKey(kv))
			}
			keys[configKey(kv)] = true
		}
	}
}

// TestProfiles_HardenedShareTheSafetyKeys ties the hardened profiles
// together: every key that stops a program or a transport, or starts
// housekeeping, is in all four; only Signed lacks the signing switch-off;
// Person keeps the person's programs and says so by having none of them.
func TestProfiles_HardenedShareTheSafetyKeys(t *testing.T) {
	safety := slices.Concat(noPrograms, noCommandTransport, noNetworkTransport, noHousekeeping, plainOutput)
	for _, p := range []Profile{ProfileRead, ProfileWrite, ProfileSigned, ProfileHostileTree} {
		cfg := profiles[p].config
		for _, kv := range safety {
			if !slices.Contains(cfg, kv) {
				t.Errorf("%s lacks %s", p, kv)
			}
		}
		for _, kv := range noSigning {
			if slices.Contains(cfg, kv) == (p == ProfileSigned) {
				t.Errorf("%s: %s is wrong here", p, kv)
			}
		}
		if !slices.Equal(profiles[p].options, hardenedOptions) || !slices.Equal(profiles[p].diffOptions, noExternalDiff) {
			t.Errorf("%s: options %v %v", p, profiles[p].options, profiles[p].diffOptions)
		}
		if !profiles[p].ceiling && p != ProfileHostileTree || !profiles[p].emptyFilters && p != ProfileHostileTree {
			t.Errorf("%s does not keep the repository's filters off or discovery inside the root", p)
		}
	}
	person := profiles[ProfilePerson].config
	for _, kv := range slices.Concat(noCommandTransport, noHousekeeping, plainOutput) {
		if !slices.Contains(person, kv) {
			t.Errorf("person lacks %s", kv)
		}
	}
	for _, kv := range slices.Concat(noPrograms, noSigning) {
		if slices.Contains(person, kv) {
			t.Errorf("person switches off %s, which the person's own git must keep", kv)
		}
	}
}

// TestProfiles_CallCannotReplaceItsProfile: a call that would undo part of
// its profile is refused before a process starts.
func TestProfiles_CallCannotReplaceItsProfile(t *testing.T) {
	r := gitxtest.Basic(t, 1)
	run := newRunner(t)
	repo := openIn(t, run, r.Dir)
	cases := map[string]Call{
		"config key the profile sets":   {Profile: ProfileWrite, Args: []string{"status"}, Config: []string{"core.hooksPath=" + r.Dir}},
		"config key in another case":    {Profile: ProfileRead, Args: []string{"status"}, Config: []string{"Core.FSMonitor=true"}},
		"a transport by -c":             {Profile: ProfileWrite, Args: []string{"status"}, Config: []string{"protocol.ext.allow=always"}},
		"safe.directory by -c":          {Profile: ProfileWrite, Args: []string{"status"}, Config: []string{"safe.directory=*"}},
		"config by environment":         {Profile: ProfileWrite, Args: []string{"status"}, Env: []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/x"}},
		"another git directory":         {Profile: ProfileRead, Args: []string{"status"}, Env: []string{"GIT_DIR=/tmp"}},
		"a fixed identity":              {Profile: ProfileHostileTree, Args: []string{"status"}, Env: []string{"HOME=" + r.Dir, "GIT_AUTHOR_NAME=someone"}},
		"the global configuration":      {Profile: ProfileHostileTree, Args: []string{"status"}, Env: []string{"HOME=" + r.Dir, "GIT_CONFIG_GLOBAL=/etc/passwd"}},
		"no HOME for a hostile tree":    {Profile: ProfileHostileTree, Args: []string{"status"}},
		"a transport for a read":        {Profile: ProfileRead, Args: []string{"status"}, AllowFileTransport: true},
		"a transport for the person":    {Profile: ProfilePerson, Args: []string{"status"}, AllowFileTransport: true},
		"safe directories for a write":  {Profile: ProfileWrite, Args: []string{"status"}, SafeDirs: []string{r.Dir}},
		"safe directories for a person": {Profile: ProfilePerson, Args: []string{"status"}, SafeDirs: []string{r.Dir}},
		"no profile":                    {Args: []string{"status"}},
	}
	for name, c := range cases {
		before := run.Started()
		if _, err := repo.Run(ctx(t), c); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if run.Started() != before {
			t.Errorf("%s: git was started", name)
		}
	}
	// The same calls without the offending part run.
	if _, err := repo.Run(ctx(t), Call{Profile: ProfileWrite, Args: []string{"status"}, Env: []string{"GIT_INDEX_FILE=" + filepath.Join(r.Dir, ".git", "index")}}); err != nil {
		t.Fatal(err)
	}
}

// TestProfiles_FailureShape: an exit code that is not an answer is an
// *ExitError carrying git's stderr, with the output; one listed in OK is
// an answer.
func TestProfiles_FailureShape(t *testing.T) {
	r := gitxtest.Basic(t, 1)
	repo := openIn(t, newRunner(t), r.Dir)
	out, err := repo.Run(ctx(t), Call{Profile: ProfileWrite, Args: []string{"rev-parse", "--verify", "--end-of-options", "nosuchref"}})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 128 || ee.Command != "rev-parse" || !strings.Contains(ee.Stderr, "Needed a single revision") || out == nil || out.ExitCode != 128 {
		t.Fatalf("err = %#v, out = %+v", err, out)
	}
	out, err = repo.Run(ctx(t), Call{Profile: ProfileWrite, Args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", "nosuchref"}, OK: []int{1}})
	if err != nil || out.ExitCode != 1 {
		t.Fatalf("err = %v, out = %+v", err, out)
	}
}

// hookScript is a hook that records that it ran.
func hookScript(t *testing.T, hooks, name, marker string) {
	t.Helper()
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("#!/bin/sh\necho ran >> %q\n", marker)
	if err := os.WriteFile(filepath.Join(hooks, name), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

var testIdentity = []string{
	"GIT_AUTHOR_NAME=Sluice", "GIT_AUTHOR_EMAIL=sluice@localhost",
	"GIT_COMMITTER_NAME=Sluice", "GIT_COMMITTER_EMAIL=sluice@localhost",
}

// TestProfileRead_RunsNothingTheRepositoryNames runs the subcommands a
// read uses, and a fetch, directly under the Read profile in a repository
// whose configuration points every program at a marker script.
func TestProfileRead_RunsNothingTheRepositoryNames(t *testing.T) {
	h := gitxtest.NewHostile(t)
	repo := openIn(t, newRunner(t), h.Dir)
	for _, args := range [][]string{
		{"status", "--porcelain=v2"},
		{"diff"},
		{"diff", "HEAD"},
		{"log", "-p", "-3"},
		{"show", h.Feature},
		{"ls-files", "--stage"},
	} {
		if _, err := repo.Run(ctx(t), Call{Profile: ProfileRead, Args: args}); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	// The remote's URL is ext::<script>: the transport is refused.
	if _, err := repo.Run(ctx(t), Call{Profile: ProfileRead, Args: []string{"fetch", "origin"}}); err == nil {
		t.Error("a fetch over ext:: ran")
	}
	if m := h.MarkerFiles(t); len(m) > 0 {
		t.Fatalf("the Read profile ran programs: %v", m)
	}
}

// TestProfileWrite_NeverSignsRunsNoHooks commits and tags under the Write
// profile in the hostile repository, which also asks for signing: no
// hook, filter or signing program runs, nothing is signed, and the blob
// holds the file's own bytes.
func TestProfileWrite_NeverSignsRunsNoHooks(t *testing.T) {
	h := gitxtest.NewHostile(t)
	h.Git("config", "commit.gpgSign", "true")
	h.Git("config", "tag.gpgSign", "true")
	repo := openIn(t, newRunner(t), h.Dir)
	for _, args := range [][]string{
		{"add", "filtered.dat", "conv.tc"},
		{"commit", "-q", "-m", "written by the executor"},
		{"tag", "-a", "-m", "a tag", "v1"},
	} {
		if out, err := repo.Run(ctx(t), Call{Profile: ProfileWrite, Args: args, Env: testIdentity}); err != nil {
			t.Fatalf("%v: %v (%+v)", args, err, out)
		}
	}
	for _, obj := range []string{"HEAD", "v1"} {
		out, err := repo.Run(ctx(t), Call{Profile: ProfileWrite, Args: []string{"cat-file", "-p", obj}})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out.Stdout), "BEGIN") || strings.Contains(string(out.Stdout), "gpgsig") {
			t.Errorf("%s is signed:\n%s", obj, out.Stdout)
		}
	}
	out, err := repo.Run(ctx(t), Call{Profile: ProfileWrite, Args: []string{"cat-file", "blob", "HEAD:filtered.dat"}})
	if err != nil || string(out.Stdout) != "worktree one\nplain two\n" {
		t.Fatalf("the blob is not the file's bytes: %v %q", err, out.Stdout)
	}
	if m := h.MarkerFiles(t); len(m) > 0 {
		t.Fatalf("the Write profile ran programs: %v", m)
	}
}

// signingRepo is a repository whose person signs commits with an ssh key
// and has a pre-commit hook; marker is where the hook writes.
func signingRepo(t *testing.T) (r *gitxtest.Repo, marker string) {
	t.Helper()
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Fatalf("ssh-keygen is needed to sign: %v", err)
	}
	r = gitxtest.Basic(t, 1)
	key := filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-C", "pat@example.com", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	r.Git("config", "gpg.format", "ssh")
	r.Git("config", "user.signingkey", key)
	r.Git("config", "commit.gpgsign", "true")
	marker = filepath.Join(t.TempDir(), "pre-commit-ran")
	hookScript(t, filepath.Join(r.Dir, ".git", "hooks"), "pre-commit", marker)
	r.Write("signed.txt", "signed\n")
	return r, marker
}

// TestProfileSigned_SignsRunsNoHooks: under Signed the person's signing
// applies (the commit carries their signature) and their hook does not
// run; under Write, the same commit is unsigned.
func TestProfileSigned_SignsRunsNoHooks(t *testing.T) {
	r, marker := signingRepo(t)
	repo := openIn(t, newRunner(t), r.Dir)
	if v, _ := repo.Config("commit.gpgsign"); v != "true" {
		t.Fatalf("Config reports the profile's override, not the repository's setting: %q", v)
	}
	c := ctx(t)
	for _, p := range []Profile{ProfileWrite, ProfileSigned} {
		if _, err := repo.Run(c, Call{Profile: p, Args: []string{"add", "signed.txt"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Run(c, Call{Profile: p, Args: []string{"commit", "-q", "--allow-empty", "-m", p.String()}, Env: testIdentity}); err != nil {
			t.Fatalf("%s: commit: %v", p, err)
		}
		out, err := repo.Run(c, Call{Profile: ProfileRead, Args: []string{"cat-file", "commit", "HEAD"}})
		if err != nil {
			t.Fatal(err)
		}
		signed := strings.Contains(string(out.Stdout), "gpgsig -----BEGIN SSH SIGNATURE-----")
		if signed != (p == ProfileSigned) {
			t.Errorf("%s: signed = %v:\n%s", p, signed, out.Stdout)
		}
	}
	if exists(marker) {
		t.Fatal("the person's pre-commit hook ran outside the Person profile")
	}
}

// TestProfilePerson_TheirHookIdentityAndSigning: under Person the
// person's pre-commit hook runs, their identity (from their own global
// configuration) and their signing apply, and a command transport is
// still refused.
func TestProfilePerson_TheirHookIdentityAndSigning(t *testing.T) {
	r, marker := signingRepo(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Pat Person\n\temail = pat@example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	repo := openIn(t, newRunner(t), r.Dir)
	c := ctx(t)
	if _, err := repo.Run(c, Call{Profile: ProfilePerson, Args: []string{"add", "signed.txt"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Run(c, Call{Profile: ProfilePerson, Args: []string{"commit", "-q", "-m", "the person's commit"}}); err != nil {
		t.Fatal(err)
	}
	if !exists(marker) {
		t.Error("the person's pre-commit hook did not run")
	}
	out, err := repo.Run(c, Call{Profile: ProfileRead, Args: []string{"cat-file", "commit", "HEAD"}})
	if err != nil {
		t.Fatal(err)
	}
	obj := string(out.Stdout)
	if !strings.Contains(obj, "author Pat Person <pat@example.com>") || !strings.Contains(obj, "gpgsig -----BEGIN SSH SIGNATURE-----") {
		t.Errorf("not the person's identity and signature:\n%s", obj)
	}
	evil := filepath.Join(t.TempDir(), "ext-ran")
	if _, err := repo.Run(c, Call{Profile: ProfilePerson, Args: []string{"fetch", "ext::sh -c touch% " + evil}}); err == nil || exists(evil) {
		t.Errorf("the ext:: transport ran under Person: %v", err)
	}
}

// TestProfileHostileTree_IgnoresWhatTheTreeNames builds a workspace-like
// repository (Sluice's own git directory, outside the tree) and a tree as
// a container could leave it: .gitattributes naming filter and diff
// drivers, a nested .git directory with its own config and hooks, and —
// in the HOME the runner gives — a global configuration defining those
// drivers and hooks. Adding, committing and diffing runs none of it, the
// blob is the file's bytes, and the commit is the workspace's.
func TestProfileHostileTree_IgnoresWhatTheTreeNames(t *testing.T) {
	base := t.TempDir()
	markers := filepath.Join(base, "markers")
	if err := os.MkdirAll(markers, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(base, "evil.sh")
	if err := os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\necho \"$0 $*\" >> %q/ran\ncat\n", markers)), 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	evilConfig := fmt.Sprintf("[filter \"evil\"]\n\tclean = %[1]s\n\tsmudge = %[1]s\n\trequired = true\n[diff \"evil\"]\n\ttextconv = %[1]s\n\tcommand = %[1]s\n[core]\n\tfsmonitor = %[1]s\n\thooksPath = %[2]s\n", script, filepath.Join(base, "hooks"))
	for _, p := range []string{filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(evilConfig), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hookScript(t, filepath.Join(base, "hooks"), "pre-commit", filepath.Join(markers, "hook"))
	// The process environment a hostile host could hand over.
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='"+script+"'")
	t.Setenv("GIT_EXTERNAL_DIFF", script)
	run := newRunner(t)

	gitDir, tree := filepath.Join(base, "git"), filepath.Join(base, "tree")
	files := map[string]string{
		".gitattributes":            "* filter=evil diff=evil\n",
		"data.txt":                  "raw bytes\r\n",
		"sub/x.txt":                 "x\n",
		"sub/.git/config":           evilConfig,
		"sub/.git/hooks/pre-commit": "#!/bin/sh\necho nested >> " + filepath.Join(markers, "nested") + "\n",
	}
	for name, body := range files {
		p := filepath.Join(tree, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := ctx(t)
	hostile := func(args ...string) (*Output, error) {
		call := Call{Profile: ProfileHostileTree, Dir: base, Args: args, Env: []string{"HOME=" + home}}
		if args[0] != "init" {
			call.Global = []string{"--git-dir=" + gitDir, "--work-tree=" + tree}
		}
		return run.Run(c, call)
	}
	for _, args := range [][]string{
		{"init", "-q", "--bare", "--template=", gitDir},
		{"config", "core.bare", "false"},
		{"add", "-A"},
		{"commit", "-q", "-m", "from the container"},
		{"diff", "HEAD~0"},
		{"status", "--porcelain"},
		{"log", "-p", "-1"},
	} {
		if out, err := hostile(args...); err != nil {
			t.Fatalf("%v: %v (%+v)", args, err, out)
		}
	}
	out, err := hostile("cat-file", "blob", "HEAD:data.txt")
	if err != nil || string(out.Stdout) != "raw bytes\r\n" {
		t.Fatalf("the blob is not the file's bytes: %v %q", err, out.Stdout)
	}
	out, err = hostile("ls-files")
	if err != nil || strings.Contains(string(out.Stdout), ".git/") || !strings.Contains(string(out.Stdout), "sub/x.txt") {
		t.Fatalf("the nested .git was taken as content or the tree was not: %v %q", err, out.Stdout)
	}
	out, err = hostile("cat-file", "commit", "HEAD")
	if err != nil || !strings.Contains(string(out.Stdout), "author Sluice workspace <workspace@sluice.invalid>") {
		t.Fatalf("not the workspace's identity: %v %q", err, out.Stdout)
	}
	entries, _ := os.ReadDir(markers)
	if len(entries) > 0 {
		var names []string
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(markers, e.Name()))
			names = append(names, e.Name()+": "+string(b))
		}
		t.Fatalf("the HostileTree profile ran programs: %v", names)
	}
}

// TestProfileHostileTree_FileTransportPerCall: a local fetch works only
// for the call that allows the file transport, and a safe directory
// reaches the upload-pack a local fetch starts.
func TestProfileHostileTree_FileTransportPerCall(t *testing.T) {
	src := gitxtest.Basic(t, 2)
	run := newRunner(t)
	home := t.TempDir()
	dst := filepath.Join(t.TempDir(), "ws.git")
	c := context.Background()
	call := func(allow bool, args ...string) error {
		_, err := run.Run(c, Call{Profile: ProfileHostileTree, Dir: home, Args: args, Env: []string{"HOME=" + home},
			AllowFileTransport: allow, SafeDirs: []string{src.Dir, filepath.Join(src.Dir, ".git")}})
		return err
	}
	if err := call(false, "init", "-q", "--bare", "--template=", dst); err != nil {
		t.Fatal(err)
	}
	if err := call(false, "--git-dir="+dst, "fetch", "-q", "--", src.Dir, "HEAD:refs/heads/main"); err == nil {
		t.Fatal("a fetch over the file transport ran without the allowance")
	}
	if err := call(true, "--git-dir="+dst, "fetch", "-q", "--", src.Dir, "HEAD:refs/heads/main"); err != nil {
		t.Fatalf("a fetch with the allowance: %v", err)
	}
	// The throw-away configuration file is gone.
	if entries, _ := filepath.Glob(filepath.Join(home, "gitconfig-*")); len(entries) > 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// TestProfiles_SeeOnlyTheObjects: under every profile, git reads the
// objects as they are in a repository that has a replace ref for a blob,
// a graft in info/grafts and a `git replace --graft`: the blob's own
// bytes, and every commit of the history with its real parents.
func TestProfiles_SeeOnlyTheObjects(t *testing.T) {
	r := gitxtest.Init(t)
	var c []string
	for i := 1; i <= 4; i++ {
		c = append(c, r.WriteCommit("run.sh", fmt.Sprintf("echo step %d\n", i), fmt.Sprintf("step %d", i)))
	}
	r.ReplaceBlob("run.sh", "echo harmless\n")
	r.ReplaceGraft(c[2], c[0])
	r.Graft(c[3], c[0])
	// The fixture's own git honours all three: the repository does what
	// it claims to.
	if got := r.Git("show", "HEAD:run.sh"); got != "echo harmless" {
		t.Fatalf("fixture git reads %q", got)
	}
	if got := r.Git("rev-list", "--count", "HEAD"); got != "2" {
		t.Fatalf("fixture git counts %s commits", got)
	}
	repo := openIn(t, newRunner(t), r.Dir)
	for _, p := range Profiles {
		var env []string
		if p == ProfileHostileTree {
			env = []string{"HOME=" + t.TempDir()}
		}
		for args, want := range map[string]string{
			"cat-file -p HEAD:run.sh":                    "echo step 4",
			"rev-list --count HEAD":                      "4",
			"log --format=%s HEAD~1 -1":                  "step 3",
			"rev-list --parents -1 HEAD~1":               c[2] + " " + c[1],
			"diff --no-color HEAD~1 HEAD -- run.sh":      "+echo step 4",
			"log -p --format=%s -1 --no-color -- run.sh": "+echo step 4",
		} {
			out, err := repo.Run(ctx(t), Call{Profile: p, Args: strings.Fields(args), Env: env})
			if err != nil {
				t.Fatalf("%s: %s: %v", p, args, err)
			}
			got := strings.TrimSpace(string(out.Stdout))
			if strings.HasPrefix(want, "+") && !strings.Contains(got+"\n", "\n"+want+"\n") || !strings.HasPrefix(want, "+") && got != want {
				t.Errorf("%s: git %s = %q, want %q", p, args, got, want)
			}
			if strings.Contains(got, "harmless") || strings.Contains(out.Stderr, "graft") {
				t.Errorf("%s: git %s read a replacement or a graft: %q %q", p, args, got, out.Stderr)
			}
		}
	}
}
