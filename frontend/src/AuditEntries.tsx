import type { AuditEntry } from "./api";
import { ScrollTable, Time } from "./bits";
import { href } from "./route";

// What the verifier's less obvious words mean, said where they appear.
export const termWhy = {
  legacy:
    "lines written before the ledger was hash-chained (by an older Sluice or FluxGit sidecar): counted, but nothing proves they are unchanged",
  segments:
    "the ledger moves to a new file every 4 MiB; each older file is a segment, and every one kept is checked as part of one chain",
  checkpoint:
    "a signed record written when the oldest segments were deleted: the chain is checked from where they ended",
  noCheckpoint: "no segment was ever deleted, so the chain is checked from its first entry",
};

// Ledger entries as a table: the Audit screen's newest entries, and the
// entries about one proposal on its page (which adds their details). An
// entry about a proposal links to its page, except on that page.
export function AuditEntries({ entries, withDetails = false }: { entries: AuditEntry[]; withDetails?: boolean }) {
  const legacy = entries.some(isLegacy);
  return (
    <>
      <ScrollTable label="Ledger entries">
        <table className="entries">
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">time</th>
              <th scope="col">what</th>
              <th scope="col">by</th>
              <th scope="col">result</th>
              {withDetails && <th scope="col">details</th>}
            </tr>
          </thead>
          <tbody>
            {entries.map((e, i) => (
              <tr key={String(e.id ?? i)}>
                <td>
                  {isLegacy(e) ? (
                    <span className="badge legacy" title={termWhy.legacy}>
                      legacy
                    </span>
                  ) : (
                    String(e.sequence ?? "")
                  )}
                </td>
                <td>
                  <Time at={typeof e.timestamp === "number" ? e.timestamp : undefined} />
                </td>
                <td>
                  {String(e.event_type ?? e.tool ?? "")}
                  {!withDetails && typeof e.proposal_id === "string" && e.proposal_id && (
                    <>
                      {" "}
                      <a className="audit-proposal" href={href("proposal", e.proposal_id)} title={`Proposal ${e.proposal_id}`}>
                        proposal {e.proposal_id.slice(0, 8)}
                      </a>
                    </>
                  )}
                </td>
                <td>{String(e.approval ?? e.session_id ?? "")}</td>
                <td>{String(e.result ?? "")}</td>
                {withDetails && <td className="muted">{details(e.data)}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollTable>
      {legacy && (
        <p className="muted audit-legacy-note">
          <span className="badge legacy">legacy</span> {termWhy.legacy}.
        </p>
      )}
    </>
  );
}

// A legacy line predates the hash chain: it has no chain version.
function isLegacy(e: AuditEntry): boolean {
  return e.auditChainVersion === undefined;
}

function details(data: unknown): string {
  if (!data || typeof data !== "object") return "";
  return Object.entries(data as Record<string, unknown>)
    .filter(([, v]) => v !== "" && v != null)
    .map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
    .join(" · ");
}
