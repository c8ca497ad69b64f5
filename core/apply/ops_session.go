package apply

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Commits from a confined session. The session's agent never wrote the
// person's files: it worked in a private copy. So a commit it proposes
// takes its content from the copy (the named paths as they are there;
// with stageAll, every file the agent changed there since the copy was
// made), lands on the person's branch as any approved commit does, with
// their git, and then brings their checkout along: each committed file
// that the person had not touched is written with the committed content
// (a deleted one removed), so their checkout shows the commit instead of
// its reverse. A file the person has uncommitted work in stays as it is,
// and the card says so (Sealed.Keeps); every file the executor will write
// is on the card (Sealed.Checkout) and must still be untouched when it
// runs, or nothing runs.

// SessionCopies finds a confined session's private copy.
type SessionCopies interface {
	// Copy is session id's copy (its working tree) and the commit it was
	// made at.
	Copy(id string) (dir, base string, err error)
}

// sessionSource is a session's copy, as a commit's source of content.
type sessionSource struct {
	dir, base string
}

// sessionSource is the copy of the session p came from; nil for a
// proposal from outside any session.
func (r *run) sessionSource() (*sessionSource, error) {
	o := r.p.Origin
	if o == nil {
		return nil, nil
	}
	if r.e.sessions == nil {
		return nil, errcode.New(errcode.Unsupported, "this Sluice app cannot read confined sessions' copies")
	}
	dir, base, err := r.e.sessions.Copy(o.Session)
	if err != nil {
		return nil, errcode.Wrap(errcode.NotFound, err, "the confined session's copy is gone, so the content of its commit cannot be read: %v", err)
	}
	return &sessionSource{dir: dir, base: base}, nil
}

// run runs git with the copy as the work tree of rc's repository: the
// copy's files are hashed into the person's object store, with the
// person's configuration (as their own `git add` would), and the copy's
// own git directory, which its agent could write, is never read.
func (src *sessionSource) run(ctx context.Context, sl *sealing, c call) (result, error) {
	c.dir = src.dir
	c.global = []string{"--git-dir=" + sl.rc.repo.GitDir, "--work-tree=" + src.dir, "--literal-pathspecs"}
	c.env = append(slices.Clone(sl.env), c.env...)
	return sl.rc.g.run(ctx, c)
}

// addFrom stages paths from the copy into the temporary index of env.
func (src *sessionSource) addFrom(ctx context.Context, sl *sealing, env []string, paths []string) error {
	_, err := src.run(ctx, sl, call{args: []string{"add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul"}, env: env, stdin: nulList(paths)})
	if err != nil {
		if st := stderrOf(err); strings.Contains(st, "did not match") || strings.Contains(st, "ignored by one of your .gitignore") || strings.Contains(st, "beyond a symbolic link") {
			return &errcode.Error{Code: errcode.InvalidArgument, Err: err, Msg: "a path cannot be committed from the session's copy: " + clip(strings.TrimSpace(st), 500)}
		}
		return err
	}
	return nil
}

// state is the tree the copy holds now (every file that is not ignored)
// and the tree it was made at.
func (src *sessionSource) state(ctx context.Context, sl *sealing) (baseTree, now string, err error) {
	if baseTree, err = sl.tree(ctx, src.base); err != nil {
		return "", "", err
	}
	env, _, err := sl.index(ctx, baseTree, nil)
	if err != nil {
		return "", "", err
	}
	if _, err := src.run(ctx, sl, call{args: []string{"add", "--all"}, env: env}); err != nil {
		return "", "", err
	}
	now, err = sl.writeTree(ctx, env)
	return baseTree, now, err
}

// changed lists every path the agent changed in the copy since it was
// made (not ignored; added, modified, deleted).
func (src *sessionSource) changed(ctx context.Context, sl *sealing) ([]string, error) {
	baseTree, now, err := src.state(ctx, sl)
	if err != nil {
		return nil, err
	}
	return sl.listPaths(ctx, nil, "diff-tree", "-r", "-z", "--name-only", "--no-commit-id", baseTree, now, "--")
}

// sealFromCopy seals a session's commit.
func (s *commitStep) sealFromCopy(ctx context.Context, sl *sealing, src *sessionSource) (proposal.Sealed, error) {
	base := sl.r.expect["HEAD"]
	before, err := sl.tree(ctx, base)
	if err != nil {
		return proposal.Sealed{}, err
	}
	paths := s.a.Paths
	if s.a.StageAll {
		if paths, err = src.changed(ctx, sl); err != nil {
			return proposal.Sealed{}, err
		}
		if len(paths) == 0 {
			return proposal.Sealed{}, &errcode.Error{Code: errcode.NothingToCommit, Msg: "there is nothing to commit: nothing changed in the session's copy"}
		}
	}
	env, _, err := sl.index(ctx, before, nil)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if err := src.addFrom(ctx, sl, env, paths); err != nil {
		return proposal.Sealed{}, err
	}
	after, err := sl.writeTree(ctx, env)
	if err != nil {
		return proposal.Sealed{}, err
	}
	if after == before {
		return proposal.Sealed{}, &errcode.Error{Code: errcode.NothingToCommit, Msg: "there is nothing to commit: the files in the session's copy are the same as in HEAD"}
	}
	files, err := sl.changes(ctx, before, after)
	if err != nil {
		return proposal.Sealed{}, err
	}
	// The copy's attributes are the ones its files were hashed with.
	if err := sl.refuseFiltersIn(ctx, files, func(ctx context.Context, c call) (result, error) { return src.run(ctx, sl, c) }); err != nil {
		return proposal.Sealed{}, err
	}
	mv, err := sl.r.headMove(ctx, "")
	if err != nil {
		return proposal.Sealed{}, err
	}
	out := proposal.Sealed{Base: base, Before: before, After: after, Files: files, Effect: proposal.EffectLands,
		Moves: []proposal.RefMove{mv}}
	touched, err := sl.r.touchedInCheckout(ctx, pathsOf(files))
	if err != nil {
		return proposal.Sealed{}, err
	}
	for _, p := range pathsOf(files) {
		if why, ok := touched[p]; ok {
			out.Keeps = append(out.Keeps, p+": "+why+"; it stays as it is, so after the commit it shows as your change against it")
			continue
		}
		out.Checkout = append(out.Checkout, p)
	}
	return out, nil
}

// pathsOf lists every path files change, old paths of renames included.
func pathsOf(files []proposal.FileChange) []string {
	var out []string
	for _, f := range files {
		out = appendNew(out, f.Path)
		if f.OldPath != "" {
			out = appendNew(out, f.OldPath)
		}
	}
	return out
}

// touchedInCheckout says which of paths the person has touched in their
// checkout, and how: staged or unstaged changes, an untracked file where
// the path would be written, an ignored one. It reads only (status takes
// no optional lock).
func (r *run) touchedInCheckout(ctx context.Context, paths []string) (map[string]string, error) {
	out := map[string]string{}
	if len(paths) == 0 {
		return out, nil
	}
	rc := r.main
	res, err := rc.g.run(ctx, call{dir: rc.path, global: []string{"--literal-pathspecs"},
		args: append([]string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching", "--no-renames", "--"}, paths...)})
	if err != nil {
		return nil, err
	}
	for _, e := range strings.Split(string(res.out), "\x00") {
		if len(e) < 4 {
			continue
		}
		x, y, p := e[0], e[1], e[3:]
		switch {
		case x == '?':
			out[p] = "an untracked file of yours is there"
		case x == '!':
			out[p] = "an ignored file of yours is there"
		case x != ' ':
			out[p] = "you have staged changes to it"
		default:
			_ = y
			out[p] = "you have uncommitted changes to it"
		}
	}
	// status names a file inside an untracked or ignored directory only by
	// the directory when it lists the directory; a path under one is
	// touched too.
	for _, p := range paths {
		if _, ok := out[p]; ok {
			continue
		}
		for q, why := range out {
			if strings.HasSuffix(q, "/") && strings.HasPrefix(p, q) {
				out[p] = why
			}
		}
	}
	return out, nil
}

// checkCheckout refuses, before anything is written, a session commit
// whose checkout files the person touched since the card was made:
// writing them would overwrite their work.
func (r *run) checkCheckout(ctx context.Context, sealed *proposal.Sealed) error {
	if len(sealed.Checkout) == 0 {
		return nil
	}
	touched, err := r.touchedInCheckout(ctx, sealed.Checkout)
	if err != nil {
		return err
	}
	var changed []string
	for _, p := range sealed.Checkout {
		if _, ok := touched[p]; ok {
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	return &errcode.Error{Code: errcode.StaleBase, Data: map[string]any{"changed": changed},
		Msg: fmt.Sprintf("%s changed in your checkout since it was proposed, and the card said approving writes it; nothing was changed", strings.Join(limitList(changed, 20), ", "))}
}

// writeCheckout brings the person's checkout to the commit for the files
// the card named: the index already holds the commit's entries for them
// (commitSealed), so they are checked out from it, and the deleted ones
// removed.
func (r *run) writeCheckout(ctx context.Context, sealed *proposal.Sealed) error {
	if len(sealed.Checkout) == 0 {
		return nil
	}
	rc := r.main
	deleted := map[string]bool{}
	for _, f := range sealed.Files {
		if f.Status == proposal.FileDeleted {
			deleted[f.Path] = true
		}
		if f.OldPath != "" {
			deleted[f.OldPath] = true
		}
	}
	var write []string
	for _, p := range sealed.Checkout {
		if deleted[p] {
			if err := os.Remove(filepath.Join(rc.path, filepath.FromSlash(p))); err != nil && !os.IsNotExist(err) {
				return err
			}
			continue
		}
		write = append(write, p)
	}
	if len(write) > 0 {
		if _, err := rc.g.run(ctx, call{dir: rc.path, global: []string{"--literal-pathspecs"},
			args: []string{"checkout-index", "--force", "--index", "-z", "--stdin"}, stdin: nulList(write)}); err != nil {
			return err
		}
	}
	r.note("updated %d file(s) in the checkout to the committed content", len(sealed.Checkout))
	return nil
}

// SessionLeftover lists what the agent of a confined session changed in
// its copy (at copyDir, made at base from the repository repo) and never
// proposed with the content it has now: the paths it added, changed or
// deleted there that no proposal of the session (proposed: their sealed
// outcomes, whatever became of them) carries as it is. Nothing is written
// to the person's repository: the copy's files are hashed into a scratch
// object directory.
func (e *Executor) SessionLeftover(ctx context.Context, repo, copyDir, base string, proposed []*proposal.Sealed) ([]string, error) {
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "sluice-leftover-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	sl := &sealing{r: &run{e: e, main: rc}, rc: rc, tmp: tmp}
	if err := sl.scratch(); err != nil {
		return nil, err
	}
	src := &sessionSource{dir: copyDir, base: base}
	baseTree, now, err := src.state(ctx, sl)
	if err != nil {
		return nil, err
	}
	changes, err := sl.changes(ctx, baseTree, now)
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
