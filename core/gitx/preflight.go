package gitx

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/core/errcode"
)

// PreflightConflict is one path the operation would leave unmerged.
type PreflightConflict struct {
	Path     string   `json:"path"`
	Kinds    []string `json:"kinds" jsonschema:"git's conflict types for the path: contents, add/add, modify/delete, rename/delete, rename/rename, file/directory, binary, submodule, …"`
	Messages []string `json:"messages,omitempty" jsonschema:"git's own explanation"`
	Commits  []string `json:"commits,omitempty" jsonschema:"rebase: abbreviated ids of your commits that touch the path"`
}

// RebaseForecast adds what a rebase would replay.
type RebaseForecast struct {
	Commits   int      `json:"commits" jsonschema:"non-merge commits of ours that would be replayed onto theirs"`
	Method    string   `json:"method" jsonschema:"how the prediction was made"`
	Caveat    string   `json:"caveat"`
	Replayed  []Commit `json:"replayed" jsonschema:"the commits to replay, oldest first (up to 30)"`
	Truncated bool     `json:"truncated,omitempty"`
}

// Preflight predicts a merge or rebase without touching anything.
type Preflight struct {
	Operation    string              `json:"operation" jsonschema:"merge (theirs into ours) or rebase (ours onto theirs)"`
	Ours         CommitRef           `json:"ours"`
	Theirs       CommitRef           `json:"theirs"`
	MergeBase    string              `json:"mergeBase,omitempty" jsonschema:"full id of the best common ancestor"`
	Outcome      string              `json:"outcome" jsonschema:"up_to_date (nothing to do), fast_forward, clean, conflicts or unrelated_histories"`
	Clean        bool                `json:"clean" jsonschema:"the operation would complete without conflicts"`
	Conflicts    []PreflightConflict `json:"conflicts"`
	FilesChanged int                 `json:"filesChanged" jsonschema:"files in ours that the result would change"`
	Rebase       *RebaseForecast     `json:"rebase,omitempty"`
	Untouched    string              `json:"untouched" jsonschema:"what this call did not change"`
}

// MinMergeTree is the oldest git with merge-tree --write-tree, which the
// conflict preflight reads and the executor computes merges with.
var MinMergeTree = Version{2, 38, 0}

// ConflictPreflight predicts merging theirs into ours (or rebasing ours
// onto theirs) with git merge-tree --write-tree. The objects merge-tree
// writes go to a temporary object directory that is deleted afterwards, so
// refs, index, working tree and even the object store are left as they
// were. Custom merge drivers are never run: if the repository selects one,
// the prediction is refused.
func (repo *Repo) ConflictPreflight(ctx context.Context, ours, theirs, operation string) (*Preflight, error) {
	if !repo.r.version.AtLeast(MinMergeTree) {
		return nil, errcode.New(errcode.Unsupported, "repo_conflict_preflight needs git %s or newer (found %s)", MinMergeTree, repo.r.version)
	}
	switch operation {
	case "":
		operation = "merge"
	case "merge", "rebase":
	default:
		return nil, errcode.New(errcode.InvalidArgument, "operation must be merge or rebase")
	}
	if ours == "" {
		ours = "HEAD"
	}
	// Every argument is checked before any git process starts.
	if err := CheckRev("theirs", theirs); err != nil {
		return nil, err
	}
	if err := CheckRev("ours", ours); err != nil {
		return nil, err
	}
	oursSHA, err := repo.ResolveCommit(ctx, "ours", ours)
	if err != nil {
		return nil, err
	}
	theirsSHA, err := repo.ResolveCommit(ctx, "theirs", theirs)
	if err != nil {
		return nil, err
	}
	p := &Preflight{Operation: operation, Conflicts: []PreflightConflict{},
		Ours:      CommitRef{SHA: oursSHA, Label: ours},
		Theirs:    CommitRef{SHA: theirsSHA, Label: theirs},
		Untouched: "refs, index, working tree, config and object store: merge-tree wrote only to a temporary object directory, since deleted"}
	if err := repo.refuseMergeDrivers(ctx, oursSHA, theirsSHA); err != nil {
		return nil, err
	}
	subjects, err := repo.subjects(ctx, []string{oursSHA, theirsSHA})
	if err != nil {
		return nil, err
	}
	p.Ours.Subject, p.Theirs.Subject = clip(subjects[oursSHA], 120), clip(subjects[theirsSHA], 120)
	mb, err := repo.git(ctx, &cmd{sub: []string{"merge-base"}, revs: []string{oursSHA, theirsSHA}, okExit: []int{1}, limit: 4096})
	if err != nil {
		return nil, err
	}
	p.MergeBase = strings.TrimSpace(string(mb.Stdout))
	switch {
	case p.MergeBase == "":
		p.Outcome = "unrelated_histories"
		return p, nil
	case p.MergeBase == theirsSHA:
		p.Outcome, p.Clean = "up_to_date", true
		return p, nil
	case p.MergeBase == oursSHA:
		p.Outcome, p.Clean = "fast_forward", true
		n, err := repo.countFiles(ctx, nil, oursSHA, theirsSHA)
		if err != nil {
			return nil, err
		}
		p.FilesChanged = n
		if operation == "rebase" {
			p.Rebase = &RebaseForecast{Method: "ours is an ancestor of theirs", Caveat: "nothing to replay: the rebase only moves the branch", Replayed: []Commit{}}
		}
		return p, nil
	}

	tmp, err := os.MkdirTemp("", "sluice-merge-tree-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	objEnv := []string{"GIT_OBJECT_DIRECTORY=" + tmp, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(repo.CommonDir, "objects")}
	out, err := repo.git(ctx, &cmd{sub: []string{"merge-tree"}, opts: []string{"--write-tree", "-z", "--messages"}, revs: []string{oursSHA, theirsSHA},
		env: objEnv, okExit: []int{1}, limit: 16 << 20})
	if err != nil {
		return nil, err
	}
	tree, conflicts := parseMergeTree(out.Stdout)
	p.Clean = out.ExitCode == 0
	p.Conflicts = conflicts
	if p.Clean {
		p.Outcome = "clean"
	} else {
		p.Outcome = "conflicts"
	}
	if isHex(tree) {
		if p.FilesChanged, err = repo.countFiles(ctx, objEnv, oursSHA, tree); err != nil {
			return nil, err
		}
	}
	if operation == "rebase" {
		if p.Rebase, err = repo.rebaseForecast(ctx, oursSHA, theirsSHA, p.Conflicts); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// countFiles counts files that differ between two trees or commits.
func (repo *Repo) countFiles(ctx context.Context, env []string, a, b string) (int, error) {
	out, err := repo.git(ctx, &cmd{sub: []string{"diff-tree"}, opts: []string{"-r", "-z", "--name-only", "--no-commit-id"}, revs: []string{a, b}, dashdash: true, env: env, limit: 16 << 20})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range bytes.Split(out.Stdout, []byte{0}) {
		if len(p) > 0 {
			n++
		}
	}
	return n, nil
}

var conflictTypeRe = regexp.MustCompile(`^CONFLICT \(([^)]+)\)`)

// parseMergeTree reads merge-tree --write-tree -z output: the tree id,
// conflicted stages up to an empty record, then messages as
// "<n>\0<path>…\0<type>\0<message>\0".
func parseMergeTree(b []byte) (string, []PreflightConflict) {
	recs := strings.Split(string(b), "\x00")
	if len(recs) == 0 {
		return "", nil
	}
	tree := recs[0]
	byPath := map[string]*PreflightConflict{}
	var order []string
	add := func(p string) *PreflightConflict {
		c := byPath[p]
		if c == nil {
			c = &PreflightConflict{Path: p, Kinds: []string{}}
			byPath[p] = c
			order = append(order, p)
		}
		return c
	}
	i := 1
	for ; i < len(recs) && recs[i] != ""; i++ {
		if _, p, ok := strings.Cut(recs[i], "\t"); ok {
			add(p)
		}
	}
	i++ // the empty record
	for i < len(recs) {
		n, err := strconv.Atoi(recs[i])
		if err != nil || n < 0 || i+n+2 >= len(recs) {
			break
		}
		paths := recs[i+1 : i+1+n]
		typ, msg := recs[i+1+n], strings.TrimSpace(recs[i+2+n])
		i += n + 3
		m := conflictTypeRe.FindStringSubmatch(typ)
		if m == nil {
			continue // Auto-merging and other notes
		}
		for _, p := range paths {
			// A message may name a path git did not list as unmerged (the
			// other side of a rename): report it all the same.
			c := add(p)
			if !slices.Contains(c.Kinds, m[1]) {
				c.Kinds = append(c.Kinds, m[1])
			}
			if len(c.Messages) < 3 {
				c.Messages = append(c.Messages, clip(msg, 300))
			}
		}
	}
	out := []PreflightConflict{}
	for _, p := range order {
		out = append(out, *byPath[p])
	}
	return tree, out
}

// rebaseForecast lists the commits a rebase of ours onto theirs would
// replay and which of them touch the predicted conflicts.
func (repo *Repo) rebaseForecast(ctx context.Context, ours, theirs string, conflicts []PreflightConflict) (*RebaseForecast, error) {
	f := &RebaseForecast{
		Method: "one three-way merge of the two tips (git merge-tree)",
		Caveat: "a rebase replays commits one by one: it can stop on a commit even when the tips merge cleanly, and the reverse",
	}
	commits, err := repo.logCommits(ctx, logOpts{opts: []string{"--no-merges", "--reverse", "--max-count=1000"}, revs: []string{ours, "^" + theirs}})
	if err != nil {
		return nil, err
	}
	f.Commits = len(commits)
	f.Replayed = commits
	if len(commits) > 30 {
		f.Replayed, f.Truncated = commits[:30], true
	}
	if len(conflicts) == 0 {
		return f, nil
	}
	// A log that fails leaves its conflict without commits; the forecast
	// stands. Each goroutine writes only its own conflict.
	var g errgroup.Group
	g.SetLimit(4)
	for i := range conflicts {
		if i == 20 {
			break
		}
		c := &conflicts[i]
		p := c.Path
		if strings.HasPrefix(p, "-") {
			p = "./" + p
		}
		g.Go(func() error {
			cs, err := repo.logCommits(ctx, logOpts{opts: []string{"--no-merges", "--reverse", "--max-count=20"}, revs: []string{ours, "^" + theirs}, paths: []string{p}})
			if err != nil {
				return nil
			}
			for _, x := range cs {
				c.Commits = append(c.Commits, x.SHA)
			}
			return nil
		})
	}
	g.Wait()
	return f, nil
}

var mergeAttrRe = regexp.MustCompile(`(?:^|\s)merge=(\S+)`)

// refuseMergeDrivers fails when a merge of these commits could run a
// custom merge driver: one is configured and either merge.default names
// it or an attributes source selects it.
func (repo *Repo) refuseMergeDrivers(ctx context.Context, commits ...string) error {
	if len(repo.mergeDrivers) == 0 {
		return nil
	}
	configured := map[string]bool{}
	for _, d := range repo.mergeDrivers {
		configured[d] = true
	}
	used := map[string]bool{}
	if d, ok := repo.Config("merge.default"); ok && configured[d] {
		used[d] = true
	}
	scan := func(text []byte) {
		for _, m := range mergeAttrRe.FindAllSubmatch(text, -1) {
			if configured[string(m[1])] {
				used[string(m[1])] = true
			}
		}
	}
	// Attribute files outside the trees.
	files := []string{filepath.Join(repo.CommonDir, "info", "attributes")}
	if f, ok := repo.Config("core.attributesfile"); ok {
		files = append(files, includeTarget(f, filepath.Join(repo.Root, "x")))
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		files = append(files, filepath.Join(x, "git", "attributes"))
	} else if h, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(h, ".config", "git", "attributes"))
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			scan(b)
		}
	}
	// .gitattributes in both commits and in the working tree.
	// git grep has no --end-of-options; the commits are full ids this
	// package resolved, so they go with the options.
	grepArgs := []string{"-I", "-l", "-z", "-F", "-e", "merge="}
	for _, c := range commits {
		if isHex(c) {
			grepArgs = append(grepArgs, c)
		}
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"grep"}, opts: grepArgs, dashdash: true, okExit: []int{1}, limit: 16 << 20})
	if err != nil {
		return err
	}
	var specs []string
	for _, rec := range bytes.Split(out.Stdout, []byte{0}) {
		if s := string(rec); s != "" && (strings.HasSuffix(s, "/.gitattributes") || strings.HasSuffix(s, ":.gitattributes")) {
			specs = append(specs, s)
		}
	}
	blobs, err := repo.readBlobs(ctx, specs, 1<<20)
	if err != nil {
		return err
	}
	for _, b := range blobs {
		scan(b.data)
	}
	if !repo.Bare {
		ls, err := repo.git(ctx, &cmd{sub: []string{"ls-files"}, opts: []string{"-z"}, limit: 64 << 20})
		if err != nil {
			return err
		}
		for _, rec := range bytes.Split(ls.Stdout, []byte{0}) {
			p := string(rec)
			if p == ".gitattributes" || strings.HasSuffix(p, "/.gitattributes") {
				if data, _, err := repo.readWorktreeFile(p, 1<<20); err == nil {
					scan(data)
				}
			}
		}
	}
	if len(used) == 0 {
		return nil
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	return &errcode.Error{Code: errcode.Unsupported,
		Msg:  "the repository selects custom merge drivers; predicting this merge would run them, so Sluice does not: " + strings.Join(names, ", "),
		Data: map[string]any{"mergeDrivers": names}}
}
