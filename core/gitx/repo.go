package gitx

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/core/errcode"
)

// Repo is an opened repository: its canonical locations, and the
// repository-specific hardening every later git process gets.
type Repo struct {
	r *Runner
	// Root is the canonical top of the working tree (the git directory for
	// a bare repository). Every later process runs there.
	Root      string
	GitDir    string
	CommonDir string
	Bare      bool
	// Linked is true for a linked worktree (git worktree add).
	Linked       bool
	ObjectFormat string
	Shallow      bool
	// Superproject is the superproject's working tree when Root is a
	// submodule's checkout.
	Superproject string

	roots Roots
	// ceilingEnv keeps discovery below the allowed root; filterEnv empties
	// every configured filter driver. Profiles say which they take.
	ceilingEnv string
	filterEnv  []string
	// config holds the effective configuration (all scopes but system
	// and the profile's own -c), lower-cased keys, last value wins.
	config map[string]string
	// filterDrivers and mergeDrivers are the driver names configured in
	// any scope; filters are neutralised on every call, merge drivers are
	// refused where a merge would run them.
	filterDrivers []string
	mergeDrivers  []string
	// configFiles are every config file that was read or could be
	// included; stamps are their state (and that of HEAD and .git) when
	// the repository was opened.
	configFiles []string
	stamps      []stamp
	// logMemo is the brief's last walk of its recent commits (logLocal).
	logMemo logMemo
}

// testHookAfterConfine runs between path confinement and the first git
// process; tests use it to swap a symlink after validation.
var testHookAfterConfine func()

// Open confines repoPath to roots, canonicalises it and finds the
// repository that contains it without looking above the root that allows
// it. Everything afterwards runs in the canonical repository root.
func (r *Runner) Open(ctx context.Context, roots Roots, repoPath string) (*Repo, error) {
	canon, err := roots.Confine(repoPath)
	if err != nil {
		return nil, err
	}
	if testHookAfterConfine != nil {
		testHookAfterConfine()
	}
	// Nothing outside the roots is read by git on an agent's behalf: a
	// .git file or commondir that points out is refused before git runs,
	// and what git discovered is checked again below.
	if err := roots.ConfineGitDirs(canon); err != nil {
		return nil, err
	}
	key := canon + "\x00" + roots.String()
	if repo := r.cache.get(key); repo != nil {
		return repo, nil
	}
	repo, err := r.openCanonical(ctx, roots, canon)
	if err != nil {
		return nil, err
	}
	r.cache.put(key, repo)
	return repo, nil
}

func (r *Runner) openCanonical(ctx context.Context, roots Roots, canon string) (*Repo, error) {
	st, err := os.Stat(canon)
	if err != nil {
		return nil, ErrPathNotFound
	}
	if !st.IsDir() {
		return nil, errcode.New(errcode.InvalidArgument, "repoPath must be a directory")
	}
	ceiling := roots.ceiling(canon)
	env := []string{"GIT_CEILING_DIRECTORIES=" + ceiling}

	var (
		g       errgroup.Group
		cfgOut  *Output
		revArgs = []string{"--path-format=absolute", "--is-bare-repository", "--is-inside-work-tree",
			"--git-dir", "--git-common-dir", "--show-object-format", "--is-shallow-repository",
			"--show-toplevel", "--show-superproject-working-tree"}
	)
	g.Go(func() (err error) {
		cfgOut, err = r.run(ctx, &cmd{dir: canon, sub: []string{"config"}, opts: []string{"--list", "-z", "--show-origin"}, env: env, okExit: []int{1}, limit: 4 << 20})
		return err
	})
	// --show-toplevel dies in a bare repository after the other answers
	// have been printed: exit 128 with complete earlier lines is a bare
	// repository (or the inside of a .git directory).
	revOut, revErr := r.run(ctx, &cmd{dir: canon, sub: []string{"rev-parse"}, opts: revArgs, env: env, okExit: []int{128}, limit: 1 << 20})
	// The configuration's error is the group's only one; it is reported
	// after everything rev-parse can refuse.
	cfgErr := g.Wait()
	if revErr != nil {
		return nil, revErr
	}
	lines := strings.Split(strings.TrimRight(string(revOut.Stdout), "\n"), "\n")
	if len(lines) < 6 {
		return nil, ErrNotARepository
	}
	repo := &Repo{r: r, roots: roots}
	repo.Bare = lines[0] == "true"
	inside := lines[1] == "true"
	repo.GitDir = lines[2]
	repo.CommonDir = lines[3]
	repo.ObjectFormat = lines[4]
	repo.Shallow = lines[5] == "true"
	switch {
	case repo.Bare:
		repo.Root = repo.GitDir
	case !inside || revOut.ExitCode != 0 || len(lines) < 7:
		return nil, errcode.New(errcode.InvalidArgument, "repoPath is inside a .git directory; name the working tree instead")
	default:
		repo.Root = lines[6]
		if len(lines) > 7 {
			repo.Superproject = lines[7]
		}
	}
	for _, p := range []*string{&repo.Root, &repo.GitDir, &repo.CommonDir} {
		c, err := filepath.EvalSymlinks(*p)
		if err != nil {
			return nil, ErrNotARepository
		}
		*p = c
	}
	// The working tree, the git directory and the common directory are
	// all confined: a working tree inside the roots whose history lives
	// outside them would let reads and approved proposals reach a
	// repository nobody allowed.
	if !roots.lexicallyInside(repo.GitDir) || !roots.lexicallyInside(repo.CommonDir) {
		return nil, ErrGitDirOutsideRoots
	}
	// So are the objects: an alternate object store outside the roots
	// would put another repository's commits, trees and blobs in this
	// one's reads and proposals.
	if err := roots.ConfineObjects(repo.CommonDir); err != nil {
		return nil, err
	}
	repo.Linked = !repo.Bare && repo.GitDir != repo.CommonDir
	// GIT_CEILING_DIRECTORIES already kept discovery below the root; this
	// is the second lock on the same door.
	if !roots.lexicallyInside(repo.Root) {
		return nil, ErrNotARepository
	}
	if cfgErr != nil {
		return nil, cfgErr
	}
	repo.parseConfig(cfgOut.Stdout, canon)
	repo.ceilingEnv = env[0]
	repo.filterEnv = repo.driverOverrides()
	repo.stamps = repo.stampFiles(canon)
	return repo, nil
}

// ceiling is the parent of the outermost root containing p, so that git's
// repository discovery can reach the root itself but never climb above it.
func (r Roots) ceiling(p string) string {
	best := ""
	for _, root := range r {
		if p == root || strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator)) {
			if best == "" || len(root) < len(best) {
				best = root
			}
		}
	}
	if best == "" {
		return p
	}
	return filepath.Dir(best)
}

func (repo *Repo) parseConfig(b []byte, cwd string) {
	repo.config = map[string]string{}
	filters := map[string]bool{}
	merges := map[string]bool{}
	origins := map[string]bool{}
	recs := bytes.Split(b, []byte{0})
	for i := 0; i+1 < len(recs); i += 2 {
		origin := string(recs[i])
		if origin == "command line:" {
			// The profile's own -c settings: Config answers what the
			// repository and the person configure, not Sluice's overrides.
			continue
		}
		k, v, _ := strings.Cut(string(recs[i+1]), "\n")
		lk := strings.ToLower(k)
		repo.config[lk] = v
		from := ""
		if f, ok := strings.CutPrefix(origin, "file:"); ok {
			if !filepath.IsAbs(f) {
				f = filepath.Join(cwd, f)
			}
			from = f
			origins[f] = true
		}
		// Keys are section.subsection.name; the subsection (a driver name)
		// keeps its case and may contain dots.
		switch {
		case strings.HasPrefix(lk, "filter."):
			if name, ok := driverName(k, "filter."); ok {
				filters[name] = true
			}
		case strings.HasPrefix(lk, "merge.") && strings.HasSuffix(lk, ".driver"):
			if name, ok := driverName(k, "merge."); ok {
				merges[name] = true
			}
		case (lk == "include.path" || strings.HasPrefix(lk, "includeif.") && strings.HasSuffix(lk, ".path")) && from != "":
			// An included file may not exist yet; its appearance must
			// invalidate a cached open all the same.
			origins[includeTarget(v, from)] = true
		}
	}
	for n := range filters {
		repo.filterDrivers = append(repo.filterDrivers, n)
	}
	for n := range merges {
		repo.mergeDrivers = append(repo.mergeDrivers, n)
	}
	sort.Strings(repo.filterDrivers)
	sort.Strings(repo.mergeDrivers)
	for f := range origins {
		repo.configFiles = append(repo.configFiles, f)
	}
	sort.Strings(repo.configFiles)
}

func includeTarget(v, from string) string {
	if rest, ok := strings.CutPrefix(v, "~/"); ok {
		home, _ := os.UserHomeDir()
		return filepath.Join(home, rest)
	}
	if filepath.IsAbs(v) {
		return filepath.Clean(v)
	}
	return filepath.Join(filepath.Dir(from), v)
}

func driverName(key, prefix string) (string, bool) {
	rest := key[len(prefix):]
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", false
	}
	return rest[:i], true
}

// driverOverrides neutralises every configured filter driver through
// GIT_CONFIG_COUNT (command-line scope, like -c, but with key and value
// kept apart so that a driver name containing "=" cannot be mis-split).
// Git runs no filter whose command is empty, and a required filter that
// did not run would abort the read, so required is switched off too.
func (repo *Repo) driverOverrides() []string {
	var kv [][2]string
	for _, n := range repo.filterDrivers {
		kv = append(kv,
			[2]string{"filter." + n + ".clean", ""},
			[2]string{"filter." + n + ".smudge", ""},
			[2]string{"filter." + n + ".process", ""},
			[2]string{"filter." + n + ".required", "false"})
	}
	if len(kv) == 0 {
		return nil
	}
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(kv))}
	for i, p := range kv {
		env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(i)+"="+p[0], "GIT_CONFIG_VALUE_"+strconv.Itoa(i)+"="+p[1])
	}
	return env
}

// Config returns the effective value of a configuration key (lower-case
// section and name), as read when the repository was opened.
func (repo *Repo) Config(key string) (string, bool) {
	v, ok := repo.config[strings.ToLower(key)]
	return v, ok
}

// Runner is the runner this repository was opened with.
func (repo *Repo) Runner() *Runner { return repo.r }

// Roots are the roots the repository was confined to.
func (repo *Repo) Roots() Roots { return repo.roots }

// git runs a command in the repository root with its hardening.
func (repo *Repo) git(ctx context.Context, c *cmd) (*Output, error) {
	c.dir = repo.Root
	return repo.r.read(ctx, c, repo)
}

// needWorkTree fails for bare repositories.
func (repo *Repo) needWorkTree() error {
	if repo.Bare {
		return ErrBare
	}
	return nil
}

// ResolveCommit resolves rev (already checked) to a full commit SHA.
func (repo *Repo) ResolveCommit(ctx context.Context, name, rev string) (string, error) {
	if err := CheckRev(name, rev); err != nil {
		return "", err
	}
	// Read from the ref files where git's answer is certain (see
	// ResolveLocal).
	if got, _, err := repo.ResolveLocal([]string{rev}, false); err == nil {
		return got[rev], nil
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"rev-parse"}, opts: []string{"--verify", "--quiet"}, revs: []string{peelCommit(rev)}, okExit: []int{1}, limit: 4096})
	if err != nil {
		if errcode.IsCode(err, errcode.InvalidArgument) {
			return "", errcode.New(errcode.InvalidArgument, "%s does not name a commit in this repository", name)
		}
		return "", err
	}
	sha := strings.TrimSpace(string(out.Stdout))
	if out.ExitCode != 0 || sha == "" {
		return "", errcode.New(errcode.InvalidArgument, "%s does not name a commit in this repository", name)
	}
	return sha, nil
}

// peelCommit asks git for the commit a revision names. A ":/<text>"
// message search already names a commit, and a suffix would become part of
// the searched text.
func peelCommit(rev string) string {
	if strings.HasPrefix(rev, ":/") {
		return rev
	}
	return rev + "^{commit}"
}

// headSHA is the commit HEAD points at, or "" when HEAD is unborn.
func (repo *Repo) headSHA(ctx context.Context) (string, error) {
	if got, _, err := repo.ResolveLocal([]string{"HEAD"}, false); err == nil {
		return got["HEAD"], nil
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"rev-parse"}, opts: []string{"--verify", "--quiet"}, revs: []string{"HEAD^{commit}"}, okExit: []int{1}, limit: 4096})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out.Stdout)), nil
}

// readGitFile reads a small state file from the (per-worktree) git
// directory; missing files are "".
func (repo *Repo) readGitFile(name string) string {
	return readSmall(filepath.Join(repo.GitDir, name))
}

func readSmall(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	return strings.TrimSpace(string(b[:n]))
}

func (repo *Repo) gitPathExists(name string) bool {
	_, err := os.Lstat(filepath.Join(repo.GitDir, name))
	return err == nil
}

// Operation is a multi-step git operation that is in progress.
type Operation struct {
	Kind string `json:"kind" jsonschema:"merge, rebase, am, cherry-pick, revert or bisect"`
	// Other is the commit being brought in: MERGE_HEAD, the commit being
	// replayed by a rebase (REBASE_HEAD), CHERRY_PICK_HEAD or REVERT_HEAD.
	Other string `json:"other,omitempty" jsonschema:"the commit being merged, replayed, picked or reverted"`
	// Onto and Branch describe a rebase.
	Onto   string `json:"onto,omitempty" jsonschema:"rebase: the commit the branch is being replayed onto"`
	Branch string `json:"branch,omitempty" jsonschema:"rebase: the branch being rebased"`
	Step   int    `json:"step,omitempty" jsonschema:"rebase: the step being applied (1-based)"`
	Total  int    `json:"total,omitempty" jsonschema:"rebase: the number of steps"`
}

// Operation reports the operation in progress in this worktree, if any,
// from the state files git keeps in the git directory. No git runs.
func (repo *Repo) Operation() *Operation {
	if repo.Bare {
		return nil
	}
	switch {
	case repo.gitPathExists("rebase-merge"):
		op := &Operation{Kind: "rebase",
			Other:  repo.readGitFile("REBASE_HEAD"),
			Onto:   repo.readGitFile("rebase-merge/onto"),
			Branch: strings.TrimPrefix(repo.readGitFile("rebase-merge/head-name"), "refs/heads/")}
		op.Step, _ = strconv.Atoi(repo.readGitFile("rebase-merge/msgnum"))
		op.Total, _ = strconv.Atoi(repo.readGitFile("rebase-merge/end"))
		return op
	case repo.gitPathExists("rebase-apply"):
		kind := "rebase"
		if repo.gitPathExists("rebase-apply/applying") {
			kind = "am"
		}
		op := &Operation{Kind: kind, Other: repo.readGitFile("REBASE_HEAD"),
			Onto:   repo.readGitFile("rebase-apply/onto"),
			Branch: strings.TrimPrefix(repo.readGitFile("rebase-apply/head-name"), "refs/heads/")}
		op.Step, _ = strconv.Atoi(repo.readGitFile("rebase-apply/next"))
		op.Total, _ = strconv.Atoi(repo.readGitFile("rebase-apply/last"))
		return op
	case repo.gitPathExists("MERGE_HEAD"):
		return &Operation{Kind: "merge", Other: firstField(repo.readGitFile("MERGE_HEAD"))}
	case repo.gitPathExists("CHERRY_PICK_HEAD"):
		return &Operation{Kind: "cherry-pick", Other: repo.readGitFile("CHERRY_PICK_HEAD")}
	case repo.gitPathExists("REVERT_HEAD"):
		return &Operation{Kind: "revert", Other: repo.readGitFile("REVERT_HEAD")}
	case repo.gitPathExists("BISECT_LOG"):
		return &Operation{Kind: "bisect"}
	}
	return nil
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}
