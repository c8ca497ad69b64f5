package gitx

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/core/errcode"
)

// FleetOptions choose the repositories of a fleet call.
type FleetOptions struct {
	// RepoPaths are absolute repository paths, each confined to the roots.
	RepoPaths []string
	// Under are directories searched for repositories (depth-limited). If
	// both are empty, every allowed root is searched.
	Under []string
	// Depth bounds the search below each directory.
	Depth int
	// MaxRepos bounds how many repositories are looked at.
	MaxRepos int
}

// Fleet limits.
const (
	DefaultFleetDepth = 3
	MaxFleetDepth     = 6
	DefaultFleetRepos = 50
	MaxFleetRepos     = 500
	fleetParallel     = 4
	fleetRepoTimeout  = 10 * time.Second
)

// FleetError is a repository that could not be read.
type FleetError struct {
	Path    string       `json:"path"`
	Code    errcode.Code `json:"code"`
	Message string       `json:"message"`
}

// skipDirs are never descended into while looking for repositories.
var skipDirs = map[string]bool{"node_modules": true, "vendor": true, ".cache": true, "target": true, "dist": true, "build": true, "__pycache__": true, ".venv": true}

// discover resolves the repositories of a fleet call: explicit paths are
// confined one by one; searches walk real directories only (no symlinks)
// and stop descending at a repository.
func (r *Runner) discover(roots Roots, o FleetOptions) (paths []string, errs []FleetError, truncated bool, err error) {
	max, depth, err := fleetLimits(o)
	if err != nil {
		return nil, nil, false, err
	}
	set := &repoSet{max: max, seen: map[string]bool{}}
	for i, p := range o.RepoPaths {
		canon, cerr := roots.Confine(p)
		if cerr != nil {
			// The path is not echoed back: index it instead.
			errs = append(errs, FleetError{Path: fmt.Sprintf("repoPaths[%d]", i), Code: codeOf(cerr), Message: cerr.Error()})
			continue
		}
		if !set.add(canon) {
			break
		}
	}
	under := o.Under
	if len(o.RepoPaths) == 0 && len(under) == 0 {
		under = roots
	}
	for i, u := range under {
		canon, cerr := roots.Confine(u)
		if cerr != nil {
			errs = append(errs, FleetError{Path: fmt.Sprintf("under[%d]", i), Code: codeOf(cerr), Message: cerr.Error()})
			continue
		}
		if werr := walkRepos(canon, depth, set.add); werr != nil {
			return nil, nil, false, werr
		}
		if set.truncated {
			break
		}
	}
	return set.paths, errs, set.truncated, nil
}

// fleetLimits checks o's bounds and entries and fills in the defaults.
func fleetLimits(o FleetOptions) (max, depth int, err error) {
	max = o.MaxRepos
	if max <= 0 {
		max = DefaultFleetRepos
	}
	if max > MaxFleetRepos {
		return 0, 0, errcode.New(errcode.InvalidArgument, "maxRepos must be at most %d", MaxFleetRepos)
	}
	depth = o.Depth
	if depth <= 0 {
		depth = DefaultFleetDepth
	}
	if depth > MaxFleetDepth {
		return 0, 0, errcode.New(errcode.InvalidArgument, "depth must be at most %d", MaxFleetDepth)
	}
	if len(o.RepoPaths) > MaxFleetRepos || len(o.Under) > 64 {
		return 0, 0, errcode.New(errcode.InvalidArgument, "too many repoPaths or under entries")
	}
	// A malformed entry fails the whole call before anything is read; an
	// entry outside the roots is reported on its own (by index, never
	// echoed) so that a mixed list still gets scanned.
	for name, list := range map[string][]string{"repoPaths": o.RepoPaths, "under": o.Under} {
		for i, p := range list {
			if p == "" || !filepath.IsAbs(p) || strings.HasPrefix(p, "-") || strings.ContainsRune(p, 0) {
				return 0, 0, errcode.New(errcode.InvalidArgument, "%s[%d] must be an absolute path", name, i)
			}
		}
	}
	return max, depth, nil
}

// repoSet collects repository paths once each, up to max.
type repoSet struct {
	max       int
	seen      map[string]bool
	paths     []string
	truncated bool
}

// add adds p unless it is there already; false (and truncated) when the
// set is full.
func (s *repoSet) add(p string) bool {
	if s.seen[p] {
		return true
	}
	if len(s.paths) == s.max {
		s.truncated = true
		return false
	}
	s.seen[p] = true
	s.paths = append(s.paths, p)
	return true
}

// walkRepos finds the repositories under dir, at most depth directories
// down, without entering one (nor a directory of skipDirs), and gives each
// to add until add says stop.
func walkRepos(dir string, depth int, add func(string) bool) error {
	base := strings.Count(dir, string(filepath.Separator))
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != dir && (skipDirs[name] || name == ".git") {
			return fs.SkipDir
		}
		if _, e := os.Lstat(filepath.Join(p, ".git")); e == nil {
			if !add(p) {
				return fs.SkipAll
			}
			return fs.SkipDir
		}
		if strings.Count(p, string(filepath.Separator))-base >= depth {
			return fs.SkipDir
		}
		return nil
	})
}

// codeOf is the code of err when err itself is an *errcode.Error (not one
// it wraps), else internal.
func codeOf(err error) errcode.Code {
	if e, ok := err.(*errcode.Error); ok {
		return e.Code
	}
	return errcode.Internal
}

// forEachRepo opens each repository and runs fn with bounded parallelism
// and a per-repository time limit; failures are collected, not fatal.
func (r *Runner) forEachRepo(ctx context.Context, roots Roots, paths []string, fn func(ctx context.Context, repo *Repo, i int) error) []FleetError {
	// Each repository's failure is kept in its own slot: one failing does
	// not stop the others, so no error goes to the group.
	failed := make([]error, len(paths))
	var g errgroup.Group
	g.SetLimit(fleetParallel)
	for i, p := range paths {
		g.Go(func() error {
			rctx, cancel := context.WithTimeout(ctx, fleetRepoTimeout)
			defer cancel()
			repo, err := r.Open(rctx, roots, p)
			if err == nil {
				err = fn(rctx, repo, i)
			}
			if err != nil && rctx.Err() != nil && ctx.Err() == nil {
				err = ErrTimeout
			}
			failed[i] = err
			return nil
		})
	}
	g.Wait()
	var errs []FleetError
	for i, err := range failed {
		if err != nil {
			errs = append(errs, FleetError{Path: paths[i], Code: codeOf(err), Message: err.Error()})
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Path < errs[j].Path })
	return errs
}

// RadarReason is one reason a repository needs attention.
type RadarReason struct {
	Code   string `json:"code" jsonschema:"operation, conflicts, diverged, behind, detached, upstream_gone, uncommitted, submodule_drift, unpushed, untracked, stashes, no_upstream or stale_fetch"`
	Detail string `json:"detail"`
}

// RadarRepo is one repository on the radar.
type RadarRepo struct {
	Path      string        `json:"path"`
	Branch    string        `json:"branch,omitempty"`
	Score     int           `json:"score" jsonschema:"urgency: higher needs attention sooner"`
	Reasons   []RadarReason `json:"reasons"`
	FetchedAt string        `json:"fetchedAt,omitempty" jsonschema:"last fetch (ahead/behind are as of then)"`
}

// Radar says which repositories need attention and why.
type Radar struct {
	Scanned        int          `json:"scanned"`
	NeedsAttention []RadarRepo  `json:"needsAttention" jsonschema:"most urgent first"`
	Clean          []string     `json:"clean" jsonschema:"repositories with nothing to report"`
	Errors         []FleetError `json:"errors"`
	Truncated      bool         `json:"truncated,omitempty" jsonschema:"more repositories were found than maxRepos"`
}

var reasonWeight = map[string]int{
	"operation": 50, "conflicts": 50, "diverged": 30, "detached": 20, "upstream_gone": 15, "behind": 15,
	"uncommitted": 12, "submodule_drift": 10, "unpushed": 8, "stale_fetch": 3, "untracked": 3, "stashes": 2, "no_upstream": 2,
}

// Radar looks at every repository of the fleet with one status each.
func (r *Runner) Radar(ctx context.Context, roots Roots, o FleetOptions) (*Radar, error) {
	paths, errs, truncated, err := r.discover(roots, o)
	if err != nil {
		return nil, err
	}
	res := &Radar{Scanned: len(paths), NeedsAttention: []RadarRepo{}, Clean: []string{}, Truncated: truncated}
	rows := make([]*RadarRepo, len(paths))
	errs = append(errs, r.forEachRepo(ctx, roots, paths, func(ctx context.Context, repo *Repo, i int) error {
		row, err := repo.radar(ctx)
		rows[i] = row
		return err
	})...)
	for _, row := range rows {
		if row == nil {
			continue
		}
		if len(row.Reasons) == 0 {
			res.Clean = append(res.Clean, row.Path)
		} else {
			res.NeedsAttention = append(res.NeedsAttention, *row)
		}
	}
	sort.SliceStable(res.NeedsAttention, func(i, j int) bool {
		a, b := res.NeedsAttention[i], res.NeedsAttention[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.Path < b.Path
	})
	sort.Strings(res.Clean)
	if errs == nil {
		errs = []FleetError{}
	}
	res.Errors = errs
	return res, nil
}

func (repo *Repo) radar(ctx context.Context) (*RadarRepo, error) {
	row := &RadarRepo{Path: repo.Root, Reasons: []RadarReason{}}
	add := func(code, format string, a ...any) {
		row.Reasons = append(row.Reasons, RadarReason{Code: code, Detail: fmt.Sprintf(format, a...)})
		row.Score += reasonWeight[code]
	}
	if st, err := os.Stat(filepath.Join(repo.CommonDir, "FETCH_HEAD")); err == nil {
		row.FetchedAt = st.ModTime().UTC().Format(time.RFC3339)
		if time.Since(st.ModTime()) > 14*24*time.Hour {
			add("stale_fetch", "last fetch %d days ago: ahead/behind may be out of date", int(time.Since(st.ModTime()).Hours()/24))
		}
	}
	if repo.Bare {
		return row, nil
	}
	st, err := repo.Status(ctx, StatusOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	row.Branch = st.Branch
	if op := repo.Operation(); op != nil {
		add("operation", "%s in progress", op.Kind)
	}
	if st.Counts.Conflicted > 0 {
		add("conflicts", "%d unmerged path(s)", st.Counts.Conflicted)
	}
	if st.Detached {
		add("detached", "HEAD is detached at %s", abbrev(st.Head))
	}
	if u := st.Upstream; u != nil {
		switch {
		case u.Gone:
			add("upstream_gone", "upstream %s no longer exists", u.Name)
		case u.Ahead > 0 && u.Behind > 0:
			add("diverged", "%d ahead and %d behind %s", u.Ahead, u.Behind, u.Name)
		case u.Behind > 0:
			add("behind", "%d behind %s", u.Behind, u.Name)
		case u.Ahead > 0:
			add("unpushed", "%d commit(s) not on %s", u.Ahead, u.Name)
		}
	} else if st.Branch != "" && !st.Unborn && len(repo.remotes()) > 0 {
		add("no_upstream", "branch %s tracks no upstream", st.Branch)
	}
	if n := st.Counts.Staged + st.Counts.Unstaged - st.submoduleDrift; n > 0 {
		add("uncommitted", "%d staged, %d unstaged", st.Counts.Staged, st.Counts.Unstaged-st.submoduleDrift)
	}
	if st.submoduleDrift > 0 {
		add("submodule_drift", "%d submodule(s) differ from the recorded commit", st.submoduleDrift)
	}
	if st.Counts.Untracked > 0 {
		add("untracked", "%d untracked path(s)", st.Counts.Untracked)
	}
	if st.Stashes > 0 {
		add("stashes", "%d stash entr(ies)", st.Stashes)
	}
	return row, nil
}

// RefMove is how one ref moved during a digest's window.
type RefMove struct {
	Ref     string `json:"ref" jsonschema:"branch or remote-tracking branch"`
	From    string `json:"from,omitempty" jsonschema:"abbreviated commit before the window; empty for a ref created in it"`
	To      string `json:"to" jsonschema:"abbreviated commit now (after the last movement)"`
	Added   int    `json:"added" jsonschema:"commits reachable from to but not from from"`
	Dropped int    `json:"dropped,omitempty" jsonschema:"commits reachable from from but not from to: history was rewritten (reset, rebase, force push)"`
	Moves   int    `json:"moves" jsonschema:"reflog entries in the window"`
	Last    string `json:"last" jsonschema:"the last reflog message"`
	At      string `json:"at" jsonschema:"time of the last movement, RFC 3339"`
}

// DigestRepo is what moved in one repository.
type DigestRepo struct {
	Path     string    `json:"path"`
	Refs     []RefMove `json:"refs" jsonschema:"most recent first, up to 20"`
	Checkout int       `json:"checkouts,omitempty" jsonschema:"HEAD switches in the window"`
	More     int       `json:"moreRefs,omitempty" jsonschema:"refs that moved beyond the 20 listed"`
}

// Digest is what moved across a fleet since a time.
type Digest struct {
	Since     string       `json:"since" jsonschema:"start of the window, RFC 3339"`
	Scanned   int          `json:"scanned"`
	Active    []DigestRepo `json:"active" jsonschema:"repositories where something moved, most recent first"`
	Quiet     int          `json:"quiet" jsonschema:"repositories where nothing moved"`
	Errors    []FleetError `json:"errors"`
	Truncated bool         `json:"truncated,omitempty"`
}

// ParseSince accepts RFC 3339, a date (YYYY-MM-DD) or a duration back from
// now ("36h", "7d", "2w").
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return now.Add(-24 * time.Hour), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if n := len(s); n > 1 {
		if v, err := strconv.Atoi(s[:n-1]); err == nil && v >= 0 {
			switch s[n-1] {
			case 'd':
				return now.Add(-time.Duration(v) * 24 * time.Hour), nil
			case 'w':
				return now.Add(-time.Duration(v) * 7 * 24 * time.Hour), nil
			}
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, errcode.New(errcode.InvalidArgument, "since must be RFC 3339, YYYY-MM-DD or a duration such as 36h, 7d, 2w")
}

// Digest reads the reflogs of every repository of the fleet (files, no
// git) and measures each moved ref with one rev-list.
func (r *Runner) Digest(ctx context.Context, roots Roots, o FleetOptions, since time.Time) (*Digest, error) {
	paths, errs, truncated, err := r.discover(roots, o)
	if err != nil {
		return nil, err
	}
	res := &Digest{Since: since.UTC().Format(time.RFC3339), Scanned: len(paths), Active: []DigestRepo{}, Truncated: truncated}
	rows := make([]*DigestRepo, len(paths))
	errs = append(errs, r.forEachRepo(ctx, roots, paths, func(ctx context.Context, repo *Repo, i int) error {
		row, err := repo.digest(ctx, since)
		rows[i] = row
		return err
	})...)
	last := map[string]string{}
	for _, row := range rows {
		switch {
		case row == nil:
		case len(row.Refs) == 0 && row.Checkout == 0:
			res.Quiet++
		default:
			res.Active = append(res.Active, *row)
			if len(row.Refs) > 0 {
				last[row.Path] = row.Refs[0].At
			}
		}
	}
	sort.SliceStable(res.Active, func(i, j int) bool { return last[res.Active[i].Path] > last[res.Active[j].Path] })
	if errs == nil {
		errs = []FleetError{}
	}
	res.Errors = errs
	return res, nil
}

func (repo *Repo) digest(ctx context.Context, since time.Time) (*DigestRepo, error) {
	if v, _ := repo.Config("extensions.refstorage"); v != "" && v != "files" {
		return nil, errcode.New(errcode.Unsupported, "refs are stored in %s; only the files backend's reflogs can be read", v)
	}
	row := &DigestRepo{Path: repo.Root, Refs: []RefMove{}}
	for _, l := range mustReflog(repo, "HEAD") {
		if !l.when.Before(since) && strings.HasPrefix(l.msg, "checkout:") {
			row.Checkout++
		}
	}
	logs := filepath.Join(repo.CommonDir, "logs")
	var moves []RefMove
	var ids [][3]string
	for _, dir := range []string{"refs/heads", "refs/remotes"} {
		base := filepath.Join(logs, filepath.FromSlash(dir))
		_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(logs, p)
			ref := filepath.ToSlash(rel)
			lines, _ := repo.readReflog(ref)
			var in []reflogLine
			for _, l := range lines {
				if !l.when.Before(since) {
					in = append(in, l)
				}
			}
			if len(in) == 0 {
				return nil
			}
			first, lastL := in[0], in[len(in)-1]
			m := RefMove{Ref: strings.TrimPrefix(strings.TrimPrefix(ref, "refs/heads/"), "refs/"), To: abbrev(lastL.new), Moves: len(in),
				Last: clip(lastL.msg, 120), At: lastL.when.UTC().Format(time.RFC3339)}
			if !isZero(first.old) {
				m.From = abbrev(first.old)
			}
			moves = append(moves, m)
			ids = append(ids, [3]string{first.old, lastL.new, ref})
			return nil
		})
	}
	order := make([]int, len(moves))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return moves[order[a]].At > moves[order[b]].At })
	for n, i := range order {
		if n == 20 {
			row.More = len(order) - 20
			break
		}
		m := moves[i]
		from, to, ref := ids[i][0], ids[i][1], ids[i][2]
		var c *cmd
		switch {
		case !isHex(to) || isZero(to):
		case isHex(from) && !isZero(from):
			c = &cmd{sub: []string{"rev-list"}, opts: []string{"--left-right", "--count"}, revs: []string{from + "..." + to}, limit: 4096}
		default:
			// A ref created in the window: count what no other branch has.
			c = &cmd{sub: []string{"rev-list"}, opts: []string{"--count", to, "--not", "--exclude=" + ref, "--branches", "--remotes"}, limit: 4096}
		}
		if c != nil {
			if out, err := repo.git(ctx, c); err == nil {
				f := strings.Fields(string(out.Stdout))
				if len(f) == 2 {
					m.Dropped, _ = strconv.Atoi(f[0])
					m.Added, _ = strconv.Atoi(f[1])
				} else if len(f) == 1 {
					m.Added, _ = strconv.Atoi(f[0])
				}
			}
		}
		row.Refs = append(row.Refs, m)
	}
	return row, nil
}

func mustReflog(repo *Repo, ref string) []reflogLine {
	l, _ := repo.readReflog(ref)
	return l
}
