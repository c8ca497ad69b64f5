// Small, pure formatting helpers shared by the screens.

/** A Go timestamp (RFC 3339 string) or milliseconds since the epoch. */
export type When = string | number | null | undefined;

export function toDate(t: When): Date | null {
  if (t === null || t === undefined || t === "") return null;
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? null : d;
}

// A remote connector's identity ("ChatGPT:connector-granted-5-Dec", see
// app/remote.go) read as a person says it: "ChatGPT, connector granted 5
// Dec". Any other agent name is shown as it is.
export function agentLabel(agent: string): string {
  const m = /^(.+):connector-granted-(\d{1,2})-([A-Za-z]{3})$/.exec(agent);
  return m ? `${m[1].replace(/-/g, " ")}, connector granted ${m[2]} ${m[3]}` : agent;
}

export function formatTime(t: When): string {
  const d = toDate(t);
  return d ? d.toLocaleString() : "";
}

export function isoTime(t: When): string | undefined {
  return toDate(t)?.toISOString();
}

/** "4m 05s", "1h 02m", "12s": a duration for people. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, "0")}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** Run durations are short and want precision below a second. */
export function formatRunDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return formatDuration(ms);
}

/** Kilobytes as the diff viewer counts them: one decimal below 10 KB. */
export function kb(bytes: number): string {
  const v = bytes / 1024;
  if (v === 0) return "0";
  // Anything left is never shown as 0.
  if (v < 10) return Math.max(0.1, Math.round(v * 10) / 10).toFixed(1);
  return Math.round(v).toLocaleString("en-US");
}

export function shortSha(sha: string | undefined): string {
  return sha ? sha.slice(0, 10) : "";
}

export function shortRef(ref: string): string {
  return ref.replace(/^refs\/heads\//, "").replace(/^refs\/remotes\//, "").replace(/^refs\/tags\//, "tag ");
}

export function stateLabel(state: string): string {
  return state.replace(/_/g, " ");
}
