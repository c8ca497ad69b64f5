package apply

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/core/restorepoint"
)

// Restore points are taken as loose refs and folded, on the schedule of
// the sealed-refs fold, into the one ref restorepoint.FoldedRef: why, and
// the layout, are at restorepoint.FoldedRef. Here is how a fold stays
// crash-safe:
//
//  1. the loose refs and the index are read (step "restore-fold-read");
//  2. the point trees, the day trees and commits of the days that change,
//     the root tree and the root commit are written: objects nothing
//     refers to yet;
//  3. FoldedRef moves by one compare-and-swap update-ref from the commit
//     read in 1 (step "restore-fold-written" after it): every folded
//     point is now kept and listed by it, and still by its loose refs;
//  4. the folded points' loose refs are deleted in one update-ref
//     transaction, each only if it still names what was folded.
//
// A stop anywhere leaves every point listed and restorable: before 3 by
// its loose refs alone, after it by both (readers take the index's copy,
// which was written whole), and the next fold finds it folded and
// deletes its loose refs. Only points whose operation recorded its end
// are folded (nothing writes to them again), and only those whose every
// ref names a commit (a parent keeps only a commit alive). Retention
// (TendRestorePoints) drops folded points the same way, after recording
// them as expired.

// foldedEpoch dates the root and day commits: see restorepoint.FoldedRef.
var foldedEpoch = []string{"GIT_AUTHOR_DATE=@1 +0000", "GIT_COMMITTER_DATE=@1 +0000"}

// RestoreFold is what one FoldRestorePoints did in a repository.
type RestoreFold struct {
	// Folded is how many restore points were folded now, Loose how many
	// stay loose refs (never ended, holding a non-commit, or left for the
	// next fold by restoreTendBatch), Kept how many the folded ref holds.
	Folded, Loose, Kept int
}

// FoldRestorePoints folds the ended restore points of repo that are
// still loose refs into restorepoint.FoldedRef, the oldest first and at
// most restoreTendBatch of them (git deletes a loose ref in about 3 ms).
// It runs under the repository's lock, never beside an execution or a
// restore.
func (e *Executor) FoldRestorePoints(ctx context.Context, repo string) (RestoreFold, error) {
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return RestoreFold{}, err
	}
	unlock, err := e.lock(ctx, []string{rc.path})
	if err != nil {
		return RestoreFold{}, err
	}
	defer unlock()
	loose, err := restorepoint.ReadLoose(ctx, rc.repo)
	if err != nil {
		return RestoreFold{}, err
	}
	refs, err := rc.looseRestoreRefs(ctx)
	if err != nil {
		return RestoreFold{}, err
	}
	f, err := restorepoint.ReadFolded(ctx, rc.repo)
	if err != nil {
		return RestoreFold{}, err
	}
	var fold []foldPoint
	for _, rp := range loose {
		r := refs[rp.ID]
		if rp.End == nil || r == nil || r.nonCommit || r.refs["meta"] == "" || r.refs["end"] == "" {
			continue
		}
		fold = append(fold, foldPoint{id: rp.ID, path: restorepoint.FoldedName(rp.ID, rp.CreatedAt), label: restorepoint.Label(&rp), refs: r.refs})
	}
	slices.SortFunc(fold, func(a, b foldPoint) int { return strings.Compare(a.path, b.path) })
	out := RestoreFold{Loose: len(refs)}
	if len(fold) > restoreTendBatch {
		fold = fold[:restoreTendBatch]
	}
	// What is left of the loose refs of a point folded already (a stop
	// while they were being deleted): the folded copy is whole.
	folding := map[string]bool{}
	for _, p := range fold {
		folding[p.id] = true
	}
	var leftover []foldPoint
	for id, r := range refs {
		if _, ok := f.Points[id]; ok && !folding[id] {
			leftover = append(leftover, foldPoint{id: id, refs: r.refs})
		}
	}
	e.step("restore-fold-read")
	if len(fold) == 0 && len(leftover) == 0 {
		out.Kept = len(f.Points)
		return out, nil
	}
	if len(fold) > 0 {
		if err := rc.rewriteFolded(ctx, f, fold, nil); err != nil {
			return RestoreFold{}, err
		}
	}
	e.step("restore-fold-written")
	var in bytes.Buffer
	for _, p := range append(fold, leftover...) {
		for _, suffix := range slices.Sorted(maps.Keys(p.refs)) {
			fmt.Fprintf(&in, "delete %s%s/%s %s\n", RestorePrefix, p.id, suffix, p.refs[suffix])
		}
	}
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: restore points folded", "--stdin"}, stdin: in.Bytes()}); err != nil {
		return RestoreFold{}, err
	}
	kept := map[string]bool{}
	for id := range f.Points {
		kept[id] = true
	}
	for _, p := range fold {
		kept[p.id] = true
	}
	out.Folded, out.Loose, out.Kept = len(fold), len(refs)-len(fold)-len(leftover), len(kept)
	return out, nil
}

// foldPoint is a restore point to fold: its id, its tree's path in the
// folded ref, and its refs (suffix under RestorePrefix+id+"/" → commit).
type foldPoint struct {
	id, path, label string
	refs            map[string]string
}

// looseRefs are the loose refs of one restore point.
type looseRefs struct {
	refs map[string]string
	// nonCommit: one names an object that is not a commit.
	nonCommit bool
}

// looseRestoreRefs reads every loose ref under RestorePrefix, by id.
func (rc *repoCtx) looseRestoreRefs(ctx context.Context) (map[string]*looseRefs, error) {
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(refname) %(objectname) %(objecttype)"}, revs: []string{RestorePrefix}})
	if err != nil {
		return nil, err
	}
	out := map[string]*looseRefs{}
	for _, line := range strings.Split(res.text(), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		id, suffix, ok := strings.Cut(strings.TrimPrefix(f[0], RestorePrefix), "/")
		if !ok || suffix == "" {
			continue
		}
		if out[id] == nil {
			out[id] = &looseRefs{refs: map[string]string{}}
		}
		out[id].refs[suffix] = f[1]
		if f[2] != "commit" {
			out[id].nonCommit = true
		}
	}
	return out, nil
}

// rewriteFolded moves restorepoint.FoldedRef from f to hold, besides
// what it holds, the points of add (replacing a point folded already
// under the same id), and no longer the points drop names.
func (rc *repoCtx) rewriteFolded(ctx context.Context, f *restorepoint.Folded, add []foldPoint, drop map[string]bool) error {
	// The days that change, and their points as they become (path →
	// tree; "" for one whose tree is to be written).
	touched := map[string]map[string]string{}
	day := func(d string) map[string]string {
		if touched[d] == nil {
			touched[d] = map[string]string{}
			for _, p := range f.Points {
				if p.Day() == d {
					touched[d][p.Path] = p.Tree
				}
			}
		}
		return touched[d]
	}
	for id := range drop {
		if p, ok := f.Points[id]; ok {
			delete(day(p.Day()), p.Path)
		}
	}
	var trees []string // mktree --batch input, one tree each
	for _, p := range add {
		if old, ok := f.Points[p.id]; ok {
			delete(day(old.Day()), old.Path)
		}
		var b strings.Builder
		for _, suffix := range slices.Sorted(maps.Keys(p.refs)) {
			fmt.Fprintf(&b, "160000 commit %s\t%s\n", p.refs[suffix], restorepoint.EscapeRefName(suffix))
		}
		trees = append(trees, b.String())
	}
	made, err := rc.mktreeBatch(ctx, trees)
	if err != nil {
		return err
	}
	for i, p := range add {
		d, _, _ := strings.Cut(p.path, "/")
		day(d)[p.path] = made[i]
	}
	if len(touched) == 0 {
		return nil
	}
	// The days' trees, then their commits, whose parents are every
	// commit the day's gitlinks name.
	days := slices.Sorted(maps.Keys(touched))
	trees = trees[:0]
	var live []string
	for _, d := range days {
		if len(touched[d]) == 0 {
			continue
		}
		var b strings.Builder
		for _, path := range slices.Sorted(maps.Keys(touched[d])) {
			fmt.Fprintf(&b, "040000 tree %s\t%s\n", touched[d][path], strings.TrimPrefix(path, d+"/"))
		}
		trees, live = append(trees, b.String()), append(live, d)
	}
	if made, err = rc.mktreeBatch(ctx, trees); err != nil {
		return err
	}
	dayTrees := maps.Clone(f.Days)
	dayCommits := maps.Clone(f.DayCommits)
	for _, d := range days {
		delete(dayTrees, d)
		delete(dayCommits, d)
	}
	for i, d := range live {
		dayTrees[d] = made[i]
	}
	expect := f.Commit
	if expect == "" {
		expect = rc.g.zero
	}
	if len(dayTrees) == 0 {
		_, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: no restore points to keep", "-d"}, revs: []string{restorepoint.FoldedRef, expect}})
		return err
	}
	// Every day without its commit gets one: the changed days, and all of
	// them when the root's parents do not match its days.
	for _, d := range slices.Sorted(maps.Keys(dayTrees)) {
		if dayCommits[d] != "" {
			continue
		}
		c, err := rc.foldedDayCommit(ctx, d, dayTrees[d])
		if err != nil {
			return err
		}
		dayCommits[d] = c
	}
	labels, err := rc.foldedLabels(ctx, f, add, drop)
	if err != nil {
		return err
	}
	var root strings.Builder
	fmt.Fprintf(&root, "100644 blob %s\t%s\n", labels, restorepoint.FoldedLabelsName)
	var parents []string
	for _, d := range slices.Sorted(maps.Keys(dayTrees)) {
		fmt.Fprintf(&root, "040000 tree %s\t%s\n", dayTrees[d], d)
		parents = append(parents, dayCommits[d])
	}
	made, err = rc.mktreeBatch(ctx, []string{root.String()})
	if err != nil {
		return err
	}
	c, err := rc.epochCommit(ctx, made[0], parents, "sluice: restore points kept for restoring\n\n"+
		"Each parent keeps one day's restore points; the tree says which commit each one's refs named.\n"+
		"Dated 1970 so that a date-ordered git log lists it last.")
	if err != nil {
		return err
	}
	_, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: keep restore points"}, revs: []string{restorepoint.FoldedRef, c, expect}})
	return err
}

// foldedLabels writes the labels blob of the points f holds and add
// holds, less those drop names, and returns its id.
func (rc *repoCtx) foldedLabels(ctx context.Context, f *restorepoint.Folded, add []foldPoint, drop map[string]bool) (string, error) {
	had, err := restorepoint.FoldedLabels(ctx, rc.repo, f.Tree)
	if err != nil {
		return "", err
	}
	labels := map[string]string{}
	for id := range f.Points {
		if !drop[id] {
			labels[id] = had[id]
		}
	}
	for _, p := range add {
		labels[p.id] = p.label
	}
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(labels)) {
		// A label is one line.
		fmt.Fprintf(&b, "%s\t%s\n", id, strings.NewReplacer("\n", " ", "\r", " ").Replace(labels[id]))
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"hash-object", "-w", "--stdin"}, stdin: []byte(b.String())})
	if err != nil {
		return "", err
	}
	return res.text(), nil
}

// foldedDayCommit writes the commit of one day's tree: its parents are
// every commit the tree's gitlinks name.
func (rc *repoCtx) foldedDayCommit(ctx context.Context, day, tree string) (string, error) {
	// (No "--": git 2.39's ls-tree lists nothing for "--end-of-options
	// <tree> --" with no path after it.)
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"ls-tree", "-r", "-z"}, revs: []string{tree}})
	if err != nil {
		return "", err
	}
	seen := map[string]bool{}
	var parents []string
	for _, l := range strings.Split(string(res.out), "\x00") {
		meta, _, ok := strings.Cut(l, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 && f[1] == "commit" && !seen[f[2]] {
			seen[f[2]] = true
			parents = append(parents, f[2])
		}
	}
	slices.Sort(parents)
	return rc.epochCommit(ctx, tree, parents, "sluice: restore points taken "+day)
}

// epochCommit writes a commit of Sluice's dated at the epoch (see
// restorepoint.FoldedRef) with git commit-tree.
func (rc *repoCtx) epochCommit(ctx context.Context, tree string, parents []string, msg string) (string, error) {
	args := []string{"commit-tree", "--no-gpg-sign"}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: args, revs: []string{tree}, stdin: []byte(msg + "\n"), env: slices.Concat(sluiceIdentity, foldedEpoch)})
	if err != nil {
		return "", err
	}
	return res.text(), nil
}

// mktreeBatch writes trees (each its ls-tree lines) in one git mktree and
// returns their ids in order; git checks that every entry's object is
// there and of its type.
func (rc *repoCtx) mktreeBatch(ctx context.Context, trees []string) ([]string, error) {
	if len(trees) == 0 {
		return nil, nil
	}
	var in bytes.Buffer
	for _, t := range trees {
		in.WriteString(t)
		in.WriteString("\n")
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"mktree", "--batch"}, stdin: in.Bytes()})
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(res.text())
	if len(ids) != len(trees) {
		return nil, fmt.Errorf("apply: git mktree wrote %d trees of %d", len(ids), len(trees))
	}
	return ids, nil
}
