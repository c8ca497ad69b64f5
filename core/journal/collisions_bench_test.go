package journal

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/proposal"
)

// bigSealed gives p a sealed outcome of n changed files, the first share
// of them also in other (the files two agents both touch).
func bigSealed(t testing.TB, p *proposal.Proposal, n int, tag string, shared int) {
	t.Helper()
	files := make([]proposal.FileChange, n)
	for i := range files {
		name := fmt.Sprintf("src/pkg%03d/sub%02d/%s%05d.go", i%500, i%20, tag, i)
		if i < shared {
			name = fmt.Sprintf("src/pkg%03d/sub%02d/shared%05d.go", i%500, i%20, i)
		}
		files[i] = proposal.FileChange{Status: proposal.FileModified, Path: name, OldMode: proposal.ModeFile, Mode: proposal.ModeFile,
			OldBlob: "0123456789abcdef0123456789abcdef01234567", Blob: "89abcdef0123456789abcdef0123456789abcdef"}
	}
	p.Sealed = &proposal.Sealed{Base: "0123456789abcdef0123456789abcdef01234567", Before: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
		After: "4b825dc642cb6eb9a060e54bf8d69288fbee4905", Effect: proposal.EffectLands, Files: files}
	reseal(t, p)
}

// BenchmarkJournal_Collisions20000 is the collision check of a card when
// another pending proposal in the same repository touches 20,000 files
// too (10 of them the same): what the pending list and each card ask.
func BenchmarkJournal_Collisions20000(b *testing.B) {
	j, _ := testJournal(b, Options{Recorder: &memRecorder{}})
	now := time.Now()
	theirs := newProposal(b, now, "agent-b")
	bigSealed(b, &theirs, 20000, "theirs", 10)
	if _, _, err := j.Submit(theirs); err != nil {
		b.Fatal(err)
	}
	mine := newProposal(b, now, "agent-a")
	bigSealed(b, &mine, 20000, "mine", 10)
	for b.Loop() {
		cs, err := j.Collisions(mine)
		if err != nil || len(cs) != 1 || len(cs[0].Files) != 10 {
			b.Fatalf("collisions %+v %v: want 10 shared files with the other proposal", cs, err)
		}
	}
}
