// Every proposal, newest first, with what became of it and how its agent
// ran (confined, or as the person's account). The search runs on the Go
// side (text, agent, repository, state) over every record, a page at a
// time: "Show older proposals" asks for the page after the last row shown.
// A row opens the proposal's page.
import { useEffect, useRef, useState } from "react";
import { api, proposalStates, type Card, type HistoryQuery } from "./api";
import { ErrorBox, RiskBadge, ScrollTable, StateBadge, Time, errorMessage } from "./bits";
import { agentLabel, stateLabel } from "./format";
import { href, navigate } from "./route";

export const historyLimit = 200;

export function HistoryView() {
  const [text, setText] = useState("");
  const [agent, setAgent] = useState("");
  const [repo, setRepo] = useState("");
  const [state, setState] = useState("");
  const [query, setQuery] = useState<HistoryQuery>({ limit: historyLimit });
  const [rows, setRows] = useState<Card[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  // A full page may have more after it; a shorter one is the end.
  const [more, setMore] = useState(false);
  const [loadingMore, setLoadingMore] = useState(false);
  // Filter choices seen so far; a filtered answer must not shrink them.
  const [agents, setAgents] = useState<string[]>([]);
  const [repos, setRepos] = useState<Record<string, string>>({});
  const seq = useRef(0);

  // Text waits for a pause in typing; the selects apply at once. The
  // same filters again are not a new search (it would drop the pages
  // already shown).
  useEffect(() => {
    const same = (q: HistoryQuery) =>
      (q.agent ?? "") === agent && (q.repo ?? "") === repo && (q.state ?? "") === state && (q.text ?? "") === text;
    const t = setTimeout(
      () => setQuery((q) => (same(q) ? q : { agent, repo, state, text, limit: historyLimit })),
      text === (query.text ?? "") ? 0 : 300,
    );
    return () => clearTimeout(t);
  }, [agent, repo, state, text]);

  useEffect(() => {
    const n = ++seq.current;
    setLoading(true);
    api.history(query).then(
      (cards) => {
        if (n !== seq.current) return;
        setRows(cards);
        setMore(cards.length === historyLimit);
        setError(null);
        setLoading(false);
        setLoadingMore(false);
        seen(cards);
      },
      (e) => {
        if (n !== seq.current) return;
        setError(errorMessage(e));
        setLoading(false);
        setLoadingMore(false);
      },
    );
  }, [query]);

  function seen(cards: Card[]) {
    setAgents((a) => [...new Set([...a, ...cards.map((c) => c.agent)])].sort());
    setRepos((r) => ({ ...r, ...Object.fromEntries(cards.map((c) => [c.repo, c.repoName])) }));
  }

  // The next page continues after the last row shown, under the same
  // filters; a new search while it loads wins.
  function showOlder() {
    if (!rows || rows.length === 0) return;
    const n = seq.current;
    setLoadingMore(true);
    api.history({ ...query, after: rows[rows.length - 1].id }).then(
      (cards) => {
        if (n !== seq.current) return;
        setRows((r) => [...(r ?? []), ...cards]);
        setMore(cards.length === historyLimit);
        setError(null);
        setLoadingMore(false);
        seen(cards);
      },
      (e) => {
        if (n !== seq.current) return;
        setError(errorMessage(e));
        setLoadingMore(false);
      },
    );
  }

  const filtered = !!(query.agent || query.repo || query.state || query.text);

  return (
    <section aria-labelledby="history-title">
      <h1 id="history-title">History</h1>
      <form className="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label className="field grow">
          <span>Search</span>
          <input
            type="search"
            className="history-search"
            placeholder="reason, agent, repository, operation or id"
            value={text}
            onChange={(e) => setText(e.target.value)}
          />
        </label>
        <label className="field">
          <span>Agent</span>
          <select value={agent} onChange={(e) => setAgent(e.target.value)} className="history-agent">
            <option value="">All agents</option>
            {agents.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Repository</span>
          <select value={repo} onChange={(e) => setRepo(e.target.value)} className="history-repo">
            <option value="">All repositories</option>
            {Object.entries(repos)
              .sort((a, b) => a[1].localeCompare(b[1]))
              .map(([path, name]) => (
                <option key={path} value={path} title={path}>
                  {name} — {path}
                </option>
              ))}
          </select>
        </label>
        <label className="field">
          <span>State</span>
          <select value={state} onChange={(e) => setState(e.target.value)} className="history-state">
            <option value="">All states</option>
            {proposalStates.map((s) => (
              <option key={s} value={s}>
                {stateLabel(s)}
              </option>
            ))}
          </select>
        </label>
      </form>
      {error && <ErrorBox>{error}</ErrorBox>}
      {rows && (
        <p className="muted" role="status" aria-live="polite">
          {loading
            ? "Searching…"
            : `${rows.length}${more ? "+" : ""} proposal${rows.length === 1 ? "" : "s"}${filtered ? " match" : ""}`}
        </p>
      )}
      {rows && rows.length === 0 && !loading && (
        <p className="panel muted">{filtered ? "Nothing matches these filters." : "No proposals yet."}</p>
      )}
      {rows && rows.length > 0 && (
        <ScrollTable label="Proposals">
          <table className="entries history">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Change</th>
                <th scope="col">Agent</th>
                <th scope="col">Repository</th>
                <th scope="col">Risk</th>
                <th scope="col">State</th>
                <th scope="col">Outcome</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((c) => (
                <tr key={c.id} id={`history-${c.id}`} className="clickable" onClick={() => navigate("proposal", c.id)}>
                  <td className="nowrap">
                    <Time at={c.createdAt} />
                  </td>
                  <td>
                    <a href={href("proposal", c.id)} onClick={(e) => e.stopPropagation()}>
                      {c.label}
                    </a>
                    <div className="muted clamp">
                      {c.invisible && c.invisible.length > 0 && <span className="badge risk-high">hidden characters</span>}{" "}
                      {c.reason}
                    </div>
                  </td>
                  <td>
                    {agentLabel(c.agent)}
                    <div>
                      <span
                        className={`badge origin-mark${c.origin ? " confined" : " warn"}`}
                        data-confined={c.origin ? "true" : "false"}
                        title={c.confinement}
                      >
                        <span className="visually-hidden">ran </span>
                        {c.origin ? "confined" : "as your account"}
                      </span>
                    </div>
                  </td>
                  <td title={c.repo}>{c.repoName}</td>
                  <td>
                    <RiskBadge risk={c.risk} />
                  </td>
                  <td>
                    <StateBadge state={c.state} />
                    {c.approvedByRule && (
                      <div className="muted rule-mark" title="Approved without a card by this auto-approve rule">
                        by rule <a href={href("rules")} onClick={(e) => e.stopPropagation()}>{c.approvedByRule}</a>
                      </div>
                    )}
                  </td>
                  <td>
                    {/* The clamp goes on a block inside: on the cell itself it
                        would stop being a table cell and fall out of line. */}
                    <div className="clamp" title={[c.outcome?.code, c.outcome?.message].filter(Boolean).join(" ")}>
                      {c.outcome?.code && <code>{c.outcome.code}</code>} {c.outcome?.message}
                    </div>
                    {/* What a proposal that landed lost, in the past tense,
                        counted by kind from its sealed outcome. */}
                    {c.state === "completed" && c.lossWhy && (
                      <div className="loss-why">{c.lossWhy.charAt(0).toUpperCase() + c.lossWhy.slice(1)}.</div>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </ScrollTable>
      )}
      {rows && more && !loading && (
        <p>
          <button type="button" className="history-more" onClick={showOlder} disabled={loadingMore}>
            {loadingMore ? "Loading…" : "Show older proposals"}
          </button>
        </p>
      )}
    </section>
  );
}
