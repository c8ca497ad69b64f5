package apply

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// branchDeleteStep deletes the branches that are safe to delete and keeps
// the rest, saying why: a branch goes only when its tip is reachable from
// HEAD or from its upstream, it is checked out nowhere, and it has not
// moved since the proposal.
type branchDeleteStep struct {
	a    *proposal.BranchDeleteArgs
	del  map[*repoCtx][]string
	keep []kept
}

func (s *branchDeleteStep) name() proposal.Op { return proposal.OpBranchDelete }

// branchSets lists, per repository, the branches and their pins.
func (s *branchDeleteStep) branchSets(r *run) []branchSet {
	sets := []branchSet{{rc: r.main, branches: s.a.Branches, pins: r.p.Pinned.Refs}}
	for _, o := range s.a.OtherRepos {
		sets = append(sets, branchSet{rc: r.others[o.Repo], branches: o.Branches, pins: r.p.Pinned.Repos[o.Repo]})
	}
	return sets
}

func (s *branchDeleteStep) touch(_ context.Context, r *run, t touches) error {
	for _, set := range s.branchSets(r) {
		if set.rc == nil {
			return errcode.New(errcode.InvalidArgument, "a repository named by the proposal could not be opened")
		}
		for _, b := range set.branches {
			t.of(set.rc).addRef(proposal.BranchRef(b))
			t.of(set.rc).addConfig(b)
		}
	}
	return nil
}

// check decides, changing nothing, which branches go and which stay;
// when none can go it refuses before a restore point is taken.
func (s *branchDeleteStep) check(ctx context.Context, r *run) error {
	s.del, s.keep = map[*repoCtx][]string{}, nil
	for _, set := range s.branchSets(r) {
		del, k, err := set.evaluate(ctx)
		if err != nil {
			return err
		}
		s.keep = append(s.keep, k...)
		if len(del) > 0 {
			s.del[set.rc] = del
		}
	}
	if len(s.del) > 0 {
		return s.checkSealed(r)
	}
	var why []string
	moved, expected, allMoved := map[string]string{}, map[string]string{}, len(s.keep) > 0
	for _, k := range s.keep {
		name := k.name(r)
		why = append(why, name+" ("+k.why+")")
		if k.moved {
			moved[name], expected[name] = k.now, k.pinned
		} else {
			allMoved = false
		}
	}
	if allMoved {
		e := staleBase(moved, expected)
		e.Msg = "no branch was deleted: every one moved or disappeared since the proposal (" + strings.Join(why, ", ") + ")"
		return e
	}
	return &errcode.Error{Code: errcode.NothingDeleted, Msg: "no branch was safe to delete: " + strings.Join(why, ", ")}
}

// checkSealed: the branches that go are exactly the ones the card named.
func (s *branchDeleteStep) checkSealed(r *run) error {
	sealed := r.sealedStep()
	if sealed == nil {
		return nil
	}
	var want, got []string
	for _, m := range sealed.Moves {
		want = append(want, m.Repo+":"+m.Ref)
	}
	for _, set := range s.branchSets(r) {
		repo := ""
		if set.rc != r.main {
			repo = set.rc.path
		}
		for _, b := range s.del[set.rc] {
			got = append(got, repo+":"+proposal.BranchRef(b))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		return &errcode.Error{Code: errcode.StaleBase, Data: map[string]any{"sealed": want, "now": got},
			Msg: "the branches that are safe to delete are not the ones the card named any more; nothing was deleted"}
	}
	return nil
}

func (s *branchDeleteStep) do(ctx context.Context, r *run, w *writing) error {
	var deleted []string
	for _, set := range s.branchSets(r) {
		del := s.del[set.rc]
		if len(del) == 0 {
			continue
		}
		var in bytes.Buffer
		for _, b := range del {
			fmt.Fprintf(&in, "delete %s %s\n", proposal.BranchRef(b), set.pins[proposal.BranchRef(b)])
		}
		r.e.step("before-ref-update")
		if _, err := set.rc.g.run(ctx, call{dir: set.rc.path, args: []string{"update-ref", "-m", "sluice: delete branches (proposal " + r.p.ID + ")", "--stdin"}, stdin: in.Bytes()}); err != nil {
			if st := stderrOf(err); strings.Contains(st, "but expected") || strings.Contains(st, "unable to resolve") {
				return &errcode.Error{Code: errcode.StaleBase, Err: err, Msg: "a branch moved while it was being deleted; none of this repository's branches were deleted"}
			}
			return err
		}
		r.changed = true
		for _, b := range del {
			if _, err := set.rc.g.run(ctx, call{dir: set.rc.path, args: []string{"config", "--local", "--remove-section", "branch." + b}, ok: []int{128}}); err != nil {
				return err
			}
			deleted = append(deleted, kept{repo: set.rc.path, branch: b}.name(r))
		}
	}
	r.note("deleted %s", strings.Join(deleted, ", "))
	if len(s.keep) > 0 {
		var why []string
		for _, k := range s.keep {
			why = append(why, k.name(r)+" ("+k.why+")")
		}
		r.note("kept %s", strings.Join(why, ", "))
	}
	return nil
}
