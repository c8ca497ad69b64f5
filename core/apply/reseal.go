package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Re-sealing (see core/apply/seal's reseal.go for which outcomes carry
// over): Reseal seals a pending proposal again where its base is now, and
// KeepResealed keeps the new objects beside the old.

// Resealed is a pending proposal sealed again on a base that moved.
type Resealed struct {
	// Proposal is the proposal with its new pins, outcome and digest.
	Proposal proposal.Proposal
	// Moves are the pinned refs that moved, from the old pins to the new.
	Moves []proposal.RefMove
}

// Reseal seals p again on its pinned refs as they are now. It returns nil
// when nothing p depends on moved; a stale_base error saying what
// conflicts when p cannot be re-sealed with the same changes; else the
// re-sealed proposal, whose objects the caller keeps (KeepResealed) and
// records. Nothing in the repository changes but new objects.
func (e *Executor) Reseal(ctx context.Context, p proposal.Proposal) (*Resealed, error) {
	if p.Sealed == nil {
		return nil, errcode.New(errcode.StaleBase, "the proposal has no sealed outcome to seal again")
	}
	pf, err := e.Preflight(ctx, p)
	if err != nil {
		return nil, err
	}
	if !pf.Stale {
		return nil, nil
	}
	if len(pf.Changed) > 0 || len(pf.Moved) == 0 {
		return nil, &errcode.Error{Code: errcode.StaleBase, Msg: pf.Describe()}
	}
	if !seal.Resealable(p) {
		return nil, &errcode.Error{Code: errcode.StaleBase, Msg: pf.Describe() + "; a " + string(p.Op) + " is sealed on the commits it named, so it cannot be carried over"}
	}
	np := p
	np.Pinned.Refs = maps.Clone(p.Pinned.Refs)
	for _, m := range pf.Moved {
		if m.Repo != "" || m.To == "" {
			return nil, &errcode.Error{Code: errcode.StaleBase, Msg: pf.Describe()}
		}
		np.Pinned.Refs[m.Ref] = m.To
	}
	np.Sealed, np.Digest = nil, ""
	sealed, err := e.Seal(ctx, np)
	if err != nil {
		if errcode.IsCode(err, errcode.StaleBase) {
			return nil, err
		}
		return nil, &errcode.Error{Code: errcode.StaleBase, Err: err, Msg: pf.Describe() + "; on the new base it cannot be made: " + errMsg(err)}
	}
	if diff := seal.ChangesDiffer(p.Sealed, sealed); diff != "" {
		return nil, &errcode.Error{Code: errcode.StaleBase, Msg: pf.Describe() + "; " + diff}
	}
	np.Sealed = sealed
	if err := np.Seal(); err != nil {
		return nil, err
	}
	return &Resealed{Proposal: np, Moves: pf.Moved}, nil
}

func errMsg(err error) string {
	if e, ok := errcode.As(err); ok && e.Msg != "" {
		return e.Msg
	}
	return err.Error()
}

// KeepResealed keeps the objects of p's new outcome beside the old ones:
// a commit on top of the one refs/sluice/sealed/<id> names (or a new one),
// so that whichever digest the journal holds when a crash comes, its
// objects are reachable.
func (e *Executor) KeepResealed(ctx context.Context, p proposal.Proposal) error {
	if p.Sealed == nil {
		return nil
	}
	rc, err := e.openRepo(ctx, p.Repo)
	if err != nil {
		return err
	}
	ref := proposal.SealedRef(p.ID)
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"rev-parse", "--verify", "--quiet"}, revs: []string{ref + "^{commit}"}, ok: []int{1}})
	if err != nil {
		return err
	}
	old := ""
	if res.exit == 0 {
		old = res.text()
	}
	tree, err := rc.keptTree(ctx, keptTrees(p.Sealed))
	if err != nil {
		return err
	}
	var parents []string
	if old != "" {
		parents = []string{old}
	}
	c, err := rc.commitTree(ctx, tree, parents, "sluice: sealed outcome of proposal "+p.ID+" (re-sealed)")
	if err != nil {
		return err
	}
	expect := old
	if expect == "" {
		expect = rc.g.zero
	}
	_, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: re-seal"}, revs: []string{ref, c, expect}})
	return err
}

// RefState is what keys name in repo now, and what its HEAD names, as one
// string that changes whenever any of them moves: the app's watch of the
// repositories with pending proposals compares it between looks.
func (e *Executor) RefState(ctx context.Context, repo string, keys []string) (string, error) {
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return "", err
	}
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	now, err := rc.resolve(ctx, keys)
	if err != nil {
		return "", err
	}
	h, err := rc.headOf(ctx, rc.path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HEAD=%s %s\n", h.sym, h.sha)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, now[k])
	}
	return b.String(), nil
}

// stackedWhy says why a stacked commit cannot land yet.
func stackedWhy(below string) string {
	return "it is stacked on proposal " + below + ", which has not landed: approve that one first, and this one is re-sealed on the commit it makes"
}
