package seal

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/apply/internal/gitrun"
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// A commit from a confined session takes its content from the session's
// private copy (see core/apply's ops_session.go for how it lands): every
// file the agent changed there since the copy was made, or those of them
// at the named paths. Its card lists, besides the files, the files of the
// person's checkout the executor will write (Sealed.Checkout) and those
// it keeps because the person has work in them (Sealed.Keeps).

// sessionSource is a session's copy, as a commit's source of content.
type sessionSource struct {
	dir, base string
}

// sessionSource is the copy of the session the proposal came from; nil
// for a proposal from outside any session.
func (w *Work) sessionSource() (*sessionSource, error) {
	dir, base, err := w.in.SessionCopy()
	if err != nil || dir == "" {
		return nil, err
	}
	return &sessionSource{dir: dir, base: base}, nil
}

// run runs git with the copy as the work tree of the repository: the
// copy's files are hashed into the person's object store, with the
// person's configuration (as their own `git add` would), and the copy's
// own git directory, which its agent could write, is never read.
func (src *sessionSource) run(ctx context.Context, sl *Work, c gitrun.Call) (gitrun.Result, error) {
	c.Dir = src.dir
	c.Global = []string{"--git-dir=" + sl.git.Repo.GitDir, "--work-tree=" + src.dir, "--literal-pathspecs"}
	c.Env = append(slices.Clone(sl.env), c.Env...)
	return sl.git.Run(ctx, c)
}

// copyChange is one path the agent changed in its copy since the copy was
// made, with what the copy holds there now (mode and blob; both "" where
// the agent deleted it).
type copyChange struct{ path, mode, blob string }

// state is the tree the copy holds now (every file that is not ignored)
// and the tree it was made at.
func (src *sessionSource) state(ctx context.Context, sl *Work) (baseTree, now string, err error) {
	if baseTree, err = sl.Tree(ctx, src.base); err != nil {
		return "", "", err
	}
	env, _, err := sl.index(ctx, baseTree)
	if err != nil {
		return "", "", err
	}
	if _, err := src.run(ctx, sl, gitrun.Call{Args: []string{"add", "--all"}, Env: env}); err != nil {
		return "", "", err
	}
	now, err = sl.writeTree(ctx, env)
	return baseTree, now, err
}

// changes lists every path the agent changed in the copy since it was
// made (not ignored; added, modified, deleted), from one reading of the
// copy.
func (src *sessionSource) changes(ctx context.Context, sl *Work) ([]copyChange, error) {
	baseTree, now, err := src.state(ctx, sl)
	if err != nil {
		return nil, err
	}
	res, err := sl.run(ctx, gitrun.Call{Args: []string{"diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-commit-id"}, Revs: []string{baseTree, now}, DashDash: true})
	if err != nil {
		return nil, err
	}
	var out []copyChange
	for _, c := range gitx.ParseRawNumstat(res.Out) {
		if c.Status == 'D' {
			out = append(out, copyChange{path: c.Path})
		} else {
			out = append(out, copyChange{path: c.Path, mode: c.Mode, blob: c.Blob})
		}
	}
	return out, nil
}

// named reports whether path is one of paths or inside one of them.
func named(paths []string, path string) bool {
	return slices.ContainsFunc(paths, func(p string) bool { return path == p || strings.HasPrefix(path, p+"/") })
}

// sealFromCopy seals a session's commit: HEAD's tree with, at each path
// the agent changed in its copy since the copy was made (all of them with
// stageAll, else those at or under the named paths), what the copy holds
// there. A path the agent never changed keeps HEAD's content, so a commit
// the person made after the session began is never reverted by the
// copy's older version of it.
func (s *commitSeal) sealFromCopy(ctx context.Context, sl *Work, src *sessionSource) (proposal.Sealed, error) {
	base := sl.in.Expect("HEAD")
	before, err := sl.Tree(ctx, base)
	if err != nil {
		return proposal.Sealed{}, err
	}
	changed, err := src.changes(ctx, sl)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if !s.a.StageAll {
		changed = slices.DeleteFunc(changed, func(c copyChange) bool { return !named(s.a.Paths, c.path) })
	}
	if len(changed) == 0 {
		msg := "there is nothing to commit: nothing changed in the session's copy"
		if !s.a.StageAll {
			msg = "there is nothing to commit: the agent changed nothing in its copy at " + strings.Join(gitrun.LimitList(s.a.Paths, 10), ", ")
		}
		return proposal.Sealed{}, &errcode.Error{Code: errcode.NothingToCommit, Msg: msg}
	}
	env, _, err := sl.index(ctx, before)
	if err != nil {
		return proposal.Sealed{}, err
	}
	// Entry by entry: mode 0 removes a path; an entry that needs a
	// directory where HEAD has a file (or the reverse) replaces it.
	var in bytes.Buffer
	for _, c := range changed {
		if c.mode == "" {
			fmt.Fprintf(&in, "0 %s\t%s\x00", sl.git.Zero, c.path)
		} else {
			fmt.Fprintf(&in, "%s %s 0\t%s\x00", c.mode, c.blob, c.path)
		}
	}
	if _, err := sl.run(ctx, gitrun.Call{Args: []string{"update-index", "-z", "--index-info"}, Env: env, Stdin: in.Bytes()}); err != nil {
		return proposal.Sealed{}, err
	}
	after, files, err := sl.newTree(ctx, env, before,
		&errcode.Error{Code: errcode.NothingToCommit, Msg: "there is nothing to commit: the files in the session's copy are the same as in HEAD"})
	if err != nil {
		return proposal.Sealed{}, err
	}
	// A filter is refused by the attributes of the tree that lands and by
	// those of the checkout the files are written to, never by the copy's:
	// its agent could have edited them there without proposing the edit.
	if err := sl.refuseFiltersIn(ctx, files, env); err != nil {
		return proposal.Sealed{}, err
	}
	if err := sl.refuseFilters(ctx, files); err != nil {
		return proposal.Sealed{}, err
	}
	mv, err := sl.headMove(ctx, "")
	if err != nil {
		return proposal.Sealed{}, err
	}
	write, keeps, err := sl.in.PlanCheckout(ctx, files)
	if err != nil {
		return proposal.Sealed{}, err
	}
	return proposal.Sealed{Base: base, Before: before, After: after, Files: files, Effect: proposal.EffectLands,
		Moves: []proposal.RefMove{mv}, Checkout: write, Keeps: keeps}, nil
}

// Leftover lists what the agent of a confined session changed in its
// copy (at copyDir, made at base) and never proposed with the content it
// has now: the paths it added, changed or deleted there that no proposal
// of the session (proposed: their sealed outcomes, whatever became of
// them) carries as it is. w must write to a scratch object directory
// (Scratch), so nothing is written to the person's repository.
func Leftover(ctx context.Context, w *Work, copyDir, base string, proposed []*proposal.Sealed) ([]string, error) {
	src := &sessionSource{dir: copyDir, base: base}
	baseTree, now, err := src.state(ctx, w)
	if err != nil {
		return nil, err
	}
	changes, err := w.Changes(ctx, baseTree, now)
	if err != nil {
		return nil, err
	}
	// What the session proposed: each path with the content (blob and
	// mode, or its deletion) some proposal carried.
	type content struct{ blob, mode string }
	carried := map[string][]content{}
	for _, s := range proposed {
		if s == nil {
			continue
		}
		for _, x := range append([]proposal.Sealed{*s}, s.Steps...) {
			for _, f := range x.Files {
				if f.Status == proposal.FileDeleted {
					carried[f.Path] = append(carried[f.Path], content{})
				} else {
					carried[f.Path] = append(carried[f.Path], content{f.Blob, f.Mode})
				}
				if f.OldPath != "" {
					carried[f.OldPath] = append(carried[f.OldPath], content{})
				}
			}
		}
	}
	var out []string
	want := func(p string, c content) {
		if !slices.Contains(carried[p], c) {
			out = appendNew(out, p)
		}
	}
	for _, c := range changes {
		if c.Status == proposal.FileDeleted {
			want(c.Path, content{})
		} else {
			want(c.Path, content{c.Blob, c.Mode})
		}
		if c.OldPath != "" {
			want(c.OldPath, content{})
		}
	}
	slices.Sort(out)
	return out, nil
}
