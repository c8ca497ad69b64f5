package apply

import (
	"errors"
	"testing"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// TestExecute_IntentToAddInScope_RefusedUnchanged: a mixed reset or a
// discard whose paths hold an entry marked intent-to-add (git add -N) is
// refused before anything is written, since its scoped restore point
// could only put the entry back staged empty; the index and files stay as
// they were.
func TestExecute_IntentToAddInScope_RefusedUnchanged(t *testing.T) {
	for _, op := range []string{"reset", "discard"} {
		t.Run(op, func(t *testing.T) {
			f := newFixture(t)
			f.repo.Write("src/a.txt", "base\n")
			f.git("add", "src")
			f.git("commit", "-qm", "src")
			f.repo.Write("src/a.txt", "mine\n")
			f.repo.Write("src/new.txt", "new work\n")
			f.git("add", "-N", "src/new.txt")
			var args proposal.Args = &proposal.DiscardArgs{Paths: []string{"src"}}
			if op == "reset" {
				args = &proposal.ResetArgs{Mode: proposal.ResetMixed, Target: "HEAD~1"}
			}
			rec := f.propose(args)
			before := f.git("status", "--porcelain") + "|" + f.git("diff", "--cached", "--stat") + "|" + f.git("rev-parse", "HEAD")
			_, err := f.execute(rec)
			if !errors.Is(err, errcode.New(errcode.Unsupported, "")) {
				t.Fatalf("err %v: want unsupported", err)
			}
			if after := f.git("status", "--porcelain") + "|" + f.git("diff", "--cached", "--stat") + "|" + f.git("rev-parse", "HEAD"); after != before {
				t.Fatalf("the repository changed:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

func TestIntentToAdd_ParsesLsFilesDebug(t *testing.T) {
	out := []byte("a\x00  ctime: 1:2\n  mtime: 1:2\n  dev: 1\tino: 2\n  uid: 0\tgid: 0\n  size: 2\tflags: 0\n" +
		"odd\nname\x00  ctime: 0:0\n  mtime: 0:0\n  dev: 0\tino: 0\n  uid: 0\tgid: 0\n  size: 0\tflags: 20004000\n")
	got, err := intentToAdd(out)
	if err != nil || len(got) != 1 || got[0] != "odd\nname" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := intentToAdd([]byte("a\x00  ctime: 1:2\n")); err == nil {
		t.Fatal("a cut answer was read")
	}
}
