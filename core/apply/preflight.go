package apply

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/proposal"
)

// Preflight is what changed, since a pending proposal was sealed, in what
// its outcome depends on. The card shows it before anyone decides.
type Preflight struct {
	// Stale: approving now would fail and change nothing. Moved or Changed
	// say why.
	Stale bool `json:"stale"`
	// Moved are pinned refs that point elsewhere now (To "" when gone).
	Moved []proposal.RefMove `json:"moved"`
	// Changed are working-tree inputs of the sealed outcome that changed.
	Changed []string `json:"changed"`
	// Notes are changes that do not block: a file of a commit edited
	// after the proposal (the commit lands the sealed content, the edit
	// stays uncommitted).
	Notes []string `json:"notes"`
	// Blockers are the reasons, each a sentence naming what and what to
	// do, that the executor would refuse or fail the proposal now, though
	// nothing it depends on moved: git's lock files, a checkout that must
	// follow but has uncommitted changes, a commit in the person's name
	// without an identity. The person can fix each where it is, and then
	// approve the same card; until then Approve is refused.
	Blockers []string `json:"blockers"`
	// Notices are what the person should know and does not block: their
	// hooks that will run ("your pre-commit hook will run"), and files of
	// a checkout Sluice updates that one of their git filters would
	// transform (they land as git stores them).
	Notices []string `json:"notices"`
}

// Preflight checks, changing nothing in the repository, whether p's pins
// still hold and its sealed working-tree inputs are unchanged, and what
// else would keep the executor from producing its outcome now (Blockers)
// or runs beside it (Notices).
func (e *Executor) Preflight(ctx context.Context, p proposal.Proposal) (*Preflight, error) {
	out := &Preflight{Moved: []proposal.RefMove{}, Changed: []string{}, Notes: []string{}, Blockers: []string{}, Notices: []string{}}
	r := &run{e: e, p: p}
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	// What the executor checks before it writes, besides the pins and
	// inputs below: a card that cannot land says why before anyone
	// decides.
	if err := r.readiness(ctx, out); err != nil {
		return nil, err
	}
	check := func(rc *repoCtx, pins map[string]string, repo string) error {
		keys, now, err := rc.movedPins(ctx, pins)
		for _, k := range keys {
			out.Moved = append(out.Moved, proposal.RefMove{Ref: k, From: pins[k], To: now[k], Repo: repo})
		}
		return err
	}
	if err := check(r.main, p.Pinned.Refs, ""); err != nil {
		return nil, err
	}
	for path, pins := range p.Pinned.Repos {
		if rc := r.others[path]; rc != nil {
			if err := check(rc, pins, path); err != nil {
				return nil, err
			}
		}
	}
	// The branch checked out: a card for main does not land on another
	// branch at the same commit.
	if moved, err := r.headMoved(ctx); err != nil {
		return nil, err
	} else if moved != "" {
		out.Changed = append(out.Changed, "the checked-out branch ("+moved+")")
	}
	if len(out.Moved) > 0 || len(out.Changed) > 0 {
		out.Stale = true
		return out, nil
	}
	if p.Sealed == nil {
		out.Blockers = append(out.Blockers, "the proposal has no sealed outcome, so what it would change was never shown: ask the agent to propose it again")
		return out, nil
	}
	steps := stepsOf(p.Args)
	st, sealed := steps[0], p.Sealed
	if len(p.Sealed.Steps) > 0 {
		sealed = &p.Sealed.Steps[0]
	}
	var want string
	var state func(ctx context.Context, sl *seal.Work, headTree string) (string, error)
	switch s := st.(type) {
	case *discardStep:
		want = sealed.Before
		state = func(ctx context.Context, sl *seal.Work, headTree string) (string, error) {
			t, _, err := seal.DiscardState(ctx, sl, s.a, r.expect["HEAD"], headTree)
			return t, err
		}
	case *resetStep:
		if s.a.Mode == proposal.ResetHard {
			want = sealed.Before
			state = func(ctx context.Context, sl *seal.Work, _ string) (string, error) {
				t, _, err := seal.ResetState(ctx, sl, r.expect[s.a.Target])
				return t, err
			}
		}
	case *patchStep:
		want, state = sealed.Before, s.stateNow
	case *commitStep:
		if p.Origin != nil {
			// A session's commit: the checkout files it will write must be
			// as they were, with nothing of the person's in their way; the
			// copy's later edits do not matter (the sealed content lands).
			plan, err := r.planCheckout(ctx, sealed.Files)
			if err != nil {
				return nil, err
			}
			out.Changed = append(out.Changed, plan.unwritable(sealed.Checkout)...)
			out.Stale = len(out.Changed) > 0
			return out, nil
		}
		// What is on disk now at the committed paths, against what the
		// commit records.
		paths := sealed.SealedPaths()
		_, changed, err := r.compareState(ctx, sealed.After, func(ctx context.Context, sl *seal.Work, headTree string) (string, error) {
			t, _, err := sl.WorktreeState(ctx, headTree, paths)
			return t, err
		})
		if err != nil {
			return nil, err
		}
		for _, c := range changed {
			if slices.Contains(paths, c) {
				out.Notes = append(out.Notes, fmt.Sprintf("%s changed on disk since it was proposed: approving commits the version shown here, and the later edit stays in the working tree, uncommitted", c))
			}
		}
		return out, nil
	}
	if state == nil {
		return out, nil
	}
	_, changed, err := r.compareState(ctx, want, state)
	if err != nil {
		return nil, err
	}
	if len(changed) > 0 {
		out.Stale, out.Changed = true, changed
	}
	return out, nil
}

// Blocked reports whether anything keeps the proposal from landing now:
// it is stale, or something the person can fix is in the way.
func (p *Preflight) Blocked() bool { return p.Stale || len(p.Blockers) > 0 }

// Describe says in one line what moved and what changed.
func (p *Preflight) Describe() string {
	var parts []string
	for _, m := range p.Moved {
		name := strings.TrimPrefix(strings.TrimPrefix(m.Ref, "refs/heads/"), "refs/remotes/")
		if m.To == "" {
			parts = append(parts, name+" is gone (it was at "+short(m.From)+")")
		} else {
			parts = append(parts, fmt.Sprintf("%s moved from %s to %s", name, short(m.From), short(m.To)))
		}
	}
	for _, c := range limitList(p.Changed, 10) {
		parts = append(parts, c+" changed since it was proposed")
	}
	return strings.Join(parts, "; ")
}
