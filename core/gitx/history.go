package gitx

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/sluicehq/sluice/core/errcode"
)

// Commit is one commit in a list.
type Commit struct {
	SHA     string   `json:"sha" jsonschema:"abbreviated commit id (unique in this repository)"`
	Author  string   `json:"author" jsonschema:"author name"`
	Date    string   `json:"date" jsonschema:"author date, RFC 3339"`
	Subject string   `json:"subject" jsonschema:"first line of the message"`
	Merge   bool     `json:"merge,omitempty" jsonschema:"the commit has more than one parent"`
	Refs    []string `json:"refs,omitempty" jsonschema:"branches and tags pointing at it"`
	// Stats are set when asked for.
	Files      *int `json:"files,omitempty" jsonschema:"files changed (with stats)"`
	Insertions *int `json:"insertions,omitempty" jsonschema:"lines added (with stats)"`
	Deletions  *int `json:"deletions,omitempty" jsonschema:"lines removed (with stats)"`
}

// record marker: cannot begin a field git prints for a commit.
const logMark = "\x1e\x1d\x1c"

// logFormat fields, each NUL terminated.
// The field after the subject is left empty: the refs that point at each
// commit come from refNames, not from git's decoration (see there).
const logFormat = "--format=" + "%x1e%x1d%x1c" + "%H%x00%h%x00%P%x00%an%x00%aI%x00%s%x00%x00"

type logOpts struct {
	opts      []string
	revs      []string
	paths     []string
	withStats bool
}

// logCommits runs git log with a fixed, parseable format. Options are
// trusted; revisions and paths were checked by the caller (and are checked
// again by the runner).
func (repo *Repo) logCommits(ctx context.Context, o logOpts) ([]Commit, error) {
	c, _, err := repo.logCommitsFull(ctx, o)
	return c, err
}

// logCommitsFull also returns the full ids, in the same order.
func (repo *Repo) logCommitsFull(ctx context.Context, o logOpts) ([]Commit, []string, error) {
	opts := append([]string{logFormat, "--abbrev=12"}, o.opts...)
	if o.withStats {
		opts = append(opts, "--shortstat")
	}
	out, err := repo.git(ctx, &cmd{sub: []string{"log"}, opts: opts, revs: o.revs, paths: o.paths, dashdash: true})
	if err != nil {
		return nil, nil, err
	}
	c, full := parseLog(out.Stdout, o.withStats)
	if len(c) > 0 {
		names, err := repo.cachedRefNames(ctx)
		if err != nil {
			return nil, nil, err
		}
		for i := range c {
			c[i].Refs = slices.Clone(names[full[i]])
		}
	}
	return c, full, nil
}

var shortstatRe = regexp.MustCompile(`(\d+) files? changed(?:, (\d+) insertions?\(\+\))?(?:, (\d+) deletions?\(-\))?`)

func parseLog(b []byte, withStats bool) ([]Commit, []string) {
	commits := []Commit{}
	var full []string
	for _, rec := range bytes.Split(b, []byte(logMark)) {
		if len(rec) == 0 {
			continue
		}
		f := bytes.SplitN(rec, []byte{0}, 8)
		if len(f) < 8 {
			continue
		}
		full = append(full, string(f[0]))
		f = f[1:]
		c := Commit{
			SHA:     string(f[0]),
			Merge:   len(bytes.Fields(f[1])) > 1,
			Author:  string(f[2]),
			Date:    string(f[3]),
			Subject: clip(string(f[4]), 200),
		}
		if withStats {
			files, ins, del := 0, 0, 0
			if m := shortstatRe.FindSubmatch(f[6]); m != nil {
				files, _ = strconv.Atoi(string(m[1]))
				ins, _ = strconv.Atoi(string(m[2]))
				del, _ = strconv.Atoi(string(m[3]))
			}
			c.Files, c.Insertions, c.Deletions = &files, &ins, &del
		}
		commits = append(commits, c)
	}
	return commits, full
}

// clip shortens s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// HistoryOptions select commits.
type HistoryOptions struct {
	Rev         string
	Paths       []string
	Author      string
	Grep        string
	Since       string
	Until       string
	FirstParent bool
	WithStats   bool
	Limit       int
	Cursor      string
}

// History is one page of commits.
type History struct {
	Head       string   `json:"head" jsonschema:"the full commit id the listing started from; every page of one cursor chain starts here"`
	Commits    []Commit `json:"commits"`
	NextCursor string   `json:"nextCursor,omitempty" jsonschema:"pass as cursor to get the next page; absent on the last page"`
	Unborn     bool     `json:"unborn,omitempty" jsonschema:"HEAD has no commits yet"`
}

// History limits.
const (
	DefaultHistoryLimit = 20
	MaxHistoryLimit     = 200
)

type historyCursor struct {
	Head   string `json:"h"`
	Skip   int    `json:"s"`
	Filter string `json:"f"`
}

// History lists commits reachable from Rev (HEAD by default), newest
// first. The first page pins the start commit in the cursor so that later
// pages are consistent even if the branch moves meanwhile.
func (repo *Repo) History(ctx context.Context, o HistoryOptions) (*History, error) {
	limit, paths, opts, err := historyQuery(o)
	if err != nil {
		return nil, err
	}
	filter := filterKey(paths, opts)

	var cur historyCursor
	anchorFromLog := false
	if o.Cursor != "" {
		if cur, err = decodeHistoryCursor(o.Cursor, filter); err != nil {
			return nil, err
		}
	} else {
		var unborn bool
		cur, anchorFromLog, unborn, err = repo.historyStart(ctx, o, paths, filter)
		if unborn {
			return unbornHistory(), nil
		}
		if err != nil {
			return nil, err
		}
	}
	opts = append(opts, "--skip="+strconv.Itoa(cur.Skip), "--max-count="+strconv.Itoa(limit+1))
	commits, full, err := repo.logCommitsFull(ctx, logOpts{opts: opts, revs: []string{cur.Head}, paths: paths, withStats: o.WithStats})
	if err != nil {
		if anchorFromLog && o.Rev == "" && repo.unbornHead(ctx, err) {
			return unbornHistory(), nil
		}
		if anchorFromLog && errcode.IsCode(err, errcode.InvalidArgument) {
			return nil, errcode.New(errcode.InvalidArgument, "rev does not name a commit in this repository")
		}
		return nil, err
	}
	if anchorFromLog {
		cur.Head = ""
		if len(full) > 0 {
			cur.Head = full[0]
		}
	}
	return historyPage(commits, cur, limit), nil
}

// historyStart is the first page's cursor: the commit o.Rev (HEAD by
// default) names, resolved now when the listing is filtered; unfiltered,
// the first commit git log lists is the start itself, so its id pins the
// cursor without a separate rev-parse (anchorFromLog). unborn: HEAD has
// no commit yet.
func (repo *Repo) historyStart(ctx context.Context, o HistoryOptions, paths []string, filter string) (cur historyCursor, anchorFromLog, unborn bool, err error) {
	rev := o.Rev
	if rev == "" {
		rev = "HEAD"
	}
	if err := CheckRev("rev", rev); err != nil {
		return cur, false, false, err
	}
	cur.Filter = filter
	filtered := len(paths) > 0 || o.Author != "" || o.Grep != "" || o.Since != "" || o.Until != ""
	if !filtered {
		cur.Head = peelCommit(rev)
		return cur, true, false, nil
	}
	if cur.Head, err = repo.ResolveCommit(ctx, "rev", rev); err != nil {
		return cur, false, o.Rev == "" && repo.unbornHead(ctx, err), err
	}
	return cur, false, false, nil
}

// historyQuery checks o's limit, paths and filters and turns the filters
// into git log options.
func historyQuery(o HistoryOptions) (limit int, paths, opts []string, err error) {
	limit = o.Limit
	if limit <= 0 {
		limit = DefaultHistoryLimit
	}
	if limit > MaxHistoryLimit {
		return 0, nil, nil, errcode.New(errcode.InvalidArgument, "limit must be at most %d", MaxHistoryLimit)
	}
	if paths, err = CheckPaths("paths", o.Paths); err != nil {
		return 0, nil, nil, err
	}
	for _, v := range []struct{ name, val, flag string }{
		{"author", o.Author, "--author="}, {"grep", o.Grep, "--grep="},
		{"since", o.Since, "--since="}, {"until", o.Until, "--until="},
	} {
		if v.val == "" {
			continue
		}
		if len(v.val) > 256 || hasControl(v.val) {
			return 0, nil, nil, errcode.New(errcode.InvalidArgument, "%s must be at most 256 bytes without control characters", v.name)
		}
		// One argv element with our own prefix: the value can never become
		// an option of its own.
		opts = append(opts, v.flag+v.val)
	}
	if o.Author != "" || o.Grep != "" {
		opts = append(opts, "--fixed-strings", "--regexp-ignore-case")
	}
	if o.FirstParent {
		opts = append(opts, "--first-parent")
	}
	return limit, paths, opts, nil
}

// decodeHistoryCursor reads a cursor History returned, refusing one of
// another query.
func decodeHistoryCursor(s, filter string) (historyCursor, error) {
	var cur historyCursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(raw, &cur) != nil || !isHex(cur.Head) || cur.Skip < 0 {
		return historyCursor{}, errcode.New(errcode.InvalidArgument, "cursor is not one this tool returned")
	}
	if cur.Filter != filter {
		return historyCursor{}, errcode.New(errcode.InvalidArgument, "cursor belongs to a different query; repeat the original arguments with it")
	}
	return cur, nil
}

// unbornHead says whether err, git's refusal of HEAD, is because HEAD has
// no commit yet.
func (repo *Repo) unbornHead(ctx context.Context, err error) bool {
	if !errcode.IsCode(err, errcode.InvalidArgument) {
		return false
	}
	h, herr := repo.headSHA(ctx)
	return herr == nil && h == ""
}

func unbornHistory() *History { return &History{Commits: []Commit{}, Unborn: true} }

// historyPage is the page of commits (limit+1 were asked for: one more
// means there is a next page) starting at cur.
func historyPage(commits []Commit, cur historyCursor, limit int) *History {
	h := &History{Head: cur.Head, Commits: commits}
	if len(commits) > limit {
		h.Commits = commits[:limit]
		next := historyCursor{Head: cur.Head, Skip: cur.Skip + limit, Filter: cur.Filter}
		b, _ := json.Marshal(next)
		h.NextCursor = base64.RawURLEncoding.EncodeToString(b)
	}
	return h
}

func filterKey(paths, opts []string) string {
	h := sha256.New()
	for _, s := range append(append([]string{}, paths...), opts...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func isHex(s string) bool {
	if len(s) < 4 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
