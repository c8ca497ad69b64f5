// Small pieces the screens share: badges, SHAs that copy, countdowns.
import { useEffect, useState, type ReactNode } from "react";
import type { Risk } from "./api";
import { formatDuration, formatTime, isoTime, shortSha, stateLabel, toDate, type When } from "./format";

const riskHelp: Record<Risk, string> = {
  low: "Low risk: adds without moving anything that exists",
  medium: "Medium risk: changes content in a recoverable way",
  high: "High risk: moves refs or checkouts in ways that need care to undo",
  destructive: "Destructive: can lose work",
};

/** The risk as a word and a colour, never the colour alone. */
export function RiskBadge({ risk }: { risk: Risk }) {
  return (
    <span className={`badge risk risk-${risk}`} title={riskHelp[risk] ?? risk}>
      <span className="visually-hidden">Risk: </span>
      {risk === "destructive" && <span aria-hidden="true">⚠ </span>}
      {risk}
    </span>
  );
}

export function StateBadge({ state }: { state: string }) {
  return (
    <span className={`badge state state-${state}`}>
      <span className="visually-hidden">State: </span>
      {stateLabel(state)}
    </span>
  );
}

/** Copies text to the clipboard, with a fallback for webviews without the async API. */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard?.writeText) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the selection-based copy
  }
  const ta = document.createElement("textarea");
  ta.value = text;
  ta.setAttribute("readonly", "");
  ta.style.position = "fixed";
  ta.style.opacity = "0";
  document.body.appendChild(ta);
  ta.select();
  let ok = false;
  try {
    ok = document.execCommand?.("copy") ?? false;
  } catch {
    ok = false;
  }
  ta.remove();
  return ok;
}

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState<"" | "copied" | "failed">("");
  useEffect(() => {
    if (!done) return;
    const t = setTimeout(() => setDone(""), 1500);
    return () => clearTimeout(t);
  }, [done]);
  return (
    <button
      type="button"
      className="icon-button copy"
      aria-label={label}
      title={label}
      onClick={async () => setDone((await copyText(text)) ? "copied" : "failed")}
    >
      {done === "copied" ? "✓" : done === "failed" ? "!" : <CopyIcon />}
      <span className="visually-hidden" role="status">
        {done === "copied" ? "Copied" : done === "failed" ? "Copy failed" : ""}
      </span>
    </button>
  );
}

function CopyIcon() {
  return (
    <svg width="13" height="13" viewBox="0 0 16 16" aria-hidden="true" focusable="false">
      <rect x="5.5" y="5.5" width="8" height="9" rx="1.5" fill="none" stroke="currentColor" strokeWidth="1.4" />
      <path d="M3.5 10.5h-1a1 1 0 0 1-1-1v-7a1 1 0 0 1 1-1h6a1 1 0 0 1 1 1v1" fill="none" stroke="currentColor" strokeWidth="1.4" />
    </svg>
  );
}

/** A hash shown short, whole on hover, and copied whole. */
export function Sha({ value, short, what = "SHA" }: { value: string | undefined; short?: string; what?: string }) {
  if (!value) return <span className="muted">none</span>;
  return (
    <span className="sha">
      <code title={value}>{short ?? shortSha(value)}</code>
      <CopyButton text={value} label={`Copy full ${what}`} />
    </span>
  );
}

/** The current time, re-read every `ms`. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

export function Countdown({ until, prefix = "expires in" }: { until: When; prefix?: string }) {
  const now = useNow(1000);
  const end = toDate(until);
  if (!end) return null;
  const left = end.getTime() - now;
  const soon = left < 2 * 60_000;
  return (
    <time className={`countdown${soon ? " soon" : ""}`} dateTime={isoTime(until)} title={formatTime(until)}>
      {left <= 0 ? "expired" : `${prefix} ${formatDuration(left)}`}
    </time>
  );
}

export function Time({ at }: { at: When }) {
  if (!toDate(at)) return null;
  return <time dateTime={isoTime(at)}>{formatTime(at)}</time>;
}

export function ErrorBox({ children, title }: { children: ReactNode; title?: string }) {
  return (
    <div className="panel error" role="alert">
      {title && <strong>{title}</strong>} {children}
    </div>
  );
}

/**
 * A wide table that scrolls inside itself, never the page: focusable, so
 * that the keyboard can scroll it too, and named for screen readers.
 */
export function ScrollTable({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="table-scroll" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
