import type { AuditEntry } from "./api";
import { ScrollTable, Time } from "./bits";

// Ledger entries as a table: the Audit screen's newest entries, and the
// entries about one proposal on its page (which adds their details).
export function AuditEntries({ entries, withDetails = false }: { entries: AuditEntry[]; withDetails?: boolean }) {
  return (
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
              <td>{String(e.sequence ?? "")}</td>
              <td>
                <Time at={typeof e.timestamp === "number" ? e.timestamp : undefined} />
              </td>
              <td>{String(e.event_type ?? e.tool ?? "")}</td>
              <td>{String(e.approval ?? e.session_id ?? "")}</td>
              <td>{String(e.result ?? "")}</td>
              {withDetails && <td className="muted">{details(e.data)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollTable>
  );
}

function details(data: unknown): string {
  if (!data || typeof data !== "object") return "";
  return Object.entries(data as Record<string, unknown>)
    .filter(([, v]) => v !== "" && v != null)
    .map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
    .join(" · ");
}
