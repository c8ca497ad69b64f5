package restorepoint

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/gitx"
	"github.com/sluicehq/sluice/core/proposal"
)

// ExpiredRef records the restore points removed when they passed their
// retention (see apply.Executor.TendRestorePoints), so that the safety
// timeline and a restore say a restore point expired instead of not
// knowing it. It is one commit with no parent whose tree holds the blob
// ExpiredList, a line per removed restore point:
//
//	<id> <removed at> <taken at> <proposal id or ->
//
// (times in RFC 3339, UTC), newest removal first, at most MaxExpired
// lines. The commit is dated at the epoch and its message is short, for
// the reason restorepoint.FoldedRef's are: the person's date-ordered `git
// log --all` lists it last, and reads neither it nor the list to show
// their own commits. (Records written before held the lines in the
// commit's message; they are still read.) The journal and the audit
// ledger still say what the operation did; only what a restore would
// have needed is gone.
const ExpiredRef = "refs/sluice/restore-expired"

// ExpiredList is the blob of ExpiredRef's tree that lists the removals.
const ExpiredList = "expired"

// MaxExpired bounds the lines ExpiredRef keeps: beyond it the oldest
// removals are forgotten, and such an id reads as never known.
const MaxExpired = 10_000

// Expired is one restore point removed past its retention.
type Expired struct {
	ID         string
	RemovedAt  time.Time
	TakenAt    time.Time
	ProposalID string
}

// Line is e as ExpiredRef records it.
func (e Expired) Line() string {
	p := e.ProposalID
	if p == "" {
		p = "-"
	}
	return fmt.Sprintf("%s %s %s %s", e.ID, e.RemovedAt.UTC().Format(time.RFC3339), e.TakenAt.UTC().Format(time.RFC3339), p)
}

// ParseExpired reads the message of ExpiredRef's commit as records
// before ExpiredList held it; lines it cannot read are skipped.
func ParseExpired(contents []byte) []Expired {
	return ParseExpiredList(messageBody(contents))
}

// ParseExpiredList reads ExpiredList; lines it cannot read are skipped.
func ParseExpiredList(list []byte) []Expired {
	var out []Expired
	for _, l := range strings.Split(string(list), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 || !proposal.ValidID(f[0]) {
			continue
		}
		removed, err1 := time.Parse(time.RFC3339, f[1])
		taken, err2 := time.Parse(time.RFC3339, f[2])
		if err1 != nil || err2 != nil {
			continue
		}
		e := Expired{ID: f[0], RemovedAt: removed, TakenAt: taken}
		if f[3] != "-" {
			e.ProposalID = f[3]
		}
		out = append(out, e)
	}
	return out
}

// ListExpired lists the restore points of repo removed past their
// retention, newest removal first. It writes nothing.
func ListExpired(ctx context.Context, repo *gitx.Repo) ([]Expired, error) {
	out, err := repo.ReadGit(ctx, "for-each-ref", []string{"--format=%(tree)%00%(contents)"}, []string{ExpiredRef}, nil, 0)
	if err != nil {
		return nil, err
	}
	tree, contents, _ := bytes.Cut(bytes.TrimSpace(out.Stdout), []byte{0})
	list := ParseExpired(contents)
	if len(tree) > 0 && len(list) == 0 {
		blob, err := repo.ReadGit(ctx, "cat-file", []string{"-p"}, []string{string(tree) + ":" + ExpiredList}, []int{128}, 0)
		if err != nil {
			return nil, err
		}
		list = ParseExpiredList(blob.Stdout)
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].RemovedAt.After(list[j].RemovedAt) })
	return list, nil
}

// OrExpired is err, the error of Find for id, or, when err says there is
// no such restore point and repo recorded its removal past its
// retention, an error that says it expired.
func OrExpired(ctx context.Context, repo *gitx.Repo, id string, err error) error {
	if !errcode.IsCode(err, errcode.RestorePointNotFound) {
		return err
	}
	list, lerr := ListExpired(ctx, repo)
	if lerr != nil {
		return err
	}
	for _, e := range list {
		if e.ID == id {
			return &errcode.Error{Code: errcode.RestorePointNotFound, Msg: expiredMessage(e) +
				"; it can no longer be restored (the proposal's record and the audit trail still say what the operation did)"}
		}
	}
	return err
}

// expiredMessage says what became of e.
func expiredMessage(e Expired) string {
	return fmt.Sprintf("restore point %s (taken %s) expired: it was removed %s, past its retention",
		e.ID, e.TakenAt.UTC().Format(time.RFC3339), e.RemovedAt.UTC().Format(time.RFC3339))
}

// expiredEvent is the timeline event of an expired restore point, dated
// when it was removed.
func expiredEvent(e Expired) TimelineEvent {
	return TimelineEvent{ID: "rp:" + e.ID, Kind: EventRestorePoint, At: e.RemovedAt, Message: expiredMessage(e), BySluice: true,
		RestorePoint: e.ID, ProposalID: e.ProposalID}
}
