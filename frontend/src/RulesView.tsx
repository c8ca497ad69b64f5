// Every auto-approve rule in the policy file: what it allows, when it was
// made and from which card, how many proposals it approved since, and a way
// to revoke it. Proposals a rule approved are still in History, marked.
import { useEffect, useState } from "react";
import { api, type RuleView, type RulesView as Rules } from "./api";
import { ErrorBox, ScrollTable, Time, errorMessage } from "./bits";
import { AutoApprovalFeed } from "./AutoApprovals";
import { ConfirmDialog } from "./ConfirmDialog";
import { href } from "./route";

export function RulesView() {
  const [view, setView] = useState<Rules | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [revoking, setRevoking] = useState<RuleView | null>(null);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState("");

  useEffect(() => {
    api.rules().then(setView, (e) => setError(errorMessage(e)));
  }, []);

  async function revoke(r: RuleView) {
    setBusy(true);
    try {
      setView(await api.revokeRule({ agent: r.agent, name: r.name }));
      setNotice(`Rule ${r.name} revoked: proposals like it wait for you again.`);
      setError(null);
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
      setRevoking(null);
    }
  }

  return (
    <section aria-labelledby="rules-title">
      <h1 id="rules-title">Rules</h1>
      <p className="lede">
        Proposals a rule fits are approved without a card, and still appear in History marked with the rule. Destructive
        changes always wait for you.
      </p>
      {view && (
        <p className="muted policy-file">
          {view.configured ? "Policy file " : "No policy file yet; the first rule creates "}
          <code>{view.policyFile}</code>
        </p>
      )}
      {error && <ErrorBox>{error}</ErrorBox>}
      <p className="muted" role="status" aria-live="polite">
        {notice}
      </p>
      {view && view.rules.length === 0 && (
        <p className="panel muted rules-empty">
          No rules. On a pending card, choose <strong>Approve and trust similar…</strong> to make one from your decision.
        </p>
      )}
      {view && view.rules.length > 0 && (
        <ScrollTable label="Rules">
          <table className="entries rules">
            <thead>
              <tr>
                <th scope="col">Rule</th>
                <th scope="col">Allows</th>
                <th scope="col">Expires</th>
                <th scope="col">Made</th>
                <th scope="col">Approved since</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {view.rules.map((r) => (
                <tr key={`${r.agent}/${r.name}`} id={`rule-${r.name}`} className={r.expired ? "expired" : undefined}>
                  <td>
                    <strong className="rule-name">{r.name}</strong>
                    <div className="muted rule-who">{ruleWho(r)}</div>
                  </td>
                  <td className="rule-allows">
                    <code>{r.ops.join(", ")}</code> up to {r.maxRisk} risk{" "}
                    <span className="rule-repos">{r.repos.length ? `in ${r.repos.join(", ")}` : "in any repository"}</span>
                    <div className="muted">
                      {r.refs.length ? `on ${r.refs.join(", ")}` : "on any branch"} ·{" "}
                      {r.paths.length ? `under ${r.paths.join(", ")}` : "any file"}
                    </div>
                  </td>
                  <td className="nowrap">
                    {r.expiresAt ? (
                      r.expired ? (
                        <span className="badge warn">expired</span>
                      ) : (
                        <Time at={r.expiresAt} />
                      )
                    ) : (
                      "never"
                    )}
                  </td>
                  <td>
                    {r.createdAt ? <Time at={r.createdAt} /> : r.inAgentEntry ? "by hand, in the agent's entry" : "by hand"}
                    {r.fromProposal && (
                      <div>
                        from <a href={href("proposal", r.fromProposal)}>this card</a>
                      </div>
                    )}
                  </td>
                  <td className="rule-count">
                    {r.approved}
                    {r.lastApproved && (
                      <div className="muted">
                        last <Time at={r.lastApproved} />
                      </div>
                    )}
                  </td>
                  <td>
                    <button type="button" className="revoke-rule" onClick={() => setRevoking(r)} disabled={busy}>
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
      <AutoApprovalFeed />
      {revoking && (
        <ConfirmDialog
          title={`Revoke rule ${revoking.name}?`}
          confirmLabel="Revoke"
          confirmClass="revoke-confirm"
          danger
          busy={busy}
          onConfirm={() => void revoke(revoking)}
          onCancel={() => setRevoking(null)}
        >
          <p>
            Proposals from {revoking.agent} that it would approve will wait for you again. The rule is removed from the
            policy file; the rest of the file stays as it is.
          </p>
        </ConfirmDialog>
      )}
    </section>
  );
}

/** Whom a rule trusts: the agent, and how Sluice knows it. */
function ruleWho(r: RuleView): string {
  if (r.agent === "*") return "every agent";
  switch (r.identity) {
    case "session":
      return `${r.agent}, confined sessions only`;
    case "token":
      return `${r.agent}, its token only`;
    case "declared":
      return `any program calling itself ${r.agent}`;
    default:
      return r.agent;
  }
}
