package seal

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/proposal"
)

// Re-sealing: a pending proposal whose pinned branch moved (the person
// committed, or another card landed) is sealed again on where the branch
// is now, by the same code that sealed it when it arrived. It keeps its
// card only when the new outcome makes exactly the same changes: the same
// files with the same content before and after (so nothing it touches
// moved under it), the same commits brought in and lost, the same refs
// moved to the same places. Only the base, the trees and the digest
// differ. Anything else (a file it changes was changed on the branch, a
// ref it names went elsewhere, the checkout switched branches) is a real
// conflict, and the card stays stale for the person to send back.

// Resealable reports whether p's outcome is a set of changes on the
// checked-out branch (or a merge into a branch), which a moved base can
// carry unchanged: a commit, a patch or a merge. Pushes, resets,
// discards, rebases, branch creation and deletion and plans stay pinned
// to the commits they named.
func Resealable(p proposal.Proposal) bool {
	switch p.Args.(type) {
	case *proposal.CommitArgs, *proposal.PatchArgs, *proposal.MergeArgs:
		return len(p.Pinned.Repos) == 0
	}
	return false
}

// ChangesDiffer says, in words, how b's changes are not a's ("" when they
// are the same): the files whose change differs, or else what else does.
func ChangesDiffer(a, b *proposal.Sealed) string {
	if reflect.DeepEqual(changesOf(*a), changesOf(*b)) {
		return ""
	}
	files := func(s *proposal.Sealed) map[string]proposal.FileChange {
		m := map[string]proposal.FileChange{}
		for _, x := range append([]proposal.Sealed{*s}, s.Steps...) {
			for _, f := range x.Files {
				m[f.Path] = f
			}
		}
		return m
	}
	fa, fb := files(a), files(b)
	var paths []string
	for p, f := range fa {
		if g, ok := fb[p]; !ok || g != f {
			paths = append(paths, p)
		}
	}
	for p := range fb {
		if _, ok := fa[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	if len(paths) > 0 {
		return fmt.Sprintf("what it changes differs on the new base (%s): it changed there too, or on disk", strings.Join(gitrun.LimitList(paths, 10), ", "))
	}
	return "on the new base it would do something else than the card shows (other commits, refs or losses)"
}

// changesOf is what of an outcome a re-sealing must keep: everything but
// where it is sealed (the ref, base and trees, and where the refs it
// moves were).
func changesOf(s proposal.Sealed) proposal.Sealed {
	s.Ref, s.Base, s.Before, s.After, s.Below = "", "", "", "", ""
	s.Moves = slices.Clone(s.Moves)
	for i := range s.Moves {
		s.Moves[i].From = ""
	}
	steps := make([]proposal.Sealed, len(s.Steps))
	for i, x := range s.Steps {
		steps[i] = changesOf(x)
	}
	s.Steps = steps
	return s
}
