// The words a card and History use for a sealed outcome's counts, in the
// card's tense. Counts come from the sealed outcome's own lists, so a
// number on screen is the length of the list beside it; the one-line
// summary of what is lost (card.lossWhy) and the risk line are written by
// the app from the same outcome (core/proposal/losses.go).
import type { FileChange, Sealed, Tense } from "./api";

/** "1 file", "2 files", "1,000 files", "3 branches". */
export function count(n: number, what: string): string {
  if (n === 1) return `1 ${what}`;
  const plural = /(s|x|ch|sh)$/.test(what) ? `${what}es` : `${what}s`;
  return `${n.toLocaleString("en-US")} ${plural}`;
}

/** Picks the form for the tense: before it runs, after it landed, or had it run. */
export function say(tense: Tense | undefined, now: string, past: string, would: string): string {
  if (tense === "past") return past;
  if (tense === "unrealized") return would;
  return now;
}

/** One kind of uncommitted work that is thrown away, with its files. */
export interface WorkKind {
  kind: "modified" | "added" | "deleted" | "untracked" | "changed";
  /** "modified file", "new file": the singular, for count(). */
  what: string;
  paths: string[];
}

/**
 * The uncommitted work an outcome throws away, by kind, in the order a
 * person weighs it. Untracked files are their own kind whatever their
 * status; an outcome sealed before kinds were recorded lists its files as
 * "changed".
 */
export function workKinds(sealed: Sealed): WorkKind[] {
  if (sealed.effect !== "loses") return [];
  const untracked = [...new Set(sealed.untracked ?? [])];
  const isUntracked = new Set(untracked);
  const by: Record<WorkKind["kind"], string[]> = { modified: [], added: [], deleted: [], untracked, changed: [] };
  if (sealed.work) {
    for (const w of sealed.work as FileChange[]) {
      if (isUntracked.has(w.path)) continue;
      by[w.status === "added" ? "added" : w.status === "deleted" ? "deleted" : "modified"].push(w.path);
    }
  } else {
    by.changed = (sealed.uncommitted ?? []).filter((p) => !isUntracked.has(p));
  }
  const words: Record<WorkKind["kind"], string> = {
    modified: "modified file",
    added: "new file",
    deleted: "deleted file",
    untracked: "untracked file",
    changed: "changed file",
  };
  return (["modified", "added", "deleted", "untracked", "changed"] as const)
    .filter((k) => by[k].length > 0)
    .map((kind) => ({ kind, what: words[kind], paths: by[kind] }));
}

/** What happens to one kind of work, as a sentence's start: "Your uncommitted changes to 1 modified file are thrown away". */
export function workSentence(k: WorkKind, tense: Tense | undefined): string {
  const n = k.paths.length;
  const are = n === 1 ? "is" : "are";
  const were = n === 1 ? "was" : "were";
  switch (k.kind) {
    case "modified":
    case "changed":
      return `Uncommitted changes to ${count(n, k.what)} ${say(tense, "are thrown away", "were thrown away", "would have been thrown away")}`;
    case "added":
      return `${cap(count(n, k.what))}, never committed, ${say(tense, `${are} removed`, `${were} removed`, "would have been removed")}`;
    case "deleted":
      return `${cap(count(n, "file"))} you deleted without a commit ${say(tense, n === 1 ? "comes back" : "come back", "came back", "would have come back")}`;
    case "untracked":
      return `${cap(count(n, k.what))} ${say(tense, `${are} deleted or overwritten`, `${were} deleted or overwritten`, "would have been deleted or overwritten")}`;
  }
}

/** The heading over what an outcome loses. */
export function lossHeading(tense: Tense | undefined): string {
  return say(tense, "Lost if approved", "Lost", "Would have been lost");
}

/** "commits become unreachable from the branch", after the count. */
export function lostCommitsWhat(n: number, tense: Tense | undefined): string {
  const what = n === 1 ? "commit" : "commits";
  return `${what} ${say(tense, n === 1 ? "becomes" : "become", "became", "would have become")} unreachable from the branch`;
}

/**
 * How many files the outcome's diff shows, as sealed: what DiffView's
 * file list counts once the whole diff is loaded. Undefined when the
 * card has no sealed outcome (the count is then known only at the end).
 */
export function sealedDiffFiles(sealed: Sealed | undefined): number | undefined {
  if (!sealed) return undefined;
  const outcomes = sealed.steps && sealed.steps.length > 0 ? sealed.steps : [sealed];
  let n = 0;
  for (const s of outcomes) {
    // A soft or mixed reset's diff is what leaves the branch (kept);
    // every other outcome's is its files.
    n += s.effect !== "loses" && s.kept && s.kept.length > 0 ? s.kept.length : (s.files?.length ?? 0);
  }
  return n;
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/**
 * The diff's file list title. With the sealed count it is final from the
 * first chunk ("Files changed (1,000)"), and says how many are listed
 * while the rest stream in; without one, a count still growing says so.
 */
export function filesChangedTitle(listed: number, sealed: number | undefined, done: boolean): string {
  const n = (v: number) => v.toLocaleString("en-US");
  if (sealed === undefined) return done ? `Files changed (${n(listed)})` : `Files changed (${n(listed)} so far)`;
  if (listed >= sealed) return `Files changed (${n(sealed)})`;
  return `Files changed (${n(sealed)}) · ${n(listed)} listed${done ? "" : " so far"}`;
}
