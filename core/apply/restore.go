package apply

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
	"github.com/sluicehq/sluice/core/restorepoint"
)

// touchSet is what an operation may change in one repository.
type touchSet struct {
	refs []string
	// worktrees maps a worktree to how much of it may change.
	worktrees map[worktree]depth
	// scopes maps a worktree to the paths the operation changes there,
	// when they are known for certain (see scope.go); the restore point
	// then records those paths alone.
	scopes map[worktree][]string
	// config lists branches whose configuration section may change.
	config      []string
	newWorktree string
	note        string
}

func (t *touchSet) empty() bool {
	return len(t.refs) == 0 && len(t.worktrees) == 0 && len(t.config) == 0 && t.newWorktree == ""
}

func (t *touchSet) addRef(ref string) {
	if !slices.Contains(t.refs, ref) {
		t.refs = append(t.refs, ref)
	}
}

func (t *touchSet) addWorktree(wt worktree, d depth) {
	if t.worktrees == nil {
		t.worktrees = map[worktree]depth{}
	}
	t.worktrees[wt] = max(t.worktrees[wt], d)
}

// addScope records the paths an operation changes in wt (nil: not
// known, the whole working tree is recorded).
func (t *touchSet) addScope(wt worktree, paths []string) {
	if len(paths) == 0 {
		return
	}
	if t.scopes == nil {
		t.scopes = map[worktree][]string{}
	}
	t.scopes[wt] = paths
}

func (t *touchSet) addConfig(branch string) {
	if !slices.Contains(t.config, branch) {
		t.config = append(t.config, branch)
	}
}

func (t *touchSet) sortedWorktrees() []worktree {
	wts := make([]worktree, 0, len(t.worktrees))
	for w := range t.worktrees {
		wts = append(wts, w)
	}
	sort.Slice(wts, func(i, j int) bool { return wts[i].path < wts[j].path })
	return wts
}

var emptyTrees = map[string]string{
	"sha1":   "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
	"sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",
}

func emptyTree(repo *gitx.Repo) string {
	if t, ok := emptyTrees[repo.ObjectFormat]; ok {
		return t
	}
	return emptyTrees["sha1"]
}

// taken is a restore point written to a repository, with what a restore
// needs from the moment it was taken.
type taken struct {
	rp   *RestorePoint
	meta string
	// current maps a worktree path to its trees, index file kept, for a
	// worktree that was not clean.
	current map[string]trees
}

func (tk *taken) cleanup() {
	for _, t := range tk.current {
		if t.tmpIndex != "" {
			os.RemoveAll(filepath.Dir(t.tmpIndex))
		}
	}
}

// takeRestorePoint records t under RestorePrefix+rp.ID. Every ref is
// created in one transaction that fails if any already exists.
func (rc *repoCtx) takeRestorePoint(ctx context.Context, rp *RestorePoint, t touchSet) (*taken, error) {
	if rp.Label != "" {
		labels, err := restorepoint.Labels(ctx, rc.repo)
		if err != nil {
			return nil, err
		}
		rp.Label = restorepoint.UniqueLabel(rp.Label, labels)
	}
	tk := &taken{rp: rp, current: map[string]trees{}}
	rp.Repo, rp.Note = rc.path, t.note
	var err error
	if rp.Refs, err = rc.refStates(ctx, t.refs); err != nil {
		return nil, err
	}
	for _, wt := range t.sortedWorktrees() {
		st, tr, err := rc.stateOf(ctx, wt, t.worktrees[wt], keepSnapshot, "sluice restore point "+rp.ID, false, t.scopes[wt])
		if errors.Is(err, restorepoint.ErrNotAFile) {
			// A directory where the operation writes a file: the whole
			// working tree is recorded instead.
			st, tr, err = rc.stateOf(ctx, wt, t.worktrees[wt], keepSnapshot, "sluice restore point "+rp.ID, false, nil)
		}
		if err != nil {
			tk.cleanup()
			return nil, err
		}
		if tr.tmpIndex != "" {
			tk.current[wt.path] = tr
		}
		rp.Worktrees = append(rp.Worktrees, st)
	}
	if rp.Config, err = rc.configSections(ctx, t.config); err != nil {
		tk.cleanup()
		return nil, err
	}
	rp.NewWorktree = t.newWorktree
	js, err := json.Marshal(rp)
	if err != nil {
		tk.cleanup()
		return nil, err
	}
	empty, err := rc.emptyTree(ctx)
	if err != nil {
		tk.cleanup()
		return nil, err
	}
	meta, err := rc.commitTree(ctx, empty, nil, "Sluice restore point "+rp.ID+"\n\n"+string(js))
	if err != nil {
		tk.cleanup()
		return nil, err
	}
	tk.meta = meta
	base := RestorePrefix + rp.ID + "/"
	var in bytes.Buffer
	fmt.Fprintf(&in, "create %smeta %s\n", base, meta)
	for _, r := range rp.Refs {
		if r.SHA != "" {
			fmt.Fprintf(&in, "create %sref/%s %s\n", base, r.Ref, r.SHA)
		}
	}
	for i, w := range rp.Worktrees {
		snap := w.Snapshot
		if snap == "" {
			snap = w.HeadSHA
		}
		fmt.Fprintf(&in, "create %sworktree/%d %s\n", base, i, snap)
	}
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "--stdin"}, stdin: in.Bytes()}); err != nil {
		tk.cleanup()
		if strings.Contains(stderrOf(err), "exists") {
			return nil, errcode.New(errcode.InvalidArgument, "a restore point named %s already exists", rp.ID)
		}
		return nil, err
	}
	return tk, nil
}

// endRestorePoint records the state the operation left behind; left,
// when not nil, is what the operation knows of it.
func (rc *repoCtx) endRestorePoint(ctx context.Context, tk *taken, outcome string, now time.Time, left *effects) error {
	end, err := rc.endState(ctx, tk.rp, outcome, now, keepObjects, left)
	if err != nil {
		return err
	}
	js, err := json.Marshal(end)
	if err != nil {
		return err
	}
	empty, err := rc.emptyTree(ctx)
	if err != nil {
		return err
	}
	c, err := rc.commitTree(ctx, empty, []string{tk.meta}, "Sluice restore point "+tk.rp.ID+" end\n\n"+string(js))
	if err != nil {
		return err
	}
	_, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref"}, revs: []string{RestorePrefix + tk.rp.ID + "/end", c, rc.g.zero}})
	if err == nil {
		tk.rp.End = end
	}
	return err
}

// endState reads the state of what rp covers.
//
// The executor passes keepObjects: the files it just changed are hashed
// into the repository, where the next step (a commit of them, say) finds
// them instead of hashing and writing them again.
func (rc *repoCtx) endState(ctx context.Context, rp *RestorePoint, outcome string, now time.Time, how keep, left *effects) (*EndState, error) {
	end := &EndState{At: now.UTC().Truncate(time.Millisecond), Outcome: outcome}
	// The end state is one moment: the worktrees are read first, and the
	// branch checked out in the main one is not read twice.
	rc = rc.atOneMoment()
	var dirtied map[string]bool
	var restored map[string]WorktreeState
	if left != nil {
		restored = left.restored
		for path, ok := range left.settled {
			if ok {
				rc.reads.putStatus(path, []byte{})
			}
		}
		for path, h := range left.movedHeads {
			rc.reads.putHead(path, h)
		}
		for key, out := range left.entries {
			rc.reads.putEntries(key, out)
		}
		dirtied = left.dirtied
	}
	for _, w := range rp.Worktrees {
		wt, err := rc.worktreeAt(ctx, w.Path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		if k, ok := restored[wt.path]; ok && slices.Equal(k.Paths, w.Paths) {
			// What a restore wrote back is not read again: if it is not
			// so, a later restore sees it as a change and asks.
			h, err := rc.headOf(ctx, wt.path)
			if err != nil {
				return nil, err
			}
			end.Worktrees = append(end.Worktrees, WorktreeState{Path: wt.path, Head: h.sym, HeadSHA: h.sha, Files: k.Files,
				Index: k.Index, Tree: k.Tree, Paths: w.Paths})
			continue
		}
		st, _, err := rc.stateOf(ctx, wt, depthOf(w), how, "", dirtied[wt.path], w.Paths)
		if err != nil {
			return nil, err
		}
		end.Worktrees = append(end.Worktrees, st)
	}
	refs := make([]string, 0, len(rp.Refs))
	for _, r := range rp.Refs {
		refs = append(refs, r.Ref)
	}
	var err error
	if end.Refs, err = rc.refStates(ctx, refs); err != nil {
		return nil, err
	}
	branches := make([]string, 0, len(rp.Config))
	for _, c := range rp.Config {
		branches = append(branches, c.Branch)
	}
	if end.Config, err = rc.configSections(ctx, branches); err != nil {
		return nil, err
	}
	return end, nil
}

// dropRestorePoint deletes every ref of a restore point, for an
// operation that failed before it changed anything.
func (rc *repoCtx) dropRestorePoint(ctx context.Context, id string) error {
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(refname) %(objectname)"}, revs: []string{RestorePrefix + id + "/"}})
	if err != nil {
		return err
	}
	var in bytes.Buffer
	for _, line := range strings.Split(res.text(), "\n") {
		if ref, sha, ok := strings.Cut(line, " "); ok {
			fmt.Fprintf(&in, "delete %s %s\n", ref, sha)
		}
	}
	if in.Len() == 0 {
		return nil
	}
	_, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "--stdin"}, stdin: in.Bytes()})
	return err
}

// refStates reads the named refs in one process; a missing ref has SHA "".
// The branch checked out in the main worktree is taken from its cached
// HEAD when there is one (see readCache).
func (rc *repoCtx) refStates(ctx context.Context, refs []string) ([]RefState, error) {
	out := make([]RefState, 0, len(refs))
	have := map[string]string{}
	if h, ok := rc.reads.headOf(rc.path); ok && h.sym != "" {
		have[h.sym] = h.sha
	}
	var ask []string
	for _, r := range refs {
		if _, ok := have[r]; !ok {
			ask = append(ask, r)
		}
	}
	if len(ask) > 0 {
		res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(refname) %(objectname)"}, revs: ask})
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(res.text(), "\n") {
			if ref, sha, ok := strings.Cut(line, " "); ok && slices.Contains(ask, ref) {
				have[ref] = sha
			}
		}
	}
	for _, r := range refs {
		out = append(out, RefState{Ref: r, SHA: have[r]})
	}
	return out, nil
}

// configSections reads branch.<name>.* for each branch.
func (rc *repoCtx) configSections(ctx context.Context, branches []string) ([]ConfigSection, error) {
	var out []ConfigSection
	for _, b := range branches {
		res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"config", "--local", "-z", "--get-regexp", `^branch\.` + regexp.QuoteMeta(b) + `\.`}, ok: []int{1}})
		if err != nil {
			return nil, err
		}
		out = append(out, restorepoint.ParseConfigSection(b, res.out))
	}
	return out, nil
}

// restoreConfig puts a branch's configuration section back as recorded.
func (rc *repoCtx) restoreConfig(ctx context.Context, sec ConfigSection) error {
	if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"config", "--local", "--remove-section", "branch." + sec.Branch}, ok: []int{128}}); err != nil {
		return err
	}
	for _, kv := range sec.Entries {
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"config", "--local", "--add", kv.Key, kv.Value}}); err != nil {
			return err
		}
	}
	return nil
}

var hexSHA = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// ---------------------------------------------------------------------
// Restoring.

// RefChange is one ref a restore moved.
type RefChange struct {
	Ref string `json:"ref"`
	// From and To are SHAs; "" is an absent ref.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// RestoreResult is what a restore changed: enough for the app to audit it.
type RestoreResult struct {
	Repo         string `json:"repo"`
	RestorePoint string `json:"restorePoint"`
	ProposalID   string `json:"proposalId,omitempty"`
	// UndoPoint is the restore point taken just before, which undoes
	// this restore.
	UndoPoint string `json:"undoPoint"`
	Forced    bool   `json:"forced"`
	// Conflicts were overwritten because the person confirmed (Forced).
	Conflicts []Conflict  `json:"conflicts,omitempty"`
	Refs      []RefChange `json:"refs"`
	// Worktrees lists working trees whose HEAD, index or files were put
	// back.
	Worktrees       []string `json:"worktrees,omitempty"`
	RemovedWorktree string   `json:"removedWorktree,omitempty"`
	Config          []string `json:"config,omitempty"`
	Note            string   `json:"note,omitempty"`
}

// restore puts rp back. The caller holds the repository lock.
func (e *Executor) restore(ctx context.Context, rc *repoCtx, rp *RestorePoint, force bool) (*RestoreResult, error) {
	now := e.now()
	// The checks and the undo point look at one moment (see readCache),
	// until the restore writes.
	at := rc.atOneMoment()
	at.entriesInProcess = restoreEntriesInProcess
	conflicts, err := at.restorable(ctx, rp, force)
	if err != nil {
		return nil, err
	}
	undo, err := at.takeUndoPoint(ctx, rp, now)
	if err != nil {
		return nil, err
	}
	defer undo.cleanup()
	res := &RestoreResult{Repo: rc.path, RestorePoint: rp.ID, ProposalID: rp.ProposalID, UndoPoint: undo.rp.ID, Forced: force,
		Refs: []RefChange{}, Note: rp.Note}
	if force {
		res.Conflicts = conflicts
	}
	e.step("restore-undo-point")
	left := &effects{restored: map[string]WorktreeState{}}
	if err := rc.putBack(ctx, rp, undo, force, res, left); err != nil {
		return res, err
	}
	if err := rc.endRestorePoint(ctx, undo.taken, EndRestored, now, left); err != nil {
		return res, err
	}
	return res, nil
}

// restorable returns what changed after the operation, and refuses
// (restore_conflict) when something did and force is not set, or when a
// ref to move is checked out where the restore point does not reach.
func (rc *repoCtx) restorable(ctx context.Context, rp *RestorePoint, force bool) ([]Conflict, error) {
	conflicts, err := restorepoint.Conflicts(ctx, present{rc}, rp)
	if err != nil {
		return nil, err
	}
	if len(conflicts) > 0 && !force {
		msgs := make([]string, 0, len(conflicts))
		for _, c := range conflicts {
			msgs = append(msgs, c.Message)
		}
		return nil, &errcode.Error{Code: errcode.RestoreConflict, Data: conflicts,
			Msg: "work was done after the restore point, and restoring would overwrite it: " + clip(strings.Join(msgs, "; "), 2000)}
	}
	// Moving a branch under a checkout that the restore point did not
	// record would leave that checkout out of step with its branch.
	if err := rc.refuseCheckedOut(ctx, rp); err != nil {
		return nil, err
	}
	return conflicts, nil
}

// undoPoint is the restore point a restore takes of the present, with
// the worktrees of the point it restores as they are now (a zero
// worktree for one that is gone).
type undoPoint struct {
	*taken
	wts []worktree
}

// takeUndoPoint records what restoring rp touches, so that the restore
// can be undone.
func (rc *repoCtx) takeUndoPoint(ctx context.Context, rp *RestorePoint, now time.Time) (*undoPoint, error) {
	var t touchSet
	for _, r := range rp.Refs {
		t.addRef(r.Ref)
	}
	var wts []worktree
	for _, w := range rp.Worktrees {
		wt, err := rc.worktreeAt(ctx, w.Path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				wts = append(wts, worktree{})
				continue
			}
			return nil, err
		}
		wts = append(wts, wt)
		t.addWorktree(wt, depthOf(w))
		t.addScope(wt, w.Paths)
	}
	for _, c := range rp.Config {
		t.addConfig(c.Branch)
	}
	undo := &RestorePoint{ID: undoID(now), Kind: KindRestore, Restores: rp.ID, ProposalID: rp.ProposalID,
		Op: rp.Op, CreatedAt: now.UTC().Truncate(time.Millisecond), Label: "before restore of “" + restorepoint.Label(rp) + "”"}
	tk, err := rc.takeRestorePoint(ctx, undo, t)
	if err != nil {
		return nil, err
	}
	return &undoPoint{taken: tk, wts: wts}, nil
}

// putBack writes rp back over what undo recorded of the present, and
// adds what it changed to res.
func (rc *repoCtx) putBack(ctx context.Context, rp *RestorePoint, undo *undoPoint, force bool, res *RestoreResult, left *effects) error {
	// A worktree the operation added goes first: its branch may be among
	// the refs to delete.
	if p := rp.NewWorktree; p != "" {
		if _, err := os.Lstat(p); err == nil {
			args := []string{"worktree", "remove"}
			if force {
				args = append(args, "--force")
			}
			if _, err := rc.g.run(ctx, call{dir: rc.path, args: args, revs: []string{p}}); err != nil {
				return err
			}
			res.RemovedWorktree = p
		}
	}
	if err := rc.putBackRefs(ctx, rp, undo.rp, res); err != nil {
		return err
	}
	for i, want := range rp.Worktrees {
		wt := undo.wts[i]
		if wt.path == "" {
			continue
		}
		if err := rc.putBackWorktree(ctx, rp.ID, wt, want, undo); err != nil {
			return err
		}
		if len(want.Paths) > 0 {
			left.restored[wt.path] = want
		}
		res.Worktrees = append(res.Worktrees, wt.path)
	}
	for _, sec := range rp.Config {
		if err := rc.restoreConfig(ctx, sec); err != nil {
			return err
		}
		res.Config = append(res.Config, "branch."+sec.Branch)
	}
	return nil
}

// putBackRefs moves every ref of rp that is elsewhere now back, in one
// transaction that fails if any of them moved since undo was taken.
func (rc *repoCtx) putBackRefs(ctx context.Context, rp, undo *RestorePoint, res *RestoreResult) error {
	var in bytes.Buffer
	for _, want := range rp.Refs {
		cur, _ := undo.Ref(want.Ref)
		if cur.SHA == want.SHA {
			continue
		}
		old := cur.SHA
		if old == "" {
			old = rc.g.zero
		}
		if want.SHA == "" {
			fmt.Fprintf(&in, "delete %s %s\n", want.Ref, old)
		} else {
			fmt.Fprintf(&in, "update %s %s %s\n", want.Ref, want.SHA, old)
		}
		res.Refs = append(res.Refs, RefChange{Ref: want.Ref, From: cur.SHA, To: want.SHA})
	}
	if in.Len() > 0 {
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: restore " + rp.ID, "--stdin"}, stdin: in.Bytes()}); err != nil {
			return restoreRaced(err)
		}
	}
	return nil
}

// putBackWorktree puts the HEAD of wt back as want recorded it, and its
// index or files to want's depth.
func (rc *repoCtx) putBackWorktree(ctx context.Context, id string, wt worktree, want WorktreeState, undo *undoPoint) error {
	cur := undo.rp.Worktrees[slices.IndexFunc(undo.rp.Worktrees, func(w WorktreeState) bool { return w.Path == wt.path })]
	if want.Head != "" && cur.Head != want.Head {
		if _, err := rc.g.run(ctx, call{dir: wt.path, args: []string{"symbolic-ref", "-m", "sluice: restore " + id}, revs: []string{"HEAD", want.Head}}); err != nil {
			return err
		}
	} else if want.Head == "" && (cur.Head != "" || cur.HeadSHA != want.HeadSHA) {
		if _, err := rc.g.run(ctx, call{dir: wt.path, args: []string{"update-ref", "--no-deref", "-m", "sluice: restore " + id}, revs: []string{"HEAD", want.HeadSHA}}); err != nil {
			return err
		}
	}
	switch depthOf(want) {
	case depthFiles:
		if len(want.Paths) > 0 {
			now := ""
			if slices.Equal(cur.Paths, want.Paths) {
				now = cur.Index
			}
			return rc.g.restorePaths(ctx, wt, want, now)
		}
		return rc.g.restoreFiles(ctx, wt, want, undo.current[wt.path])
	case depthIndex:
		if len(want.Paths) > 0 {
			return rc.g.restoreIndexPaths(ctx, wt, want.Index, want.Paths)
		}
		return rc.g.restoreIndex(ctx, wt, want.Index)
	}
	return nil
}

func restoreRaced(err error) error {
	if s := stderrOf(err); strings.Contains(s, "but expected") || strings.Contains(s, "reference already exists") {
		return &errcode.Error{Code: errcode.RestoreConflict, Msg: "a ref moved while restoring; nothing of it was restored, try again", Err: err}
	}
	return err
}

func undoID(now time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("restore-%d-%s", now.UnixMilli(), hex.EncodeToString(b))
}

// refuseCheckedOut fails when a ref the restore would move is checked out
// in a worktree whose state the restore point does not hold.
func (rc *repoCtx) refuseCheckedOut(ctx context.Context, rp *RestorePoint) error {
	list, err := rc.repo.Worktrees(ctx)
	if err != nil {
		return err
	}
	recorded := map[string]bool{}
	for _, w := range rp.Worktrees {
		recorded[w.Path] = true
	}
	refs := make([]string, 0, len(rp.Refs))
	for _, r := range rp.Refs {
		refs = append(refs, r.Ref)
	}
	now, err := rc.refStates(ctx, refs)
	if err != nil {
		return err
	}
	moving := map[string]bool{}
	for i, r := range rp.Refs {
		if now[i].SHA != r.SHA {
			moving[r.Ref] = true
		}
	}
	for _, w := range list.Worktrees {
		if w.Branch == "" {
			continue
		}
		ref, path := proposal.BranchRef(w.Branch), w.Path
		if c, err := filepath.EvalSymlinks(path); err == nil {
			path = c
		}
		if moving[ref] && !recorded[path] && path != rp.NewWorktree {
			return &errcode.Error{Code: errcode.RestoreConflict, Data: []Conflict{{Kind: "worktree", Ref: ref, Path: path,
				Message: fmt.Sprintf("%s is checked out in %s now; restoring would move it under that checkout", ref, path)}},
				Msg: fmt.Sprintf("%s is checked out in %s now, which the restore point did not record; check out another branch there first", ref, path)}
		}
	}
	return nil
}
