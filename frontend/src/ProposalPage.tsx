// One proposal's whole story: the card, every lifecycle step with who and
// when, the decision and outcome, and the audit ledger's entries about it.
import { useCallback, useEffect, useState } from "react";
import { api, onEvents, type AuditEntry, type Card } from "./api";
import { ErrorBox, StateBadge, Time, errorMessage } from "./bits";
import { AuditEntries } from "./AuditEntries";
import { ProposalCard } from "./ProposalCard";
import { href } from "./route";

export function ProposalPage({ id }: { id: string }) {
  const [card, setCard] = useState<Card | null>(null);
  const [audit, setAudit] = useState<AuditEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [auditError, setAuditError] = useState<string | null>(null);

  const load = useCallback(async () => {
    try {
      setCard(await api.proposal(id));
      setError(null);
    } catch (e) {
      setError(errorMessage(e));
    }
    try {
      setAudit(await api.proposalAudit(id));
      setAuditError(null);
    } catch (e) {
      setAuditError(errorMessage(e));
    }
  }, [id]);

  // Let the app know the card is on screen (a notification's click leads
  // here; the end-to-end tests rely on it); failures change nothing.
  const shownId = card?.id;
  useEffect(() => {
    if (shownId) api.shown("proposal", [shownId]).catch(() => {});
  }, [shownId]);

  useEffect(() => {
    setCard(null);
    setAudit(null);
    void load();
    const off = onEvents(["proposal:updated", "proposals:resync"], (name, data) => {
      if (name === "proposals:resync" || data?.id === id) void load();
    });
    return off;
  }, [id, load]);

  return (
    <section aria-labelledby="proposal-title" className="proposal-page">
      <p>
        <a href={href("history")}>← History</a>
      </p>
      <h1 id="proposal-title">
        Proposal <code>{id}</code>
      </h1>
      {error && <ErrorBox>{error}</ErrorBox>}
      {!card && !error && (
        <p className="muted" role="status">
          Loading…
        </p>
      )}
      {card && <ProposalCard card={card} onDecided={setCard} onReload={() => void load()} />}
      {card && (
        <div className="panel">
          <h2>Lifecycle</h2>
          <ol className="lifecycle">
            {card.history.map((s) => (
              <li key={s.version}>
                <Time at={s.at} /> — {s.from ? <StateBadge state={s.from} /> : "submitted"} → <StateBadge state={s.to} />
                {s.by && <span className="muted"> by {s.by}</span>}
                {s.note && <q className="note-text">{s.note}</q>}
              </li>
            ))}
          </ol>
        </div>
      )}
      <div className="panel">
        <h2>Audit entries</h2>
        {auditError && <ErrorBox>{auditError}</ErrorBox>}
        {audit && audit.length === 0 && <p className="muted">The ledger's recent part has no entries about this proposal.</p>}
        {audit && audit.length > 0 && <AuditEntries entries={audit} withDetails />}
      </div>
    </section>
  );
}
