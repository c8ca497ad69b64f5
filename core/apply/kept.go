package apply

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// A proposal's sealed objects are first kept by a ref of its own
// (refs/sluice/sealed/<id>, written by Keep and KeepResealed): one cheap
// write when a card is made. Left there, such refs pile up one per
// proposal, and every git that reads all refs (a decorated `git log`,
// `git for-each-ref`, Sluice's own reads, the lock check's walk of
// refs/) pays for each of them. TendSealed therefore folds them, on a
// schedule, into one ref per repository, keptRef, whose commit's tree
// holds every kept outcome:
//
//	<bucket>/<proposal id>             the tree Keep made (its sealed trees)
//	<bucket>/<proposal id>/<tree id>   or, re-sealed, each tree Keep made
//
// A bucket is two hex digits of a hash of the id, so that adding or
// dropping one proposal rewrites a tree of a few dozen entries and the
// 256-entry root, not a tree of every proposal. The commit has no parent:
// `git log --all` shows it once, not once per change.
//
// Every change to keptRef is one compare-and-swap update-ref, made from
// the tree it replaces, so nothing already kept is lost by a fold; a
// proposal's own ref is deleted only after keptRef holds its trees (a
// crash in between leaves them kept twice, and the next fold finds them
// already there). Folds and drops hold the repository's lock, as an
// execution does, so they never run beside one, and the locks their git
// takes (packed-refs.lock when a ref is deleted) are never seen by the
// lock check.
const keptRef = "refs/sluice/kept"

// keptBucket is the bucket of proposal id in keptRef's tree.
func keptBucket(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return fmt.Sprintf("%02x", h.Sum32()&0xff)
}

// keptState is keptRef as read: its commit ("" when there is none), its tree,
// the root's buckets and every proposal's entry.
type keptState struct {
	commit, tree string
	buckets      map[string]string // bucket → tree
	entries      map[string]string // id → tree of its kept trees
}

// sealedRef is one proposal's own ref under proposal.SealedRefPrefix.
type sealedRef struct {
	id, commit, tree string
	// resealed: the commit has parents (KeepResealed put it on top of the
	// earlier outcome's), whose trees are kept too.
	resealed bool
}

// readSealed lists the proposals' own sealed refs and reads keptRef.
func (rc *repoCtx) readSealed(ctx context.Context) ([]sealedRef, keptState, error) {
	k := keptState{buckets: map[string]string{}, entries: map[string]string{}}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(refname) %(objectname) %(tree) %(parent)"},
		revs: []string{proposal.SealedRefPrefix, keptRef}})
	if err != nil {
		return nil, k, err
	}
	var refs []sealedRef
	for _, l := range strings.Split(res.text(), "\n") {
		f := strings.SplitN(l, " ", 4)
		if len(f) < 3 {
			continue
		}
		if f[0] == keptRef {
			k.commit, k.tree = f[1], f[2]
			continue
		}
		if id, ok := strings.CutPrefix(f[0], proposal.SealedRefPrefix); ok && proposal.ValidID(id) && f[2] != "" {
			refs = append(refs, sealedRef{id: id, commit: f[1], tree: f[2], resealed: len(f) == 4 && strings.TrimSpace(f[3]) != ""})
		}
	}
	if k.tree == "" {
		return refs, k, nil
	}
	root, err := rc.lsTree(ctx, k.tree, nil)
	if err != nil {
		return nil, k, err
	}
	var dirs []string
	for name, t := range root {
		k.buckets[name] = t
		dirs = append(dirs, name+"/")
	}
	if len(dirs) == 0 {
		return refs, k, nil
	}
	slices.Sort(dirs)
	ents, err := rc.lsTree(ctx, k.tree, dirs)
	if err != nil {
		return nil, k, err
	}
	for name, t := range ents {
		if _, id, ok := strings.Cut(name, "/"); ok {
			k.entries[id] = t
		}
	}
	return refs, k, nil
}

// lsTree lists the trees in tree (under the directories dirs, when
// given) by path.
func (rc *repoCtx) lsTree(ctx context.Context, tree string, dirs []string) (map[string]string, error) {
	// (git 2.39's ls-tree lists nothing for "--end-of-options <tree> --"
	// with no path after it.)
	c := call{dir: rc.path, args: []string{"ls-tree", "-z"}, revs: []string{tree}, paths: dirs}
	res, err := rc.g.run(ctx, c)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(res.out), "\x00") {
		meta, name, ok := strings.Cut(l, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 && f[1] == "tree" {
			out[name] = f[2]
		}
	}
	return out, nil
}

// mktrees writes trees (each a name → tree list) in one git mktree and
// returns their ids in order (see mktreeBatch).
func (rc *repoCtx) mktrees(ctx context.Context, trees []map[string]string) ([]string, error) {
	lines := make([]string, len(trees))
	for i, t := range trees {
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(t)) {
			fmt.Fprintf(&b, "040000 tree %s\t%s\n", t[name], name)
		}
		lines[i] = b.String()
	}
	return rc.mktreeBatch(ctx, lines)
}

// rewriteKept moves keptRef to hold, besides what it holds, the trees
// of add (proposal id → trees Keep made), and no longer the proposals of
// drop. It reports whether keptRef changed.
//
// A proposal's entry is the one tree Keep made for it, or, once it holds
// more than one (a re-sealed proposal), a tree of those trees, each named
// by its id: Keep's trees name their entries t00, t01…, never by an id,
// so the two cannot be taken for each other.
func (rc *repoCtx) rewriteKept(ctx context.Context, k keptState, add map[string][]string, drop map[string]bool) (bool, error) {
	// An entry that is there already gains the trees it lacks; a list
	// of trees, not one of Keep's, is read to be merged.
	old := map[string]string{}
	if had := k.listed(add, drop); len(had) > 0 {
		var err error
		if old, err = rc.lsTree(ctx, k.tree, had); err != nil {
			return false, err
		}
	}
	entry, ids, trees := k.newEntries(add, drop, old)
	made, err := rc.mktrees(ctx, trees)
	if err != nil {
		return false, err
	}
	for i, id := range ids {
		entry[id] = made[i]
	}
	touched := k.touched(entry, drop)
	if len(touched) == 0 {
		return false, nil
	}
	root, names, trees := k.bucketTrees(touched)
	if made, err = rc.mktrees(ctx, trees); err != nil {
		return false, err
	}
	for i, b := range names {
		root[b] = made[i]
	}
	return rc.moveKept(ctx, k, root)
}

// listed are the tree paths of the entries add extends that are there
// already (and not dropped), sorted, for ls-tree to read their lists.
func (k keptState) listed(add map[string][]string, drop map[string]bool) []string {
	var had []string
	for id := range add {
		if k.entries[id] != "" && !drop[id] {
			had = append(had, keptBucket(id)+"/"+id+"/")
		}
	}
	slices.Sort(had)
	return had
}

// newEntries is what each proposal add names becomes: entry holds those
// that are one tree (the tree itself); ids and trees those that need a
// tree of their trees written, which the caller writes and puts in entry.
// old is the ls-tree of the listed entries.
func (k keptState) newEntries(add map[string][]string, drop map[string]bool, old map[string]string) (entry map[string]string, ids []string, trees []map[string]string) {
	entry = map[string]string{} // id → its new entry
	for _, id := range slices.Sorted(maps.Keys(add)) {
		if drop[id] {
			continue
		}
		t := map[string]string{}
		if e := k.entries[id]; e != "" {
			prefix := keptBucket(id) + "/" + id + "/"
			list := false
			for name, sha := range old {
				if rest, ok := strings.CutPrefix(name, prefix); ok && isObjectID(rest) {
					t[rest], list = sha, true
				}
			}
			if !list {
				t[e] = e
			}
		}
		n := len(t)
		for _, sha := range add[id] {
			t[sha] = sha
		}
		switch {
		case k.entries[id] != "" && len(t) == n:
			continue // every tree is kept already
		case len(t) == 1:
			entry[id] = add[id][0]
		default:
			ids, trees = append(ids, id), append(trees, t)
		}
	}
	return entry, ids, trees
}

// touched are the buckets that change, with their entries as they become.
func (k keptState) touched(entry map[string]string, drop map[string]bool) map[string]map[string]string {
	touched := map[string]map[string]string{}
	bucket := func(b string) map[string]string {
		if touched[b] == nil {
			touched[b] = map[string]string{}
			for id, t := range k.entries {
				if keptBucket(id) == b {
					touched[b][id] = t
				}
			}
		}
		return touched[b]
	}
	for id, t := range entry {
		bucket(keptBucket(id))[id] = t
	}
	for id := range drop {
		if k.entries[id] != "" {
			delete(bucket(keptBucket(id)), id)
		}
	}
	return touched
}

// bucketTrees is the root's entries without the buckets that emptied,
// and the buckets to write (their names and entries, in order).
func (k keptState) bucketTrees(touched map[string]map[string]string) (root map[string]string, names []string, trees []map[string]string) {
	root = maps.Clone(k.buckets)
	if root == nil {
		root = map[string]string{}
	}
	for _, b := range slices.Sorted(maps.Keys(touched)) {
		if len(touched[b]) == 0 {
			delete(root, b)
			continue
		}
		names, trees = append(names, b), append(trees, touched[b])
	}
	return root, names, trees
}

// moveKept writes root as the kept ref's tree and moves the ref to a
// commit of it, by compare-and-swap from k; no root deletes the ref.
func (rc *repoCtx) moveKept(ctx context.Context, k keptState, root map[string]string) (bool, error) {
	expect := k.commit
	if expect == "" {
		expect = rc.g.zero
	}
	if len(root) == 0 {
		_, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: nothing sealed to keep", "-d"}, revs: []string{keptRef, expect}})
		return err == nil, err
	}
	made, err := rc.mktrees(ctx, []map[string]string{root})
	if err != nil {
		return false, err
	}
	if made[0] == k.tree {
		return false, nil
	}
	c, err := rc.keptCommit(ctx, made[0], nil, "sluice: sealed outcomes kept for Sluice's proposals")
	if err != nil {
		return false, err
	}
	_, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: keep sealed outcomes"}, revs: []string{keptRef, c, expect}})
	return err == nil, err
}

// isObjectID reports whether name is a hex object id (SHA-1 or SHA-256).
func isObjectID(name string) bool {
	if len(name) != 40 && len(name) != 64 {
		return false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// SealedTend is what one TendSealed did in a repository.
type SealedTend struct {
	// Folded is how many proposals' own refs were folded into keptRef,
	// Dropped how many proposals' sealed objects were let go, Kept how
	// many proposals keptRef holds afterwards.
	Folded, Dropped, Kept int
}

// TendSealed folds every proposal's own sealed ref in repo into the one
// ref that keeps them all, and lets go of the sealed objects of the
// proposals drop names. drop is asked about every proposal whose sealed
// objects are kept, after they were read: a proposal whose ref Keep
// writes meanwhile is neither folded nor dropped now, and is left for
// the next tend. It runs under the repository's lock, never beside an
// execution.
func (e *Executor) TendSealed(ctx context.Context, repo string, drop func(ids []string) (map[string]bool, error)) (SealedTend, error) {
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return SealedTend{}, err
	}
	unlock, err := e.lock(ctx, []string{rc.path})
	if err != nil {
		return SealedTend{}, err
	}
	defer unlock()
	refs, k, err := rc.readSealed(ctx)
	if err != nil {
		return SealedTend{}, err
	}
	if len(refs) == 0 && len(k.entries) == 0 {
		return SealedTend{}, nil
	}
	ids := slices.Collect(maps.Keys(k.entries))
	for _, r := range refs {
		if k.entries[r.id] == "" {
			ids = append(ids, r.id)
		}
	}
	slices.Sort(ids)
	dropped, err := drop(ids)
	if err != nil {
		return SealedTend{}, err
	}
	e.step("sealed-read")
	add := map[string][]string{}
	for _, r := range refs {
		if dropped[r.id] {
			continue
		}
		trees := []string{r.tree}
		if r.resealed {
			// Every outcome the proposal was sealed with: the journal may
			// name any of them until the re-sealing is recorded.
			res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"log", "--format=%T"}, revs: []string{r.commit}, dashdash: true})
			if err != nil {
				return SealedTend{}, err
			}
			trees = strings.Fields(res.text())
		}
		add[r.id] = append(add[r.id], trees...)
	}
	out := SealedTend{}
	for _, id := range ids {
		if dropped[id] {
			out.Dropped++
		}
	}
	if _, err := rc.rewriteKept(ctx, k, add, dropped); err != nil {
		return SealedTend{}, err
	}
	e.step("sealed-folded")
	// keptRef holds every folded tree now: the proposals' own refs go, in
	// one transaction that deletes each only if it still names what was
	// folded (a re-sealing that moved one meanwhile keeps it all).
	if len(refs) > 0 {
		var in bytes.Buffer
		for _, r := range refs {
			fmt.Fprintf(&in, "delete %s %s\n", proposal.SealedRef(r.id), r.commit)
		}
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: sealed outcomes folded", "--stdin"}, stdin: in.Bytes()}); err != nil {
			return SealedTend{}, err
		}
	}
	out.Folded = len(add)
	out.Kept = len(ids) - out.Dropped
	e.step("sealed-tended")
	return out, nil
}

// Keep makes the objects of p's sealed outcome reachable: a commit whose
// tree holds every sealed tree, under refs/sluice/sealed/<id>. Until then
// they are objects nothing refers to, so a proposal that is never stored
// leaves nothing behind that git's own gc does not clean. Keep is called
// once the proposal is stored, and again at start-up for every proposal
// still open (a crash may have come in between); a ref that exists is
// left as it is.
func (e *Executor) Keep(ctx context.Context, p proposal.Proposal) error {
	return e.keep(ctx, p, nil)
}

// PreKeep writes the tree and the commit that keep p's sealed outcome,
// which nothing refers to yet, and returns the function that keeps them:
// Keep, with the ref written to that commit. The objects may be written
// before p is stored, beside the journal's record (objects nothing
// refers to are what a proposal never stored leaves anyway); the ref only
// once it is. The function writes the objects again if they could not be
// written here.
func (e *Executor) PreKeep(ctx context.Context, p proposal.Proposal) func(context.Context) error {
	if p.Sealed == nil {
		return func(context.Context) error { return nil }
	}
	trees := keptTrees(p.Sealed)
	var k *keptObjects
	if rc, err := e.openRepo(ctx, p.Repo); err == nil {
		if tree, err := rc.keptTree(ctx, trees); err == nil {
			if c, err := rc.keptCommit(ctx, tree, nil, keptMessage(p.ID)); err == nil {
				k = &keptObjects{rc: rc, trees: trees, commit: c}
			}
		}
	}
	return func(ctx context.Context) error { return e.keep(ctx, p, k) }
}

// keptObjects is the commit PreKeep wrote for the trees of a sealed
// outcome, in the repository it opened.
type keptObjects struct {
	rc     *repoCtx
	trees  []string
	commit string
}

func keptMessage(id string) string { return "sluice: sealed outcome of proposal " + id }

// keep is Keep, with the commit k when PreKeep wrote it for the same
// trees.
func (e *Executor) keep(ctx context.Context, p proposal.Proposal, k *keptObjects) error {
	if p.Sealed == nil {
		return nil
	}
	e.step("seal-keep")
	var rc *repoCtx
	if k != nil {
		rc = k.rc
	} else {
		var err error
		if rc, err = e.openRepo(ctx, p.Repo); err != nil {
			return err
		}
	}
	ref := proposal.SealedRef(p.ID)
	if exists, known := gitx.RefInFiles(rc.repo.CommonDir, ref); known && exists {
		return nil
	} else if !known {
		if res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"rev-parse", "--verify", "--quiet"}, revs: []string{ref}, ok: []int{1}}); err != nil {
			return err
		} else if res.exit == 0 {
			return nil
		}
	}
	// Only Sluice writes its sealed refs, one Keep at a time for a
	// proposal: a lock older than this process was left by a crash
	// between its creation and its rename, and would refuse every write
	// of the ref (in process and by git) at every start.
	if lock := filepath.Join(rc.repo.CommonDir, filepath.FromSlash(ref)) + ".lock"; staleLock(lock) {
		e.log.Warn("apply: removing a sealed ref's lock left by a crash", "lock", lock)
		_ = os.Remove(lock)
	}
	var c string
	if trees := keptTrees(p.Sealed); k != nil && slices.Equal(k.trees, trees) {
		c = k.commit
	} else {
		tree, err := rc.keptTree(ctx, trees)
		if err != nil {
			return err
		}
		if c, err = rc.keptCommit(ctx, tree, nil, keptMessage(p.ID)); err != nil {
			return err
		}
	}
	// The ref is written in this process where git's files backend would
	// write just that file (see gitx.CreateRefLocal); git writes it
	// otherwise, and says why it cannot.
	if err := rc.repo.CreateRefLocal(ref, c); err != nil {
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: seal"}, revs: []string{ref, c, rc.g.zero}}); err != nil {
			return err
		}
	}
	e.step("seal-kept")
	return nil
}

// processStart is when this process started: a lock file older than it
// was not made by it.
var processStart = time.Now()

// staleLock reports a regular lock file last written before this process
// started.
func staleLock(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.Mode().IsRegular() && st.ModTime().Before(processStart)
}

// keptTrees lists every tree of a sealed outcome, once each.
func keptTrees(sealed *proposal.Sealed) []string {
	var trees []string
	for _, x := range append([]proposal.Sealed{*sealed}, sealed.Steps...) {
		for _, t := range []string{x.Before, x.After} {
			if t != "" && !slices.Contains(trees, t) {
				trees = append(trees, t)
			}
		}
	}
	return trees
}

// keptTree is a tree that holds the trees of a sealed outcome (see
// keptTrees), for a commit under refs/sluice/sealed/ to keep.
func (rc *repoCtx) keptTree(ctx context.Context, trees []string) (string, error) {
	if id, ok := rc.writeKeptTree(trees); ok {
		return id, nil
	}
	var in bytes.Buffer
	for i, t := range trees {
		fmt.Fprintf(&in, "040000 tree %s\tt%02d\n", t, i)
	}
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"mktree"}, stdin: in.Bytes()})
	if err != nil {
		// git says "missing" or "bad" in some versions, "is unavailable"
		// in others (2.39) of a tree that is not there.
		if e := stderrOf(err); strings.Contains(e, "bad") || strings.Contains(e, "missing") || strings.Contains(e, "unavailable") {
			return "", errcode.New(errcode.StaleBase, "the sealed outcome's objects are no longer in the repository; the proposal cannot run")
		}
		return "", err
	}
	return res.text(), nil
}

// writeKeptTree writes keptTree's tree in process (as mktree would write
// it), when every tree it names is in the object directory as go-git sees
// it. ok is false, and nothing is written, where git must answer: objects
// not SHA-1, or a tree go-git does not find (a pack made since it read the
// pack list, an alternate), which git mktree then finds or reports gone.
func (rc *repoCtx) writeKeptTree(trees []string) (string, bool) {
	if !rc.inProcessObjects() {
		return "", false
	}
	st := rc.objectStorage()
	t := &object.Tree{}
	for i, id := range trees {
		if !hexSHA.MatchString(id) || len(id) != 40 {
			return "", false
		}
		h := plumbing.NewHash(id)
		if st.HasEncodedObject(h) != nil {
			return "", false
		}
		t.Entries = append(t.Entries, object.TreeEntry{Name: fmt.Sprintf("t%02d", i), Mode: filemode.Dir, Hash: h})
	}
	// A tree's entries are in git's order: for trees, by name and "/".
	slices.SortFunc(t.Entries, func(a, b object.TreeEntry) int { return strings.Compare(a.Name+"/", b.Name+"/") })
	obj := st.NewEncodedObject()
	if err := t.Encode(obj); err != nil {
		return "", false
	}
	h, err := st.SetEncodedObject(obj)
	if err != nil {
		return "", false
	}
	return strings.ToLower(h.String()), true
}

// Unseal lets go of proposal id's sealed objects in repo (when the
// proposal was never stored, or its retention ended): its own ref, and
// its entry in the ref that keeps every folded outcome (see kept.go).
// Objects that are already let go are not an error.
func (e *Executor) Unseal(ctx context.Context, repo, id string) error {
	if !proposal.ValidID(id) {
		return errcode.New(errcode.InvalidArgument, "invalid proposal id")
	}
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return err
	}
	// Deleting a ref, git locks packed-refs as well as the ref (the ref
	// may be packed), and packed-refs.lock is one of the locks the lock
	// check reads. The repository's lock keeps this delete and the check
	// apart, so that the start-up's drops are never taken for the
	// person's git (see CheckUnlocked).
	unlock, err := e.lock(ctx, []string{rc.path})
	if err != nil {
		return err
	}
	defer unlock()
	if _, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-d"}, revs: []string{proposal.SealedRef(id)}}); err != nil {
		return err
	}
	_, k, err := rc.readSealed(ctx)
	if err != nil || k.entries[id] == "" {
		return err
	}
	_, err = rc.rewriteKept(ctx, k, nil, map[string]bool{id: true})
	return err
}

// SealedIDs lists the proposal ids that have sealed objects in repo,
// under a ref of their own or folded into the one that keeps them all.
func (e *Executor) SealedIDs(ctx context.Context, repo string) ([]string, error) {
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return nil, err
	}
	refs, k, err := rc.readSealed(ctx)
	if err != nil {
		return nil, err
	}
	ids := slices.Collect(maps.Keys(k.entries))
	for _, r := range refs {
		if k.entries[r.id] == "" {
			ids = append(ids, r.id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
