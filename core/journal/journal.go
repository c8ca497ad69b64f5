package journal

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Errors callers branch on.
var (
	// ErrNotFound: no proposal has this id (or it was pruned).
	ErrNotFound = errors.New("proposal not found")
	// ErrNotOwner: an agent asked to cancel another agent's proposal.
	ErrNotOwner = errors.New("the proposal belongs to another agent")
	// ErrNotPending: the proposal was already decided, cancelled or expired.
	ErrNotPending = errors.New("the proposal is no longer pending")
	// ErrPendingCap: the agent already has as many pending proposals as
	// Options.PendingCap allows.
	ErrPendingCap = errors.New("too many pending proposals for this agent")
	// ErrDuplicateID: a different proposal already has this id.
	ErrDuplicateID = errors.New("a proposal with this id already exists")
	// ErrIdempotencyConflict: the idempotency key was used before by the
	// same agent for the same op, but for a different change (other
	// arguments or repository); a reworded reason is the same change.
	ErrIdempotencyConflict = errors.New("idempotency key already used for a different change")
	// ErrNotRetryable: Retry named a proposal that is not a failure which
	// changed nothing.
	ErrNotRetryable = errors.New("only a failed proposal that changed nothing can be retried")
	// ErrExpired: the proposal's expiry passed before it could be submitted
	// or decided; a decision is refused and the record is now expired.
	ErrExpired = errors.New("the proposal has expired")
	// ErrStateChanged: Transition's expected from-state no longer holds.
	ErrStateChanged = errors.New("the proposal's state changed")
	// ErrDigestMismatch: an approval or execution named a digest other
	// than the proposal's, or the stored proposal no longer matches its
	// digest.
	ErrDigestMismatch = errors.New("digest does not match the proposal")
	// ErrAudit wraps a Recorder failure; the transition did not happen.
	ErrAudit = errors.New("audit record could not be written; nothing was changed")
	// ErrLocked: another process has the journal open.
	ErrLocked = errors.New("the journal is open in another process")
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("journal closed")
	// ErrSchema: the file was written by an incompatible version.
	ErrSchema = errors.New("journal schema version not supported")
)

// Defaults for Options.
const (
	DefaultRetention = 90 * 24 * time.Hour
	// DefaultPendingExpiry is a day: a proposal made while the person is
	// away is still there when they come back.
	DefaultPendingExpiry = 24 * time.Hour
	DefaultPendingCap    = 10
)

const schemaVersion = "1"

var (
	bucketProposals = []byte("proposals")   // id → Record JSON
	bucketPending   = []byte("pending")     // agent \x00 id → expiresAt (unix ms, big endian)
	bucketIdem      = []byte("idempotency") // agent \x00 op \x00 key → id
	bucketOpen      = []byte("open")        // id → state, for every non-terminal record
	bucketMeta      = []byte("meta")
)

// Options configure a Journal.
type Options struct {
	// Recorder receives one audit event per transition. Required: the
	// journal does not run without an audit trail.
	Recorder Recorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Retention is how long terminal records are kept for the history
	// view before Prune deletes them. Zero means DefaultRetention.
	Retention time.Duration
	// PendingExpiry is the longest window between a proposal's createdAt
	// and expiresAt that Submit accepts. Zero means DefaultPendingExpiry.
	PendingExpiry time.Duration
	// PendingCap is how many unexpired pending proposals one agent may
	// have. Zero means DefaultPendingCap.
	PendingCap int
	// LockTimeout bounds the wait for the file lock; another process
	// holding it makes Open fail with ErrLocked. Zero means one second.
	LockTimeout time.Duration
}

// Journal is the durable lifecycle store. It is safe for concurrent use.
type Journal struct {
	db     *bolt.DB
	opts   Options
	hub    hub
	closed atomic.Bool
	cache  proposalCache
}

// Open opens (creating if needed, mode 0600) the journal at path. The
// directory must exist. Only one process may have it open.
func Open(path string, opts Options) (*Journal, error) {
	if opts.Recorder == nil {
		return nil, errors.New("journal: a Recorder is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.PendingExpiry <= 0 {
		opts.PendingExpiry = DefaultPendingExpiry
	}
	if opts.PendingCap <= 0 {
		opts.PendingCap = DefaultPendingCap
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = time.Second
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("journal: %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketProposals, bucketPending, bucketIdem, bucketOpen, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get([]byte("schema")); {
		case v == nil:
			if err := meta.Put([]byte("schema"), []byte(schemaVersion)); err != nil {
				return err
			}
		case string(v) != schemaVersion:
			return fmt.Errorf("%w: %q", ErrSchema, v)
		}
		if err := indexByTime(tx); err != nil {
			return err
		}
		if err := indexText(tx); err != nil {
			return err
		}
		if err := indexRules(tx); err != nil {
			return err
		}
		if err := indexSessions(tx); err != nil {
			return err
		}
		if err := indexRuleNames(tx); err != nil {
			return err
		}
		if err := indexStartup(tx); err != nil {
			return err
		}
		return indexPendingPaths(tx)
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("journal: %s: %w", path, err)
	}
	j := &Journal{db: db, opts: opts}
	j.hub.init()
	return j, nil
}

// Close closes the file and wakes every waiter.
func (j *Journal) Close() error {
	if j.closed.Swap(true) {
		return nil
	}
	j.hub.close()
	return j.db.Close()
}

// DB exposes the bbolt handle for consistency checks and benchmarks.
func (j *Journal) DB() *bolt.DB { return j.db }

func (j *Journal) now() time.Time { return j.opts.Now() }

// Submit stores p as pending. p must be valid and sealed (its digest is
// checked). With an idempotency key already used by the same agent for the
// same op, the stored record is returned as it is now (pending, failed,
// …) with replayed true and nothing is written, even when the reason is
// worded differently; a different change under the same key is
// ErrIdempotencyConflict.
func (j *Journal) Submit(p proposal.Proposal) (rec Record, replayed bool, err error) {
	if j.closed.Load() {
		return Record{}, false, ErrClosed
	}
	if err := p.Validate(); err != nil {
		return Record{}, false, fmt.Errorf("journal: submit: %w", err)
	}
	now := j.now()
	if p.ExpiresAt.Sub(p.CreatedAt.Time) > j.opts.PendingExpiry {
		return Record{}, false, fmt.Errorf("journal: submit: %w: expiresAt is more than %s after createdAt", proposal.ErrInvalid, j.opts.PendingExpiry)
	}
	errReplay := errors.New("replay")
	err = j.db.Update(func(tx *bolt.Tx) error {
		props, pending, idem := tx.Bucket(bucketProposals), tx.Bucket(bucketPending), tx.Bucket(bucketIdem)
		var idemKey []byte
		if p.IdempotencyKey != "" {
			idemKey = idempotencyKey(p)
			stored, found, err := j.replayIn(tx, p)
			if err != nil {
				return err
			}
			if found {
				rec = stored
				return errReplay
			}
		}
		if props.Get([]byte(p.ID)) != nil {
			return ErrDuplicateID
		}
		if !p.ExpiresAt.After(now) {
			return errExpiredOnArrival
		}
		if n := countPending(pending, p.Agent, now); n >= j.opts.PendingCap {
			return fmt.Errorf("%w (%d of %d)", ErrPendingCap, n, j.opts.PendingCap)
		}
		at := proposal.At(now)
		rec = Record{
			Proposal: p, State: proposal.Pending, Version: 1, UpdatedAt: at,
			History: []Step{{Version: 1, To: proposal.Pending, At: at, By: p.Agent}},
		}
		if err := putRecord(props, rec); err != nil {
			return err
		}
		if err := pending.Put(joinKey(p.Agent, p.ID), msBytes(p.ExpiresAt.Time)); err != nil {
			return err
		}
		if err := putExpiry(tx, p); err != nil {
			return err
		}
		if err := tx.Bucket(bucketOpen).Put([]byte(p.ID), []byte(proposal.Pending)); err != nil {
			return err
		}
		if err := putIndexed(tx, indexedOf(p, proposal.Pending)); err != nil {
			return err
		}
		if err := putPaths(tx, p); err != nil {
			return err
		}
		if err := putText(tx, p); err != nil {
			return err
		}
		if err := putSession(tx, p.ID, p.Origin, proposal.Pending); err != nil {
			return err
		}
		if idemKey != nil {
			if err := idem.Put(idemKey, []byte(p.ID)); err != nil {
				return err
			}
		}
		ev := eventFor(rec, EventSubmitted, "", proposal.Pending, p.Agent, "", "")
		if err := j.record(tx, ev); err != nil {
			return err
		}
		j.notifyOnCommit(tx, rec, "")
		return nil
	})
	if errors.Is(err, errReplay) {
		return rec, true, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("journal: submit %s: %w", p.ID, err)
	}
	return rec, false, nil
}

// Deny records that policy refused p before it was stored. Nothing is
// written to the journal.
func (j *Journal) Deny(p proposal.Proposal, rule string) error {
	ev := Event{
		Type: EventPolicyDenied, ProposalID: p.ID, Digest: p.Digest, Agent: p.Agent, Op: p.Op, Repo: p.Repo,
		Risk: p.Risk().String(), By: "policy", Note: rule, Code: "policy_denied", At: proposal.At(j.now()), Origin: p.Origin,
	}
	err := j.db.Update(func(tx *bolt.Tx) error { return j.record(tx, ev) })
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

var metaAuditHead = []byte("auditHead")

// record writes ev's audit entry inside tx, and with a HeadRecorder keeps
// where it landed. The head only moves forward: a denial is written in its
// own transaction and may land before another that commits first.
func (j *Journal) record(tx *bolt.Tx, ev Event) error {
	hr, ok := j.opts.Recorder.(HeadRecorder)
	if !ok {
		if err := j.opts.Recorder.Record(ev); err != nil {
			return fmt.Errorf("%w: %v", ErrAudit, err)
		}
		return nil
	}
	head, err := hr.RecordHead(ev)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrAudit, err)
	}
	meta := tx.Bucket(bucketMeta)
	if old, err := decodeHead(meta.Get(metaAuditHead)); err == nil && old.Sequence >= head.Sequence {
		return nil
	}
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	return meta.Put(metaAuditHead, b)
}

func decodeHead(b []byte) (AuditHead, error) {
	var h AuditHead
	if b == nil {
		return h, ErrNotFound
	}
	err := json.Unmarshal(b, &h)
	return h, err
}

// AuditHead returns the ledger position of the newest audit entry this
// journal's HeadRecorder wrote, and ErrNotFound when it has written none.
func (j *Journal) AuditHead() (AuditHead, error) {
	var h AuditHead
	err := j.db.View(func(tx *bolt.Tx) error {
		var err error
		h, err = decodeHead(tx.Bucket(bucketMeta).Get(metaAuditHead))
		return err
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return AuditHead{}, ErrClosed
	}
	return h, err
}

// Get returns the record of id.
func (j *Journal) Get(id string) (Record, error) {
	if !proposal.ValidID(id) {
		return Record{}, ErrNotFound
	}
	var rec Record
	err := j.db.View(func(tx *bolt.Tx) error {
		var err error
		rec, err = j.getRecord(tx.Bucket(bucketProposals), id)
		return err
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return Record{}, ErrClosed
	}
	return rec, err
}

// Filter selects records for List. Zero fields match everything.
type Filter struct {
	States []proposal.State
	Agent  string
	Repo   string
	// Text, when set, keeps only the records whose SearchText contains
	// it; it must be in lower case. It is looked for before a record is
	// read, so a search reads only the records it may keep.
	Text string
	// Match, when set, keeps only the records it accepts. It is applied
	// with the other fields, before Limit, so that a search finds what it
	// looks for however old it is.
	Match func(Record) bool
	// After continues a listing: only records that come after the one
	// with this id, in List's order, are returned. The id must name a
	// stored record (ErrNotFound otherwise).
	After string
	// Limit caps the result (newest first); zero means no limit.
	Limit int
	// Oldest lists oldest first (After then continues towards the
	// newest): the pending list's order.
	Oldest bool
}

// List returns matching records, newest first (by createdAt, then by id),
// or oldest first with f.Oldest. It reads a time index (see
// listByTime), in order, and stops at the end of the page: the first
// page costs the same however many records the journal holds.
func (j *Journal) List(f Filter) ([]Record, error) {
	var out []Record
	var after *Record
	err := j.db.View(func(tx *bolt.Tx) error {
		props := tx.Bucket(bucketProposals)
		if f.After != "" {
			rec, err := j.getRecord(props, f.After)
			if err != nil {
				return err
			}
			after = &rec
		}
		return j.listByTime(tx, f, after, func(k, v []byte) (bool, error) {
			rec, err := j.cache.decodeRecord(string(k), v)
			if err != nil {
				return false, err
			}
			if f.matches(rec) {
				out = append(out, rec)
			}
			return f.Limit > 0 && len(out) == f.Limit, nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("journal: list: %w", err)
	}
	return out, nil
}

// matches reports whether rec passes every field of f but After and Limit.
func (f Filter) matches(rec Record) bool {
	if len(f.States) > 0 && !slices.Contains(f.States, rec.State) {
		return false
	}
	if (f.Agent != "" && rec.Proposal.Agent != f.Agent) || (f.Repo != "" && rec.Proposal.Repo != f.Repo) {
		return false
	}
	return f.Match == nil || f.Match(rec)
}

// listOrder is List's order: newest createdAt first, then by id.
func listOrder(a, b Record) int {
	if c := b.Proposal.CreatedAt.Compare(a.Proposal.CreatedAt.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Proposal.ID, b.Proposal.ID)
}

// Details describe a transition: who made it and why, and what to store
// with it.
type Details struct {
	By       string
	Note     string
	Decision *Decision
	Outcome  *Outcome
	// Event overrides the event type derived from the target state.
	Event string
	// Code goes into the audit event (an outcome or denial code).
	Code string
}

// Transition moves id from from to to in one bbolt transaction with one
// audit event. It fails with ErrStateChanged if the record is no longer in
// from, and with a *proposal.TransitionError if from → to is not allowed.
// Prefer the named methods (Approve, Reject, …), which add their checks.
func (j *Journal) Transition(id string, from, to proposal.State, d Details) (Record, error) {
	return j.update(id, func(rec *Record, _ time.Time) (proposal.State, Details, error) {
		if rec.State != from {
			return "", d, fmt.Errorf("%w: it is %s, not %s", ErrStateChanged, rec.State, from)
		}
		return to, d, nil
	})
}

// Approve records a human approval of exactly approvedDigest.
func (j *Journal) Approve(id, approvedDigest, by, note string) (Record, error) {
	return j.decide(id, approvedDigest, by, note, true, false)
}

// ApproveAuto records an approval by the policy rule named rule.
func (j *Journal) ApproveAuto(id, approvedDigest, rule string) (Record, error) {
	return j.decide(id, approvedDigest, "policy:"+rule, "auto-approved by policy rule "+rule, true, true)
}

// Reject records a human rejection.
func (j *Journal) Reject(id, by, note string) (Record, error) {
	return j.decide(id, "", by, note, false, false)
}

// SendBack rejects a pending proposal whose card went stale: the outcome
// carries stale_base and what moved, so the agent can propose again
// against the current state.
func (j *Journal) SendBack(id, by, note, stale string) (Record, error) {
	return j.decideWith(id, "", by, note, false, false, func(d *Details, now time.Time) {
		msg := "sent back because the repository moved since it was proposed: " + stale
		d.Code = string(errcode.StaleBase)
		d.Outcome = &Outcome{Code: errcode.StaleBase, Message: msg, At: proposal.At(now)}
	})
}

func (j *Journal) decide(id, digest, by, note string, approve, auto bool) (Record, error) {
	return j.decideWith(id, digest, by, note, approve, auto, nil)
}

// decideWith records a decision; extra, when set, adds to what the
// transition records.
func (j *Journal) decideWith(id, digest, by, note string, approve, auto bool, extra func(*Details, time.Time)) (Record, error) {
	if strings.TrimSpace(by) == "" {
		return Record{}, errors.New("journal: a decision needs who made it")
	}
	var expired bool
	rec, err := j.update(id, func(rec *Record, now time.Time) (proposal.State, Details, error) {
		if rec.State != proposal.Pending {
			return "", Details{}, fmt.Errorf("%w: it is %s", ErrNotPending, rec.State)
		}
		if !now.Before(rec.Proposal.ExpiresAt.Time) {
			expired = true
			return expireDetails(now)
		}
		d := Details{By: by, Note: note, Decision: &Decision{By: by, Note: note, Approved: approve, Auto: auto, At: proposal.At(now)}}
		if extra != nil {
			extra(&d, now)
		}
		if !approve {
			return proposal.Rejected, d, nil
		}
		if digest != rec.Proposal.Digest {
			return "", Details{}, fmt.Errorf("%w: approved %s, proposal is %s", ErrDigestMismatch, digest, rec.Proposal.Digest)
		}
		if err := rec.Proposal.VerifyDigest(); err != nil {
			return "", Details{}, fmt.Errorf("%w: stored proposal: %v", ErrDigestMismatch, err)
		}
		d.Decision.ApprovedDigest = digest
		if auto {
			d.Event = EventAutoApproved
		}
		return proposal.Approved, d, nil
	})
	if err == nil && expired {
		return rec, ErrExpired
	}
	return rec, err
}

func expireDetails(now time.Time) (proposal.State, Details, error) {
	return proposal.Expired, Details{
		By: "sluice", Note: "no decision before the proposal expired",
		Outcome: &Outcome{Code: errcode.Expired, Message: "no decision before the proposal expired", At: proposal.At(now)},
		Code:    string(errcode.Expired),
	}, nil
}

// Cancel withdraws agent's own pending proposal.
func (j *Journal) Cancel(id, agent string) (Record, error) {
	var expired bool
	rec, err := j.update(id, func(rec *Record, now time.Time) (proposal.State, Details, error) {
		if rec.Proposal.Agent != agent {
			return "", Details{}, ErrNotOwner
		}
		if rec.State != proposal.Pending {
			return "", Details{}, fmt.Errorf("%w: it is %s", ErrNotPending, rec.State)
		}
		if !now.Before(rec.Proposal.ExpiresAt.Time) {
			expired = true
			return expireDetails(now)
		}
		return proposal.Cancelled, Details{By: agent, Note: "cancelled by the agent",
			Outcome: &Outcome{Code: "cancelled", Message: "cancelled by the agent", At: proposal.At(now)}}, nil
	})
	if err == nil && expired {
		return rec, fmt.Errorf("%w: it expired", ErrNotPending)
	}
	return rec, err
}

// expireIfDue expires id if it is pending past its expiry; otherwise it
// changes nothing and returns the current record.
func (j *Journal) expireIfDue(id string) (Record, error) {
	errNotDue := errors.New("not due")
	var current Record
	rec, err := j.update(id, func(rec *Record, now time.Time) (proposal.State, Details, error) {
		if rec.State != proposal.Pending || now.Before(rec.Proposal.ExpiresAt.Time) {
			current = *rec
			return "", Details{}, errNotDue
		}
		return expireDetails(now)
	})
	if errors.Is(err, errNotDue) {
		return current, nil
	}
	return rec, err
}

// Retryable reports whether rec is a failure that changed nothing, which
// a person may run again once its cause is fixed (Retry): it failed
// while approved or executing (not after a reconciliation), and its
// outcome names no restore point, which the executor keeps whenever the
// operation may have changed anything.
func Retryable(rec Record) bool {
	if rec.State != proposal.Failed || rec.Outcome == nil || rec.Outcome.RestorePoint != "" || len(rec.History) == 0 {
		return false
	}
	from := rec.History[len(rec.History)-1].From
	return from == proposal.Approved || from == proposal.Executing
}

// Retry moves a failed proposal that changed nothing back to approved,
// as a new decision of by's bound to digest (the digest on the card,
// which must still be the proposal's and verify), so that the executor
// runs it again. The failure it replaces stays in the history, in the
// step's note; the record's outcome is cleared until the new execution
// ends. Anything else is ErrNotRetryable.
func (j *Journal) Retry(id, digest, by, note string) (Record, error) {
	if strings.TrimSpace(by) == "" {
		return Record{}, errors.New("journal: a retry needs who asked for it")
	}
	return j.update(id, func(rec *Record, now time.Time) (proposal.State, Details, error) {
		if !Retryable(*rec) {
			if rec.State != proposal.Failed {
				return "", Details{}, fmt.Errorf("%w: it is %s", ErrNotRetryable, rec.State)
			}
			return "", Details{}, fmt.Errorf("%w: this failure may have changed the repository (see its restore point)", ErrNotRetryable)
		}
		if digest != rec.Proposal.Digest {
			return "", Details{}, fmt.Errorf("%w: retried %s, proposal is %s", ErrDigestMismatch, digest, rec.Proposal.Digest)
		}
		if err := rec.Proposal.VerifyDigest(); err != nil {
			return "", Details{}, fmt.Errorf("%w: stored proposal: %v", ErrDigestMismatch, err)
		}
		failed := rec.Outcome
		rec.Outcome = nil
		why := fmt.Sprintf("retried after it failed (%s) without changing anything", failed.Code)
		if strings.TrimSpace(note) != "" {
			why += ": " + note
		}
		d := Details{By: by, Note: why, Event: EventRetried,
			Decision: &Decision{By: by, Note: note, Approved: true, ApprovedDigest: digest, At: proposal.At(now)}}
		return proposal.Approved, d, nil
	})
}

// MarkExecuting moves an approved proposal to executing. digest must be the
// approved digest: the executor runs nothing else.
func (j *Journal) MarkExecuting(id, digest string) (Record, error) {
	return j.update(id, func(rec *Record, _ time.Time) (proposal.State, Details, error) {
		if rec.State != proposal.Approved {
			return "", Details{}, &proposal.TransitionError{From: rec.State, To: proposal.Executing}
		}
		if rec.Decision == nil || rec.Decision.ApprovedDigest != digest || rec.Proposal.Digest != digest {
			return "", Details{}, ErrDigestMismatch
		}
		if err := rec.Proposal.VerifyDigest(); err != nil {
			return "", Details{}, fmt.Errorf("%w: stored proposal: %v", ErrDigestMismatch, err)
		}
		return proposal.Executing, Details{By: "executor"}, nil
	})
}

// Complete records a successful execution (from executing, or from
// needs_reconciliation when a human found it had completed).
func (j *Journal) Complete(id, by string, o Outcome) (Record, error) {
	return j.finish(id, by, proposal.Completed, o)
}

// Fail records a failed execution, or an approved proposal that may not
// run (its pins no longer hold).
func (j *Journal) Fail(id, by string, o Outcome) (Record, error) {
	return j.finish(id, by, proposal.Failed, o)
}

// Unsettled records an execution whose result the executor could not
// settle (a hook of the person's moved the branch in a way it cannot
// trace): needs_reconciliation, as after a crash, until a person has
// looked at the repository and marks it completed or failed.
func (j *Journal) Unsettled(id, by string, o Outcome) (Record, error) {
	return j.finish(id, by, proposal.NeedsReconciliation, o)
}

func (j *Journal) finish(id, by string, to proposal.State, o Outcome) (Record, error) {
	return j.update(id, func(rec *Record, now time.Time) (proposal.State, Details, error) {
		o.At = proposal.At(now)
		return to, Details{By: by, Note: o.Message, Outcome: &o, Code: string(o.Code)}, nil
	})
}

// update runs one transition of id in one bbolt transaction: fn inspects
// the record and names the target state; the move is checked against the
// state machine, stored, recorded (before the commit; a Recorder failure
// aborts it) and announced to subscribers after the commit.
func (j *Journal) update(id string, fn func(rec *Record, now time.Time) (proposal.State, Details, error)) (Record, error) {
	if j.closed.Load() {
		return Record{}, ErrClosed
	}
	if !proposal.ValidID(id) {
		return Record{}, ErrNotFound
	}
	var out Record
	err := j.db.Update(func(tx *bolt.Tx) error {
		props := tx.Bucket(bucketProposals)
		rec, err := j.getRecord(props, id)
		if err != nil {
			return err
		}
		now := j.now()
		to, d, err := fn(&rec, now)
		if err != nil {
			return err
		}
		from := rec.State
		if err := proposal.CheckTransition(from, to); err != nil {
			return err
		}
		at := proposal.At(now)
		rec.State = to
		rec.Version++
		rec.UpdatedAt = at
		if d.Decision != nil {
			if err := moveRule(tx, rec.Proposal, rec.Decision, d.Decision); err != nil {
				return err
			}
			if err := moveRuleName(tx, rec.Proposal, rec.Decision, d.Decision); err != nil {
				return err
			}
			rec.Decision = d.Decision
		}
		if d.Outcome != nil {
			rec.Outcome = d.Outcome
		}
		rec.History = append(rec.History, Step{Version: rec.Version, From: from, To: to, At: at, By: d.By, Note: d.Note})
		if err := putRecord(props, rec); err != nil {
			return err
		}
		if err := moveState(tx, indexedOf(rec.Proposal, from), to); err != nil {
			return err
		}
		if err := moveSession(tx, id, rec.Proposal.Origin, from, to); err != nil {
			return err
		}
		if from == proposal.Pending {
			if err := tx.Bucket(bucketPending).Delete(joinKey(rec.Proposal.Agent, id)); err != nil {
				return err
			}
			if err := deleteExpiry(tx, rec.Proposal); err != nil {
				return err
			}
			if err := deletePaths(tx, rec.Proposal); err != nil {
				return err
			}
		}
		if to.Terminal() {
			err = tx.Bucket(bucketOpen).Delete([]byte(id))
		} else {
			err = tx.Bucket(bucketOpen).Put([]byte(id), []byte(to))
		}
		if err != nil {
			return err
		}
		typ := d.Event
		if typ == "" {
			typ = eventTypes[to]
		}
		if err := j.record(tx, eventFor(rec, typ, from, to, d.By, d.Note, d.Code)); err != nil {
			return err
		}
		j.notifyOnCommit(tx, rec, from)
		out = rec
		return nil
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return Record{}, ErrClosed
	}
	if err != nil {
		return Record{}, fmt.Errorf("journal: %s: %w", id, err)
	}
	return out, nil
}

var eventTypes = map[proposal.State]string{
	proposal.Approved: EventApproved, proposal.Rejected: EventRejected, proposal.Cancelled: EventCancelled,
	proposal.Expired: EventExpired, proposal.Executing: EventExecuting, proposal.Completed: EventCompleted,
	proposal.Failed: EventFailed, proposal.NeedsReconciliation: EventNeedsReconciliation,
}

func eventFor(rec Record, typ string, from, to proposal.State, by, note, code string) Event {
	p := rec.Proposal
	return Event{
		Type: typ, ProposalID: p.ID, Digest: p.Digest, Agent: p.Agent, Op: p.Op, Repo: p.Repo,
		Risk: p.Risk().String(), From: from, To: to, Version: rec.Version, By: by, Note: note, Code: code,
		At: rec.UpdatedAt, Origin: p.Origin, Comments: rejectionComments(rec, typ),
	}
}

// ExpireDue expires every pending proposal past its expiry, one
// transition each, and returns their ids.
func (j *Journal) ExpireDue() ([]string, error) {
	now := j.now()
	var due []string
	// The expiry index, soonest first: only the keys that are due.
	until := expiryKey(proposal.Timestamp{Time: now}, "")
	err := j.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketByExpiry).Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k[:8], until) <= 0; k, _ = c.Next() {
			due = append(due, string(k[8:]))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal: expire: %w", err)
	}
	var expired []string
	for _, id := range due {
		rec, err := j.expireIfDue(id)
		if err != nil {
			return expired, err
		}
		if rec.State == proposal.Expired {
			expired = append(expired, id)
		}
	}
	return expired, nil
}

// Recovery reports what Recover did.
type Recovery struct {
	// NeedsReconciliation lists executions the app was in the middle of.
	NeedsReconciliation []string
	// Expired lists pending proposals whose time ran out while the app was
	// not running.
	Expired []string
	// Revalidated lists approved proposals that may still run.
	Revalidated []string
	// Invalidated lists approved proposals that failed revalidation and
	// are now failed.
	Invalidated []string
}

// Recover runs at start-up, before anything executes: executions that were
// interrupted become needs_reconciliation (never re-run blindly), overdue
// pending proposals expire, and each approved proposal is re-validated by
// revalidate (pins still hold, digest still matches); one that fails it
// becomes failed. A nil revalidate only checks digests.
func (j *Journal) Recover(revalidate func(Record) error) (Recovery, error) {
	var r Recovery
	open, err := j.List(Filter{States: []proposal.State{proposal.Executing, proposal.Approved}})
	if err != nil {
		return r, err
	}
	for _, rec := range open {
		if rec.State != proposal.Executing {
			continue
		}
		_, err := j.update(rec.Proposal.ID, func(rec *Record, now time.Time) (proposal.State, Details, error) {
			if rec.State != proposal.Executing {
				return "", Details{}, ErrStateChanged
			}
			msg := "the app stopped while this was executing; check the repository before deciding what to do"
			return proposal.NeedsReconciliation, Details{By: "recovery", Note: msg,
				Outcome: &Outcome{Code: errcode.Interrupted, Message: msg, At: proposal.At(now)}, Code: string(errcode.Interrupted)}, nil
		})
		if err != nil {
			return r, err
		}
		r.NeedsReconciliation = append(r.NeedsReconciliation, rec.Proposal.ID)
	}
	if r.Expired, err = j.ExpireDue(); err != nil {
		return r, err
	}
	for _, rec := range open {
		if rec.State != proposal.Approved {
			continue
		}
		verr := rec.Proposal.VerifyDigest()
		if verr == nil && (rec.Decision == nil || rec.Decision.ApprovedDigest != rec.Proposal.Digest) {
			verr = ErrDigestMismatch
		}
		if verr == nil && revalidate != nil {
			verr = revalidate(rec)
		}
		if verr == nil {
			r.Revalidated = append(r.Revalidated, rec.Proposal.ID)
			continue
		}
		code := errcode.RevalidationFailed
		if e, ok := errcode.As(verr); ok {
			code = e.Code
		}
		if _, err := j.Fail(rec.Proposal.ID, "recovery", Outcome{Code: code, Message: verr.Error()}); err != nil {
			return r, err
		}
		r.Invalidated = append(r.Invalidated, rec.Proposal.ID)
	}
	return r, nil
}

// Prune deletes terminal records last changed longer ago than the
// retention, with their idempotency keys, in one transaction. It returns
// how many were deleted.
func (j *Journal) Prune() (int, error) {
	cutoff := j.now().Add(-j.opts.Retention)
	n := 0
	// Only what pruning needs is decoded: not the proposals' arguments,
	// which strict decoding of every record would parse (patches of
	// megabytes) while the write lock holds every transition back.
	type pruned struct {
		State     proposal.State     `json:"state"`
		UpdatedAt proposal.Timestamp `json:"updatedAt"`
		Decision  *Decision          `json:"decision"`
		Proposal  struct {
			ID             string             `json:"id"`
			Repo           string             `json:"repo"`
			CreatedAt      proposal.Timestamp `json:"createdAt"`
			Op             proposal.Op        `json:"op"`
			Agent          string             `json:"agent"`
			IdempotencyKey string             `json:"idempotencyKey"`
			Origin         *proposal.Origin   `json:"origin"`
		} `json:"proposal"`
	}
	err := j.db.Update(func(tx *bolt.Tx) error {
		props, idem := tx.Bucket(bucketProposals), tx.Bucket(bucketIdem)
		var doomed []pruned
		// A record last changed before the cutoff was created before it
		// too, so the time index, walked from its oldest end, names every
		// candidate and stops at the first record created since: the cost
		// follows what is old, not the journal's size. (A clock that went
		// back by more than the retention could leave a record updated
		// "before" its creation; it is pruned once its creation is old.)
		c := tx.Bucket(bucketByTime).Cursor()
		for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			if !createdOfTimeKey(k).Before(cutoff) {
				break
			}
			v := props.Get(idOfTimeKey(k))
			if v == nil {
				continue
			}
			var rec pruned
			if err := json.Unmarshal(v, &rec); err != nil {
				return err
			}
			if rec.State.Terminal() && rec.UpdatedAt.Before(cutoff) {
				doomed = append(doomed, rec)
			}
		}
		for _, rec := range doomed {
			p := rec.Proposal
			if err := props.Delete([]byte(p.ID)); err != nil {
				return err
			}
			if err := deleteIndexed(tx, indexed{ID: p.ID, Repo: p.Repo, CreatedAt: p.CreatedAt, State: rec.State}); err != nil {
				return err
			}
			if err := deleteText(tx, p.CreatedAt, p.ID); err != nil {
				return err
			}
			if err := moveRule(tx, proposal.Proposal{ID: p.ID}, rec.Decision, nil); err != nil {
				return err
			}
			if err := deleteSession(tx, p.ID, p.Origin); err != nil {
				return err
			}
			if err := moveRuleName(tx, proposal.Proposal{ID: p.ID, Agent: p.Agent}, rec.Decision, nil); err != nil {
				return err
			}
			if p.IdempotencyKey != "" {
				session := ""
				if p.Origin != nil {
					session = p.Origin.Session
				}
				k := idemKey(p.Agent, session, p.Op, p.IdempotencyKey)
				if string(idem.Get(k)) == p.ID {
					if err := idem.Delete(k); err != nil {
						return err
					}
				}
			}
		}
		n = len(doomed)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("journal: prune: %w", err)
	}
	return n, nil
}

// PendingCount is how many unexpired pending proposals agent has.
func (j *Journal) PendingCount(agent string) (int, error) {
	n := 0
	err := j.db.View(func(tx *bolt.Tx) error {
		n = countPending(tx.Bucket(bucketPending), agent, j.now())
		return nil
	})
	return n, err
}

// Collision is another pending proposal that touches some of the same
// files.
type Collision struct {
	ProposalID string   `json:"proposalId"`
	Agent      string   `json:"agent"`
	Files      []string `json:"files"`
}

// Collisions lists pending proposals in p's repository whose known files
// overlap p's, found through the index of pending paths.
func (j *Journal) Collisions(p proposal.Proposal) ([]Collision, error) {
	mine, _ := p.FilesTouched()
	if len(mine) == 0 {
		return nil, nil
	}
	var out []Collision
	err := j.db.View(func(tx *bolt.Tx) error {
		out = collisionsIn(tx, p, mine)
		return nil
	})
	if len(out) == 0 {
		out = nil
	}
	return out, err
}

// WaitSettled blocks until id is settled (terminal, or needing
// reconciliation) or ctx ends, and returns the record as it is then. A
// pending proposal that passes its expiry while waited on is expired.
func (j *Journal) WaitSettled(ctx context.Context, id string) (Record, error) {
	for {
		changed := j.hub.changed()
		rec, err := j.Get(id)
		if err != nil {
			return Record{}, err
		}
		if rec.State.Settled() {
			return rec, nil
		}
		var expiry *time.Timer
		if rec.State == proposal.Pending {
			d := rec.Proposal.ExpiresAt.Sub(j.now())
			if d <= 0 {
				if _, err = j.expireIfDue(id); err != nil {
					return Record{}, err
				}
				continue
			}
			expiry = time.NewTimer(d)
		} else {
			expiry = time.NewTimer(time.Hour)
		}
		select {
		case <-changed:
		case <-expiry.C:
		case <-ctx.Done():
			expiry.Stop()
			return rec, nil
		}
		expiry.Stop()
		if j.closed.Load() {
			return rec, ErrClosed
		}
	}
}

// Maintain expires due proposals every interval and prunes old records
// hourly, until ctx ends. Errors are passed to onErr (which may be nil).
func (j *Journal) Maintain(ctx context.Context, every time.Duration, onErr func(error)) {
	if every <= 0 {
		every = 5 * time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	lastPrune := time.Time{}
	for {
		if _, err := j.ExpireDue(); err != nil && onErr != nil && !errors.Is(err, ErrClosed) {
			onErr(err)
		}
		if time.Since(lastPrune) > time.Hour {
			lastPrune = time.Now()
			if _, err := j.Prune(); err != nil && onErr != nil {
				onErr(err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (j *Journal) getRecord(b *bolt.Bucket, id string) (Record, error) {
	v := b.Get([]byte(id))
	if v == nil {
		return Record{}, ErrNotFound
	}
	return j.cache.decodeRecord(id, v)
}

func putRecord(b *bolt.Bucket, rec Record) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return b.Put([]byte(rec.Proposal.ID), v)
}

func countPending(b *bolt.Bucket, agent string, now time.Time) int {
	prefix := joinKey(agent, "")
	n := 0
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(v) == 8 && now.Before(fromMs(v)) {
			n++
		}
	}
	return n
}

// joinKey joins parts with NUL, which none of them can contain (agent
// names, ops, keys and ids are validated).
// idempotencyKey is where p's idempotency key is kept.
func idempotencyKey(p proposal.Proposal) []byte {
	session := ""
	if p.Origin != nil {
		session = p.Origin.Session
	}
	return idemKey(p.Agent, session, p.Op, p.IdempotencyKey)
}

// idemKey is an idempotency key's place: per agent and op, and per
// confined session (another session of the same agent may choose the
// same key, and must not be answered with this one's proposal).
func idemKey(agent, session string, op proposal.Op, key string) []byte {
	if session != "" {
		agent += "@" + session
	}
	return joinKey(agent, string(op), key)
}

func joinKey(parts ...string) []byte { return []byte(strings.Join(parts, "\x00")) }

func msBytes(t time.Time) []byte { return binary.BigEndian.AppendUint64(nil, uint64(t.UnixMilli())) }

func fromMs(b []byte) time.Time { return time.UnixMilli(int64(binary.BigEndian.Uint64(b))) }
