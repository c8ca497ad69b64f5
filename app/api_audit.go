package app

import (
	"errors"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/journal"
)

// AuditView is what the audit screen shows: the newest entries and the
// signing key's id.
type AuditView struct {
	KeyID   string       `json:"keyId"`
	Signed  bool         `json:"signed"`
	Entries []AuditEntry `json:"entries"`
}

// AuditEntry is one entry of the audit ledger as the ledger holds it: its
// fields depend on the event it records.
type AuditEntry map[string]any

// AuditReport is the verifier's result for the audit screen: the same
// counts `sluice-sidecar verify-audit` prints.
type AuditReport struct {
	OK             bool   `json:"ok"`
	Problem        string `json:"problem,omitempty"`
	Entries        int    `json:"entries"`
	Chained        int    `json:"chained"`
	Legacy         int    `json:"legacy"`
	Signed         int    `json:"signed"`
	Unsigned       int    `json:"unsigned"`
	Segments       int    `json:"segments"`
	FirstSequence  uint64 `json:"firstSequence"`
	LastSequence   uint64 `json:"lastSequence"`
	CheckpointUsed string `json:"checkpointUsed"`
	// Head is the ledger's last entry as SEQ:HASH: an anchor to keep
	// outside this machine and hand to `verify-audit --expect-head`.
	Head string `json:"head,omitempty"`
	// ExpectedHead is the app's own last entry, which the journal keeps
	// with each transition; the ledger must still hold it.
	ExpectedHead string `json:"expectedHead,omitempty"`
}

// auditTailSize is how many entries the audit screen shows.
const auditTailSize = 100

// Audit returns the newest ledger entries, newest first.
func (api *API) Audit() (AuditView, error) {
	a := api.app
	entries, err := audit.Tail(a.cfg.AuditLog(), auditTailSize)
	if err != nil {
		return AuditView{}, err
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	v := AuditView{Signed: a.auditPub != nil, Entries: make([]AuditEntry, 0, len(entries))}
	for _, e := range entries {
		v.Entries = append(v.Entries, e)
	}
	if a.auditPub != nil {
		v.KeyID = audit.KeyID(a.auditPub)
	}
	return v, nil
}

// VerifyAudit runs the ledger verifier (the one behind verify-audit) over
// every segment. With signing on, unsigned entries count as failures.
func (api *API) VerifyAudit() (AuditReport, error) {
	a := api.app
	opts := audit.VerifyOptions{RequireSigned: a.auditPub != nil}
	out := AuditReport{}
	// The chain cannot show that its last entries were deleted; the
	// journal knows the app's last one.
	switch h, err := a.journal.AuditHead(); {
	case err == nil:
		opts.ExpectHead = &audit.Head{Sequence: h.Sequence, Hash: h.Hash}
		out.ExpectedHead = opts.ExpectHead.String()
	case !errors.Is(err, journal.ErrNotFound):
		return AuditReport{}, err
	}
	rep, err := audit.Verify(a.cfg.AuditLog(), a.auditPub, opts)
	out.OK, out.Entries, out.Chained, out.Legacy = err == nil, rep.Entries, rep.Chained, rep.Legacy
	out.Signed, out.Unsigned, out.Segments = rep.Signed, rep.Unsigned, rep.Segments
	out.FirstSequence, out.LastSequence, out.CheckpointUsed = rep.FirstSeq, rep.LastSeq, rep.CheckpointUsed
	if err == nil && rep.Chained > 0 {
		out.Head = audit.Head{Sequence: rep.LastSeq, Hash: rep.LastHash}.String()
	}
	if err != nil {
		// A failed verification is a result to show, not an API error;
		// the verifier's messages name file, line and reason only.
		var ve *audit.VerifyError
		if errors.As(err, &ve) {
			out.Problem = ve.Error()
		} else {
			out.Problem = err.Error()
		}
	}
	return out, nil
}

// ProposalAudit returns the ledger entries about one proposal, oldest
// first, from the newest part of the ledger.
func (api *API) ProposalAudit(id string) ([]AuditEntry, error) {
	if _, err := api.app.record(id); err != nil {
		return nil, err
	}
	entries, err := audit.Tail(api.app.cfg.AuditLog(), audit.MaxTail)
	if err != nil {
		return nil, err
	}
	out := []AuditEntry{}
	for _, e := range entries {
		if e["proposal_id"] == id {
			out = append(out, e)
		}
	}
	return out, nil
}
