package apply

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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

func newSessionFixture(t *testing.T) *sessionFixture {
	t.Helper()
	f := newFixture(t)
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
