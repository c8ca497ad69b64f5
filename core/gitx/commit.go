package gitx

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/core/errcode"
	"golang.org/x/sync/errgroup"
)

// Person is an author or committer.
type Person struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date" jsonschema:"RFC 3339"`
}

// FileChange is one file a commit or diff changed.
type FileChange struct {
	Path       string `json:"path" jsonschema:"path relative to the repository root (the new path of a rename)"`
	OrigPath   string `json:"origPath,omitempty" jsonschema:"the old path of a rename or copy"`
	Status     string `json:"status" jsonschema:"added, modified, deleted, renamed, copied, typechange or unmerged"`
	Insertions int    `json:"insertions" jsonschema:"lines added (0 for binary files)"`
	Deletions  int    `json:"deletions" jsonschema:"lines removed (0 for binary files)"`
	Binary     bool   `json:"binary,omitempty" jsonschema:"git treats the file as binary"`
	Submodule  bool   `json:"submodule,omitempty" jsonschema:"the path is a submodule (gitlink)"`
}

// CommitDetails is one commit in full.
type CommitDetails struct {
	SHA           string       `json:"sha" jsonschema:"full commit id"`
	Parents       []string     `json:"parents" jsonschema:"full ids of the parents; empty for a root commit"`
	Author        Person       `json:"author"`
	Committer     Person       `json:"committer"`
	Subject       string       `json:"subject"`
	Body          string       `json:"body,omitempty" jsonschema:"the message after the subject line"`
	BodyTruncated bool         `json:"bodyTruncated,omitempty" jsonschema:"the body was longer than the limit and was cut"`
	Refs          []string     `json:"refs,omitempty" jsonschema:"branches and tags pointing at the commit"`
	ComparedTo    string       `json:"comparedTo,omitempty" jsonschema:"the parent the file list is against (the first parent of a merge)"`
	Files         []FileChange `json:"files" jsonschema:"files changed against comparedTo (or added, for a root commit)"`
	FilesTotal    int          `json:"filesTotal"`
	Insertions    int          `json:"insertions"`
	Deletions     int          `json:"deletions"`
	Truncated     bool         `json:"truncated,omitempty" jsonschema:"more files changed than maxFiles; totals are complete"`
}

// Commit detail limits.
const (
	maxBodyBytes        = 8 << 10
	DefaultMaxFiles     = 300
	MaxFilesLimit       = 3000
	commitDetailsFields = 10
)

// CommitDetails describes rev: metadata, message and changed files with
// line counts (against the first parent for a merge). Signatures are not
// verified: that would run gpg.
//
// A commit whose answer is certain without git (see commitDetailsLocal)
// is read in this process. Otherwise it starts one git process: a
// diff-tree that resolves the revision and gives the header, the message
// and the changed files together. The refs
// at the commit come from the runner's reading of the branches, tags and
// remote-tracking refs, kept while packed-refs and the loose refs' files
// and directories keep their stamps; when they moved, the for-each-ref
// that reads them again runs beside the diff-tree. A
// revision that names more than one commit (a range, "^!", a leading
// "^") or searches messages (":/") is resolved first with rev-parse, as
// diff-tree would read it otherwise; so is the revision of a failed
// call, so that a revision that names no commit is refused in rev-parse's
// words.
func (repo *Repo) CommitDetails(ctx context.Context, rev string, maxFiles int) (*CommitDetails, error) {
	if maxFiles <= 0 {
		maxFiles = DefaultMaxFiles
	}
	if maxFiles > MaxFilesLimit {
		return nil, errcode.New(errcode.InvalidArgument, "maxFiles must be at most %d", MaxFilesLimit)
	}
	if err := CheckRev("rev", rev); err != nil {
		return nil, err
	}
	operand, resolved := peelCommit(rev), !oneCommitRev(rev)
	if !resolved {
		if d, changes, err := repo.commitDetailsLocal(rev); err == nil {
			names, err := repo.cachedRefNames(ctx)
			if err != nil {
				return nil, err
			}
			d.Refs = slices.Clone(names[d.SHA])
			return d.withFiles(changes, maxFiles), nil
		}
	}
	if resolved {
		sha, err := repo.ResolveCommit(ctx, "rev", rev)
		if err != nil {
			return nil, err
		}
		if !ValidFullSHA(sha) {
			// rev-parse printed something else than one id ("^<id>").
			return nil, &errcode.Error{Code: errcode.GitFailed, Msg: "unexpected output from git show"}
		}
		operand = sha
	}
	var (
		g     errgroup.Group
		names map[string][]string
		refs  error
	)
	// The refs at the commit come from refNames (git's decoration reads
	// every ref), cached by the ref files' stamps. It does not need the
	// commit's id, so it runs beside the diff-tree.
	g.Go(func() error {
		names, refs = repo.cachedRefNames(ctx)
		return nil
	})
	out, err := repo.git(ctx, &cmd{sub: []string{"diff-tree"}, opts: []string{"-r", "-z", "--raw", "--numstat", "-M", "--abbrev=40",
		"--root", "--always", "--diff-merges=first-parent",
		"--format=%H%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%x00%B%x00"}, revs: []string{operand}, dashdash: true,
		env: []string{"GIT_INDEX_FILE=" + filepath.Join(repo.GitDir, noIndexFile)}})
	g.Wait()
	if err != nil {
		if !resolved {
			if _, rerr := repo.ResolveCommit(ctx, "rev", rev); rerr != nil {
				return nil, rerr
			}
		}
		return nil, err
	}
	d, changes, ok := parseCommitDetails(out.Stdout)
	if !ok {
		return nil, &errcode.Error{Code: errcode.GitFailed, Msg: "unexpected output from git show"}
	}
	if refs != nil {
		return nil, refs
	}
	d.Refs = slices.Clone(names[d.SHA])
	return d.withFiles(changes, maxFiles), nil
}

// withFiles sets d's changed files, at most maxFiles of them, and totals.
func (d *CommitDetails) withFiles(changes []FileChange, maxFiles int) *CommitDetails {
	d.FilesTotal = len(changes)
	for _, c := range changes {
		d.Insertions += c.Insertions
		d.Deletions += c.Deletions
	}
	if len(changes) > maxFiles {
		changes = changes[:maxFiles]
		d.Truncated = true
	}
	d.Files = changes
	return d
}

// noIndexFile names, in the git directory, an index that is never
// written. diff-tree reads the whole index before it compares two trees
// (40 ms at 100,000 files, for a commit that changed three); given one
// that does not exist it reads an empty one. What it says of the trees is
// the same: the index only supplies a .gitattributes that the working
// tree lacks, and git show and git log, which never read the index, go
// without it too.
const noIndexFile = "sluice-no-index"

// oneCommitRev reports whether diff-tree reads rev, with "^{commit}"
// after it, as rev-parse --verify does: one commit, not a range, a
// negation, a set of parents or a message search.
func oneCommitRev(rev string) bool {
	if strings.HasPrefix(rev, ":/") || strings.HasPrefix(rev, "^") {
		return false
	}
	for _, s := range []string{"..", "^@", "^!", "^-"} {
		if strings.Contains(rev, s) {
			return false
		}
	}
	return true
}

// parseCommitDetails reads CommitDetails' diff-tree answer: the header
// fields and the message, each ended by a NUL, then the raw and numstat
// records.
func parseCommitDetails(b []byte) (*CommitDetails, []FileChange, bool) {
	f := bytes.SplitN(b, []byte{0}, commitDetailsFields)
	if len(f) < commitDetailsFields || !ValidFullSHA(string(f[0])) {
		return nil, nil, false
	}
	msgBytes, diff, ok := bytes.Cut(f[9], []byte{0})
	if !ok {
		return nil, nil, false
	}
	d := &CommitDetails{
		SHA:       string(f[0]),
		Parents:   strings.Fields(string(f[1])),
		Author:    Person{Name: string(f[2]), Email: string(f[3]), Date: string(f[4])},
		Committer: Person{Name: string(f[5]), Email: string(f[6]), Date: string(f[7])},
	}
	if d.Parents == nil {
		d.Parents = []string{}
	}
	if len(d.Parents) > 0 {
		d.ComparedTo = d.Parents[0]
	}
	msg := strings.TrimRight(string(msgBytes), "\n")
	d.Subject, d.Body, _ = strings.Cut(msg, "\n")
	d.Body = strings.TrimLeft(d.Body, "\n")
	if len(d.Body) > maxBodyBytes {
		d.Body = clip(d.Body, maxBodyBytes)
		d.BodyTruncated = true
	}
	// Between the message and the first raw record diff-tree writes the
	// line's NUL and a newline; raw records begin with ':'.
	return d, parseRawNumstat(bytes.TrimLeft(diff, "\x00\n")), true
}

var rawStatus = map[byte]string{'A': "added", 'M': "modified", 'D': "deleted", 'R': "renamed", 'C': "copied", 'T': "typechange", 'U': "unmerged"}

// subjects maps each commit id to its subject, in one git process.
func (repo *Repo) subjects(ctx context.Context, ids []string) (map[string]string, error) {
	out, err := repo.git(ctx, &cmd{sub: []string{"log"}, opts: []string{"--no-walk=unsorted", "--format=%H%x00%s"}, revs: ids, dashdash: true, limit: 1 << 20})
	if err != nil {
		return nil, err
	}
	subjects := map[string]string{}
	for _, line := range strings.Split(string(out.Stdout), "\n") {
		if h, s, ok := strings.Cut(line, "\x00"); ok {
			subjects[h] = s
		}
	}
	return subjects, nil
}

// rawNumstat runs a diff plumbing command with --raw --numstat -z and
// joins the two sections per path.
func (repo *Repo) rawNumstat(ctx context.Context, c *cmd) ([]FileChange, error) {
	out, err := repo.git(ctx, c)
	if err != nil {
		return nil, err
	}
	return parseRawNumstat(out.Stdout), nil
}

// RawChange is one record of "--raw --numstat -z" output: what git's
// plumbing says of a path, modes and object ids included.
type RawChange struct {
	// Status is git's letter: A, M, D, R, C, T or U.
	Status                byte
	OldMode, Mode         string
	OldBlob, Blob         string
	Path, OrigPath        string
	Insertions, Deletions int
	Binary                bool
}

// ParseRawNumstat parses "--raw --numstat -z" output: raw records
// (":mode mode sha sha S\0path\0[path\0]") then numstat records
// ("a\td\tpath\0" or "a\td\t\0old\0new\0"), joined per path.
func ParseRawNumstat(b []byte) []RawChange {
	recs := strings.Split(string(b), "\x00")
	var changes []RawChange
	index := map[string]int{}
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		if r == "" {
			continue
		}
		if r[0] == ':' {
			fields := strings.Fields(r[1:])
			if len(fields) < 5 || i+1 >= len(recs) {
				continue
			}
			st := fields[4]
			c := RawChange{Status: st[0], OldMode: fields[0], Mode: fields[1], OldBlob: fields[2], Blob: fields[3]}
			i++
			c.Path = recs[i]
			if (st[0] == 'R' || st[0] == 'C') && i+1 < len(recs) {
				c.OrigPath = c.Path
				i++
				c.Path = recs[i]
			}
			index[c.Path] = len(changes)
			changes = append(changes, c)
			continue
		}
		// numstat
		parts := strings.SplitN(r, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		p := parts[2]
		if p == "" && i+2 < len(recs) {
			i += 2
			p = recs[i]
		}
		j, ok := index[p]
		if !ok {
			continue
		}
		if parts[0] == "-" {
			changes[j].Binary = true
			continue
		}
		changes[j].Insertions, _ = strconv.Atoi(parts[0])
		changes[j].Deletions, _ = strconv.Atoi(parts[1])
	}
	return changes
}

// parseRawNumstat is ParseRawNumstat as the tools report it.
func parseRawNumstat(b []byte) []FileChange {
	changes := []FileChange{}
	for _, r := range ParseRawNumstat(b) {
		c := FileChange{Status: rawStatus[r.Status], Path: r.Path, OrigPath: r.OrigPath,
			Insertions: r.Insertions, Deletions: r.Deletions, Binary: r.Binary,
			Submodule: r.OldMode == "160000" || r.Mode == "160000"}
		if c.Status == "" {
			c.Status = "modified"
		}
		changes = append(changes, c)
	}
	return changes
}
