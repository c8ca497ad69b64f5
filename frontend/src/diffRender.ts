// diff2html and highlight.js, loaded only when a diff is shown (they are
// most of the front end's weight). DiffView feeds a proposal's diff in
// chunks; this module renders it progressively: files that are complete
// are drawn once, and only the file still arriving is redrawn, so loading
// a large diff costs about as much as drawing it once.
import { parse } from "diff2html";
import type { DiffFile, OutputFormatType } from "diff2html/lib-esm/types";
import { Diff2HtmlUI, type Diff2HtmlUIConfig } from "diff2html/lib-esm/ui/js/diff2html-ui-slim";
import "diff2html/bundles/css/diff2html.min.css";
import "./diff.css";
import { showsInvisible } from "./InvisibleChars";
import { filesChangedTitle } from "./outcomeWords";

export type DiffFormat = "side-by-side" | "line-by-line";

function config(format: DiffFormat, drawFileList: boolean): Diff2HtmlUIConfig {
  return {
    outputFormat: format as OutputFormatType,
    drawFileList,
    matching: "lines",
    // Follows prefers-color-scheme through diff2html's own stylesheet.
    colorScheme: "auto" as Diff2HtmlUIConfig["colorScheme"],
    highlight: true,
    synchronisedScroll: true,
    fileListToggle: true,
    fileListStartVisible: true,
    fileContentToggle: true,
    stickyFileHeaders: false,
    // The card needs every line: no "diff too big" placeholders.
    renderNothingWhenEmpty: false,
  };
}

// Where a chunk can be cut without splitting a file: the start of the last
// file header in it.
function lastFileStart(text: string, from: number): number {
  const i = text.lastIndexOf("\ndiff --git ");
  return i >= from ? i + 1 : from;
}

/**
 * Marks each drawn line that shows an invisible character (written as
 * ⟨U+XXXX⟩ by the app, and again by DiffView) so that it stands out
 * however the highlighter split its text.
 */
function markInvisible(el: HTMLElement) {
  el.querySelectorAll<HTMLElement>(".d2h-code-line-ctn").forEach((ctn) => {
    if (!showsInvisible(ctn.textContent ?? "")) return;
    const line = ctn.closest<HTMLElement>(".d2h-code-line, .d2h-code-side-line") ?? ctn;
    line.classList.add("has-invisible");
    line.title = "This line holds invisible characters, shown as ⟨U+XXXX⟩";
  });
}

/** Longer file lists start folded. */
const fileListOpenMax = 12;

interface Segment {
  el: HTMLElement;
  files: DiffFile[];
}

export class DiffRenderer {
  private text = "";
  /** text[0:cut] is drawn in finished segments. */
  private cut = 0;
  private segments: Segment[] = [];
  private tail: Segment | null = null;
  /** The number of files the whole diff has, when the card knows it (its sealed outcome). */
  private total: number | undefined;
  private done = false;

  /**
   * list is where diff2html's file list goes (null: the card draws its own
   * file tree). onDraw is called with every element drawn and its files,
   * in order, and whether they are complete (the file still arriving is
   * drawn again with the next chunk).
   */
  constructor(
    private readonly list: HTMLElement | null,
    private readonly body: HTMLElement,
    private format: DiffFormat,
    private readonly onDraw?: (el: HTMLElement, files: DiffFile[], complete: boolean) => void,
  ) {
    // The file list links to "#d2h-…" anchors; the app's screens live in
    // the hash, so follow the link by scrolling within this diff instead.
    list?.addEventListener("click", (ev) => {
      const a = (ev.target as Element).closest?.("a[href^='#d2h-']");
      if (!a) return;
      ev.preventDefault();
      const id = a.getAttribute("href")!.slice(1);
      const target = Array.from(this.body.querySelectorAll<HTMLElement>(".d2h-file-wrapper")).find((w) => w.id === id);
      target?.scrollIntoView?.({ block: "start", behavior: "smooth" });
    });
  }

  /**
   * Adds the next chunk (which ends on a line boundary). total is the
   * number of files of the whole diff when it is known beforehand: the
   * file list's count is then final from the first chunk on.
   */
  append(chunk: string, done: boolean, total?: number) {
    this.total = total;
    this.done = done;
    this.text += chunk;
    const cut = done ? this.text.length : lastFileStart(this.text, this.cut);
    if (cut > this.cut) {
      const files = parse(this.text.slice(this.cut, cut), { matching: "lines" });
      const el = document.createElement("div");
      el.className = "diff-segment";
      this.draw(el, files, true);
      this.body.insertBefore(el, this.tail?.el ?? null);
      this.segments.push({ el, files });
      this.cut = cut;
    }
    this.tail?.el.remove();
    this.tail = null;
    if (this.cut < this.text.length) {
      const files = parse(this.text.slice(this.cut), { matching: "lines" });
      const el = document.createElement("div");
      el.className = "diff-segment diff-tail";
      this.draw(el, files, false);
      this.body.appendChild(el);
      this.tail = { el, files };
    }
    this.drawList();
  }

  setFormat(format: DiffFormat) {
    if (format === this.format) return;
    this.format = format;
    for (const s of this.segments) this.draw(s.el, s.files, true);
    if (this.tail) this.draw(this.tail.el, this.tail.files, false);
  }

  private draw(el: HTMLElement, files: DiffFile[], complete: boolean) {
    new Diff2HtmlUI(el, files, config(this.format, false)).draw();
    markInvisible(el);
    this.onDraw?.(el, files, complete);
  }

  // The file list covers every file read so far; drawing it with empty
  // hunks keeps it cheap however large the diff is.
  private drawList() {
    if (!this.list) return;
    const files = [...this.segments.flatMap((s) => s.files), ...(this.tail?.files ?? [])];
    if (files.length === 0) {
      this.list.replaceChildren();
      return;
    }
    // A long list starts folded; after that it stays as the reader left it.
    const old = this.list.querySelector<HTMLElement>(".d2h-file-list");
    const visible = old ? old.style.display !== "none" : (this.total ?? files.length) <= fileListOpenMax;
    const scratch = document.createElement("div");
    const headers = files.map((f) => ({ ...f, blocks: [] }));
    new Diff2HtmlUI(scratch, headers, {
      ...config("line-by-line", true),
      highlight: false,
      fileListStartVisible: visible,
    }).draw();
    scratch.querySelectorAll(".d2h-wrapper").forEach((w) => w.remove());
    // diff2html counts the files parsed so far; the count shown is the
    // whole diff's.
    const title = scratch.querySelector(".d2h-file-list-title");
    if (title) title.textContent = filesChangedTitle(files.length, this.total, this.done);
    // diff2html's show/hide switches are bare <a> elements: make them
    // reachable and usable from the keyboard.
    scratch.querySelectorAll<HTMLElement>(".d2h-file-switch").forEach((a) => {
      a.tabIndex = 0;
      a.setAttribute("role", "button");
      a.setAttribute("aria-label", `${a.textContent} the list of files`);
      a.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" || ev.key === " ") {
          ev.preventDefault();
          a.click();
        }
      });
    });
    this.list.replaceChildren(...Array.from(scratch.childNodes));
  }
}
