package apply

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/gitx/gitxtest"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/session"
)

// copies is the app's session store reduced to what the executor asks of
// it: a session's copy and the commit it was made at.
type copies map[string][2]string

func (c copies) Copy(id string) (string, string, error) {
	v, ok := c[id]
	if !ok {
		return "", "", errors.New("no such session")
	}
	return v[0], v[1], nil
}

// sessionFixture is a person's repository and a confined session's copy
// of it, made as the app makes it, with an executor that finds the copy.
type sessionFixture struct {
	*fixture
	copy string
}

func newSessionFixture(t *testing.T, before ...func(f *fixture)) *sessionFixture {
	t.Helper()
	f := newFixture(t)
	// What the person's repository holds before the session begins.
	for _, b := range before {
		b(f)
	}
	r, err := gitx.NewRunner(gitx.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "copy")
	c, err := session.MakeCopy(testCtx(t), r, gitx.Roots{f.root}, f.repo.Dir, dest, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Journal: f.j, Roots: gitx.Roots{f.root}, Runner: r, Logger: quiet, Sessions: copies{"s1": {dest, c.Base}}})
	if err != nil {
		t.Fatal(err)
	}
	f.e = e
	return &sessionFixture{fixture: f, copy: dest}
}

// edit writes (or with content "" removes) a file in the copy, as the
// agent does with its own tools.
func (f *sessionFixture) edit(path, content string) {
	f.t.Helper()
	p := filepath.Join(f.copy, filepath.FromSlash(path))
	if content == "" {
		if err := os.Remove(p); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func fromSession(p *proposal.Proposal) {
	p.Origin = &proposal.Origin{Session: "s1", Runtime: "bubblewrap", Network: []string{"api.anthropic.com:443"}}
}

// A session's commit lands the copy's content on the person's branch and
// brings their checkout along: the committed files are written, the
// deleted one removed, and the checkout is clean at the new commit.
func TestSessionCommit_FromCopy_UpdatesCheckout(t *testing.T) {
	f := newSessionFixture(t)
	f.edit("src/a.txt", "a1\nAGENT\na3\n")
	f.edit("src/new.txt", "new from the agent\n")
	f.edit("src/b.txt", "")
	before := gitxtest.Snapshot(t, f.repo.Dir)
	rec := f.propose(&proposal.CommitArgs{Message: "Agent's change", Paths: []string{"src/a.txt", "src/new.txt", "src/b.txt"}}, fromSession)
	// Sealing wrote objects only: the person's files are as they were.
	if d := gitxtest.DiffSnapshots(before, gitxtest.Snapshot(t, f.repo.Dir)); slices.ContainsFunc(d, func(s string) bool { return !strings.Contains(s, ".git/") }) {
		t.Fatalf("sealing changed the person's files: %v", d)
	}
	s := rec.Proposal.Sealed
	if !slices.Equal(s.Checkout, []string{"src/a.txt", "src/b.txt", "src/new.txt"}) || len(s.Keeps) != 0 {
		t.Fatalf("checkout %v keeps %v: want every committed file written", s.Checkout, s.Keeps)
	}
	f.mustComplete(rec)
	if tree := f.git("rev-parse", "HEAD^{tree}"); tree != s.After {
		t.Fatalf("HEAD's tree %s, sealed %s", tree, s.After)
	}
	if got := f.repo.Read("src/a.txt"); got != "a1\nAGENT\na3\n" {
		t.Errorf("src/a.txt in the checkout is %q", got)
	}
	if got := f.repo.Read("src/new.txt"); got != "new from the agent\n" {
		t.Errorf("src/new.txt in the checkout is %q", got)
	}
	if _, err := os.Stat(filepath.Join(f.repo.Dir, "src", "b.txt")); !os.IsNotExist(err) {
		t.Errorf("the deleted src/b.txt is still in the checkout: %v", err)
	}
	if st := f.git("status", "--porcelain"); st != "" {
		t.Errorf("the checkout is not clean after the commit:\n%s", st)
	}
	if msg := f.git("log", "-1", "--format=%an <%ae>|%B"); !strings.HasPrefix(msg, "Pat Person <pat@example.com>|Agent's change") {
		t.Errorf("the commit is not the person's: %q", msg)
	}
}

// A file the person has uncommitted work in is committed as the copy has
// it, but their file stays as it is (the card said so); what they staged
// stays staged.
func TestSessionCommit_PersonsWork_KeptNotOverwritten(t *testing.T) {
	f := newSessionFixture(t)
	f.edit("src/a.txt", "agent's a\n")
	f.edit("src/b.txt", "agent's b\n")
	f.edit("README.md", "# agent's readme\n")
	f.repo.Write("src/a.txt", "person's unstaged a\n")
	f.repo.Write("src/b.txt", "person's staged b\n")
	f.git("add", "src/b.txt")
	rec := f.propose(&proposal.CommitArgs{Message: "Agent", Paths: []string{"src/a.txt", "src/b.txt", "README.md"}}, fromSession)
	s := rec.Proposal.Sealed
	if !slices.Equal(s.Checkout, []string{"README.md"}) || len(s.Keeps) != 2 {
		t.Fatalf("checkout %v keeps %v", s.Checkout, s.Keeps)
	}
	if !strings.Contains(strings.Join(s.Keeps, "\n"), "src/a.txt: you have uncommitted changes") ||
		!strings.Contains(strings.Join(s.Keeps, "\n"), "src/b.txt: you have staged changes") {
		t.Errorf("keeps do not say why: %v", s.Keeps)
	}
	f.mustComplete(rec)
	if got := f.repo.Read("src/a.txt"); got != "person's unstaged a\n" {
		t.Errorf("the person's unstaged file was overwritten: %q", got)
	}
	if got := f.repo.Read("src/b.txt"); got != "person's staged b\n" {
		t.Errorf("the person's staged file was overwritten: %q", got)
	}
	if got := f.repo.Read("README.md"); got != "# agent's readme\n" {
		t.Errorf("README.md was not written: %q", got)
	}
	if staged := f.git("show", ":src/b.txt"); staged != "person's staged b" {
		t.Errorf("the person's staged content is no longer staged: %q", staged)
	}
	if idx := f.git("show", ":src/a.txt"); idx != "agent's a" {
		t.Errorf("the index entry of an unstaged file is not the new commit's: %q", idx)
	}
	if head := f.git("show", "HEAD:src/a.txt"); head != "agent's a" {
		t.Errorf("the commit does not hold the copy's content: %q", head)
	}
}

// A file the card said approving writes, touched by the person after the
// card was made, stops the whole execution: nothing lands, and preflight
// said so first.
func TestSessionCommit_CheckoutTouchedAfterCard_Refused(t *testing.T) {
	f := newSessionFixture(t)
	f.edit("src/new.txt", "agent\n")
	f.edit("src/a.txt", "agent a\n")
	rec := f.propose(&proposal.CommitArgs{Message: "Agent", Paths: []string{"src/new.txt", "src/a.txt"}}, fromSession)
	f.repo.Write("src/new.txt", "the person's own new file\n")
	pf, err := f.e.Preflight(testCtx(t), rec.Proposal)
	if err != nil {
		t.Fatal(err)
	}
	if !pf.Stale || !slices.Equal(pf.Changed, []string{"src/new.txt"}) {
		t.Fatalf("preflight %+v: want stale, src/new.txt changed", pf)
	}
	before := repoState(t, f.repo.Dir)
	out, err := f.execute(rec)
	if !errors.Is(err, ErrStaleBase) || out.State != proposal.Failed {
		t.Fatalf("state %s err %v: want failed, stale_base", out.State, err)
	}
	if after := repoState(t, f.repo.Dir); after != before {
		t.Errorf("a refused session commit changed the repository:\n%s", diffState(before, after))
	}
}

// stageAll in a session means every file the agent changed in its copy,
// not every file where the copy differs from the person's HEAD: a commit
// the person made after the session began is not reverted.
func TestSessionCommit_StageAll_OnlyWhatTheAgentChanged(t *testing.T) {
	f := newSessionFixture(t)
	f.repo.Write("README.md", "# the person's later readme\n")
	f.repo.Commit("person's own commit")
	f.edit("src/a.txt", "agent a\n")
	rec := f.propose(&proposal.CommitArgs{Message: "Agent", StageAll: true}, fromSession)
	var paths []string
	for _, c := range rec.Proposal.Sealed.Files {
		paths = append(paths, c.Path)
	}
	if !slices.Equal(paths, []string{"src/a.txt"}) {
		t.Fatalf("the commit changes %v, want only src/a.txt", paths)
	}
	f.mustComplete(rec)
	if got := f.repo.Read("README.md"); got != "# the person's later readme\n" {
		t.Errorf("the person's later commit was reverted: %q", got)
	}
}

// What a session left is what it changed and never proposed as it is
// now: a proposed file edited again after its proposal counts again.
func TestSessionLeftover_OnlyWhatWasNeverProposed(t *testing.T) {
	f := newSessionFixture(t)
	f.edit("src/a.txt", "agent a\n")
	f.edit("src/new.txt", "new\n")
	f.edit("src/b.txt", "")
	rec := f.propose(&proposal.CommitArgs{Message: "Agent a", Paths: []string{"src/a.txt"}}, fromSession)
	base := strings.TrimSpace(f.git("rev-parse", "HEAD"))
	left := func() []string {
		t.Helper()
		out, err := f.e.SessionLeftover(testCtx(t), f.repo.Dir, f.copy, base, []*proposal.Sealed{rec.Proposal.Sealed})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := repoState(t, f.repo.Dir)
	if got := left(); !slices.Equal(got, []string{"src/b.txt", "src/new.txt"}) {
		t.Fatalf("leftover %v, want the deletion and the new file", got)
	}
	f.edit("src/a.txt", "agent a, edited again\n")
	if got := left(); !slices.Equal(got, []string{"src/a.txt", "src/b.txt", "src/new.txt"}) {
		t.Fatalf("leftover %v after a.txt changed again", got)
	}
	if after := repoState(t, f.repo.Dir); after != before {
		t.Errorf("reading the leftover changed the repository:\n%s", diffState(before, after))
	}
	// The leftover, proposed as the app does, lands as a commit of exactly
	// those files.
	lr := f.propose(&proposal.CommitArgs{Message: "Left", Paths: left()}, func(p *proposal.Proposal) {
		fromSession(p)
		p.Origin.Leftover = true
	})
	var got []string
	for _, c := range lr.Proposal.Sealed.Files {
		got = append(got, c.Path)
	}
	if !slices.Equal(got, []string{"src/a.txt", "src/b.txt", "src/new.txt"}) {
		t.Fatalf("the leftover commit changes %v", got)
	}
	var _ journal.Record = f.mustComplete(lr)
}

// removeAll removes a file or a whole directory of the copy, as the agent
// does with its own tools.
func (f *sessionFixture) removeAll(path string) {
	f.t.Helper()
	if err := os.RemoveAll(filepath.Join(f.copy, filepath.FromSlash(path))); err != nil {
		f.t.Fatal(err)
	}
}

// refuseSession seals a session's proposal for args as the app does on
// receipt and fails the test unless sealing refused it with want, naming
// files in its data (when given), and left the repository exactly as it
// was, Sluice's refs included.
func (f *sessionFixture) refuseSession(args proposal.Args, want error, files ...string) error {
	f.t.Helper()
	p := f.newProposal(f.repo.Dir, args)
	fromSession(&p)
	return f.refuseProposal(p, want, files...)
}

// ignore makes the person's git ignore pattern in their repository
// (.git/info/exclude: theirs, never on a card).
func ignore(f *fixture, pattern string) {
	f.t.Helper()
	p := filepath.Join(f.repo.Dir, ".git", "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, append(b, []byte(pattern+"\n")...), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// A file of the person's where the commit needs a directory (the agent
// adds docs/x.md, the person has a file docs that git does not track)
// refuses the proposal when it is sealed, and stops the execution when it
// appears after the card: the file is never deleted to make room.
func TestSessionCommit_PersonsFileWhereDirectoryGoes_Refused(t *testing.T) {
	t.Run("at sealing", func(t *testing.T) {
		f := newSessionFixture(t)
		f.edit("docs/x.md", "# agent's doc\n")
		f.repo.Write("docs", "the person's own notes\n")
		f.refuseSession(&proposal.CommitArgs{Message: "Docs", Paths: []string{"docs"}}, ErrDirtyWorktree, "docs")
		if got := f.repo.Read("docs"); got != "the person's own notes\n" {
			t.Errorf("the person's file is %q", got)
		}
	})
	t.Run("after the card", func(t *testing.T) {
		f := newSessionFixture(t)
		f.edit("docs/x.md", "# agent's doc\n")
		rec := f.propose(&proposal.CommitArgs{Message: "Docs", StageAll: true}, fromSession)
		if s := rec.Proposal.Sealed; !slices.Equal(s.Checkout, []string{"docs/x.md"}) {
			t.Fatalf("checkout %v", s.Checkout)
		}
		f.repo.Write("docs", "the person's own notes\n")
		pf, err := f.e.Preflight(testCtx(t), rec.Proposal)
		if err != nil {
			t.Fatal(err)
		}
		if !pf.Stale || !slices.Equal(pf.Changed, []string{"docs/x.md"}) {
			t.Errorf("preflight %+v: want stale, docs/x.md changed", pf)
		}
		f.mustRefuseUnchanged(rec, ErrStaleBase, "docs")
		if got := f.repo.Read("docs"); got != "the person's own notes\n" {
			t.Errorf("the person's file is %q", got)
		}
	})
}

// The agent replaces the directory src/ by a file src. Files of the
// person's under src/ that git does not track, untracked or ignored,
// refuse the proposal (at sealing, or at execution when they appear after
// the card): writing src would delete them. Without them, the directory
// becomes the file in the checkout too.
func TestSessionCommit_DirectoryBecomesFile_PersonsFilesUnder_Refused(t *testing.T) {
	agent := func(f *sessionFixture) {
		f.removeAll("src")
		f.edit("src", "src is a file now\n")
	}
	for _, c := range []struct {
		name, file string
		setup      func(f *fixture)
	}{
		{"untracked", "src/mine.txt", nil},
		{"ignored", "src/.env", func(f *fixture) { ignore(f, ".env") }},
	} {
		t.Run(c.name+"/at sealing", func(t *testing.T) {
			f := newSessionFixture(t)
			if c.setup != nil {
				c.setup(f.fixture)
			}
			agent(f)
			f.repo.Write(c.file, "the person's own\n")
			f.refuseSession(&proposal.CommitArgs{Message: "Flatten", StageAll: true}, ErrDirtyWorktree, c.file)
			if got := f.repo.Read(c.file); got != "the person's own\n" {
				t.Errorf("%s is %q", c.file, got)
			}
		})
		t.Run(c.name+"/after the card", func(t *testing.T) {
			f := newSessionFixture(t)
			if c.setup != nil {
				c.setup(f.fixture)
			}
			agent(f)
			rec := f.propose(&proposal.CommitArgs{Message: "Flatten", StageAll: true}, fromSession)
			f.repo.Write(c.file, "the person's own\n")
			f.mustRefuseUnchanged(rec, ErrStaleBase, c.file)
			if got := f.repo.Read(c.file); got != "the person's own\n" {
				t.Errorf("%s is %q", c.file, got)
			}
		})
	}
	t.Run("nothing in the way", func(t *testing.T) {
		f := newSessionFixture(t)
		agent(f)
		rec := f.propose(&proposal.CommitArgs{Message: "Flatten", StageAll: true}, fromSession)
		if s := rec.Proposal.Sealed; !slices.Equal(s.Checkout, []string{"src", "src/a.txt", "src/b.txt"}) {
			t.Fatalf("checkout %v", s.Checkout)
		}
		f.mustComplete(rec)
		if got := f.repo.Read("src"); got != "src is a file now\n" {
			t.Errorf("src is %q", got)
		}
		if st := f.git("status", "--porcelain", "--ignored"); st != "" {
			t.Errorf("the checkout is not clean after the commit:\n%s", st)
		}
	})
}

// git status does not show a file marked assume-unchanged or
// skip-worktree, so the person's work in it is found by the marks: the
// file is kept as it is, and keeps its mark on the committed entry. A
// mark set after the card stops the execution. With core.ignoreStat,
// git cannot tell what the person changed: every tracked file is kept.
func TestSessionCommit_HiddenFromStatus_Kept(t *testing.T) {
	for _, c := range []struct {
		flag string
		tag  string
		why  string
	}{
		{"--assume-unchanged", "h", "assume-unchanged"},
		{"--skip-worktree", "S", "skip-worktree"},
	} {
		t.Run(c.why, func(t *testing.T) {
			f := newSessionFixture(t)
			f.edit("src/a.txt", "agent's a\n")
			f.edit("README.md", "# agent's readme\n")
			f.git("update-index", c.flag, "src/a.txt")
			f.repo.Write("src/a.txt", "the person's hidden edit\n")
			rec := f.propose(&proposal.CommitArgs{Message: "Agent", StageAll: true}, fromSession)
			s := rec.Proposal.Sealed
			if !slices.Equal(s.Checkout, []string{"README.md"}) || len(s.Keeps) != 1 || !strings.Contains(s.Keeps[0], "src/a.txt: it is marked "+c.why) {
				t.Fatalf("checkout %v keeps %v", s.Checkout, s.Keeps)
			}
			f.mustComplete(rec)
			if got := f.repo.Read("src/a.txt"); got != "the person's hidden edit\n" {
				t.Errorf("the person's edit was overwritten: %q", got)
			}
			if got := f.git("show", "HEAD:src/a.txt"); got != "agent's a" {
				t.Errorf("the commit has %q", got)
			}
			if got := f.git("show", ":src/a.txt"); got != "agent's a" {
				t.Errorf("the index entry is %q, not the commit's", got)
			}
			if got := f.git("ls-files", "-v", "--", "src/a.txt"); got != c.tag+" src/a.txt" {
				t.Errorf("ls-files -v says %q: the mark is gone", got)
			}
		})
		t.Run(c.why+"/after the card", func(t *testing.T) {
			f := newSessionFixture(t)
			f.edit("src/a.txt", "agent's a\n")
			rec := f.propose(&proposal.CommitArgs{Message: "Agent", StageAll: true}, fromSession)
			f.git("update-index", c.flag, "src/a.txt")
			f.repo.Write("src/a.txt", "the person's hidden edit\n")
			f.mustRefuseUnchanged(rec, ErrStaleBase)
			if got := f.repo.Read("src/a.txt"); got != "the person's hidden edit\n" {
				t.Errorf("the person's edit was overwritten: %q", got)
			}
		})
	}
	t.Run("core.ignoreStat", func(t *testing.T) {
		f := newSessionFixture(t, func(f *fixture) { f.git("config", "core.ignoreStat", "true") })
		f.edit("src/a.txt", "agent's a\n")
		f.edit("src/new.txt", "agent's new\n")
		rec := f.propose(&proposal.CommitArgs{Message: "Agent", StageAll: true}, fromSession)
		s := rec.Proposal.Sealed
		if !slices.Equal(s.Checkout, []string{"src/new.txt"}) || len(s.Keeps) != 1 || !strings.Contains(s.Keeps[0], "src/a.txt: core.ignoreStat") {
			t.Fatalf("checkout %v keeps %v", s.Checkout, s.Keeps)
		}
	})
}

// A submodule checked out where the agent removed it stays checked out:
// Sluice does not delete a submodule's checkout, and the commit lands.
func TestSessionCommit_SubmoduleRemoved_CheckoutKept(t *testing.T) {
	var sub string
	f := newSessionFixture(t, func(f *fixture) {
		// Checked out at the commit the superproject records: git status
		// shows nothing there.
		sub = f.submodule()
		f.gitIn(sub, "checkout", "-q", f.git("rev-parse", "HEAD:mods/lib"))
	})
	before := gitxtest.Snapshot(t, sub)
	f.removeAll("mods/lib")
	rec := f.propose(&proposal.CommitArgs{Message: "Drop lib", Paths: []string{"mods/lib"}}, fromSession)
	s := rec.Proposal.Sealed
	if len(s.Checkout) != 0 || len(s.Keeps) != 1 || !strings.HasPrefix(s.Keeps[0], "mods/lib: a submodule is checked out there") {
		t.Fatalf("checkout %v keeps %v", s.Checkout, s.Keeps)
	}
	f.mustComplete(rec)
	if got := f.git("ls-tree", "HEAD", "--", "mods/lib"); got != "" {
		t.Errorf("the commit still has the submodule: %q", got)
	}
	requireSame(t, before, gitxtest.Snapshot(t, sub))
}

// When the checkout cannot be written after the commit landed (something
// of the person's appeared in the way in between), the commit is taken
// back: HEAD, index and files are as they were, what the person put there
// is untouched, and the execution fails having changed nothing.
func TestSessionCommit_CheckoutFails_CommitTakenBack(t *testing.T) {
	for _, c := range []struct {
		name string
		// race puts the person's file in the way once the commit landed;
		// gone is what takes it away again.
		race, gone string
		want       error
	}{
		// Found before any file is written: a file the card writes,
		// changed while the commit was made (by a hook, say).
		{"file changed", "src/a.txt", "", ErrStaleBase},
		// Found after files were removed: a directory with a file in it
		// where the commit writes a file.
		{"directory in the way", "src/new.txt/mine.txt", "src/new.txt", ErrDirtyWorktree},
		// Found by git checkout-index halfway through: a file where the
		// commit needs a directory.
		{"file in the way", "zzz", "zzz", &errcode.Error{Code: errcode.GitFailed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newSessionFixture(t)
			f.edit("src/a.txt", "agent's a\n")
			f.edit("src/b.txt", "")
			f.edit("src/new.txt", "agent's new\n")
			f.edit("newdir/sub/n.txt", "agent's n\n")
			f.edit("zzz/deep.txt", "agent's deep\n")
			f.repo.Write("notes.txt", "the person's untracked notes\n")
			rec := f.propose(&proposal.CommitArgs{Message: "Agent", StageAll: true}, fromSession)
			head := f.git("rev-parse", "HEAD")
			before := repoState(t, f.repo.Dir)
			f.e.beforeStep = func(step string) {
				if step == "committed" {
					f.repo.Write(c.race, "the person's, written meanwhile\n")
				}
			}
			out, err := f.execute(rec)
			if !errors.Is(err, c.want) || out.State != proposal.Failed {
				t.Fatalf("state %s err %v: want failed with %v", out.State, err, c.want)
			}
			if !strings.Contains(err.Error(), "the commit was taken back") {
				t.Errorf("the error does not say the commit was taken back: %v", err)
			}
			if out.Outcome.RestorePoint != "" {
				t.Errorf("restore point %q kept: the execution changed something (%v)", out.Outcome.RestorePoint, err)
			}
			if got := f.git("rev-parse", "HEAD"); got != head {
				t.Errorf("HEAD is %s, was %s", got, head)
			}
			if got := f.repo.Read(c.race); got != "the person's, written meanwhile\n" {
				t.Errorf("the person's %s is %q", c.race, got)
			}
			if c.gone != "" {
				if err := os.RemoveAll(filepath.Join(f.repo.Dir, c.gone)); err != nil {
					t.Fatal(err)
				}
			} else {
				f.git("checkout", "--", c.race)
			}
			if after := repoState(t, f.repo.Dir); after != before {
				t.Errorf("the repository is not as it was:\n%s", diffState(before, after))
			}
		})
	}
}

// A session's commit is undone like any execution: restoring its restore
// point brings HEAD back and the checkout to exactly what it was, the
// files the commit wrote into it included.
func TestSessionCommit_Restore_CheckoutAsBefore(t *testing.T) {
	f := newSessionFixture(t)
	f.edit("src/a.txt", "agent's a\n")
	f.edit("src/b.txt", "")
	f.edit("src/new.txt", "agent's new\n")
	f.edit("newdir/n.txt", "agent's n\n")
	f.edit("README.md", "# agent's readme\n")
	f.repo.Write("README.md", "# the person's edit\n")
	f.repo.Write("notes.txt", "the person's untracked notes\n")
	before := repoState(t, f.repo.Dir)
	snap := gitxtest.Snapshot(t, f.repo.Dir)
	rec := f.propose(&proposal.CommitArgs{Message: "Agent", StageAll: true}, fromSession)
	done := f.mustComplete(rec)
	if got := f.repo.Read("src/new.txt"); got != "agent's new\n" {
		t.Fatalf("the commit did not write src/new.txt: %q", got)
	}
	if _, err := f.e.Restore(testCtx(t), f.repo.Dir, done.Outcome.RestorePoint, false); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if after := repoState(t, f.repo.Dir); after != before {
		t.Errorf("after the restore the repository differs:\n%s", diffState(before, after))
	}
	now := gitxtest.Snapshot(t, f.repo.Dir)
	for _, m := range []map[string]string{snap, now} {
		maps.DeleteFunc(m, func(k, _ string) bool { return k == ".git/" || strings.HasPrefix(k, ".git"+string(filepath.Separator)) })
	}
	requireSame(t, snap, now)
}

// The filter refusal reads the attributes of the tree that lands and of
// the person's checkout, never the copy's: an agent that edits its
// copy's .gitattributes without proposing the edit does not slip a
// filtered file past it.
func TestSessionCommit_Filters_ReadFromLandingTreeAndCheckout(t *testing.T) {
	lfs := "*.dat filter=lfs diff=lfs merge=lfs -text\n"
	for _, c := range []struct {
		name   string
		before func(f *fixture)
		agent  func(f *sessionFixture)
		paths  []string
	}{
		{
			name:   "the copy's attributes edited, not proposed",
			before: func(f *fixture) { f.repo.WriteCommit(".gitattributes", lfs, "lfs") },
			agent: func(f *sessionFixture) {
				f.edit(".gitattributes", "# nothing filtered here\n")
				f.edit("big.dat", "raw bytes\n")
			},
			paths: []string{"big.dat"},
		},
		{
			name: "attributes proposed with the file",
			agent: func(f *sessionFixture) {
				f.edit(".gitattributes", lfs)
				f.edit("big.dat", "raw bytes\n")
			},
			paths: []string{".gitattributes", "big.dat"},
		},
		{
			name:   "the person's own attributes in the checkout",
			before: nil,
			agent: func(f *sessionFixture) {
				f.repo.Write(".gitattributes", lfs)
				f.edit("big.dat", "raw bytes\n")
			},
			paths: []string{"big.dat"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before []func(*fixture)
			if c.before != nil {
				before = append(before, c.before)
			}
			f := newSessionFixture(t, before...)
			c.agent(f)
			err := f.refuseSession(&proposal.CommitArgs{Message: "Data", Paths: c.paths}, &errcode.Error{Code: errcode.Unsupported})
			if !strings.Contains(err.Error(), `big.dat uses the git filter "lfs"`) {
				t.Errorf("the refusal does not name the file and filter: %v", err)
			}
		})
	}
}

// The agent unignores .env in its copy and proposes one: the person's own
// ignored .env (their secret) is where the commit would write, so the
// proposal is refused, and the secret never becomes a tracked file.
func TestSessionCommit_PersonsIgnoredFileAtAddedPath_Refused(t *testing.T) {
	for _, args := range []*proposal.CommitArgs{
		{Message: "Env", Paths: []string{".env"}},
		{Message: "Env", StageAll: true},
	} {
		f := newSessionFixture(t, func(f *fixture) { f.repo.WriteCommit(".gitignore", ".env\n", "ignore .env") })
		f.edit(".gitignore", "# nothing ignored\n")
		f.edit(".env", "AGENT=1\n")
		f.repo.Write(".env", "SECRET=hunter2\n")
		f.refuseSession(args, ErrDirtyWorktree, ".env")
		if got := f.repo.Read(".env"); got != "SECRET=hunter2\n" {
			t.Errorf("the person's .env is %q", got)
		}
		if got := f.git("ls-files", "--", ".env"); got != "" {
			t.Errorf(".env is tracked: %q", got)
		}
	}
}

// Naming a directory commits what the agent changed under it, nothing
// more: a file under it that the person changed in a later commit, and the
// agent never touched, keeps the person's content. A named path the agent
// changed nothing at is nothing to commit.
func TestSessionCommit_NamedDirectory_OnlyWhatTheAgentChanged(t *testing.T) {
	f := newSessionFixture(t)
	f.repo.WriteCommit("src/b.txt", "the person's later b\n", "person's own commit")
	f.edit("src/a.txt", "agent's a\n")
	rec := f.propose(&proposal.CommitArgs{Message: "Agent", Paths: []string{"src"}}, fromSession)
	var paths []string
	for _, c := range rec.Proposal.Sealed.Files {
		paths = append(paths, c.Path)
	}
	if !slices.Equal(paths, []string{"src/a.txt"}) {
		t.Fatalf("the commit changes %v, want only src/a.txt", paths)
	}
	f.mustComplete(rec)
	if got := f.git("show", "HEAD:src/b.txt"); got != "the person's later b" {
		t.Errorf("the person's later commit was reverted in HEAD: %q", got)
	}
	if got := f.repo.Read("src/b.txt"); got != "the person's later b\n" {
		t.Errorf("the person's later commit was reverted in the checkout: %q", got)
	}
	f.refuseSession(&proposal.CommitArgs{Message: "Agent", Paths: []string{"README.md"}}, &errcode.Error{Code: errcode.NothingToCommit})
}

// What lands is what was sealed: the agent's edits to its copy after the
// card was made do not.
func TestSessionCommit_CopyEditedAfterSealing_SealedContentLands(t *testing.T) {
	f := newSessionFixture(t)
	f.edit("src/a.txt", "agent's a, as shown\n")
	rec := f.propose(&proposal.CommitArgs{Message: "Agent", StageAll: true}, fromSession)
	f.edit("src/a.txt", "agent's a, edited after the card\n")
	f.edit("src/sneaked.txt", "never shown\n")
	f.mustComplete(rec)
	if tree := f.git("rev-parse", "HEAD^{tree}"); tree != rec.Proposal.Sealed.After {
		t.Errorf("HEAD's tree %s, sealed %s", tree, rec.Proposal.Sealed.After)
	}
	if got := f.repo.Read("src/a.txt"); got != "agent's a, as shown\n" {
		t.Errorf("src/a.txt in the checkout is %q", got)
	}
	if _, err := os.Stat(filepath.Join(f.repo.Dir, "src", "sneaked.txt")); !os.IsNotExist(err) {
		t.Errorf("a file never shown is in the checkout: %v", err)
	}
}

// The copy's own git directory is its agent's to write: its
// configuration, hooks, fsmonitor, excludes and attributes are never
// used, neither when sealing nor when the commit lands.
func TestSessionCommit_CopysGitDirectory_NeverUsed(t *testing.T) {
	f := newSessionFixture(t)
	marker := filepath.Join(t.TempDir(), "ran")
	script := "#!/bin/sh\necho \"$0\" >> " + marker + "\nexit 0\n"
	hooks := filepath.Join(f.copy, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "post-index-change", "reference-transaction", "fsmonitor"} {
		if err := os.WriteFile(filepath.Join(hooks, h), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(f.copy, ".git", "config")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, []byte("\tfsmonitor = "+filepath.Join(hooks, "fsmonitor")+"\n\thooksPath = "+hooks+"\n[user]\n\tname = Mallory\n\temail = mallory@example.com\n")...)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	info := filepath.Join(f.copy, ".git", "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		t.Fatal(err)
	}
	// Were these read, src/ would be ignored and every file filtered.
	if err := os.WriteFile(filepath.Join(info, "exclude"), []byte("src/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(info, "attributes"), []byte("* filter=lfs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.edit("src/a.txt", "agent's a\n")
	f.edit("src/new.txt", "agent's new\n")
	rec := f.propose(&proposal.CommitArgs{Message: "Agent", StageAll: true}, fromSession)
	if s := rec.Proposal.Sealed; !slices.Equal(s.Checkout, []string{"src/a.txt", "src/new.txt"}) {
		t.Fatalf("checkout %v", s.Checkout)
	}
	f.mustComplete(rec)
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("a program of the copy's git directory ran:\n%s", b)
	}
	if got := f.git("log", "-1", "--format=%an <%ae>"); got != "Pat Person <pat@example.com>" {
		t.Errorf("the commit is %q's", got)
	}
}
