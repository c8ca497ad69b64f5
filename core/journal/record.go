package journal

import (
	"github.com/sluicehq/sluice/core/errcode"
	"github.com/sluicehq/sluice/core/proposal"
)

// Record is a proposal with its lifecycle: what the journal stores under
// the proposal's id.
type Record struct {
	Proposal proposal.Proposal `json:"proposal"`
	State    proposal.State    `json:"state"`
	// Version counts transitions, the submit included; it only grows, so
	// a reader can tell a newer record from an older one.
	Version   uint64             `json:"version"`
	UpdatedAt proposal.Timestamp `json:"updatedAt"`
	// Decision is set once a human (or an auto-approve rule) decided.
	Decision *Decision `json:"decision,omitempty"`
	// Outcome is set once execution ended, or when the proposal ended
	// without running (expired, cancelled, failed revalidation).
	Outcome *Outcome `json:"outcome,omitempty"`
	History []Step   `json:"history"`
	// Reseals are the times the pending proposal was sealed again on a
	// base that moved under it, with the same changes (oldest first).
	Reseals []Reseal `json:"reseals,omitempty"`
}

// Reseal is one re-sealing of a pending proposal: what moved under it,
// and the digest it had and has.
type Reseal struct {
	From  string             `json:"from"`
	To    string             `json:"to"`
	Moves []proposal.RefMove `json:"moves"`
	// Branch is the branch the outcome is sealed on now ("" when HEAD is
	// detached) and Base the commit it is sealed on.
	Branch string             `json:"branch,omitempty"`
	Base   string             `json:"base"`
	At     proposal.Timestamp `json:"at"`
}

// Decision is who decided, and what exactly they approved.
type Decision struct {
	By   string `json:"by"`
	Note string `json:"note,omitempty"`
	// ApprovedDigest is the digest the human saw on the card. Execution
	// refuses to run unless it equals the proposal's digest.
	ApprovedDigest string             `json:"approvedDigest,omitempty"`
	Approved       bool               `json:"approved"`
	Auto           bool               `json:"auto,omitempty"`
	At             proposal.Timestamp `json:"at"`
	// Comments are a rejection's notes on the proposal's files and lines
	// (RejectWith), which the agent reads with the decision.
	Comments []Comment `json:"comments,omitempty"`
}

// Outcome is how a proposal ended.
type Outcome struct {
	// Code is a stable code (stale_base, git_failed, …) or empty on success.
	Code    errcode.Code `json:"code,omitempty"`
	Message string       `json:"message,omitempty"`
	// RestorePoint names the restore point taken before execution.
	RestorePoint string             `json:"restorePoint,omitempty"`
	At           proposal.Timestamp `json:"at"`
}

// Step is one transition in a record's history.
type Step struct {
	Version uint64             `json:"version"`
	From    proposal.State     `json:"from,omitempty"`
	To      proposal.State     `json:"to"`
	At      proposal.Timestamp `json:"at"`
	By      string             `json:"by,omitempty"`
	Note    string             `json:"note,omitempty"`
}

// Recorder writes one audit entry per transition. The journal calls Record
// inside the transition's bbolt transaction, before the commit, and aborts
// the transition when Record fails: nothing happens that is not on record.
//
// The converse does not hold: an entry can exist for a transition whose
// commit never happened. After a crash that is the one transition that was
// in flight (the last entry the process wrote); without a crash, it is a
// commit that failed, and the caller was told so.
type Recorder interface {
	Record(ev Event) error
}

// AuditHead is where in the ledger an audit entry landed.
type AuditHead struct {
	Sequence uint64 `json:"sequence"`
	Hash     string `json:"hash"`
}

// HeadRecorder is a Recorder that says where each entry landed. The journal
// keeps the newest such head in the same transaction as the transition, so
// that the app knows the last entry it wrote even after every line after
// it was cut from the ledger: no hash chain can show a truncated tail by
// itself.
type HeadRecorder interface {
	Recorder
	RecordHead(ev Event) (AuditHead, error)
}

// RecorderFunc adapts a function to Recorder.
type RecorderFunc func(Event) error

// Record calls f.
func (f RecorderFunc) Record(ev Event) error { return f(ev) }

// Event types, one per kind of transition, plus policy denials (which
// change nothing but are audited all the same).
const (
	EventSubmitted           = "proposal_submitted"
	EventApproved            = "proposal_approved"
	EventAutoApproved        = "proposal_auto_approved"
	EventRejected            = "proposal_rejected"
	EventCancelled           = "proposal_cancelled"
	EventExpired             = "proposal_expired"
	EventExecuting           = "proposal_executing"
	EventCompleted           = "proposal_completed"
	EventFailed              = "proposal_failed"
	EventNeedsReconciliation = "proposal_needs_reconciliation"
	// EventRetried: a person ran a failure that changed nothing again
	// (failed → approved).
	EventRetried      = "proposal_retried"
	EventPolicyDenied = "policy_denied"
)

// Event is what the journal asks the Recorder to write. Repo is the raw
// canonical path: a ledger that must not hold raw paths hashes it.
type Event struct {
	Type       string             `json:"type"`
	ProposalID string             `json:"proposalId"`
	Digest     string             `json:"digest,omitempty"`
	Agent      string             `json:"agent"`
	Op         proposal.Op        `json:"op"`
	Repo       string             `json:"repo"`
	Risk       string             `json:"risk,omitempty"`
	From       proposal.State     `json:"from,omitempty"`
	To         proposal.State     `json:"to,omitempty"`
	Version    uint64             `json:"version,omitempty"`
	By         string             `json:"by,omitempty"`
	Note       string             `json:"note,omitempty"`
	Code       string             `json:"code,omitempty"`
	At         proposal.Timestamp `json:"at"`
	// Origin is the proposal's: set when it came from a confined session.
	Origin *proposal.Origin `json:"origin,omitempty"`
	// Comments are a rejection's comments (proposal_rejected only).
	Comments []Comment `json:"comments,omitempty"`
}
