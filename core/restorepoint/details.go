package restorepoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
)

// Conflict is a change made after a restore point that a restore would
// overwrite.
type Conflict struct {
	Kind string `json:"kind" jsonschema:"ref, head, index, files, config, worktree or incomplete"`
	// Ref or Path names what changed.
	Ref  string `json:"ref,omitempty"`
	Path string `json:"path,omitempty"`
	// Expected is what the operation left behind; Current is what is
	// there now ("" for gone).
	Expected string `json:"expected,omitempty"`
	Current  string `json:"current,omitempty"`
	Message  string `json:"message"`
}

// Details is a restore point with how the repository differs from the
// state the operation left behind.
type Details struct {
	RestorePoint
	// Current are the refs as they are now.
	Current []RefState `json:"current"`
	// Conflicts are changes made since the operation ended; a restore
	// refuses to overwrite them unless the person confirms.
	Conflicts []Conflict `json:"conflicts"`
	// Restorable is false when nothing recorded can be restored any more.
	Restorable bool `json:"restorable"`
}

// Describe describes one restore point of repo and what restoring it
// would overwrite. It writes nothing to the repository: the working tree
// is compared through a temporary index and object directory.
func Describe(ctx context.Context, repo *gitx.Repo, id string) (*Details, error) {
	rp, err := Find(ctx, repo, id)
	if err != nil {
		return nil, OrExpired(ctx, repo, id, err)
	}
	now := Present(repo)
	d := &Details{RestorePoint: *rp, Conflicts: []Conflict{}, Restorable: true}
	refs := make([]string, 0, len(rp.Refs))
	for _, r := range rp.Refs {
		refs = append(refs, r.Ref)
	}
	if d.Current, err = now.RefStates(ctx, refs); err != nil {
		return nil, err
	}
	if d.Conflicts, err = Conflicts(ctx, now, rp); err != nil {
		return nil, err
	}
	return d, nil
}

// State is the present a restore point is compared with. Present reads
// it through git for Describe; the executor reads it through its own view
// of one moment, so that a restore's checks and the undo point it takes
// see the same repository.
type State interface {
	// RefStates are refs as they are now (SHA "" for one that is gone).
	RefStates(ctx context.Context, refs []string) ([]RefState, error)
	// ConfigSections are branch.<name>.* of each branch as they are now.
	ConfigSections(ctx context.Context, branches []string) ([]ConfigSection, error)
	// Worktree records the working tree at path as deeply as like was
	// recorded (HEAD; the index; index and files), writing nothing; an
	// error that is os.ErrNotExist when it is gone.
	Worktree(ctx context.Context, path string, like WorktreeState) (WorktreeState, error)
	// Changed reports whether a working tree is at path (ok) and whether
	// it has staged, unstaged or untracked changes.
	Changed(ctx context.Context, path string) (ok, changed bool, err error)
}

// Conflicts compares the present (now) with the state the operation that
// took rp left behind. It writes nothing.
func Conflicts(ctx context.Context, now State, rp *RestorePoint) ([]Conflict, error) {
	out := []Conflict{}
	if rp.End == nil {
		return append(out, Conflict{Kind: "incomplete",
			Message: "the operation never recorded how it ended (the app stopped while it ran): changes made since cannot be told apart from its own; restoring needs confirmation"}), nil
	}
	end := rp.End
	refs := make([]string, 0, len(end.Refs))
	for _, r := range end.Refs {
		refs = append(refs, r.Ref)
	}
	cur, err := now.RefStates(ctx, refs)
	if err != nil {
		return nil, err
	}
	for i, r := range end.Refs {
		if cur[i].SHA != r.SHA {
			out = append(out, Conflict{Kind: "ref", Ref: r.Ref, Expected: r.SHA, Current: cur[i].SHA,
				Message: fmt.Sprintf("%s moved after the operation (%s → %s)", r.Ref, orGone(r.SHA), orGone(cur[i].SHA))})
		}
	}
	for _, w := range end.Worktrees {
		st, err := now.Worktree(ctx, w.Path, w)
		if errors.Is(err, os.ErrNotExist) {
			out = append(out, Conflict{Kind: "worktree", Path: w.Path, Message: "the working tree no longer exists"})
			continue
		}
		if errors.Is(err, ErrNotAFile) {
			out = append(out, Conflict{Kind: "files", Path: w.Path, Message: fmt.Sprintf("a path the operation wrote in %s is a directory now (%v)", w.Path, err)})
			continue
		}
		if errors.Is(err, &errcode.Error{Code: errcode.OperationInProgress}) {
			out = append(out, Conflict{Kind: "index", Path: w.Path, Message: err.Error()})
			continue
		}
		if err != nil {
			return nil, err
		}
		if st.Head != w.Head || st.HeadSHA != w.HeadSHA {
			out = append(out, Conflict{Kind: "head", Path: w.Path, Expected: headName(w), Current: headName(st),
				Message: fmt.Sprintf("HEAD of %s moved after the operation", w.Path)})
		}
		if w.Index != "" && st.Index != w.Index {
			out = append(out, Conflict{Kind: "index", Path: w.Path, Expected: w.Index, Current: st.Index,
				Message: fmt.Sprintf("the index of %s changed after the operation", w.Path)})
		}
		if w.Files && st.Tree != w.Tree {
			out = append(out, Conflict{Kind: "files", Path: w.Path, Expected: w.Tree, Current: st.Tree,
				Message: fmt.Sprintf("files in %s changed after the operation", w.Path)})
		}
	}
	branches := make([]string, 0, len(end.Config))
	for _, c := range end.Config {
		branches = append(branches, c.Branch)
	}
	cfg, err := now.ConfigSections(ctx, branches)
	if err != nil {
		return nil, err
	}
	for i, c := range end.Config {
		if !slices.Equal(cfg[i].Entries, c.Entries) {
			out = append(out, Conflict{Kind: "config", Ref: "branch." + c.Branch,
				Message: fmt.Sprintf("the configuration of branch %s changed after the operation", c.Branch)})
		}
	}
	if p := rp.NewWorktree; p != "" {
		if ok, changed, err := now.Changed(ctx, p); err != nil {
			return nil, err
		} else if ok && changed {
			out = append(out, Conflict{Kind: "worktree", Path: p, Message: "the worktree the operation added has changes; restoring removes it"})
		}
	}
	return out, nil
}

func orGone(sha string) string {
	if sha == "" {
		return "gone"
	}
	return short(sha)
}

func headName(w WorktreeState) string {
	if w.Head != "" {
		return w.Head + "@" + short(w.HeadSHA)
	}
	return "detached@" + short(w.HeadSHA)
}

// short is the first 12 characters of a SHA, as messages show it.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
