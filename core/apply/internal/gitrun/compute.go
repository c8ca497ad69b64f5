package gitrun

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// What sealing computes when a proposal arrives and the executor computes
// again before it writes, so that what lands is what the card showed.

// Head is where a worktree's HEAD is.
type Head struct {
	// Sym is the branch HEAD points to ("refs/heads/main"), or "" when
	// HEAD is detached.
	Sym  string
	SHA  string
	Tree string
}

// HeadOf reads the HEAD of the worktree at dir in one process.
func (g *Git) HeadOf(ctx context.Context, dir string) (Head, error) {
	res, err := g.Run(ctx, Call{Dir: dir, Args: []string{"rev-parse", "HEAD", "HEAD^{tree}", "--symbolic-full-name", "HEAD"}, DashDash: true})
	if err != nil {
		return Head{}, err
	}
	h, err := ParseHead(strings.Split(res.Text(), "\n"))
	if err == nil {
		g.RememberTree(h.SHA, h.Tree)
	}
	return h, err
}

// ParseHead reads the answer of `git rev-parse HEAD HEAD^{tree}
// --symbolic-full-name HEAD`.
func ParseHead(lines []string) (Head, error) {
	if len(lines) < 3 || !ObjectID.MatchString(lines[0]) || !ObjectID.MatchString(lines[1]) {
		return Head{}, errcode.New(errcode.GitFailed, "git rev-parse HEAD gave an unexpected answer")
	}
	h := Head{SHA: lines[0], Tree: lines[1]}
	if lines[2] != "HEAD" {
		h.Sym = lines[2]
	}
	return h, nil
}

// MergeBase is the best common ancestor of a and b, or "".
func (g *Git) MergeBase(ctx context.Context, a, b string) (string, error) {
	res, err := g.Run(ctx, Call{Dir: g.Repo.Root, Args: []string{"merge-base"}, Revs: []string{a, b}, OK: []int{1}})
	if err != nil {
		return "", err
	}
	return res.Text(), nil
}

// MergeTree merges b into a without a worktree or index: git merge-tree
// writes the result's objects and prints its tree, or the conflicting
// paths.
func (g *Git) MergeTree(ctx context.Context, a, b string) (string, []string, error) {
	res, err := g.Run(ctx, Call{Dir: g.Repo.Root, Args: []string{"merge-tree", "--write-tree", "-z", "--name-only", "--no-messages"}, Revs: []string{a, b}, OK: []int{1}})
	if err != nil {
		return "", nil, err
	}
	fields := strings.Split(string(res.Out), "\x00")
	tree := fields[0]
	if res.Exit == 0 {
		return tree, nil, nil
	}
	var files []string
	for _, f := range fields[1:] {
		if f == "" {
			break
		}
		if len(files) == 0 || files[len(files)-1] != f {
			files = append(files, f)
		}
	}
	return tree, files, nil
}

// Rebase runs git rebase of old onto onto (as a asks) in a detached
// temporary worktree outside the repository and returns the rebased tip.
// Hooks stay off. how is gitx.ProfileSigned when the approved rebase runs
// (the person's signing applies to the replayed commits, as it would to
// their own rebase) and gitx.ProfileWrite when sealing computes it
// (unsigned). A temporary worktree that cannot be removed is logged.
func (g *Git) Rebase(ctx context.Context, log *slog.Logger, old, onto string, a *proposal.RebaseArgs, how gitx.Profile) (string, error) {
	tmp, err := os.MkdirTemp("", "sluice-rebase-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	wt := filepath.Join(tmp, "wt")
	if _, err := g.Run(ctx, Call{Dir: g.Repo.Root, Args: []string{"worktree", "add", "--detach", "--quiet"}, Revs: []string{wt, old}}); err != nil {
		return "", err
	}
	defer func() {
		if _, err := g.Run(context.WithoutCancel(ctx), Call{Dir: g.Repo.Root, Args: []string{"worktree", "remove", "--force"}, Revs: []string{wt}}); err != nil {
			log.Warn("apply: could not remove a temporary rebase worktree", "path", wt, "err", err)
		}
	}()
	res, err := g.Run(ctx, Call{Dir: wt, Profile: how, Args: []string{"rebase", "--quiet", "--no-autostash", "--no-update-refs"}, Revs: []string{onto}, OK: []int{1}})
	if err != nil {
		return "", err
	}
	if res.Exit != 0 {
		files := []string{}
		if u, err := g.Run(ctx, Call{Dir: wt, Args: []string{"diff", "--no-ext-diff", "--name-only", "--diff-filter=U", "-z"}}); err == nil {
			for _, f := range strings.Split(string(u.Out), "\x00") {
				if f != "" {
					files = append(files, f)
				}
			}
		}
		if len(files) == 0 {
			return "", Failed("rebase", how, res)
		}
		return "", &errcode.Error{Code: errcode.MergeConflict, Data: map[string]any{"files": files},
			Msg: fmt.Sprintf("rebasing %s onto %s conflicts in %s: %s; nothing was changed",
				a.Branch, a.Onto, proposal.Count(len(files), "file"), strings.Join(LimitList(files, 50), ", "))}
	}
	h, err := g.HeadOf(ctx, wt)
	if err != nil {
		return "", err
	}
	return h.SHA, nil
}

// AddedPaths lists the paths a checkout update from old to new adds (old
// and new are commits or trees): one git process.
func (g *Git) AddedPaths(ctx context.Context, old, new string) ([]string, error) {
	res, err := g.Run(ctx, Call{Dir: g.Repo.Root, Args: []string{"diff-tree", "-r", "-z", "--name-only", "--no-renames", "--diff-filter=A"}, Revs: []string{old, new}})
	if err != nil {
		return nil, err
	}
	added := []string{}
	for _, p := range strings.Split(string(res.Out), "\x00") {
		if p != "" {
			added = append(added, p)
		}
	}
	return added, nil
}

// RequireNoIgnoredInTheWay refuses an update of the worktree at wt from
// old to new that would overwrite an ignored file: one where new has a
// file that old does not.
func (g *Git) RequireNoIgnoredInTheWay(ctx context.Context, wt, old, new string) error {
	added, err := g.AddedPaths(ctx, old, new)
	if err != nil {
		return err
	}
	present := InTheWay(wt, added)
	if len(present) == 0 {
		return nil
	}
	res, err := g.Run(ctx, Call{Dir: wt, Args: []string{"ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"}, Paths: present, DashDash: true})
	if err != nil {
		return err
	}
	var ignored []string
	for _, p := range strings.Split(string(res.Out), "\x00") {
		if p != "" {
			ignored = append(ignored, strings.TrimSuffix(p, "/"))
		}
	}
	if len(ignored) == 0 {
		return nil
	}
	return &errcode.Error{Code: errcode.DirtyWorktree, Data: map[string]any{"worktree": wt, "files": LimitList(ignored, 50)},
		Msg: fmt.Sprintf("the reset would overwrite ignored files in %s, which no restore point can bring back: %s; move them away, then retry it from its card. Nothing was changed",
			wt, strings.Join(LimitList(ignored, 20), ", "))}
}

// InTheWay lists what stands in the worktree at wt where the added paths
// would go (see Standing), each once.
func InTheWay(wt string, added []string) []string {
	var in []string
	for _, p := range added {
		if at := Standing(wt, p); at != "" && !slices.Contains(in, at) {
			in = append(in, at)
		}
	}
	return in
}

// Standing returns what stands in the worktree at wt where path would
// go: the first of its parents that is not a directory (a file, or a
// symlink, which git would replace rather than write through), or path
// itself when it exists; "" when nothing does.
func Standing(wt string, path string) string {
	parts := strings.Split(path, "/")
	for i := 1; i < len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		st, err := os.Lstat(filepath.Join(wt, filepath.FromSlash(p)))
		if err != nil {
			// A parent that is missing has nothing under it.
			return ""
		}
		if !st.IsDir() {
			return p
		}
	}
	if _, err := os.Lstat(filepath.Join(wt, filepath.FromSlash(path))); err == nil {
		return path
	}
	return ""
}

// LimitList keeps the first n of s and says how many more there are.
func LimitList(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
}
