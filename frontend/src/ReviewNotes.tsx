// Notes a person leaves on a proposal's files and lines while reading its
// diff. They are kept per proposal until it is rejected: Reject sends them
// to the agent, whose proposal_wait shows them as decision.comments.
//
// The diff is diff2html's markup, drawn and redrawn outside React; this
// module reads it (which line number, which file) and writes the notes
// back into it, so that DiffView needs only to call useDiffNotes.
import { useEffect, useRef, useState, useSyncExternalStore, type ReactNode, type RefObject } from "react";
import type { Card, ReviewComment } from "./api";
import "./ReviewNotes.css";

/** The bounds the app enforces (core/journal: MaxComments, MaxCommentBytes). */
export const maxNotes = 200;
export const maxNoteBytes = 2000;

type Side = "new" | "old";

/** What a note is about: a file (line 0) or one line of it. */
export interface NoteTarget {
  path: string;
  line: number;
  side?: Side;
}

// The notes of every proposal not yet rejected, kept for this page's life
// (the queue opens one card at a time), and the proposals whose card takes
// notes now (a pending card's decision form is on screen).
const notes = new Map<string, ReviewComment[]>();
const open = new Map<string, number>();
const listeners = new Set<() => void>();
const none: ReviewComment[] = [];

function emit() {
  for (const l of listeners) l();
}

function subscribe(l: () => void) {
  listeners.add(l);
  return () => {
    listeners.delete(l);
  };
}

/** The notes written on proposal id so far, in the order they were written. */
export function reviewNotes(id: string): ReviewComment[] {
  return notes.get(id) ?? none;
}

/** The notes a rejection of id sends: undefined when there are none. */
export function notesToSend(id: string): ReviewComment[] | undefined {
  const list = reviewNotes(id);
  return list.length > 0 ? list : undefined;
}

export function setReviewNotes(id: string, list: ReviewComment[]) {
  if (list.length > 0) notes.set(id, list);
  else notes.delete(id);
  emit();
}

/** Forgets the notes of id: it was rejected with them. */
export function clearReviewNotes(id: string) {
  if (notes.has(id)) setReviewNotes(id, []);
}

export function useReviewNotes(id: string): ReviewComment[] {
  return useSyncExternalStore(subscribe, () => reviewNotes(id));
}

function useTakesNotes(id: string): boolean {
  return useSyncExternalStore(subscribe, () => (open.get(id) ?? 0) > 0);
}

/** Where a note is, in words: "README.md", "README.md, line 4", "README.md, old line 2". */
export function noteWhere(c: NoteTarget): string {
  if (!c.line) return c.path;
  return `${c.path}, ${c.side === "old" ? "old " : ""}line ${c.line}`;
}

function bytes(s: string): number {
  return new TextEncoder().encode(s).length;
}

/**
 * The paths of a drawn file: diff2html names a file by its path, or a
 * rename as "old → new" or "dir/{old → new}".
 */
export function filePaths(wrapper: Element): { path: string; oldPath?: string } | null {
  const tagged = wrapper.getAttribute("data-path");
  if (tagged) return { path: tagged };
  const name = wrapper.querySelector(".d2h-file-name")?.textContent?.trim();
  if (!name) return null;
  const braces = /^(.*)\{(.*) → (.*)\}(.*)$/.exec(name);
  if (braces) {
    const [, pre, from, to, post] = braces;
    return { path: pre + to + post, oldPath: pre + from + post };
  }
  const arrow = name.split(" → ");
  if (arrow.length === 2) return { path: arrow[1], oldPath: arrow[0] };
  return { path: name };
}

function num(el: Element | null | undefined): number {
  const n = parseInt(el?.textContent?.trim() ?? "", 10);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/**
 * The line a line-number cell stands for: in the new version of the file,
 * or in the old one for a deleted line. Null for a hunk header.
 */
export function lineOf(cell: Element): { line: number; side: Side } | null {
  if (cell.classList.contains("d2h-code-linenumber")) {
    // Line by line: both numbers in one cell.
    const n = num(cell.querySelector(".line-num2"));
    if (n) return { line: n, side: "new" };
    const o = num(cell.querySelector(".line-num1"));
    return o ? { line: o, side: "old" } : null;
  }
  // Side by side: the left table is the old file, the right one the new.
  const n = num(cell);
  if (!n) return null;
  const sides = Array.from(cell.closest(".d2h-files-diff")?.querySelectorAll(".d2h-file-side-diff") ?? []);
  const side = sides.indexOf(cell.closest(".d2h-file-side-diff")!);
  const row = cell.closest("tr");
  if (side !== 0 || !row || row.querySelector(".d2h-del")) return { line: n, side: side === 0 ? "old" : "new" };
  // An unchanged line on the left is the same line as on the right: it
  // is named in the new file, as every line that stays is.
  const index = Array.from(row.parentElement?.children ?? []).indexOf(row);
  const right = sides[1]?.querySelectorAll("tbody > tr")[index];
  const r = num(right?.querySelector(".d2h-code-side-linenumber"));
  return r ? { line: r, side: "new" } : { line: n, side: "old" };
}

const lineCells = ".d2h-code-linenumber, .d2h-code-side-linenumber";

/** The note target of a click or key in the diff, with the element to anchor an editor to. */
function targetOf(ev: Event): { target: NoteTarget; anchor: HTMLElement } | null {
  const el = ev.target as Element | null;
  const add = el?.closest?.<HTMLElement>(".review-note-add");
  const cell = add ? null : el?.closest?.<HTMLElement>(lineCells);
  const wrapper = (add ?? cell)?.closest(".d2h-file-wrapper");
  const file = wrapper && filePaths(wrapper);
  if (!file) return null;
  if (add) return { target: { path: file.path, line: 0 }, anchor: add };
  const at = lineOf(cell!);
  if (!at) return null;
  // A deleted line of a renamed file is in the file under its old name.
  const path = at.side === "old" && file.oldPath ? file.oldPath : file.path;
  return { target: { path, ...at }, anchor: cell! };
}

/** The row of line target in a drawn file, in the table of its side. */
function rowOf(wrapper: Element, c: NoteTarget): HTMLTableRowElement | null {
  const sides = wrapper.querySelectorAll(".d2h-file-side-diff");
  if (sides.length === 2) {
    const table = sides[c.side === "old" ? 0 : 1];
    for (const cell of table.querySelectorAll(".d2h-code-side-linenumber")) {
      if (num(cell) === c.line) return cell.closest("tr");
    }
    return null;
  }
  const pick = c.side === "old" ? ".line-num1" : ".line-num2";
  for (const cell of wrapper.querySelectorAll(".d2h-code-linenumber")) {
    if (num(cell.querySelector(pick)) === c.line) return cell.closest("tr");
  }
  return null;
}

function noteBox(c: ReviewComment, hidden: boolean): HTMLElement {
  const box = document.createElement("div");
  box.className = "review-note-inline";
  const label = document.createElement("strong");
  label.textContent = "Note: ";
  box.append(label, c.note);
  if (hidden) {
    // Keeps the other side's table as tall, so the two stay in line.
    box.setAttribute("aria-hidden", "true");
    box.style.visibility = "hidden";
  }
  return box;
}

/**
 * Writes the notes into the drawn diff (each after its line, or under its
 * file's header) and, while the card takes notes, a "Note" button in each
 * file's header. It replaces what an earlier call wrote, so it can run
 * after every redraw.
 */
export function drawNotes(body: HTMLElement, list: ReviewComment[], takesNotes: boolean) {
  body.querySelectorAll(".review-note-row, .review-note-file").forEach((el) => el.remove());
  body.querySelectorAll(".has-review-note").forEach((el) => el.classList.remove("has-review-note"));
  for (const header of body.querySelectorAll<HTMLElement>(".d2h-file-header")) {
    const button = header.querySelector(".review-note-add");
    if (takesNotes && !button) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "review-note-add link";
      b.textContent = "Note";
      const file = filePaths(header.closest(".d2h-file-wrapper")!);
      b.setAttribute("aria-label", `Add a note on ${file?.path ?? "this file"} for the agent`);
      header.appendChild(b);
    } else if (!takesNotes && button) {
      button.remove();
    }
  }
  if (list.length === 0) return;
  const wrappers = Array.from(body.querySelectorAll(".d2h-file-wrapper"));
  for (const c of list) {
    const wrapper = wrappers.find((w) => {
      const f = filePaths(w);
      return f && (f.path === c.path || f.oldPath === c.path);
    });
    if (!wrapper) continue;
    if (!c.line) {
      const box = noteBox(c, false);
      box.classList.add("review-note-file");
      wrapper.querySelector(".d2h-file-header")?.after(box);
      continue;
    }
    const row = rowOf(wrapper, c);
    if (!row) continue;
    row.querySelector(lineCells)?.classList.add("has-review-note");
    const rows = [row];
    // Side by side: the same place in the other side's table.
    const sides = Array.from(wrapper.querySelectorAll(".d2h-file-side-diff"));
    if (sides.length === 2) {
      const index = Array.from(row.parentElement!.children).indexOf(row);
      const mine = sides.findIndex((s) => s.contains(row));
      const other = sides[1 - mine].querySelectorAll("tbody > tr")[index] as HTMLTableRowElement | undefined;
      if (other) rows.push(other);
    }
    rows.forEach((r, i) => {
      const tr = document.createElement("tr");
      tr.className = "review-note-row";
      const td = document.createElement("td");
      td.colSpan = 2;
      td.append(noteBox(c, i > 0));
      tr.append(td);
      r.after(tr);
    });
  }
}

/**
 * The notes of a diff: clicks on line numbers and the files' "Note"
 * buttons open a small editor (returned, for DiffView to place in its
 * section), and the notes written are drawn into the diff, again after
 * each redraw. Only a card whose ReviewNotes is on screen takes notes.
 */
export function useDiffNotes(proposalId: string, body: RefObject<HTMLElement | null>): ReactNode {
  const list = useReviewNotes(proposalId);
  const takesNotes = useTakesNotes(proposalId);
  const [editing, setEditing] = useState<{ target: NoteTarget; anchor: HTMLElement } | null>(null);
  const listNow = useRef(list);
  listNow.current = list;
  const takesNow = useRef(takesNotes);
  takesNow.current = takesNotes;

  useEffect(() => {
    const el = body.current;
    if (!el) return;
    let drawing = false;
    const draw = () => {
      drawing = true;
      drawNotes(el, listNow.current, takesNow.current);
      // The observer sees its own writes after this returns: those are
      // taken back before they are read as a redraw.
      mo.takeRecords();
      drawing = false;
    };
    const mo = new MutationObserver(() => {
      if (!drawing) draw();
    });
    draw();
    mo.observe(el, { childList: true, subtree: true });
    const onClick = (ev: MouseEvent) => {
      if (!takesNow.current) return;
      const t = targetOf(ev);
      if (!t) return;
      ev.preventDefault();
      setEditing(t);
    };
    el.addEventListener("click", onClick);
    return () => {
      mo.disconnect();
      el.removeEventListener("click", onClick);
    };
  }, [body, list, takesNotes]);

  if (!editing || !takesNotes) return null;
  return (
    <NoteEditor
      key={`${editing.target.path}:${editing.target.line}:${editing.target.side ?? ""}`}
      target={editing.target}
      anchor={editing.anchor}
      count={list.length}
      onSave={(c) => {
        setReviewNotes(proposalId, [...reviewNotes(proposalId), c]);
        setEditing(null);
        editing.anchor.focus?.();
      }}
      onCancel={() => {
        setEditing(null);
        editing.anchor.focus?.();
      }}
    />
  );
}

/**
 * The editor of one note, drawn under what opened it. A note opened from a
 * file's header is on the whole file unless a line is given.
 */
export function NoteEditor({
  target,
  anchor,
  count,
  onSave,
  onCancel,
}: {
  target: NoteTarget;
  anchor?: HTMLElement;
  count: number;
  onSave: (c: ReviewComment) => void;
  onCancel: () => void;
}) {
  const root = useRef<HTMLDivElement>(null);
  const [text, setText] = useState("");
  const [line, setLine] = useState(target.line ? String(target.line) : "");
  const [side, setSide] = useState<Side>(target.side ?? "new");
  const [top, setTop] = useState<number | undefined>(undefined);
  const fileNote = target.line === 0;

  // Under its anchor, within the diff's section (the nearest positioned
  // ancestor).
  useEffect(() => {
    const box = root.current?.offsetParent;
    if (!anchor || !box) return;
    setTop(anchor.getBoundingClientRect().bottom - box.getBoundingClientRect().top + 4);
  }, [anchor]);

  const n = fileNote ? parseInt(line || "0", 10) : target.line;
  const size = bytes(text);
  const problem =
    count >= maxNotes
      ? `A rejection carries at most ${maxNotes} notes.`
      : size > maxNoteBytes
        ? `The note is ${size} bytes; at most ${maxNoteBytes}.`
        : !Number.isInteger(n) || n < 0
          ? "The line is a number, 0 or more (empty: the whole file)."
          : null;
  const canSave = text.trim() !== "" && !problem;

  function save() {
    if (!canSave) return;
    const c: ReviewComment = n > 0
      ? { path: target.path, line: n, side: fileNote ? side : target.side, note: text }
      : { path: target.path, line: 0, note: text };
    onSave(c);
  }

  const where = fileNote ? target.path : noteWhere(target);
  return (
    <div
      ref={root}
      className="note-editor"
      role="group"
      aria-label={`Note on ${where}`}
      style={top === undefined ? undefined : { top }}
      onKeyDown={(e) => {
        // The queue's single-key shortcuts are not for this text.
        e.stopPropagation();
        if (e.key === "Escape") {
          e.preventDefault();
          onCancel();
        } else if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          save();
        }
      }}
    >
      <p className="note-editor-where">
        Note for the agent on <code>{where}</code>
      </p>
      {fileNote && (
        <div className="note-editor-line">
          <label>
            <span>Line (empty: the whole file)</span>
            <input
              className="note-line-input"
              inputMode="numeric"
              value={line}
              onChange={(e) => setLine(e.target.value.trim())}
            />
          </label>
          {line !== "" && line !== "0" && (
            <label>
              <span>in</span>
              <select className="note-side-input" value={side} onChange={(e) => setSide(e.target.value as Side)}>
                <option value="new">the new file</option>
                <option value="old">the old file (a deleted line)</option>
              </select>
            </label>
          )}
        </div>
      )}
      <textarea
        className="note-editor-text"
        aria-label="Note"
        rows={3}
        autoFocus
        value={text}
        onChange={(e) => setText(e.target.value)}
      />
      {problem && (
        <p className="note-editor-problem" role="alert">
          {problem}
        </p>
      )}
      <div className="actions">
        <button type="button" className="primary note-save" disabled={!canSave} onClick={save}>
          Add note
        </button>
        <button type="button" className="note-cancel" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}

/**
 * The notes written on a pending card, listed above its Reject button,
 * each with a way to take it back. While it is on screen, the card's diff
 * takes notes.
 */
export function ReviewNotes({ card }: { card: Card }) {
  const list = useReviewNotes(card.id);
  useEffect(() => {
    open.set(card.id, (open.get(card.id) ?? 0) + 1);
    emit();
    return () => {
      const n = (open.get(card.id) ?? 1) - 1;
      if (n > 0) open.set(card.id, n);
      else open.delete(card.id);
      emit();
    };
  }, [card.id]);

  // The diff's line numbers and its files' Note buttons are the way in;
  // the decision bar stays small until there is something to list.
  if (list.length === 0) return null;
  return (
    <section className="review-notes" aria-labelledby={`review-notes-${card.id}`}>
      <h3 id={`review-notes-${card.id}`}>
        {list.length === 1 ? "1 note" : `${list.length} notes`} for the agent, sent with Reject
      </h3>
      <ul className="plain">
        {list.map((c, i) => (
          <li key={i} className="review-note">
            <code className="review-note-where">{noteWhere(c)}</code> <span className="review-note-text">{c.note}</span>{" "}
            <button
              type="button"
              className="link review-note-remove"
              aria-label={`Remove the note on ${noteWhere(c)}`}
              onClick={() => setReviewNotes(card.id, list.filter((_, j) => j !== i))}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** The notes a rejection sent to the agent, on its decided card. */
export function SentNotes({ comments }: { comments?: ReviewComment[] }) {
  if (!comments || comments.length === 0) return null;
  return (
    <ul className="plain review-notes-sent" aria-label="Notes sent to the agent">
      {comments.map((c, i) => (
        <li key={i} className="review-note">
          <code className="review-note-where">{noteWhere(c)}</code> <span className="review-note-text">{c.note}</span>
        </li>
      ))}
    </ul>
  );
}
