// The rule "Approve and trust similar" will save, shown exactly as it will
// be written into the policy file, for the person to edit or confirm. The
// agent, how Sluice knows it, the repository and the operations are the
// card's; the name, branch patterns, path prefixes, highest risk and expiry
// can change. An agent that only declared its name is trusted as "any
// program calling itself X", and only when the person ticks that box.
// Confirming approves the card and saves the rule; Escape or Cancel changes
// nothing.
import { useEffect, useId, useMemo, useRef, useState } from "react";
import { createPortal } from "react-dom";
import { api, type Card, type RuleDraft, type RuleInput, type TrustResult } from "./api";
import { ErrorBox, errorMessage } from "./bits";
import { dialogKeys } from "./ConfirmDialog";

interface Props {
  card: Card;
  note: string;
  onDone(r: TrustResult): void;
  onCancel(): void;
}

export const expiryChoices: { value: string; label: string }[] = [
  { value: "hour", label: "One hour" },
  { value: "today", label: "Until the end of today" },
  { value: "always", label: "Always (until revoked)" },
];

/** Splits a comma- or line-separated list as the person typed it. */
export function splitList(s: string): string[] {
  return s
    .split(/[,\n]/)
    .map((x) => x.trim())
    .filter((x) => x !== "");
}

/** Who the rule trusts, in words: the agent as Sluice knows it. */
export function trustedWho(d: Pick<RuleDraft, "agent" | "identity">): string {
  switch (d.identity) {
    case "session":
      return `${d.agent} in a confined session Sluice started`;
    case "token":
      return `the holder of the token named ${d.agent}`;
    default:
      return `any program calling itself ${d.agent}`;
  }
}

/** The rule as the policy file will hold it (expiry as the choice). */
export function rulePreview(d: Pick<RuleDraft, "agent" | "ops" | "identity" | "repos">, r: Required<RuleInput>): string {
  const o: Record<string, unknown> = { name: r.name, agent: d.agent };
  if (d.identity) o.identity = d.identity;
  if (d.repos.length) o.repos = d.repos;
  o.ops = d.ops;
  if (r.refs.length) o.refs = r.refs;
  if (r.paths.length) o.paths = r.paths;
  o.maxRisk = r.maxRisk;
  if (r.expiry !== "always") o.expiresAt = r.expiry === "hour" ? "in one hour" : "at the end of today";
  o.fromProposal = "this card";
  return JSON.stringify(o, null, 2);
}

export function TrustRuleDialog({ card, note, onDone, onCancel }: Props) {
  const titleId = useId();
  const box = useRef<HTMLDivElement>(null);
  const first = useRef<HTMLInputElement>(null);
  const [draft, setDraft] = useState<RuleDraft | null>(null);
  const [name, setName] = useState("");
  const [refs, setRefs] = useState("");
  const [paths, setPaths] = useState("");
  const [maxRisk, setMaxRisk] = useState("low");
  const [expiry, setExpiry] = useState("today");
  const [trustDeclared, setTrustDeclared] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    api.suggestRule(card.id).then(
      (d) => {
        if (!live) return;
        setDraft(d);
        setName(d.name);
        setRefs(d.refs.join(", "));
        setPaths(d.paths.join(", "));
        setMaxRisk(d.maxRisk);
        setExpiry(d.expiry);
      },
      (e) => live && setError(errorMessage(e)),
    );
    return () => {
      live = false;
    };
  }, [card.id]);

  // Focus goes to the first field once the rule is there, and back to
  // where it was when the dialog closes.
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    return () => before?.focus?.();
  }, []);
  useEffect(() => {
    if (draft) first.current?.focus();
    else box.current?.querySelector<HTMLElement>("button")?.focus();
  }, [draft]);

  const input: Required<RuleInput> = useMemo(
    () => ({
      name: name.trim(),
      refs: splitList(refs),
      paths: splitList(paths),
      maxRisk,
      expiry,
      trustDeclaredName: draft?.identity === "declared" && trustDeclared,
    }),
    [name, refs, paths, maxRisk, expiry, draft, trustDeclared],
  );
  // A name the program only declared needs the person's explicit opt-in.
  const optInMissing = draft?.identity === "declared" && !trustDeclared;

  async function confirm() {
    if (!draft || busy || optInMissing) return;
    setBusy(true);
    setError(null);
    try {
      onDone(await api.trustSimilar({ id: card.id, digest: card.digest, note, rule: input }));
    } catch (e) {
      setError(errorMessage(e));
      setBusy(false);
    }
  }

  function onKeyDown(e: React.KeyboardEvent) {
    dialogKeys(e, box.current, onCancel);
  }

  // A portal: the card around the button is a form of its own, and a form
  // inside a form is not one the browser submits as written.
  return createPortal(
    <div className="overlay" onMouseDown={(e) => e.target === e.currentTarget && onCancel()}>
      <div
        className="dialog trust-dialog"
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
        ref={box}
        onKeyDown={onKeyDown}
      >
        <h2 id={titleId}>Approve and trust similar</h2>
        {!draft && !error && (
          <p className="muted" role="status">
            Drafting the rule…
          </p>
        )}
        {draft && (
          <form
            className="dialog-body"
            onSubmit={(e) => {
              // React events bubble through portals to the card's own form.
              e.preventDefault();
              e.stopPropagation();
              void confirm();
            }}
          >
            <p className="rule-scope">
              Approves this card, and from now on approves without asking every <strong>{draft.ops.join(", ")}</strong>{" "}
              proposal from <strong>{trustedWho(draft)}</strong> in <strong>{draft.repos.join(", ")}</strong> that fits
              this rule. Destructive changes always wait for you.
            </p>
            {draft.identity === "declared" && (
              <label className="check rule-trust-declared">
                <input type="checkbox" checked={trustDeclared} onChange={(e) => setTrustDeclared(e.target.checked)} />{" "}
                <span>
                  Trust any program calling itself <strong>{draft.agent}</strong>. It only declared that name, which
                  Sluice cannot check: another program could use it too.
                </span>
              </label>
            )}
            <label className="field">
              <span>Rule name</span>
              <input ref={first} className="rule-name" value={name} onChange={(e) => setName(e.target.value)} spellCheck={false} />
            </label>
            <label className="field">
              <span>Branches (patterns, comma-separated; empty means any branch)</span>
              <input className="rule-refs" value={refs} onChange={(e) => setRefs(e.target.value)} spellCheck={false} />
            </label>
            <label className="field">
              <span>Paths (prefixes, comma-separated; empty means any file)</span>
              <input className="rule-paths" value={paths} onChange={(e) => setPaths(e.target.value)} spellCheck={false} />
            </label>
            <label className="field">
              <span>Highest risk it approves</span>
              <select className="rule-risk" value={maxRisk} onChange={(e) => setMaxRisk(e.target.value)}>
                <option value="low">low</option>
                <option value="medium">medium</option>
                <option value="high">high</option>
              </select>
            </label>
            <label className="field">
              <span>For how long</span>
              <select className="rule-expiry" value={expiry} onChange={(e) => setExpiry(e.target.value)}>
                {expiryChoices.map((c) => (
                  <option key={c.value} value={c.value}>
                    {c.label}
                  </option>
                ))}
              </select>
            </label>
            {draft.notes.length > 0 && (
              <ul className="rule-notes">
                {draft.notes.map((n) => (
                  <li key={n} className="muted">
                    {n}
                  </li>
                ))}
              </ul>
            )}
            <p className="muted">
              {draft.createsFile ? "Creates the policy file " : "Saved into "}
              <code>{draft.policyFile}</code>
              {draft.createsFile ? " and uses it from now on." : ", keeping everything else in it as it is."}
            </p>
            <pre className="rule-preview" aria-label="The rule as it will be saved">
              {rulePreview(draft, input)}
            </pre>
            {error && <ErrorBox>{error}</ErrorBox>}
            <div className="actions">
              <button type="button" onClick={onCancel} disabled={busy}>
                Cancel
              </button>
              <button type="submit" className="primary trust-confirm" disabled={busy || input.name === "" || optInMissing}>
                {busy ? "Saving…" : "Approve and save rule"}
              </button>
            </div>
          </form>
        )}
        {!draft && error && (
          <>
            <ErrorBox>{error}</ErrorBox>
            <div className="actions">
              <button type="button" onClick={onCancel}>
                Close
              </button>
            </div>
          </>
        )}
      </div>
    </div>,
    document.body,
  );
}
