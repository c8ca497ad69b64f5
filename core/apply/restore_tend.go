package apply

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/restorepoint"
)

// RestorePointsKeptAtLeast is how many of a repository's newest restore
// points TendRestorePoints keeps whatever their age: a repository left
// alone for months still has its last operations to undo.
const RestorePointsKeptAtLeast = 10

// restoreTendBatch bounds how many restore points one tend removes, the
// oldest first: git deletes a loose ref in about 3 ms here, so a first
// tend of a repository with 10,000 expired restore points (40,000 refs)
// would hold the repository's lock for two minutes; in batches the
// backlog goes over a few hourly tends, each holding the lock seconds.
var restoreTendBatch = 500

// RestoreTend is what one TendRestorePoints did in a repository.
type RestoreTend struct {
	// Removed is how many restore points were removed, Kept how many are
	// left, Left how many of those are past the retention, left for the
	// next tend by restoreTendBatch.
	Removed, Kept, Left int
}

// TendRestorePoints removes the restore points of repo that passed their
// retention: those whose operation ended (or, never ended, began) before
// cutoff, except the RestorePointsKeptAtLeast newest, those whose
// operation never recorded its end (a crash: the person reconciles it
// from the restore point), and those keep names (asked once, with every
// restore point past the cutoff, after they were read: the app keeps the
// restore points of proposals that need reconciliation). A removed
// restore point's refs are deleted, each only if it still names what was
// read (a folded one leaves restorepoint.FoldedRef), and its objects left
// to git's gc; its removal is first recorded
// in restorepoint.ExpiredRef, so that the safety timeline and a restore
// say it expired. The journal and the audit ledger are not touched. It
// runs under the repository's lock, never beside an execution or a
// restore.
func (e *Executor) TendRestorePoints(ctx context.Context, repo string, cutoff time.Time, keep func([]RestorePoint) (map[string]bool, error)) (RestoreTend, error) {
	rc, err := e.openRepo(ctx, repo)
	if err != nil {
		return RestoreTend{}, err
	}
	unlock, err := e.lock(ctx, []string{rc.path})
	if err != nil {
		return RestoreTend{}, err
	}
	defer unlock()
	list, err := restorepoint.List(ctx, rc.repo)
	if err != nil {
		return RestoreTend{}, err
	}
	var old []RestorePoint
	for i, rp := range list {
		last := rp.CreatedAt
		if rp.End != nil && rp.End.At.After(last) {
			last = rp.End.At
		}
		if i >= RestorePointsKeptAtLeast && rp.End != nil && last.Before(cutoff) {
			old = append(old, rp)
		}
	}
	if len(old) == 0 {
		return RestoreTend{Kept: len(list)}, nil
	}
	if keep != nil {
		kept, err := keep(old)
		if err != nil {
			return RestoreTend{}, err
		}
		old = slices.DeleteFunc(old, func(rp RestorePoint) bool { return kept[rp.ID] })
	}
	if len(old) == 0 {
		return RestoreTend{Kept: len(list)}, nil
	}
	// list is newest first: the oldest go first.
	left := max(0, len(old)-restoreTendBatch)
	old = old[left:]
	e.step("restore-tend-read")
	if err := rc.recordExpired(ctx, old, e.now()); err != nil {
		return RestoreTend{}, err
	}
	e.step("restore-tend-recorded")
	// Every ref of the removed points, in one transaction that deletes
	// each only if it still names what it named when read.
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(refname) %(objectname)"}, revs: []string{RestorePrefix}})
	if err != nil {
		return RestoreTend{}, err
	}
	gone := map[string]bool{}
	for _, rp := range old {
		gone[rp.ID] = true
	}
	var in bytes.Buffer
	for _, line := range strings.Split(res.text(), "\n") {
		ref, sha, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(ref, RestorePrefix), "/")
		if gone[id] {
			fmt.Fprintf(&in, "delete %s %s\n", ref, sha)
		}
	}
	if in.Len() > 0 {
		if _, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: restore points expired", "--stdin"}, stdin: in.Bytes()}); err != nil {
			return RestoreTend{}, err
		}
	}
	// Folded points leave the folded ref (see restorepoint.FoldedRef).
	f, err := restorepoint.ReadFolded(ctx, rc.repo)
	if err != nil {
		return RestoreTend{}, err
	}
	drop := map[string]bool{}
	for id := range gone {
		if _, ok := f.Points[id]; ok {
			drop[id] = true
		}
	}
	if len(drop) > 0 {
		if err := rc.rewriteFolded(ctx, f, nil, drop); err != nil {
			return RestoreTend{}, err
		}
	}
	e.step("restore-tend-removed")
	return RestoreTend{Removed: len(old), Kept: len(list) - len(old), Left: left}, nil
}

// recordExpired adds the removal of old, at now, to
// restorepoint.ExpiredRef with one compare-and-swap update-ref: a record
// written before the refs go, so that a crash in between leaves the
// restore points listed (and restorable) and recorded as expired, and
// the next tend removes them.
func (rc *repoCtx) recordExpired(ctx context.Context, old []RestorePoint, now time.Time) error {
	res, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"for-each-ref", "--format=%(objectname)"}, revs: []string{restorepoint.ExpiredRef}})
	if err != nil {
		return err
	}
	prev := res.text()
	had, err := restorepoint.ListExpired(ctx, rc.repo)
	if err != nil {
		return err
	}
	var lines []string
	seen := map[string]bool{}
	for _, rp := range old {
		lines = append(lines, restorepoint.Expired{ID: rp.ID, RemovedAt: now, TakenAt: rp.CreatedAt, ProposalID: rp.ProposalID}.Line())
		seen[rp.ID] = true
	}
	for _, x := range had {
		if !seen[x.ID] {
			lines = append(lines, x.Line())
		}
	}
	lines = lines[:min(len(lines), restorepoint.MaxExpired)]
	blob, err := rc.g.run(ctx, call{dir: rc.path, args: []string{"hash-object", "-w", "--stdin"}, stdin: []byte(strings.Join(lines, "\n") + "\n")})
	if err != nil {
		return err
	}
	tree, err := rc.mktreeBatch(ctx, []string{fmt.Sprintf("100644 blob %s\t%s\n", blob.text(), restorepoint.ExpiredList)})
	if err != nil {
		return err
	}
	c, err := rc.epochCommit(ctx, tree[0], nil, "Sluice restore points expired\n\n"+
		"The blob "+restorepoint.ExpiredList+" lists them. Dated 1970 so that a date-ordered git log lists it last.")
	if err != nil {
		return err
	}
	if prev == "" {
		prev = rc.g.zero
	}
	_, err = rc.g.run(ctx, call{dir: rc.path, args: []string{"update-ref", "-m", "sluice: restore points expired"}, revs: []string{restorepoint.ExpiredRef, c, prev}})
	return err
}
