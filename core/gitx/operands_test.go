package gitx

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
)

// profileCall is a call under p that the profile accepts in a repository
// at dir (the hostile-tree profile needs HOME and names the git
// directory itself).
func profileCall(p Profile, dir string, args ...string) Call {
	c := Call{Profile: p, Dir: dir, Args: args}
	if p == ProfileHostileTree {
		c.Global = []string{"--git-dir=" + filepath.Join(dir, ".git"), "--work-tree=" + dir}
		c.Env = []string{"HOME=" + dir}
	}
	return c
}

// TestCall_OptionLikeOperands_RefusedUnderEveryProfile: a revision or a
// path that git could read as an option is refused, before any git
// starts, whichever profile the call runs under; a plain one is placed
// after --end-of-options or "--" and runs.
func TestCall_OptionLikeOperands_RefusedUnderEveryProfile(t *testing.T) {
	r := gitxtest.Basic(t, 1)
	run := newRunner(t)
	repo := openIn(t, run, r.Dir)
	bad := []string{"--output=/tmp/x", "-c", "--upload-pack=touch pwned", "-n1", "-", ""}
	for _, p := range Profiles {
		for _, v := range bad {
			for _, kind := range []string{"rev", "path"} {
				t.Run(p.String()+"/"+kind+"/"+v, func(t *testing.T) {
					c := profileCall(p, r.Dir, "log", "--format=%H")
					if kind == "rev" {
						c.Revs = []Rev{"HEAD", Rev(v)}
					} else {
						c.Revs = []Rev{"HEAD"}
						c.Paths = []Path{"a.txt", Path(v)}
					}
					before := run.Started()
					_, err := repo.Run(ctx(t), c)
					wantCode(t, err, errcode.InvalidArgument)
					if n := run.Started() - before; n != 0 {
						t.Fatalf("%d git processes started for a refused operand", n)
					}
				})
			}
		}
		t.Run(p.String()+"/placed", func(t *testing.T) {
			c := profileCall(p, r.Dir, "log", "--format=%H")
			c.Revs, c.Paths = []Rev{"HEAD"}, []Path{"./-c", "src/file1.txt"}
			argv := commandLine(profiles[p], &c)
			tail := argv[slices.Index(argv, "log"):]
			want := []string{"--format=%H", "--end-of-options", "HEAD", "--", "./-c", "src/file1.txt"}
			if got := tail[len(tail)-len(want):]; !slices.Equal(got, want) {
				t.Fatalf("command line ends %q, want %q", got, want)
			}
			if i, j := slices.Index(argv, "--end-of-options"), slices.Index(argv, "--"); i < 0 || j < i {
				t.Fatalf("operands out of place: %q", argv)
			}
			out, err := repo.Run(ctx(t), c)
			if err != nil || len(strings.TrimSpace(string(out.Stdout))) != 40 && len(strings.TrimSpace(string(out.Stdout))) != 64 {
				t.Fatalf("a plain revision and path did not run: out %+v, err %v", out, err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "pwned")); err == nil {
		t.Fatal("an option-looking operand reached git")
	}
	// DashDash writes "--" with no path, so a revision is never a path.
	c := Call{Profile: ProfileRead, Args: []string{"log"}, Revs: []Rev{"HEAD"}, DashDash: true}
	if argv := commandLine(profiles[ProfileRead], &c); !slices.Equal(argv[len(argv)-3:], []string{"--end-of-options", "HEAD", "--"}) {
		t.Fatalf("DashDash: %q", argv)
	}
}

// TestClassify_RealFailures: failures of real git runs, under the
// profiles that meet them, classify into one code each, and every
// classified failure still carries what git said.
func TestClassify_RealFailures(t *testing.T) {
	r := gitxtest.Basic(t, 1)
	run := newRunner(t)
	repo := openIn(t, run, r.Dir)
	head := r.Git("rev-parse", "HEAD")
	lock := filepath.Join(r.Dir, ".git", "index.lock")
	cases := []struct {
		name    string
		profile Profile
		call    func(c *Call)
		setup   func(t *testing.T)
		code    errcode.Code
		stderr  string
	}{
		{"missing revision", ProfileWrite, func(c *Call) {
			c.Args, c.Revs = []string{"rev-parse", "--verify"}, []Rev{"no-such-branch"}
		}, nil, errcode.InvalidArgument, "Needed a single revision"},
		{"missing revision in a workspace", ProfileHostileTree, func(c *Call) {
			c.Args, c.Revs, c.DashDash = []string{"diff-tree", "-r"}, []Rev{"HEAD", "no-such-branch"}, true
		}, nil, errcode.InvalidArgument, "bad revision"},
		{"held index.lock", ProfileWrite, func(c *Call) {
			c.Args, c.Paths = []string{"add"}, []Path{"src/file1.txt"}
		}, func(t *testing.T) {
			if err := os.WriteFile(lock, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(lock) })
		}, errcode.RepoLocked, "index.lock"},
		{"held index.lock in a workspace", ProfileHostileTree, func(c *Call) {
			c.Args = []string{"add", "-A"}
		}, func(t *testing.T) {
			if err := os.WriteFile(lock, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(lock) })
		}, errcode.RepoLocked, "index.lock"},
		{"bad path", ProfileWrite, func(c *Call) {
			c.Args, c.Paths = []string{"rm", "--cached", "--quiet"}, []Path{"no/such/file"}
		}, nil, errcode.NotFound, "did not match any file"},
		{"bad path in a tree", ProfilePerson, func(c *Call) {
			c.Args, c.Revs = []string{"cat-file", "-e"}, []Rev{"HEAD:no/such/file"}
		}, nil, errcode.NotFound, "does not exist in 'HEAD'"},
		{"lost compare-and-swap", ProfileWrite, func(c *Call) {
			c.Args, c.Revs = []string{"update-ref"}, Revs("refs/heads/main", head, strings.Repeat("1", len(head)))
		}, nil, errcode.Conflict, "but expected"},
		{"anything else", ProfileWrite, func(c *Call) {
			c.Args = []string{"config", "--local", "--get", "no-section-no-key"}
		}, nil, errcode.GitFailed, "key does not contain a section"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup(t)
			}
			c := profileCall(tc.profile, r.Dir)
			tc.call(&c)
			_, runErr := repo.Run(ctx(t), c)
			var ee *ExitError
			if !errors.As(runErr, &ee) {
				t.Fatalf("run error = %v, want an *ExitError", runErr)
			}
			err := Classify(runErr)
			wantCode(t, err, tc.code)
			e, _ := errcode.As(err)
			f, ok := e.Data.(errcode.GitFailure)
			if !ok || f.ExitCode != ee.ExitCode || f.Command != c.Args[0] || !strings.Contains(f.Stderr, tc.stderr) {
				t.Fatalf("data = %#v, want the command, exit code and stderr holding %q", e.Data, tc.stderr)
			}
			if !errors.As(err, &ee) {
				t.Fatal("the classified error does not keep the *ExitError")
			}
		})
	}

	t.Run("not a repository", func(t *testing.T) {
		dir := t.TempDir()
		_, err := run.Run(ctx(t), Call{Profile: ProfileWrite, Dir: dir, Args: []string{"rev-parse", "--git-dir"},
			Env: []string{"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir)}})
		if err = Classify(err); !errors.Is(err, ErrNotARepository) {
			t.Fatalf("error = %v, want ErrNotARepository", err)
		}
	})
	t.Run("passes the rest through", func(t *testing.T) {
		if err := Classify(nil); err != nil {
			t.Fatalf("Classify(nil) = %v", err)
		}
		if err := Classify(ErrTimeout); err != ErrTimeout {
			t.Fatalf("Classify(ErrTimeout) = %v", err)
		}
	})
	t.Run("stderr is bounded per profile", func(t *testing.T) {
		long := strings.Repeat("x", 10<<10)
		for _, p := range Profiles {
			e, _ := errcode.As(Classify(&ExitError{Command: "x", ExitCode: 1, Stderr: long, Profile: p}))
			got := len(e.Data.(errcode.GitFailure).Stderr)
			if max := profiles[p].caps.reported; got > max+len("…") || got < max {
				t.Fatalf("%s: %d bytes of stderr reported, want %d", p, got, max)
			}
		}
	})
}
