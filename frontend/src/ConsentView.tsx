// The page where the person allows or denies a remote connector (ChatGPT,
// Claude.ai) that `sluice remote` sent here. It is a page of the UI on this
// machine, behind the person's session: a connector never reaches it, and
// the decision is the person's alone. Allow and Deny are audited by Go.
import { useEffect, useState } from "react";
import { api, type ConsentView as Consent } from "./api";
import { ErrorBox, errorMessage } from "./bits";

const scopeWords: Record<string, string> = {
  read: "Read your repositories under the allowed roots (history, status, diffs)",
  propose: "Propose changes and wait for your decision (you approve each one here)",
};

export function ConsentView({ id }: { id: string }) {
  const [req, setReq] = useState<Consent | null>(null);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    api.connectorConsent(id).then(setReq, (e) => setError(errorMessage(e)));
  }, [id]);

  const decide = async (allow: boolean) => {
    setBusy(true);
    try {
      const out = await api.decideConnector(id, allow);
      // Back to the connector, with a code or with access_denied.
      window.location.assign(out.redirect);
    } catch (e) {
      setError(errorMessage(e));
      setBusy(false);
    }
  };

  if (error) {
    return (
      <section aria-labelledby="consent-title">
        <h1 id="consent-title">Connect a remote agent</h1>
        <ErrorBox title="This request cannot be answered">{error}</ErrorBox>
      </section>
    );
  }
  if (!req) return <p role="status">Loading…</p>;
  const c = req.client;
  return (
    <section className="panel consent" aria-labelledby="consent-title">
      <h1 id="consent-title">Allow {c.name} to connect?</h1>
      <p>
        Allow only if you started connecting <strong>{c.name}</strong> to Sluice just now. It can never approve, restore,
        or change settings: every change it proposes waits for you here.
      </p>
      <dl className="facts">
        <dt>Connector</dt>
        <dd id="consent-client">{c.name}</dd>
        <dt>{c.kind === "metadata document" ? "Metadata URL" : "Registration"}</dt>
        <dd id="consent-registration">
          {c.kind === "metadata document" ? <code>{c.id}</code> : <>registered with Sluice, ID <code>{c.id}</code></>}
        </dd>
        <dt>Sends you back to</dt>
        <dd id="consent-redirect">
          <code>{req.redirectHost}</code>
        </dd>
        <dt>It may</dt>
        <dd>
          <ul id="consent-scopes">
            {req.scopes.map((s) => (
              <li key={s}>
                <code>{s}</code>: {scopeWords[s] ?? s}
              </li>
            ))}
          </ul>
        </dd>
        <dt>Repositories under</dt>
        <dd>
          {req.allowedRoots.length === 0 ? (
            <span>no allowed roots yet (it can read nothing until you add one in Settings)</span>
          ) : (
            <ul id="consent-roots">
              {req.allowedRoots.map((r) => (
                <li key={r}>
                  <code>{r}</code>
                </li>
              ))}
            </ul>
          )}
        </dd>
      </dl>
      <p>
        <button type="button" className="primary" disabled={busy} onClick={() => decide(true)}>
          Allow
        </button>{" "}
        <button type="button" disabled={busy} onClick={() => decide(false)}>
          Deny
        </button>
      </p>
    </section>
  );
}

// The remote connectors the person allowed, each with Revoke, which ends
// its tokens at once.
export function ConnectorsList() {
  const [view, setView] = useState<Awaited<ReturnType<typeof api.connectors>> | null>(null);
  const [error, setError] = useState("");
  useEffect(() => {
    api.connectors().then(setView, (e) => setError(errorMessage(e)));
  }, []);
  const revoke = (id: string) =>
    api.revokeConnector({ id }).then(
      (v) => {
        setView(v);
        setError("");
      },
      (e) => setError(errorMessage(e)),
    );
  return (
    <section aria-labelledby="connectors-title">
      <h2 id="connectors-title">Remote connectors</h2>
      {error && <ErrorBox>{error}</ErrorBox>}
      {view && !view.serving && (
        <p className="muted">
          No remote listener runs. <code>sluice remote --public-url https://…</code> starts one for ChatGPT or Claude.ai.
        </p>
      )}
      {view && view.serving && view.connectors.length === 0 && <p className="muted">No connector is allowed yet.</p>}
      {view && view.connectors.length > 0 && (
        <table id="connectors">
          <thead>
            <tr>
              <th scope="col">Connector</th>
              <th scope="col">Allowed</th>
              <th scope="col">Scopes</th>
              <th scope="col">Last use</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {view.connectors.map((c) => (
              <tr key={c.id}>
                <td>{c.name}</td>
                <td>{c.grantedAt ? new Date(c.grantedAt).toLocaleString() : ""}</td>
                <td>{c.scopes.join(", ")}</td>
                <td>{c.lastUse ? new Date(c.lastUse).toLocaleString() : "never"}</td>
                <td>
                  {c.revoked ? (
                    "revoked"
                  ) : (
                    <button type="button" onClick={() => revoke(c.id)} aria-label={`Revoke ${c.name}`}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
