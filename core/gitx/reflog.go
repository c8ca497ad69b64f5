package gitx

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
)

// ReflogEntry is one movement of a ref.
type ReflogEntry struct {
	Selector string `json:"selector" jsonschema:"usable as a revision, e.g. HEAD@{2}"`
	SHA      string `json:"sha" jsonschema:"abbreviated commit the ref pointed to after this movement"`
	Previous string `json:"previous,omitempty" jsonschema:"abbreviated commit before it"`
	Action   string `json:"action" jsonschema:"commit, checkout, reset, rebase, merge, pull, cherry-pick, branch, … (the word before the colon)"`
	Message  string `json:"message"`
	Date     string `json:"date" jsonschema:"when the ref moved, RFC 3339"`
}

// Recovery is a commit that only the reflog still knows.
type Recovery struct {
	SHA      string `json:"sha" jsonschema:"full id of a commit no branch or tag contains"`
	Subject  string `json:"subject"`
	Selector string `json:"selector" jsonschema:"the reflog entry that last pointed at it"`
	LostBy   string `json:"lostBy" jsonschema:"the reflog message of the movement that left it behind"`
	Commits  int    `json:"commits" jsonschema:"commits reachable only through it (capped at 200)"`
}

// Reflog is a ref's recent movements with recovery hints.
type Reflog struct {
	Ref         string        `json:"ref" jsonschema:"the full ref name"`
	Entries     []ReflogEntry `json:"entries" jsonschema:"newest first"`
	Total       int           `json:"total" jsonschema:"entries in the reflog"`
	Truncated   bool          `json:"truncated,omitempty"`
	Recoverable []Recovery    `json:"recoverable" jsonschema:"commits among these entries that no branch or tag contains: they are lost when the reflog expires (gc.reflogExpireUnreachable, 30 days by default)"`
	Hints       []string      `json:"hints"`
}

// Reflog limits.
const (
	DefaultReflogLimit = 30
	MaxReflogLimit     = 500
)

// reflogLine is one line of a files-backend reflog.
type reflogLine struct {
	old, new string
	when     time.Time
	msg      string
}

// Reflog reads the reflog of ref (HEAD by default) straight from the
// files backend (no git process for the entries), then asks git once which
// of the commits involved are unreachable from every ref.
func (repo *Repo) Reflog(ctx context.Context, ref string, limit int) (*Reflog, error) {
	if limit <= 0 {
		limit = DefaultReflogLimit
	}
	if limit > MaxReflogLimit {
		return nil, errcode.New(errcode.InvalidArgument, "limit must be at most %d", MaxReflogLimit)
	}
	if ref == "" {
		ref = "HEAD"
	}
	if err := CheckRev("ref", ref); err != nil {
		return nil, err
	}
	if v, _ := repo.Config("extensions.refstorage"); v != "" && v != "files" {
		return nil, errcode.New(errcode.Unsupported, "the repository stores refs in %s; only the files backend's reflogs can be read", v)
	}
	full := "HEAD"
	if ref != "HEAD" {
		out, err := repo.git(ctx, &cmd{sub: []string{"rev-parse"}, opts: []string{"--verify", "--symbolic-full-name"}, revs: []string{ref}, limit: 4096})
		if err != nil {
			return nil, err
		}
		full = strings.TrimSpace(string(out.Stdout))
		if !strings.HasPrefix(full, "refs/") {
			return nil, errcode.New(errcode.InvalidArgument, "ref must name a branch, remote-tracking branch, tag or HEAD")
		}
	}
	lines, err := repo.readReflog(full)
	if err != nil {
		return nil, err
	}
	res := &Reflog{Ref: full, Entries: []ReflogEntry{}, Recoverable: []Recovery{}, Hints: []string{}, Total: len(lines)}
	short := ref
	if ref != "HEAD" {
		short = strings.TrimPrefix(strings.TrimPrefix(full, "refs/heads/"), "refs/")
	}
	// Newest first.
	var candidates []string
	seen := map[string]bool{}
	where := map[string]int{}
	for i := 0; i < len(lines) && i < limit; i++ {
		l := lines[len(lines)-1-i]
		action, _, _ := strings.Cut(l.msg, ":")
		e := ReflogEntry{Selector: fmt.Sprintf("%s@{%d}", short, i), SHA: abbrev(l.new), Action: action,
			Message: clip(l.msg, 160), Date: l.when.Format(time.RFC3339)}
		if !isZero(l.old) {
			e.Previous = abbrev(l.old)
		}
		res.Entries = append(res.Entries, e)
		// The old side of entry i is what @{i+1} names.
		for k, s := range []string{l.new, l.old} {
			if !isZero(s) && !seen[s] {
				seen[s] = true
				candidates = append(candidates, s)
				where[s] = i + k
			}
		}
	}
	res.Truncated = len(lines) > limit
	if len(candidates) > 0 {
		if err := repo.findRecoverable(ctx, res, lines, candidates, where, short); err != nil {
			return nil, err
		}
	}
	for i, r := range res.Recoverable {
		if i == 3 {
			break
		}
		res.Hints = append(res.Hints, fmt.Sprintf("%s %q is on no branch (left by %q, %s); propose_branch with startPoint %s keeps it.",
			abbrev(r.SHA), clip(r.Subject, 60), clip(r.LostBy, 60), r.Selector, abbrev(r.SHA)))
	}
	for i, e := range res.Entries {
		if e.Action == "reset" && e.Previous != "" && len(res.Hints) < 3 {
			res.Hints = append(res.Hints, fmt.Sprintf("Before %q (%s) the ref was at %s; %s@{%d} names it.", clip(e.Message, 60), e.Selector, e.Previous, short, i+1))
			break
		}
	}
	return res, nil
}

func isZero(sha string) bool { return strings.Trim(sha, "0") == "" }

// readReflog parses logs/<ref> (HEAD is per worktree, other refs shared).
func (repo *Repo) readReflog(full string) ([]reflogLine, error) {
	dir := filepath.Join(repo.CommonDir, "logs")
	if full == "HEAD" {
		dir = filepath.Join(repo.GitDir, "logs")
	}
	p := filepath.Join(dir, filepath.FromSlash(full))
	if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
		return nil, errcode.New(errcode.InvalidArgument, "ref must name a branch, remote-tracking branch, tag or HEAD")
	}
	f, err := os.Open(p)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, &errcode.Error{Code: errcode.GitFailed, Msg: "cannot read the reflog"}
	}
	defer f.Close()
	var lines []reflogLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l, ok := parseReflogLine(sc.Text()); ok {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// parseReflogLine: "<old> <new> <name> <<email>> <ts> <tz>\t<message>".
func parseReflogLine(s string) (reflogLine, bool) {
	head, msg, _ := strings.Cut(s, "\t")
	f := strings.Fields(head)
	if len(f) < 4 {
		return reflogLine{}, false
	}
	l := reflogLine{old: f[0], new: f[1], msg: msg}
	ts, err := strconv.ParseInt(f[len(f)-2], 10, 64)
	if err == nil {
		loc := time.UTC
		if tz := f[len(f)-1]; len(tz) == 5 {
			h, _ := strconv.Atoi(tz[1:3])
			m, _ := strconv.Atoi(tz[3:5])
			off := h*3600 + m*60
			if tz[0] == '-' {
				off = -off
			}
			loc = time.FixedZone(tz, off)
		}
		l.when = time.Unix(ts, 0).In(loc)
	}
	return l, true
}

// findRecoverable asks which candidates no ref reaches and describes them.
func (repo *Repo) findRecoverable(ctx context.Context, res *Reflog, lines []reflogLine, candidates []string, where map[string]int, short string) error {
	out, err := repo.git(ctx, &cmd{sub: []string{"rev-list"}, opts: append([]string{"--max-count=2000", "--ignore-missing"}, candidateArgs(candidates)...), limit: 8 << 20})
	if err != nil {
		return err
	}
	lost := map[string]bool{}
	for _, s := range strings.Fields(string(out.Stdout)) {
		lost[s] = true
	}
	var tips []string
	for _, c := range candidates {
		if lost[c] {
			tips = append(tips, c)
		}
	}
	if len(tips) == 0 {
		return nil
	}
	if len(tips) > 10 {
		tips = tips[:10]
	}
	subjects, err := repo.subjects(ctx, tips)
	if err != nil {
		return err
	}
	counts := map[string]int{}
	for _, t := range tips {
		o, err := repo.git(ctx, &cmd{sub: []string{"rev-list"}, opts: append([]string{"--count", "--max-count=200"}, candidateArgs([]string{t})...), limit: 4096})
		if err != nil {
			return err
		}
		counts[t], _ = strconv.Atoi(strings.TrimSpace(string(o.Stdout)))
	}
	for _, t := range tips {
		i := where[t]
		lostBy := ""
		// The movement that left t behind is the newest entry whose old
		// side is t (or, failing that, the entry that recorded it).
		for j := len(lines) - 1; j >= 0; j-- {
			if lines[j].old == t && lines[j].new != t {
				lostBy = lines[j].msg
				break
			}
		}
		if lostBy == "" && i < len(lines) {
			lostBy = lines[len(lines)-1-i].msg
		}
		res.Recoverable = append(res.Recoverable, Recovery{SHA: t, Subject: clip(subjects[t], 120), Selector: fmt.Sprintf("%s@{%d}", short, i), LostBy: clip(lostBy, 160), Commits: counts[t]})
	}
	return nil
}

// candidateArgs are trusted options for rev-list: full ids (from the
// reflog file, checked to be hex) followed by "--not --all".
func candidateArgs(ids []string) []string {
	var a []string
	for _, id := range ids {
		if isHex(id) {
			a = append(a, id)
		}
	}
	return append(a, "--not", "--all")
}
