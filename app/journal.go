package app

import (
	"context"
	"strings"

	"github.com/sluicehq/sluice/core/audit"
	"github.com/sluicehq/sluice/core/journal"
	"github.com/sluicehq/sluice/core/proposal"
)

// journalRecorder writes one ledger entry per journal transition. The
// journal calls it inside the transition's transaction and aborts the
// transition when it fails, so nothing is decided or executed off the
// record.
type journalRecorder struct{ ledger *audit.Ledger }

func (r journalRecorder) Record(ev journal.Event) error {
	_, err := r.RecordHead(ev)
	return err
}

// RecordHead makes the journal keep the sequence and hash of the app's
// last entry beside the transition, which is how Verify sees a ledger
// whose tail was cut off.
func (r journalRecorder) RecordHead(ev journal.Event) (journal.AuditHead, error) {
	e := audit.Entry{
		EventType:      ev.Type,
		SessionID:      ev.Agent,
		Risk:           ev.Risk,
		ProposalID:     ev.ProposalID,
		ProposalDigest: ev.Digest,
		Result:         resultOf(ev),
		Data: map[string]any{
			"op":   string(ev.Op),
			"from": string(ev.From),
			"to":   string(ev.To),
		},
	}
	if ev.Repo != "" {
		e.RepoScope = audit.RepoScope(ev.Repo)
	}
	if ev.By != "" {
		e.Approval = ev.By
	}
	if ev.Code != "" {
		e.Data["code"] = ev.Code
	}
	// A rejection's comments stay in the journal (the ledger holds no
	// file names or free text); the ledger binds them by count and
	// fingerprint, so that they cannot be changed afterwards unseen.
	if len(ev.Comments) > 0 {
		fp, err := audit.ArgsFingerprint(ev.Comments)
		if err != nil {
			return journal.AuditHead{}, err
		}
		e.Data["comments"] = len(ev.Comments)
		e.Data["comments_fingerprint"] = fp
	}
	// Whether the proposing agent was confined, and in which session: the
	// ledger says what the card said.
	e.Data["confined"] = ev.Origin != nil
	if o := ev.Origin; o != nil {
		e.Data["session"] = o.Session
		e.Data["runtime"] = o.Runtime
		// A data value is at most 512 bytes; the proposal, which the
		// digest covers, keeps the whole list.
		if n := strings.Join(o.Network, ","); len(n) <= 500 {
			e.Data["network"] = n
		} else {
			e.Data["network"] = n[:500] + "…"
		}
		if o.Leftover {
			e.Data["leftover"] = true
		}
	}
	rc, err := r.ledger.Append(e)
	if err != nil {
		return journal.AuditHead{}, err
	}
	return journal.AuditHead{Sequence: rc.Sequence, Hash: rc.EntryHash}, nil
}

func resultOf(ev journal.Event) string {
	if ev.Code != "" {
		return "error:" + ev.Code
	}
	return "ok"
}

// bridgeJournal turns journal changes into UI events. A gap in the
// sequence (the subscriber fell behind) is sent as a resync, so the UI
// re-reads instead of missing a proposal.
func (a *App) bridgeJournal(ctx context.Context) {
	ch, cancel := a.journal.Subscribe()
	defer cancel()
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return
		case c, ok := <-ch:
			if !ok {
				return
			}
			if last != 0 && c.Seq != last+1 {
				a.events.Publish(Event{Name: "proposals:resync"})
				a.executeApproved()
			}
			last = c.Seq
			name := "proposal:updated"
			if c.From == "" {
				name = "proposal:created"
				a.notifyCreated(c.ID)
			}
			// Every approval, by a person or by an auto-approve rule,
			// reaches the executor through here, exactly once.
			if c.To == proposal.Approved {
				a.execute(c.ID)
			}
			a.events.Publish(Event{Name: name, Data: ProposalEvent{
				ID: c.ID, Agent: c.Agent, Op: c.Op, State: c.To, Version: c.Version,
			}})
		}
	}
}

// executeApproved hands every approved record to the executor: after a gap
// in the change stream an approval may have gone unseen. Running one twice
// is harmless: only the first moves it to executing.
func (a *App) executeApproved() {
	recs, err := a.journal.List(journal.Filter{States: []proposal.State{proposal.Approved}})
	if err != nil {
		a.log.Error("list approved proposals", "err", err)
		return
	}
	for _, r := range recs {
		a.execute(r.Proposal.ID)
	}
}
