package restorepoint

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// A restore point is taken as loose refs under RestorePrefix (one cheap
// update-ref transaction before an operation runs). Left there, a month
// of executions is about 2,900 loose refs, and every git that enumerates
// refs pays for each: the person's `git log --all -20` and `git
// for-each-ref` took 30–64× what they take without them. The executor
// (apply.Executor.FoldRestorePoints, on the schedule of the sealed-refs
// fold) therefore folds every ended restore point into FoldedRef:
//
//	FoldedRef → root commit, tree:
//	  <day>/                          a tree per UTC day points were taken in (2006-01-02)
//	  <day>/<taken>_<id>/             a tree per restore point (taken: 20060102T150405.000000000Z)
//	  <day>/<taken>_<id>/<ref>        a gitlink per ref the point had, named as under
//	                                  RestorePrefix+id+"/" with "/" written %2F and "%" %25
//	                                  (meta, end, ref%2Frefs%2Fheads%2Fmain, worktree%2F0)
//	  labels                          a blob, "<id>\t<label>\n" per folded point, so that
//	                                  a new point's label is made unique without
//	                                  reading every record
//
// The gitlinks say exactly which commit each of the point's refs named,
// so a folded point reads as its refs did (meta and end are still the
// commits whose messages hold the record). A gitlink keeps nothing alive,
// so the root commit's parents are one commit per day (in the order of
// the days), and each day commit's parents are every commit that day's
// gitlinks name: every object a folded point needs is reachable from
// FoldedRef through parents, and gc keeps it.
//
// Why commits dated at the epoch: anything reachable from a ref is walked
// by `git log --all`, and only refs/ are enumerated by it and protected by
// gc, so the restore points' commits cannot be both kept and unwalkable.
// git walks newest first, though, and parses a commit's parents only when
// it shows the commit. The root and day commits are dated 1970-01-01, so
// the person's `git log --all -20` parses the root commit alone and shows
// their own commits; the points' commits come last in a full `git log
// --all` (as they always appeared in it). Measured on 3,000 points whose
// commits are loose objects: `git log --all -20` 5–6 ms with the epoch
// root, 4–7 ms without any Sluice ref, 77–109 ms when the same root is
// dated now (it is then listed first and its 3,000 parents parsed), 124
// ms as 3,000 loose refs. `for-each-ref` and decorations see one ref.
//
// A folded point is never written again: only ended points are folded,
// and retention drops whole points. The index costs a reader one ls-tree
// of the point trees (no blob) to find a page, and one cat-file of the
// page's meta and end commits.
const FoldedRef = "refs/sluice/restore-points"

// foldedTakenLayout names a folded point's tree by when it was taken; it
// is fixed-width, so names sort by time.
const foldedTakenLayout = "20060102T150405.000000000Z"

// FoldedDayLayout names the day trees.
const FoldedDayLayout = "2006-01-02"

// FoldedName is the path of restore point id, taken at at, in FoldedRef's
// tree: "<day>/<taken>_<id>".
func FoldedName(id string, at time.Time) string {
	at = at.UTC()
	return at.Format(FoldedDayLayout) + "/" + at.Format(foldedTakenLayout) + "_" + id
}

// parseFoldedName reads a point tree's path.
func parseFoldedName(path string) (id string, at time.Time, ok bool) {
	day, name, ok := strings.Cut(path, "/")
	if !ok || len(name) < len(foldedTakenLayout)+2 || name[len(foldedTakenLayout)] != '_' {
		return "", time.Time{}, false
	}
	at, err := time.Parse(foldedTakenLayout, name[:len(foldedTakenLayout)])
	id = name[len(foldedTakenLayout)+1:]
	if err != nil || !proposal.ValidID(id) || at.Format(FoldedDayLayout) != day {
		return "", time.Time{}, false
	}
	return id, at, true
}

// EscapeRefName is the gitlink name of a restore point's ref suffix
// ("ref/refs/heads/main" → "ref%2Frefs%2Fheads%2Fmain").
func EscapeRefName(suffix string) string {
	return strings.ReplaceAll(strings.ReplaceAll(suffix, "%", "%25"), "/", "%2F")
}

// UnescapeRefName undoes EscapeRefName.
func UnescapeRefName(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "%2F", "/"), "%25", "%")
}

// FoldedPoint is one restore point in FoldedRef.
type FoldedPoint struct {
	ID string
	// Path is its tree's path ("<day>/<taken>_<id>"), Tree that tree.
	Path, Tree string
	At         time.Time
}

// Day is the day tree the point is in.
func (p FoldedPoint) Day() string { d, _, _ := strings.Cut(p.Path, "/"); return d }

// Folded is FoldedRef as read: its commit ("" when there is none), its
// tree, the day trees and the day commits (the root commit's parents, in
// the order of the days), and every folded point.
type Folded struct {
	Commit, Tree string
	Days         map[string]string // day → tree
	DayCommits   map[string]string // day → commit; empty when the parents do not match the days
	Points       map[string]FoldedPoint
}

// ReadFolded reads FoldedRef's index: the ref, its root tree and its day
// trees, in three git processes.
func ReadFolded(ctx context.Context, repo *gitx.Repo) (*Folded, error) {
	f := &Folded{Days: map[string]string{}, DayCommits: map[string]string{}, Points: map[string]FoldedPoint{}}
	out, err := repo.ReadGit(ctx, "for-each-ref", []string{"--format=%(objectname) %(tree) %(parent)"}, []string{FoldedRef}, nil, 0)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(string(out.Stdout))
	if len(fields) < 2 {
		return f, nil
	}
	f.Commit, f.Tree = fields[0], fields[1]
	parents := fields[2:]
	// The root lists the days, the days their points: the points' own
	// trees are not read.
	root, err := lsTrees(ctx, repo, f.Tree, nil)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for day, t := range root {
		f.Days[day] = t
		dirs = append(dirs, day+"/")
	}
	if len(dirs) > 0 {
		slices.Sort(dirs)
		points, err := lsTrees(ctx, repo, f.Tree, dirs)
		if err != nil {
			return nil, err
		}
		for path, t := range points {
			if id, at, ok := parseFoldedName(path); ok {
				f.Points[id] = FoldedPoint{ID: id, Path: path, Tree: t, At: at}
			}
		}
	}
	days := slices.Sorted(maps.Keys(f.Days))
	if len(days) == len(parents) {
		for i, d := range days {
			f.DayCommits[d] = parents[i]
		}
	}
	return f, nil
}

// lsTrees lists the trees in tree (under the directories dirs, when
// given) by path.
func lsTrees(ctx context.Context, repo *gitx.Repo, tree string, dirs []string) (map[string]string, error) {
	// (git 2.39's ls-tree lists nothing for "--end-of-options <tree> --"
	// with no path after it: Paths only when there are some.)
	res, err := repo.Run(ctx, gitx.Call{Profile: gitx.ProfileRead, Args: []string{"ls-tree", "-z"}, Revs: gitx.Revs(tree),
		Paths: gitxPaths(dirs), Limit: 64 << 20})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, l := range bytes.Split(res.Stdout, []byte{0}) {
		meta, path, ok := strings.Cut(string(l), "\t")
		if m := strings.Fields(meta); ok && len(m) == 3 && m[1] == "tree" {
			out[path] = m[2]
		}
	}
	return out, nil
}

// FoldedLabelsName is the blob of labels in FoldedRef's tree.
const FoldedLabelsName = "labels"

// FoldedLabels reads the labels blob of FoldedRef's tree (tree as
// ReadFolded read it; "" for none): id → label.
func FoldedLabels(ctx context.Context, repo *gitx.Repo, tree string) (map[string]string, error) {
	out := map[string]string{}
	if tree == "" {
		return out, nil
	}
	res, err := repo.ReadGit(ctx, "cat-file", []string{"-p"}, []string{tree + ":" + FoldedLabelsName}, []int{128}, 0)
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(string(res.Stdout), "\n") {
		if id, label, ok := strings.Cut(l, "\t"); ok && proposal.ValidID(id) {
			out[id] = label
		}
	}
	return out, nil
}

// Labels are the labels of every restore point of repo, as a new one's
// is made unique against (see UniqueLabel): the loose points' records and
// FoldedRef's labels blob, not every folded record.
func Labels(ctx context.Context, repo *gitx.Repo) (map[string]bool, error) {
	loose, err := readLoose(ctx, repo, RestorePrefix+"*/meta")
	if err != nil {
		return nil, err
	}
	tree, err := repo.ReadGit(ctx, "for-each-ref", []string{"--format=%(tree)"}, []string{FoldedRef}, nil, 0)
	if err != nil {
		return nil, err
	}
	folded, err := FoldedLabels(ctx, repo, strings.TrimSpace(string(tree.Stdout)))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, rp := range loose {
		out[Label(rp)] = true
	}
	for _, l := range folded {
		out[l] = true
	}
	return out, nil
}

// FoldedRefs lists the refs of the folded points under paths (their
// trees' paths): path → ref suffix (meta, end, ref/…, worktree/n) →
// commit.
func FoldedRefs(ctx context.Context, repo *gitx.Repo, tree string, paths []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	if len(paths) == 0 {
		return out, nil
	}
	// (git 2.39's ls-tree lists nothing for "--end-of-options <tree> --"
	// with no path after it; every call here names paths.)
	res, err := repo.Run(ctx, gitx.Call{Profile: gitx.ProfileRead, Args: []string{"ls-tree", "-r", "-z"}, Revs: gitx.Revs(tree),
		Paths: gitxPaths(paths), Limit: 64 << 20})
	if err != nil {
		return nil, err
	}
	for _, l := range bytes.Split(res.Stdout, []byte{0}) {
		meta, path, ok := strings.Cut(string(l), "\t")
		m := strings.Fields(meta)
		if !ok || len(m) != 3 || m[1] != "commit" {
			continue
		}
		i := strings.LastIndexByte(path, '/')
		if i < 0 {
			continue
		}
		p := path[:i]
		if out[p] == nil {
			out[p] = map[string]string{}
		}
		out[p][UnescapeRefName(path[i+1:])] = m[2]
	}
	return out, nil
}

func gitxPaths(paths []string) []gitx.Path {
	out := make([]gitx.Path, len(paths))
	for i, p := range paths {
		out[i] = gitx.Path(p)
	}
	return out
}

// commitMessages reads, in one git cat-file, the message of the commit
// each object name names (a "<tree>:<path>" of a gitlink too), in order:
// nil for one that is missing or not a commit.
func commitMessages(ctx context.Context, repo *gitx.Repo, names []string) ([][]byte, error) {
	out := make([][]byte, len(names))
	if len(names) == 0 {
		return out, nil
	}
	var in bytes.Buffer
	for _, s := range names {
		in.WriteString(s + "\n")
	}
	res, err := repo.Run(ctx, gitx.Call{Profile: gitx.ProfileRead, Args: []string{"cat-file", "--batch"}, Stdin: &in, Limit: 256 << 20})
	if err != nil {
		return nil, err
	}
	b := res.Stdout
	for i := range names {
		head, rest, ok := bytes.Cut(b, []byte{'\n'})
		if !ok {
			return nil, fmt.Errorf("restorepoint: git cat-file --batch answered %d of %d", i, len(names))
		}
		f := strings.Fields(string(head))
		if len(f) != 3 {
			b = rest // "<name> missing"
			continue
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n+1 > len(rest) {
			return nil, fmt.Errorf("restorepoint: git cat-file --batch: unexpected output")
		}
		if f[1] == "commit" {
			if _, msg, ok := bytes.Cut(rest[:n], []byte("\n\n")); ok {
				out[i] = msg
			}
		}
		b = rest[n+1:]
	}
	return out, nil
}
