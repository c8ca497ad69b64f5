package apply

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// BenchmarkVsGit_Reseal1000: a pending commit of 1,000 changed files,
// and the person commits another file: what the app's watch does to carry
// the card over (the preflight that finds it moved, the seal on the new
// base and its comparison, keeping the new objects, the journal's record)
// against the person staging and writing the same change again on the new
// HEAD by hand (git add -A, git write-tree). The proposal and the person's
// commit are not timed.
func BenchmarkVsGit_Reseal1000(b *testing.B) {
	sl, cli := benchFixture(b, 0), benchFixture(b, 0)
	slStart, cliStart := sl.git("rev-parse", "main"), cli.git("rev-parse", "main")
	touch := func(f *fixture, round int) {
		for i := range benchFiles {
			p := filepath.Join(f.repo.Dir, filepath.FromSlash(benchPath(i)))
			if err := os.WriteFile(p, []byte(benchContent(i, fmt.Sprintf("resealed %d in round %d", i, round))), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	move := func(f *fixture, round int) {
		f.repo.Write("NOTES.md", fmt.Sprintf("the person's notes, round %d\n", round))
		personGit(b, f.repo.Dir, nil, "add", "NOTES.md")
		personGit(b, f.repo.Dir, nil, "commit", "-q", "-m", "notes")
		syscall.Sync()
	}
	sluice := func(i int) time.Duration {
		resetBench(b, sl, slStart)
		touch(sl, i)
		rec := sl.submitPending(&proposal.CommitArgs{Message: "Seal", StageAll: true})
		move(sl, i)
		start := time.Now()
		res, err := sl.e.Reseal(testCtx(b), rec.Proposal)
		if err != nil || res == nil {
			b.Fatalf("reseal: %v", err)
		}
		if err := sl.e.KeepResealed(testCtx(b), res.Proposal); err != nil {
			b.Fatal(err)
		}
		if _, err := sl.j.Reseal(rec.Proposal.ID, rec.Proposal.Digest, res.Proposal, journal.Reseal{Moves: res.Moves, Base: res.Proposal.Sealed.Base}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	person := func(i int) time.Duration {
		resetBench(b, cli, cliStart)
		touch(cli, i)
		move(cli, i)
		start := time.Now()
		personGit(b, cli.repo.Dir, nil, "add", "-A")
		personGit(b, cli.repo.Dir, nil, "write-tree")
		return time.Since(start)
	}
	pairRounds(b, sluice, person)
}
