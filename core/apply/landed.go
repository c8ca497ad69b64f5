package apply

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// After the person's git commit returns, their hooks have run, and a
// post-commit hook may itself have committed (or reset, or switched
// branches). What is on the branch is read, not assumed: the commit Sluice
// wrote is found in the branch's first-parent history by its
// Sluice-Proposal trailer, only that commit is ever taken back, and the
// outcome says what the hooks added.

// maxTraced bounds how far back the branch's history is read to find the
// commit Sluice wrote.
const maxTraced = 50

// traced is one commit of a branch's first-parent history.
type traced struct {
	sha, tree, parent, subject string
	// ours: the commit carries this proposal's Sluice-Proposal trailer.
	ours bool
}

func (c traced) String() string { return short(c.sha) + " " + strconv.Quote(clip(c.subject, 80)) }

// landing is what a commit left: Sluice's own commit, HEAD now, the ref
// that moved (the branch, or HEAD when detached), and the commits on top
// of Sluice's, newest first, which a hook of the person's made.
type landing struct {
	own   string
	head  head
	ref   string
	above []traced
}

// aboveNote says what the person's hooks added on top of Sluice's commit:
// the commits, the files they change (files), and which of those Sluice's
// commit had committed (the tip then holds the hook's version of them).
func (l landing) aboveNote(sym string, files, committed []string) string {
	list := make([]string, 0, len(l.above))
	for i := len(l.above) - 1; i >= 0; i-- {
		list = append(list, l.above[i].String())
	}
	note := fmt.Sprintf("a hook of yours then added %s on top of it, which stay: %s; %s is at %s",
		proposal.Count(len(l.above), "commit"), strings.Join(list, ", "), branchName(sym), short(l.head.sha))
	var ours []string
	for _, p := range files {
		if slices.Contains(committed, p) {
			ours = append(ours, p)
		}
	}
	if len(files) > 0 {
		note += "; they change " + strings.Join(limitList(files, 10), ", ")
	}
	if len(ours) > 0 {
		note += "; of the files Sluice committed, " + strings.Join(limitList(ours, 10), ", ") + " differ at the tip from what the card showed"
	}
	return note
}

// hookFiles lists the files the commits on top of Sluice's change.
func (rc *repoCtx) hookFiles(ctx context.Context, l landing) ([]string, error) {
	if len(l.above) == 0 {
		return nil, nil
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"diff", "--name-only", "--no-renames", "-z"}, revs: []string{l.own, l.head.sha}, dashdash: true})
	if err != nil {
		return nil, err
	}
	var files []string
	for _, p := range strings.Split(string(res.out), "\x00") {
		if p != "" {
			files = append(files, p)
		}
	}
	return files, nil
}

// firstParents reads tip's first-parent history down to old (not
// included), newest first, at most maxTraced commits; found says whether
// old was reached (or, for old "", a root commit).
func (rc *repoCtx) firstParents(ctx context.Context, tip, old, id string) ([]traced, bool, error) {
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"log", "--first-parent", "--no-decorate", "--max-count=" + strconv.Itoa(maxTraced+1),
		"--format=%H%x09%T%x09%P%x09%(trailers:key=Sluice-Proposal,valueonly,separator=%x2C)%x09%s"}, revs: []string{tip}, dashdash: true})
	if err != nil {
		return nil, false, err
	}
	var out []traced
	for _, line := range strings.Split(strings.TrimRight(string(res.out), "\n"), "\n") {
		f := strings.SplitN(line, "\t", 5)
		if len(f) < 5 || !hexSHA.MatchString(f[0]) {
			return nil, false, errcode.New(errcode.GitFailed, "git log gave an unexpected answer after the commit")
		}
		if f[0] == old {
			return out, true, nil
		}
		c := traced{sha: f[0], tree: f[1], subject: f[4], ours: slices.Contains(strings.Split(f[3], ","), id)}
		if p := strings.Fields(f[2]); len(p) > 0 {
			c.parent = p[0]
		}
		out = append(out, c)
		if c.parent == "" {
			return out, old == "", nil
		}
		if len(out) > maxTraced {
			break
		}
	}
	return out, false, nil
}

// landed reads, after the person's git commit returned, what is on the
// branch sym (HEAD when ""), against old, the commit the card was for.
// Sluice's commit must sit right on old, on that branch, with tree (when
// given) as its tree; anything on top of it is a hook's and stays. When
// Sluice's commit is not what the card showed it is taken back (only it,
// and only when nothing sits on top of it; undo is the reflog message);
// when what is on the branch cannot be traced to it, the error says
// exactly what is there and that nothing was taken back.
func (r *run) landed(ctx context.Context, sym, old, tree, undo string) (landing, error) {
	rc := r.main
	h, err := rc.afterCommit(ctx)
	if err != nil {
		return landing{}, err
	}
	ref := sym
	if ref == "" {
		ref = "HEAD"
	}
	on := h.sym
	if on == "" {
		on = "HEAD"
	}
	l := landing{head: h, ref: ref}
	chain, found, err := rc.firstParents(ctx, h.sha, old, r.p.ID)
	if err != nil {
		return l, err
	}
	own := -1
	for i := len(chain) - 1; i >= 0; i-- {
		if chain[i].ours {
			own = i
			break
		}
	}
	if own < 0 && found && len(chain) == 1 {
		// The one commit on the card's base: git commit's, whose message a
		// commit-msg hook rewrote without the trailers.
		own = 0
	}
	if own < 0 || !found {
		return l, r.untraced(h, on, old, chain, found)
	}
	c := chain[own]
	l.own, l.above = c.sha, chain[:own]
	below := chain[own+1:]
	changed := tree != "" && c.tree != tree
	if on == ref && len(below) == 0 && !changed {
		return l, nil
	}
	// Sluice's commit is not the card's: it is taken back, and only it.
	var why string
	switch {
	case on != ref:
		why = fmt.Sprintf("the commit was made on %s, but the card is for %s", headLabel(on), headLabel(ref))
	case len(below) > 0:
		why = fmt.Sprintf("the branch moved from %s to %s before the commit", short(old), short(c.parent))
	default:
		why = "a commit hook changed what was committed: the card showed tree " + short(tree) + ", the hook's commit had " + short(c.tree)
	}
	if len(l.above) > 0 {
		return l, unsettled(&errcode.Error{Code: errcode.HookFailed, Data: map[string]any{"commit": c.sha, "head": h.sha},
			Msg: fmt.Sprintf("needs reconciliation: %s, and commits were then made on top of Sluice's commit %s (%s), so Sluice took nothing back: %s is at %s. Restore point %s holds the state before",
				why, c, strings.Join(tracedList(l.above), ", "), headLabel(on), short(h.sha), r.p.ID)})
	}
	if err := r.cas(ctx, rc, on, c.parent, c.sha, undo); err != nil {
		return l, unsettled(&errcode.Error{Code: errcode.HookFailed, Err: err,
			Msg: fmt.Sprintf("needs reconciliation: %s, and Sluice's commit %s could not be taken back (%v): %s is at %s. Restore point %s holds the state before",
				why, c, err, headLabel(on), short(h.sha), r.p.ID)})
	}
	// The restore point stays: the person's hooks ran and may have
	// changed files in the working tree.
	switch {
	case on != ref:
		return l, &errcode.Error{Code: errcode.StaleBase, Data: map[string]string{"head": on},
			Msg: why + ", so Sluice took its commit back and nothing of the card was committed; " + headLabel(on) + " is at " + short(c.parent) + " again"}
	case len(below) > 0:
		return l, staleBase(map[string]string{"HEAD": c.parent}, map[string]string{"HEAD": old})
	}
	return l, &errcode.Error{Code: errcode.HookFailed, Data: map[string]any{"sealed": tree, "got": c.tree},
		Msg: "a commit hook changed what was committed, so the commit was taken back and nothing was committed: the card showed tree " +
			short(tree) + ", the hook's commit had " + short(c.tree)}
}

// untraced is the failure of a commit whose result cannot be traced on
// the branch: it says what is there, and that nothing was taken back.
func (r *run) untraced(h head, on, old string, chain []traced, found bool) error {
	what := "it is the commit the card was for"
	switch {
	case h.sha != old && found:
		what = "on top of the commit the card was for: " + strings.Join(limitList(tracedList(chain), 10), ", ")
	case h.sha != old:
		what = "which does not descend (by first parents, within " + strconv.Itoa(maxTraced) + " commits) from " + short(old) + ", the commit the card was for"
	}
	return unsettled(&errcode.Error{Code: errcode.HookFailed, Data: map[string]any{"head": h.sha},
		Msg: fmt.Sprintf("needs reconciliation: git commit ran, but Sluice's commit is not on %s now (a hook of yours may have moved it), so Sluice took nothing back: %s is at %s, %s. Restore point %s holds the state before",
			headLabel(on), headLabel(on), short(h.sha), what, r.p.ID)})
}

func tracedList(cs []traced) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.String())
	}
	return out
}

// unsettledError is an execution's failure that leaves the repository in
// a state the executor cannot settle: the record becomes
// needs_reconciliation, for a person to look at, not failed.
type unsettledError struct{ error }

func (e *unsettledError) Unwrap() error { return e.error }

func unsettled(err error) error { return &unsettledError{err} }
