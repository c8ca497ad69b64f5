package gitx

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
)

// Brief is the first thing an agent should read about a repository.
type Brief struct {
	Root        string            `json:"root" jsonschema:"canonical repository root (use it as repoPath from now on)"`
	Branch      string            `json:"branch,omitempty" jsonschema:"checked-out branch; empty when detached"`
	Head        string            `json:"head,omitempty" jsonschema:"abbreviated commit id of HEAD"`
	Detached    bool              `json:"detached,omitempty"`
	Unborn      bool              `json:"unborn,omitempty" jsonschema:"no commits yet"`
	Bare        bool              `json:"bare,omitempty" jsonschema:"bare repository: no working tree"`
	Upstream    *Upstream         `json:"upstream,omitempty"`
	Operation   *Operation        `json:"operation,omitempty" jsonschema:"a merge, rebase, cherry-pick, revert, am or bisect in progress"`
	Worktree    Counts            `json:"worktree"`
	Stashes     int               `json:"stashes"`
	Submodules  *SubmoduleSummary `json:"submodules,omitempty"`
	Recent      []Commit          `json:"recent" jsonschema:"latest commits on HEAD, newest first"`
	Conventions Conventions       `json:"conventions"`
	Hints       []string          `json:"hints" jsonschema:"up to three suggested next steps"`
	Partial     []string          `json:"partial,omitempty" jsonschema:"parts that could not be read, with why"`
}

// SubmoduleSummary counts submodules by state.
type SubmoduleSummary struct {
	Total         int `json:"total"`
	Drifted       int `json:"drifted" jsonschema:"checked out at a commit other than the recorded one"`
	Uninitialized int `json:"uninitialized" jsonschema:"not checked out"`
}

// Conventions are habits of the repository an agent should follow.
type Conventions struct {
	DefaultBranch string `json:"defaultBranch,omitempty" jsonschema:"the branch work is merged into (origin/HEAD, else init.defaultBranch, main, master or trunk)"`
	// ConventionalCommits is the share of sampled subjects that follow
	// Conventional Commits ("feat(x): …").
	ConventionalCommits float64 `json:"conventionalCommits" jsonschema:"share of sampled commit subjects in Conventional Commits form, 0 to 1"`
	Sampled             int     `json:"sampled" jsonschema:"commits sampled"`
	LocalBranches       int     `json:"localBranches"`
}

const (
	briefRecent = 5
	briefSample = 50
)

var conventionalRe = regexp.MustCompile(`^[a-z]+(\([^)]+\))?!?: \S`)

// Brief gathers the situation of a repository: a git status, the recent
// commits and the refs. The status is git's and is started first; the
// rest is read in this process while it runs, once it has started (so
// that the reads do not compete with git's start for the CPU): the
// commits where git log's answer is certain (logLocal, kept between
// calls while HEAD and the objects that decided it stay the same), else
// by a git log; the local branches and where origin/HEAD points from the
// runner's reading of the refs (cachedRefs), which starts a for-each-ref
// only when the ref files changed since it was read. A bare repository,
// which has no status, takes the branch HEAD names and its commit from a
// for-each-ref of its own (briefRefsByGit), beside the log.
func (repo *Repo) Brief(ctx context.Context) (*Brief, error) {
	b := &Brief{Root: repo.Root, Bare: repo.Bare, Recent: []Commit{}, Hints: []string{}}
	// Each part keeps its own error: a failed log only makes the brief
	// partial, and of the two that are fatal the status's is reported first.
	var (
		g             errgroup.Group
		st            *StatusResult
		stErr, logErr error
		refErr        error
		commits       []Commit
		refs          briefRefs
	)
	if repo.Bare {
		g.Go(func() error {
			refs, refErr = repo.briefRefsByGit(ctx)
			return nil
		})
		commits, logErr = repo.briefLog(ctx, briefSample)
	} else {
		started := make(chan struct{})
		var once sync.Once
		signal := func() { once.Do(func() { close(started) }) }
		g.Go(func() error {
			// A status that never starts a process signals on its way out.
			defer signal()
			st, stErr = repo.status(ctx, StatusOptions{Limit: 1}, signal)
			return nil
		})
		<-started
		var rr *refReading
		if rr, refErr = repo.cachedRefs(ctx); refErr == nil {
			refs = rr.briefRefs()
			commits, logErr = repo.briefLogNamed(ctx, briefSample, rr.names)
		}
	}
	g.Wait()
	if stErr != nil {
		return nil, stErr
	}
	if refErr != nil {
		return nil, refErr
	}
	branches := refs.branches
	b.Conventions.LocalBranches = len(branches)
	b.Conventions.DefaultBranch = repo.defaultBranch(refs.originHead, branches)

	if st != nil {
		b.Branch, b.Detached, b.Unborn, b.Upstream = st.Branch, st.Detached, st.Unborn, st.Upstream
		b.Head = abbrev(st.Head)
		b.Worktree = st.Counts
		b.Stashes = st.Stashes
	} else {
		b.Branch, b.Head = refs.headName, refs.headSHA
		b.Unborn = logErr != nil && len(branches) == 0
	}
	switch {
	case logErr == nil:
		b.Conventions.Sampled = len(commits)
		conv := 0
		for _, c := range commits {
			if conventionalRe.MatchString(c.Subject) {
				conv++
			}
		}
		if len(commits) > 0 {
			b.Conventions.ConventionalCommits = math.Round(float64(conv)/float64(len(commits))*100) / 100
		}
		if len(commits) > briefRecent {
			commits = commits[:briefRecent]
		}
		b.Recent = commits
	case b.Unborn:
	default:
		b.Partial = append(b.Partial, "recent commits: "+logErr.Error())
	}
	b.Operation = repo.Operation()
	if !repo.Bare {
		b.Submodules = repo.submoduleSummary(st)
	}
	b.Hints = briefHints(b)
	return b, nil
}

func abbrev(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// briefRefs is what the brief takes from the refs, as one for-each-ref
// of refs/heads and refs/remotes/origin/HEAD lists them: the local
// branches by name, the branch origin/HEAD points to, and the branch HEAD
// names with its abbreviated commit (read in a bare repository only).
type briefRefs struct {
	branches          map[string]bool
	originHead        string
	headName, headSHA string
}

// briefRefPatterns are the refs the brief lists.
var briefRefPatterns = []string{"refs/heads", "refs/remotes/origin/HEAD"}

// briefRefsByGit lists the brief's refs with a for-each-ref of its own.
func (repo *Repo) briefRefsByGit(ctx context.Context) (briefRefs, error) {
	out, err := repo.git(ctx, &cmd{sub: []string{"for-each-ref"}, opts: []string{"--format=%(refname)%00%(symref)%00%(HEAD)%00%(objectname:short=12)"},
		revs: briefRefPatterns, limit: 8 << 20})
	if err != nil {
		return briefRefs{}, err
	}
	r := briefRefs{branches: map[string]bool{}}
	for _, line := range strings.Split(string(out.Stdout), "\n") {
		f := strings.Split(line, "\x00")
		if len(f) < 4 {
			continue
		}
		if r.add(f[0], f[1]) && f[2] == "*" {
			r.headName, r.headSHA = strings.TrimPrefix(f[0], "refs/heads/"), f[3]
		}
	}
	return r, nil
}

// briefRefs picks the brief's refs out of a reading of the branches, tags
// and remote-tracking refs: those for-each-ref would list for
// briefRefPatterns, which are all under decoratedNamespaces.
func (rr *refReading) briefRefs() briefRefs {
	r := briefRefs{branches: map[string]bool{}}
	for _, ref := range rr.refs {
		for _, p := range briefRefPatterns {
			// for-each-ref's pattern: the name itself or a prefix of it
			// up to a slash.
			if rest, ok := strings.CutPrefix(ref.name, p); ok && (rest == "" || rest[0] == '/') {
				r.add(ref.name, ref.symref)
				break
			}
		}
	}
	return r
}

// add takes one listed ref into r; it reports whether the ref is counted
// as a branch.
func (r *briefRefs) add(name, symref string) bool {
	if name == "refs/remotes/origin/HEAD" {
		r.originHead = strings.TrimPrefix(symref, "refs/remotes/origin/")
		return false
	}
	r.branches[strings.TrimPrefix(name, "refs/heads/")] = true
	return true
}

// defaultBranch picks the branch work is merged into.
func (repo *Repo) defaultBranch(originHead string, local map[string]bool) string {
	if originHead != "" {
		return originHead
	}
	if v, ok := repo.Config("init.defaultbranch"); ok && local[v] {
		return v
	}
	for _, n := range []string{"main", "master", "trunk", "develop"} {
		if local[n] {
			return n
		}
	}
	return ""
}

// submoduleSummary reads .gitmodules (no git process, no includes) and
// checks which submodules are checked out; drift comes from status.
func (repo *Repo) submoduleSummary(st *StatusResult) *SubmoduleSummary {
	mods := repo.gitmodules()
	if len(mods) == 0 {
		return nil
	}
	s := &SubmoduleSummary{Total: len(mods)}
	for _, m := range mods {
		if !repo.submoduleCheckedOut(m.Path) {
			s.Uninitialized++
		}
	}
	if st != nil {
		s.Drifted = st.submoduleDrift
	}
	return s
}

// submoduleCheckedOut reports whether path (from .gitmodules, checked) has a
// .git of its own.
func (repo *Repo) submoduleCheckedOut(p string) bool {
	_, err := os.Lstat(filepath.Join(repo.Root, filepath.FromSlash(p), ".git"))
	return err == nil
}

func briefHints(b *Brief) []string {
	var h []string
	add := func(format string, a ...any) {
		if len(h) < 3 {
			h = append(h, fmt.Sprintf(format, a...))
		}
	}
	if op := b.Operation; op != nil {
		switch op.Kind {
		case "merge", "rebase", "cherry-pick", "revert", "am":
			msg := "A " + op.Kind + " is in progress"
			if op.Total > 0 {
				msg += fmt.Sprintf(" (step %d of %d)", op.Step, op.Total)
			}
			if b.Worktree.Conflicted > 0 {
				add("%s with %d conflicted path(s): conflict_read shows base, ours and theirs.", msg, b.Worktree.Conflicted)
			} else {
				add("%s: conflict_read shows its state; the person finishes or aborts it.", msg)
			}
		case "bisect":
			add("A bisect is in progress; HEAD is a bisect step, not a branch tip.")
		}
	} else if b.Worktree.Conflicted > 0 {
		add("%d unmerged path(s): conflict_read shows base, ours and theirs.", b.Worktree.Conflicted)
	}
	if b.Unborn {
		add("No commits yet: propose_commit creates the first one.")
	}
	if b.Detached && b.Operation == nil {
		add("HEAD is detached: repo_reflog shows how it got here; propose_branch keeps its commits.")
	}
	if u := b.Upstream; u != nil {
		switch {
		case u.Gone:
			add("Upstream %s is gone (deleted on the remote).", u.Name)
		case u.Behind > 0 && u.Ahead > 0:
			add("Diverged from %s (%d ahead, %d behind): repo_conflict_preflight predicts a merge or rebase.", u.Name, u.Ahead, u.Behind)
		case u.Behind > 0:
			add("%d commit(s) behind %s: repo_conflict_preflight, then propose_merge or propose_rebase.", u.Behind, u.Name)
		}
	}
	if n := b.Worktree.Staged + b.Worktree.Unstaged + b.Worktree.Untracked; n > 0 {
		add("%d staged, %d unstaged, %d untracked: worktree_changes lists them, diff_text shows them.", b.Worktree.Staged, b.Worktree.Unstaged, b.Worktree.Untracked)
	}
	if s := b.Submodules; s != nil && (s.Drifted > 0 || s.Uninitialized > 0) {
		add("Submodules: %d drifted, %d not checked out: submodule_status has details.", s.Drifted, s.Uninitialized)
	}
	if u := b.Upstream; u != nil && !u.Gone && u.Ahead > 0 && u.Behind == 0 {
		add("%d commit(s) not pushed to %s.", u.Ahead, u.Name)
	}
	if b.Stashes > 0 {
		add("%d stash entr(ies) hold set-aside work.", b.Stashes)
	}
	if len(h) == 0 && !b.Unborn {
		add("Clean and in sync: repo_history or commit_details for context.")
	}
	if h == nil {
		h = []string{}
	}
	return h
}

// gitmodule is one entry of .gitmodules.
type gitmodule struct {
	Name, Path, URL, Branch string
}

// gitmodules parses .gitmodules from the working tree with git config
// semantics but without running git: the file is small and its includes
// are not honoured by git for this file either.
func (repo *Repo) gitmodules() []gitmodule {
	if repo.Bare {
		return nil
	}
	// Through an os.Root and only as a regular file: a .gitmodules that is
	// a symlink (which git itself refuses) must not make Sluice read a
	// file elsewhere.
	root, err := os.OpenRoot(repo.Root)
	if err != nil {
		return nil
	}
	defer root.Close()
	if st, err := root.Lstat(".gitmodules"); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	f, err := root.Open(".gitmodules")
	if err != nil {
		return nil
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return parseGitmodules(data)
}

var (
	sectionRe = regexp.MustCompile(`^\s*\[\s*submodule\s+"((?:[^"\\]|\\.)*)"\s*\]\s*$`)
	keyRe     = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9-]*)\s*=\s*(.*?)\s*$`)
)

func parseGitmodules(data []byte) []gitmodule {
	var mods []gitmodule
	idx := map[string]int{}
	cur := -1
	for _, raw := range bytes.Split(data, []byte{'\n'}) {
		line := strings.TrimSpace(string(raw))
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			cur = -1
			if m := sectionRe.FindStringSubmatch(line); m != nil {
				name := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[1])
				if i, ok := idx[name]; ok {
					cur = i
				} else {
					idx[name] = len(mods)
					cur = len(mods)
					mods = append(mods, gitmodule{Name: name})
				}
			}
			continue
		}
		if cur < 0 {
			continue
		}
		m := keyRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v := strings.Trim(m[2], `"`)
		switch strings.ToLower(m[1]) {
		case "path":
			mods[cur].Path = v
		case "url":
			mods[cur].URL = v
		case "branch":
			mods[cur].Branch = v
		}
	}
	out := mods[:0]
	for _, m := range mods {
		// A path that escapes the repository is ignored, as git does.
		if p, err := CheckPath("path", m.Path); err == nil && !strings.HasPrefix(p, "./") {
			m.Path = p
			out = append(out, m)
		}
	}
	return out
}
