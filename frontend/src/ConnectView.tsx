// "Connect an agent": first the confined way (`sluice run`), then, for an
// agent the person starts themselves, for each MCP client the exact
// configuration Sluice would write and where, and a button that writes it
// (the same code as `sluice-sidecar config`), keeping a backup of the file
// it changes.
import { useEffect, useState } from "react";
import { api, type Client, type ConnectResult } from "./api";
import { CopyButton, ErrorBox, errorMessage } from "./bits";
import { ConfinedStart } from "./ConfinedStart";

export function ConnectView() {
  const [clients, setClients] = useState<Client[] | null>(null);
  const [chosen, setChosen] = useState<string>("");
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    api.clients().then(
      (cs) => {
        setClients(cs);
        setChosen((c) => c || cs[0]?.client || "");
      },
      (e) => setError(errorMessage(e)),
    );
  }, []);

  const client = clients?.find((c) => c.client === chosen);

  return (
    <section aria-labelledby="connect-title">
      <h1 id="connect-title">Connect an agent</h1>
      <section className="panel confined-start" aria-labelledby="confined-title">
        <ConfinedStart headingId="confined-title" />
      </section>
      <h2 className="connect-own">Connect an agent you start yourself</h2>
      <p className="muted">
        Agents reach Sluice through its MCP sidecar. Pick your client to see the configuration and where it goes, then
        write it or copy it yourself.
      </p>
      {error && <ErrorBox>{error}</ErrorBox>}
      {!clients && !error && <p className="muted">Loading…</p>}
      {clients && (
        <div className="connect">
          <div className="client-list" role="tablist" aria-label="Clients" aria-orientation="vertical">
            {clients.map((c) => (
              <button
                key={c.client}
                type="button"
                role="tab"
                id={`client-tab-${c.client}`}
                aria-selected={c.client === chosen}
                aria-controls={`client-${c.client}`}
                className={c.client === chosen ? "client-tab active" : "client-tab"}
                onClick={() => setChosen(c.client)}
              >
                {c.displayName}
              </button>
            ))}
          </div>
          {client && <ClientPanel key={client.client} client={client} />}
        </div>
      )}
    </section>
  );
}

function ClientPanel({ client }: { client: Client }) {
  const [scope, setScope] = useState<"user" | "project">(client.scopes[0] ?? "user");
  const [project, setProject] = useState("");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<ConnectResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const manual = client.format === "steps";
  if (client.problem) {
    return (
      <div
        className="panel client"
        id={`client-${client.client}`}
        role="tabpanel"
        aria-labelledby={`client-tab-${client.client}`}
      >
        <h3>{client.displayName}</h3>
        <ErrorBox title="Sluice cannot make this configuration:">{client.problem}</ErrorBox>
      </div>
    );
  }

  async function write() {
    setBusy(true);
    setError(null);
    setResult(null);
    try {
      setResult(await api.connect({ client: client.client, scope, project: scope === "project" ? project.trim() : "" }));
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div
      className="panel client"
      id={`client-${client.client}`}
      role="tabpanel"
      aria-labelledby={`client-tab-${client.client}`}
    >
      <h3>{client.displayName}</h3>
      {manual ? (
        <p>This client is set up by hand. Follow these steps:</p>
      ) : (
        <p>
          {scope === "user" ? (
            <>
              Goes in <code className="config-path">{client.path}</code>
            </>
          ) : (
            <>Goes in the project's configuration file inside the project folder below</>
          )}{" "}
          <span className="muted">({client.format.toUpperCase()})</span>:
        </p>
      )}
      <div className="preview">
        {/* Focusable: a long line scrolls, and the keyboard must reach it. */}
        <pre tabIndex={0} role="region" aria-label={`${client.displayName} configuration`}>
          <code>{client.preview}</code>
        </pre>
        <CopyButton text={client.preview} label={`Copy the ${client.displayName} configuration`} />
      </div>
      {client.preAllowNote && (
        <p className="note">
          <strong>Pre-allowed:</strong> {client.preAllowNote}
          {client.preAllows.length > 0 && (
            <>
              :{" "}
              {client.preAllows.map((p, i) => (
                <span key={p}>
                  {i > 0 && ", "}
                  <code>{p}</code>
                </span>
              ))}
              .
            </>
          )}
        </p>
      )}
      {!manual && (
        <form
          className="connect-write"
          onSubmit={(e) => {
            e.preventDefault();
            void write();
          }}
        >
          {client.scopes.length > 1 && (
            <fieldset className="field">
              <legend>Scope</legend>
              {client.scopes.map((s) => (
                <label key={s} className="check">
                  <input
                    type="radio"
                    name={`scope-${client.client}`}
                    value={s}
                    checked={scope === s}
                    onChange={() => setScope(s)}
                  />
                  {s === "user" ? "For me (every project)" : "For one project"}
                </label>
              ))}
            </fieldset>
          )}
          {scope === "project" && (
            <label className="field">
              <span>Project folder</span>
              <input
                className="project-dir"
                value={project}
                spellCheck={false}
                placeholder="/home/you/src/project"
                onChange={(e) => setProject(e.target.value)}
              />
            </label>
          )}
          <div className="actions">
            <button
              type="submit"
              className="primary write-config"
              disabled={busy || (scope === "project" && !project.trim())}
            >
              {busy ? "Writing…" : "Write configuration"}
            </button>
          </div>
        </form>
      )}
      {error && <ErrorBox>{error}</ErrorBox>}
      {result && (
        <div className="panel ok connect-result" role="status">
          {/* The app words the result (and what to do next) itself. */}
          <p className="connect-message">{result.message}</p>
          <dl className="counts">
            <dt>file</dt>
            <dd>
              <code className="written-path">{result.path}</code>
            </dd>
            {result.backupPath && (
              <>
                <dt>backup</dt>
                <dd>
                  <code className="backup-path">{result.backupPath}</code>
                </dd>
              </>
            )}
            <dt>pre-allowed</dt>
            <dd>{result.preAllowed.length > 0 ? result.preAllowed.join(", ") : "nothing"}</dd>
          </dl>
        </div>
      )}
    </div>
  );
}
