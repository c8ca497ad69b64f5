package restorepoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// RestorePrefix is where restore points live. Everything of one restore
// point is under RestorePrefix + id + "/":
//
//	meta              a commit by Sluice whose message holds the record (JSON)
//	end               the same for the state the operation left behind
//	ref/<full ref>    each ref the operation touches, as it was
//	worktree/<n>      each working tree it touches, as a stash-shaped commit
//
// The refs keep every recorded object alive through gc; nothing outside
// refs/sluice/ is written to take a restore point. Once its operation
// ended, a restore point is folded into FoldedRef (see there), whose tree
// names the same commits under the same names; List, Page and Find read
// both.
const RestorePrefix = "refs/sluice/restore/"

// Restore point kinds.
const (
	// KindProposal is taken before an approved proposal runs. Its id is
	// the proposal's id.
	KindProposal = "proposal"
	// KindRestore is taken before a restore, so that a restore can itself
	// be undone.
	KindRestore = "restore"
)

// End outcomes.
const (
	EndCompleted = "completed"
	EndFailed    = "failed"
	EndRestored  = "restored"
)

// RestorePoint is what was recorded before an operation, and, once it
// ended, what it left behind.
type RestorePoint struct {
	ID   string `json:"id"`
	Kind string `json:"kind" jsonschema:"proposal (taken before an approved proposal ran) or restore (taken before a restore)"`
	// Label names what the point preserves ("before commit 'Add line' by
	// claude-code", "before restore of …"); no two in a repository share
	// one.
	Label string `json:"label"`
	// ProposalID and Digest name the proposal this was taken for.
	ProposalID string    `json:"proposalId,omitempty"`
	Op         string    `json:"op,omitempty"`
	Digest     string    `json:"digest,omitempty"`
	Repo       string    `json:"repo"`
	CreatedAt  time.Time `json:"createdAt"`
	// Restores names the restore point a KindRestore point was taken for.
	Restores string `json:"restores,omitempty"`
	// Refs are the refs the operation could change, as they were (SHA ""
	// for a ref that did not exist).
	Refs []RefState `json:"refs"`
	// Worktrees are the working trees it could change.
	Worktrees []WorktreeState `json:"worktrees,omitempty"`
	// Config holds branch configuration sections it could change.
	Config []ConfigSection `json:"config,omitempty"`
	// NewWorktree is a worktree the operation adds; restoring removes it.
	NewWorktree string `json:"newWorktree,omitempty"`
	// Note says what a restore cannot bring back (a push reached a
	// remote).
	Note string `json:"note,omitempty"`
	// End is the state the operation left behind; nil while it runs, and
	// for an operation interrupted by a crash.
	End *EndState `json:"end,omitempty"`
}

// EndState is the state an operation left behind, which a restore
// compares with the present to find work done since.
type EndState struct {
	At        time.Time       `json:"at"`
	Outcome   string          `json:"outcome" jsonschema:"completed, failed or restored"`
	Refs      []RefState      `json:"refs"`
	Worktrees []WorktreeState `json:"worktrees,omitempty"`
	Config    []ConfigSection `json:"config,omitempty"`
}

// RefState is a ref at one moment.
type RefState struct {
	Ref string `json:"ref"`
	// SHA is "" when the ref did not exist.
	SHA string `json:"sha,omitempty"`
}

// ConfigSection is the configuration of one branch (branch.<name>.*).
type ConfigSection struct {
	Branch  string     `json:"branch"`
	Entries []ConfigKV `json:"entries,omitempty"`
}

// ConfigKV is one configuration value.
type ConfigKV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Ref is the recorded state of the ref name, if the point recorded it.
func (rp *RestorePoint) Ref(name string) (RefState, bool) {
	for _, r := range rp.Refs {
		if r.Ref == name {
			return r, true
		}
	}
	return RefState{}, false
}

// WorktreeState is the state of one working tree: where its HEAD was,
// when the operation could change the index, the index, and when it could
// change files, index and files.
type WorktreeState struct {
	Path string `json:"path"`
	// Head is the branch HEAD pointed to, or "" when it was detached.
	Head    string `json:"head,omitempty"`
	HeadSHA string `json:"headSha"`
	// Files is set when index and working tree were recorded.
	Files bool `json:"files,omitempty"`
	// Index and Tree are tree ids of the index and of the working tree
	// (untracked files included, ignored files not). Index alone is set
	// when only the index was recorded.
	Index string `json:"index,omitempty"`
	Tree  string `json:"tree,omitempty"`
	// Clean: index and working tree matched HEAD exactly (set only when
	// files were recorded, and never with Paths).
	Clean bool `json:"clean,omitempty"`
	// Paths, when set, is the scope: the operation changes these paths
	// of the working tree and no other, so Index and Tree hold these
	// paths alone (the index entries at them; the files at them, a path
	// missing from Tree being missing on disk; see PathTrees), a restore
	// compares and writes these paths alone, and the rest of the working
	// tree and index is neither read nor rewritten. Sorted. Without Files
	// the scope is of the index alone (a commit of those paths): Index
	// holds the entries at them, and no file is read or written.
	Paths []string `json:"paths,omitempty"`
	// Snapshot is the commit that keeps the recorded content: shaped like
	// a git stash entry (parents HEAD and the index commit, tree the
	// working tree), or HEAD itself for a clean worktree. When only the
	// index was recorded, it is a commit of the index whose parent is
	// HEAD, or HEAD itself when the index matched it.
	Snapshot string `json:"snapshot,omitempty"`
}

// List lists the restore points of repo, newest first, loose and folded
// (see FoldedRef). It writes nothing.
func List(ctx context.Context, repo *gitx.Repo) ([]RestorePoint, error) {
	list, _, err := Page(ctx, repo, 0)
	return list, err
}

// Page lists the newest limit restore points of repo (every one when
// limit is 0), newest first, and how many there are. It reads the
// records of the points it returns and of the loose ones (those not
// folded yet: the last hour's, and any never ended), not of every folded
// one. It writes nothing.
//
// Labels are unique when taken; older points get one here, the oldest
// keeping a label that two would share, among the points returned.
func Page(ctx context.Context, repo *gitx.Repo, limit int) ([]RestorePoint, int, error) {
	list, ids, err := page(ctx, repo, limit)
	return list, len(ids), err
}

// page is Page, with the ids of every restore point of repo.
func page(ctx context.Context, repo *gitx.Repo, limit int) ([]RestorePoint, map[string]bool, error) {
	// Loose refs first, then the folded index: the fold writes FoldedRef
	// before it deletes a point's loose refs, so a point whose refs are
	// gone when read here is in the index read after.
	loose, err := readLoose(ctx, repo, RestorePrefix+"*/meta", RestorePrefix+"*/end")
	if err != nil {
		return nil, nil, err
	}
	folded, err := ReadFolded(ctx, repo)
	if err != nil {
		return nil, nil, err
	}
	type candidate struct {
		id string
		at time.Time
	}
	var all []candidate
	for id, rp := range loose {
		if _, ok := folded.Points[id]; !ok {
			all = append(all, candidate{id, rp.CreatedAt})
		}
	}
	for id, p := range folded.Points {
		all = append(all, candidate{id, p.At})
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].at.Equal(all[j].at) {
			return all[i].at.After(all[j].at)
		}
		return all[i].id < all[j].id
	})
	ids := make(map[string]bool, len(all))
	for _, c := range all {
		ids[c.id] = true
	}
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	// A point both loose and folded (a fold stopped before it deleted the
	// loose refs, or deleting them now) is read from the index: the fold
	// wrote it whole, while the loose refs may be half deleted.
	var paths []string
	for _, c := range all {
		if p, ok := folded.Points[c.id]; ok {
			paths = append(paths, p.Path)
		}
	}
	fromIndex, err := readFoldedPoints(ctx, repo, folded, paths)
	if err != nil {
		return nil, nil, err
	}
	list := make([]RestorePoint, 0, len(all))
	for _, c := range all {
		rp := fromIndex[c.id]
		if _, ok := folded.Points[c.id]; !ok {
			rp = loose[c.id]
		}
		if rp != nil {
			list = append(list, *rp)
		}
	}
	seen := map[string]bool{}
	for i := len(list) - 1; i >= 0; i-- {
		list[i].Label = UniqueLabel(Label(&list[i]), seen)
		seen[list[i].Label] = true
	}
	return list, ids, nil
}

// readLoose reads the restore points still kept by loose refs under
// RestorePrefix whose meta and end refs match patterns, by id.
func readLoose(ctx context.Context, repo *gitx.Repo, patterns ...string) (map[string]*RestorePoint, error) {
	out, err := repo.ReadGit(ctx, "for-each-ref", append([]string{"--format=%(refname)%00%(contents)%1e"}, patterns...), nil, nil, 0)
	if err != nil {
		return nil, err
	}
	byID := map[string]*RestorePoint{}
	ends := map[string]*EndState{}
	for _, rec := range bytes.Split(out.Stdout, []byte{0x1e}) {
		name, contents, ok := bytes.Cut(bytes.TrimLeft(rec, "\n"), []byte{0})
		if !ok {
			continue
		}
		rest, found := strings.CutPrefix(string(name), RestorePrefix)
		if !found {
			continue
		}
		id, part, _ := strings.Cut(rest, "/")
		if !proposal.ValidID(id) {
			continue
		}
		switch part {
		case "meta":
			if rp := parseMeta(id, contents); rp != nil {
				byID[id] = rp
			}
		case "end":
			if end := parseEnd(contents); end != nil {
				ends[id] = end
			}
		}
	}
	for id, rp := range byID {
		rp.End = ends[id]
	}
	return byID, nil
}

// ReadLoose lists the restore points still kept by loose refs under
// RestorePrefix (see FoldedRef), in no order, labels as recorded.
func ReadLoose(ctx context.Context, repo *gitx.Repo) ([]RestorePoint, error) {
	byID, err := readLoose(ctx, repo, RestorePrefix+"*/meta", RestorePrefix+"*/end")
	if err != nil {
		return nil, err
	}
	out := make([]RestorePoint, 0, len(byID))
	for _, rp := range byID {
		out = append(out, *rp)
	}
	return out, nil
}

// readFoldedPoints reads the records of the folded points at paths.
func readFoldedPoints(ctx context.Context, repo *gitx.Repo, f *Folded, paths []string) (map[string]*RestorePoint, error) {
	out := map[string]*RestorePoint{}
	if len(paths) == 0 {
		return out, nil
	}
	// Each point's meta and end gitlinks name the commits to read.
	names := make([]string, 0, 2*len(paths))
	for _, path := range paths {
		names = append(names, f.Tree+":"+path+"/meta", f.Tree+":"+path+"/end")
	}
	msgs, err := commitMessages(ctx, repo, names)
	if err != nil {
		return nil, err
	}
	for i, path := range paths {
		id, _, ok := parseFoldedName(path)
		if !ok {
			continue
		}
		rp := parseMeta(id, msgs[2*i])
		if rp == nil {
			continue
		}
		rp.End = parseEnd(msgs[2*i+1])
		out[id] = rp
	}
	return out, nil
}

// parseMeta reads a meta commit's message: nil unless it is a valid
// record of restore point id.
func parseMeta(id string, contents []byte) *RestorePoint {
	var rp RestorePoint
	if json.Unmarshal(messageBody(contents), &rp) != nil || rp.ID != id || !validRestorePoint(&rp) {
		return nil
	}
	return &rp
}

// parseEnd reads an end commit's message; nil when it holds none.
func parseEnd(contents []byte) *EndState {
	var end EndState
	if len(contents) == 0 || json.Unmarshal(messageBody(contents), &end) != nil {
		return nil
	}
	return &end
}

// messageBody is what follows the subject line of a commit message.
func messageBody(contents []byte) []byte {
	if _, body, ok := bytes.Cut(contents, []byte("\n\n")); ok {
		return bytes.TrimSpace(body)
	}
	return nil
}

var hexSHA = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// validRestorePoint refuses a record that names anything a restore must
// not touch: refs outside refs/, malformed ids, relative paths.
func validRestorePoint(rp *RestorePoint) bool {
	okSHA := func(s string, empty bool) bool { return (empty && s == "") || hexSHA.MatchString(s) }
	for _, r := range rp.Refs {
		if !strings.HasPrefix(r.Ref, "refs/") || strings.HasPrefix(r.Ref, "refs/sluice/") || gitx.CheckRev("ref", r.Ref) != nil ||
			strings.Contains(r.Ref, "..") || !okSHA(r.SHA, true) {
			return false
		}
	}
	for _, w := range rp.Worktrees {
		if !filepath.IsAbs(w.Path) || filepath.Clean(w.Path) != w.Path || !okSHA(w.HeadSHA, false) ||
			(w.Head != "" && !strings.HasPrefix(w.Head, "refs/heads/")) {
			return false
		}
		if w.Files && (!okSHA(w.Index, false) || !okSHA(w.Tree, false)) {
			return false
		}
		if !w.Files && (!okSHA(w.Index, true) || w.Tree != "" || w.Clean) {
			return false
		}
		if len(w.Paths) > 0 && (w.Clean || !validPaths(w.Paths)) {
			return false
		}
	}
	for _, c := range rp.Config {
		if gitx.CheckRev("branch", c.Branch) != nil {
			return false
		}
		for _, kv := range c.Entries {
			if !strings.HasPrefix(kv.Key, "branch."+c.Branch+".") || strings.ContainsAny(kv.Key, "\n\x00") {
				return false
			}
		}
	}
	if rp.NewWorktree != "" && (!filepath.IsAbs(rp.NewWorktree) || filepath.Clean(rp.NewWorktree) != rp.NewWorktree) {
		return false
	}
	return true
}

// validPaths: every path of a scope is relative, clean, inside the
// working tree and outside .git, and they are sorted without repeats.
func validPaths(paths []string) bool {
	for i, p := range paths {
		if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") ||
			strings.ContainsAny(p, "\x00\n") || (i > 0 && paths[i-1] >= p) {
			return false
		}
		for _, part := range strings.Split(p, "/") {
			if strings.EqualFold(part, ".git") {
				return false
			}
		}
	}
	return true
}

// Find returns the restore point id of repo, reading its record alone
// (its label as recorded: labels are unique when taken).
func Find(ctx context.Context, repo *gitx.Repo, id string) (*RestorePoint, error) {
	if !proposal.ValidID(id) {
		return nil, errcode.New(errcode.InvalidArgument, "a restore point id matches "+proposal.IDPattern)
	}
	// Loose refs first, then the index, as in Page.
	loose, err := readLoose(ctx, repo, RestorePrefix+id+"/meta", RestorePrefix+id+"/end")
	if err != nil {
		return nil, err
	}
	folded, err := ReadFolded(ctx, repo)
	if err != nil {
		return nil, err
	}
	rp := loose[id]
	if p, ok := folded.Points[id]; ok {
		got, err := readFoldedPoints(ctx, repo, folded, []string{p.Path})
		if err != nil {
			return nil, err
		}
		rp = got[id]
	}
	if rp == nil {
		return nil, &errcode.Error{Code: errcode.RestorePointNotFound, Msg: "no restore point " + id + " in this repository"}
	}
	rp.Label = Label(rp)
	return rp, nil
}

// Label is rp's label; points taken before labels were recorded get
// one from what they do record.
func Label(rp *RestorePoint) string {
	if rp.Label != "" {
		return rp.Label
	}
	if rp.Kind == KindRestore {
		return "before restore of " + rp.Restores
	}
	if rp.Op != "" {
		return "before " + rp.Op + " " + rp.ProposalID
	}
	return "restore point " + rp.ID
}

// UniqueLabel is label, or label with " (2)", " (3)" … when taken already
// has it: two restore points never read the same in a list.
func UniqueLabel(label string, taken map[string]bool) string {
	if !taken[label] {
		return label
	}
	for n := 2; ; n++ {
		if l := fmt.Sprintf("%s (%d)", label, n); !taken[l] {
			return l
		}
	}
}
