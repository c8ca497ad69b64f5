package apply

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/apply/seal"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// How execution holds a proposal to its sealed outcome. Each operation's
// seal (what its card shows) is in core/apply/seal/op_<operation>.go;
// its step here, in ops_<operation>.go, computes the same states again
// with a seal.Work and refuses to run when they are not the sealed ones
// (unchanged, compareState, verifyTree), and no proposal runs whose
// outcome was never sealed or whose objects are gone (checkSealed).

// verifyTree fails, before anything moves, when a step is about to
// produce another tree than the one it sealed.
func (r *run) verifyTree(sealed *proposal.Sealed, got, what string) error {
	if sealed == nil || sealed.After == "" || got == sealed.After {
		return nil
	}
	return &errcode.Error{Code: errcode.StaleBase, Data: map[string]any{"sealed": sealed.After, "got": got},
		Msg: fmt.Sprintf("%s would give tree %s, not the sealed %s shown on the card; nothing was changed", what, short(got), short(sealed.After))}
}

func appendNew(dst []string, src ...string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// sealedStep is the sealed outcome of the step running now: the
// proposal's own, or for a plan the current step's.
func (r *run) sealedStep() *proposal.Sealed {
	s := r.p.Sealed
	if s == nil {
		return nil
	}
	if len(s.Steps) > 0 {
		if r.stepIndex < len(s.Steps) {
			return &s.Steps[r.stepIndex]
		}
		return nil
	}
	return s
}

// unchanged recomputes, in a scratch object directory, a state tree the
// way sealing computed it, and fails with stale_base naming the paths
// when it is not want any more.
func (r *run) unchanged(ctx context.Context, want string, f func(ctx context.Context, sl *seal.Work, headTree string) (string, error)) error {
	now, changed, err := r.compareState(ctx, want, f)
	if err != nil {
		return err
	}
	if now == want {
		return nil
	}
	return &errcode.Error{Code: errcode.StaleBase, Data: map[string]any{"changed": changed},
		Msg: fmt.Sprintf("%s changed since it was proposed, so nothing was changed", strings.Join(limitList(changed, 20), ", "))}
}

// compareState computes a state tree now and the paths where it differs
// from want.
func (r *run) compareState(ctx context.Context, want string, f func(ctx context.Context, sl *seal.Work, headTree string) (string, error)) (string, []string, error) {
	tmp, err := os.MkdirTemp("", "sluice-check-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	sl := seal.New(r.main.g.git, tmp)
	if err := sl.Scratch(); err != nil {
		return "", nil, err
	}
	headTree, err := sl.Tree(ctx, r.expect["HEAD"])
	if err != nil {
		return "", nil, err
	}
	now, err := f(ctx, sl, headTree)
	if err != nil || now == want {
		return now, nil, err
	}
	changes, err := sl.Changes(ctx, want, now)
	if err != nil {
		return "", nil, err
	}
	var paths []string
	for _, c := range changes {
		paths = appendNew(paths, c.Path)
		if c.OldPath != "" {
			paths = appendNew(paths, c.OldPath)
		}
	}
	return now, paths, nil
}

// checkSealed refuses to run a proposal whose outcome was never sealed
// (what would land was never shown), and one whose sealed objects are
// gone.
func (r *run) checkSealed(ctx context.Context) error {
	s := r.p.Sealed
	if s == nil {
		return errcode.New(errcode.Unsupported, "the proposal has no sealed outcome, so what it would change was never shown; nothing was run. Propose it again")
	}
	var trees []string
	for _, x := range append([]proposal.Sealed{*s}, s.Steps...) {
		for _, t := range []string{x.Before, x.After} {
			if t != "" {
				trees = append(trees, t)
			}
		}
	}
	if len(trees) == 0 {
		return nil
	}
	var in bytes.Buffer
	for _, t := range trees {
		in.WriteString(t + "\n")
	}
	res, err := r.main.g.run(ctx, call{dir: r.main.path, args: []string{"cat-file", "--batch-check=%(objecttype)"}, stdin: in.Bytes()})
	if err != nil {
		return err
	}
	for _, l := range strings.Split(res.text(), "\n") {
		if l != "tree" {
			return errcode.New(errcode.StaleBase, "the sealed outcome's objects are no longer in the repository (%s); nothing was run. Propose it again", proposal.SealedRef(r.p.ID))
		}
	}
	return nil
}
