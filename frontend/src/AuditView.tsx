import { useEffect, useState } from "react";
import { api, type AuditReport, type AuditView as View } from "./api";
import { AuditEntries, termWhy } from "./AuditEntries";
import { ErrorBox, errorMessage } from "./bits";

// The ledger as the person sees it: newest entries, the signing key, and a
// Verify button that runs the same verifier as `sluice-sidecar verify-audit`.
export function AuditView() {
  const [view, setView] = useState<View | null>(null);
  const [report, setReport] = useState<AuditReport | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    api.audit().then(setView, (e: unknown) => setError(errorMessage(e)));
  }, []);

  async function verify() {
    setBusy(true);
    setError(null);
    try {
      setReport(await api.verifyAudit());
    } catch (e) {
      setError(errorMessage(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section aria-labelledby="audit-title">
      <div className="row">
        <h1 id="audit-title">Audit ledger</h1>
        <button type="button" className="primary" onClick={verify} disabled={busy} id="verify-audit">
          {busy ? "Verifying…" : "Verify"}
        </button>
      </div>
      <p className="muted">
        Every tool call, decision and execution, hash-chained{view?.signed ? ` and signed with key ${view.keyId}` : ""}.
      </p>
      {error && <ErrorBox>{error}</ErrorBox>}
      {report && (
        <div className={`panel ${report.ok ? "ok" : "error"}`} role="status" id="verify-result">
          <strong>{report.ok ? "Intact" : "Verification failed"}</strong>
          {report.problem && <p>{report.problem}</p>}
          <dl className="counts">
            <dt>entries</dt>
            <dd>{report.entries}</dd>
            <dt>chained</dt>
            <dd>{report.chained}</dd>
            <dt>signed</dt>
            <dd>{report.signed}</dd>
            <dt>unsigned</dt>
            <dd>{report.unsigned}</dd>
            <dt>legacy</dt>
            <dd>
              {report.legacy} <span className="term-why">{termWhy.legacy}</span>
            </dd>
            <dt>segments</dt>
            <dd>
              {report.segments} <span className="term-why">{termWhy.segments}</span>
            </dd>
            <dt>sequence</dt>
            <dd>
              {report.entries > 0 ? `${report.firstSequence}..${report.lastSequence}` : "none"}
            </dd>
            <dt>checkpoint</dt>
            <dd>
              {report.checkpointUsed && report.checkpointUsed !== "none" ? report.checkpointUsed : "none"}{" "}
              <span className="term-why">
                {report.checkpointUsed && report.checkpointUsed !== "none" ? termWhy.checkpoint : termWhy.noCheckpoint}
              </span>
            </dd>
            {report.expectedHead && (
              <>
                <dt>app's last entry</dt>
                <dd className="mono">{report.expectedHead}</dd>
              </>
            )}
            {report.head && (
              <>
                <dt>anchor</dt>
                <dd className="mono" id="audit-anchor" title="Keep this outside this machine and check it later with verify-audit --expect-head">
                  {report.head}
                </dd>
              </>
            )}
          </dl>
        </div>
      )}
      {view && <AuditEntries entries={view.entries} />}
    </section>
  );
}
