// A proposal's whole diff, never cut without saying so. The API hands it
// out in chunks; the first loads when the viewer comes into view, the rest
// with "Load more" or by themselves when the reader scrolls near the end.
// The count of what is loaded and what is left is always on screen.
import type { DiffFile } from "diff2html/lib-esm/types";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { api, proposalImageSrc, type DiffChunk, type FileChange } from "./api";
import { errorMessage } from "./bits";
import type { DiffFormat, DiffRenderer } from "./diffRender";
import { FileTree, type LineCounts } from "./FileTree";
import { kb } from "./format";
import { showInvisible } from "./InvisibleChars";
import { useDiffNotes } from "./ReviewNotes";

const formatKey = "sluice.diffFormat";

function storedFormat(): DiffFormat {
  try {
    const v = localStorage.getItem(formatKey);
    if (v === "side-by-side" || v === "line-by-line") return v;
  } catch {
    // storage can be unavailable; the default is fine
  }
  return "side-by-side";
}

/** Narrow screens (a phone, a small window) read a diff line by line. */
export const narrowQuery = "(max-width: 760px)";

function isNarrow(): boolean {
  return typeof window.matchMedia === "function" && window.matchMedia(narrowQuery).matches;
}

/** The layout a diff opens in: line by line on a narrow screen, else the person's choice. */
function initialFormat(): DiffFormat {
  return isNarrow() ? "line-by-line" : storedFormat();
}

/** Whether the element is (near) the viewport; `unobservable` where that cannot be known. */
function useInView(
  ref: React.RefObject<HTMLElement | null>,
  margin: string,
  unobservable: boolean,
  enabled = true,
): React.RefObject<boolean> {
  const inView = useRef(typeof IntersectionObserver === "undefined" ? unobservable : false);
  const [, bump] = useState(0);
  useEffect(() => {
    const el = ref.current;
    if (!el || !enabled || typeof IntersectionObserver === "undefined") return;
    const io = new IntersectionObserver(
      (entries) => {
        const v = entries.some((e) => e.isIntersecting);
        if (v !== inView.current) {
          inView.current = v;
          bump((n) => n + 1);
        }
      },
      { rootMargin: margin },
    );
    io.observe(el);
    return () => io.disconnect();
  }, [ref, margin, enabled]);
  return inView;
}

interface Progress {
  loaded: number;
  total: number;
  done: boolean;
}

/**
 * One loaded stretch of the diff. The diff loads from its start; a jump to
 * a file far down loads that file's part as an island of its own, and the
 * stretch between stays a gap with its own button until loaded.
 */
interface Island {
  start: number;
  /** Where its next chunk starts. */
  next: number;
  /** It reached the next island's start, or the diff's end. */
  done: boolean;
  el: HTMLDivElement;
  /** The gap after it, while it has not reached the next island. */
  gap: HTMLDivElement | null;
  renderer: Promise<DiffRenderer> | null;
  raw: string;
}

/** Images larger than this are not previewed (the app refuses them too). */
const previewMaxBytes = 8 << 20;

/** text cut after n bytes of its UTF-8 form (offsets are bytes; n ends a line). */
function cutBytes(text: string, n: number): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= n) return text;
  if (bytes.length === text.length) return text.slice(0, n);
  return new TextDecoder().decode(bytes.subarray(0, n));
}

/** The path a drawn file is known by: its new name, or its old one when deleted. */
function drawnPath(f: DiffFile): string {
  return f.newName && f.newName !== "/dev/null" ? f.newName : f.oldName;
}

/**
 * files is the number of files the whole diff has, from the card's sealed
 * outcome: the file list shows it from the first chunk, not the number
 * streamed so far. changes are the sealed outcome's files: with them the
 * diff has a file tree that jumps to any file (loading its part), and
 * images show as images. onLoadingChange is told whether any part is
 * still loading (nothing shown yet, a request in flight, a jump, an image
 * preview), so that a card can hold its decision until what it shows is
 * there; a view given it loads its first chunk at once rather than when
 * scrolled to.
 */
export function DiffView({
  proposalId,
  files,
  changes,
  onLoadingChange,
}: {
  proposalId: string;
  files?: number;
  changes?: FileChange[];
  onLoadingChange?: (loading: boolean) => void;
}) {
  const root = useRef<HTMLDivElement>(null);
  const listEl = useRef<HTMLDivElement>(null);
  const bodyEl = useRef<HTMLDivElement>(null);
  // Notes for the agent on lines and files, while the card takes them.
  const noteEditor = useDiffNotes(proposalId, bodyEl);
  const endEl = useRef<HTMLDivElement>(null);
  const islands = useRef<Island[]>([]);
  const busy = useRef(false);
  // The load in flight, which a jump waits for before it starts its own.
  const inflight = useRef<Promise<void>>(Promise.resolve());
  const total = useRef(0);
  const totalFiles = useRef(files);
  totalFiles.current = files;
  const tree = !!changes && changes.length > 0;
  const byPath = useMemo(() => new Map((changes ?? []).map((c) => [c.path, c])), [changes]);
  const byPathNow = useRef(byPath);
  byPathNow.current = byPath;
  // Line counts of the files drawn whole so far, for the tree.
  const counts = useRef(new Map<string, LineCounts>());
  const [, setCountsVersion] = useState(0);
  const previewsPending = useRef(0);
  const [previewsLoading, setPreviewsLoading] = useState(0);
  const [jumping, setJumping] = useState<string | null>(null);
  const [jumpError, setJumpError] = useState<string | null>(null);
  // A chunk can arrive after the card is gone (decided, navigated away):
  // its result is then dropped instead of updating an unmounted view.
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);

  const [format, setFormat] = useState<DiffFormat>(initialFormat);
  const formatNow = useRef(format);
  const [progress, setProgress] = useState<Progress | null>(null);
  const [meta, setMeta] = useState<Partial<Pick<DiffChunk, "compared" | "notices">>>({});
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [renderError, setRenderError] = useState<string | null>(null);

  // Without an IntersectionObserver the first chunk still loads, and the
  // rest wait for the button.
  const visible = useInView(root, "200px", true);
  const nearEnd = useInView(endEl, "600px", false, !!progress && !progress.done);

  /** Shows an image file's before and after instead of "Binary file" once one of them loads. */
  const addPreview = useCallback(
    (wrapper: HTMLElement, path: string, change: FileChange) => {
      const sides: [string, string][] = [];
      if (change.oldBlob && change.status !== "added") sides.push(["Before", change.oldBlob]);
      if (change.blob && change.status !== "deleted") sides.push(["After", change.blob]);
      if (sides.length === 0 || change.size > previewMaxBytes) return;
      const box = document.createElement("div");
      box.className = "image-preview";
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", `Image preview of ${path}`);
      box.style.display = "none";
      wrapper.querySelector(".d2h-file-header")?.after(box);
      let left = sides.length;
      let shown = 0;
      for (const [label, blob] of sides) {
        const fig = document.createElement("figure");
        fig.className = `image-${label.toLowerCase()}`;
        const cap = document.createElement("figcaption");
        cap.textContent = label;
        const img = document.createElement("img");
        img.alt = `${path}, ${label.toLowerCase()}`;
        img.decoding = "async";
        fig.append(cap, img);
        box.append(fig);
        previewsPending.current++;
        setPreviewsLoading(previewsPending.current);
        let settled = false;
        const settle = (ok: boolean) => {
          if (settled) return;
          settled = true;
          previewsPending.current--;
          if (mounted.current) setPreviewsLoading(previewsPending.current);
          if (ok) {
            shown++;
            box.style.display = "";
            wrapper.querySelectorAll<HTMLElement>(".d2h-files-diff, .d2h-file-diff").forEach((d) => {
              d.style.display = "none";
            });
          } else {
            fig.remove();
          }
          // Not an image the app shows: "Binary file" stays.
          if (--left === 0 && shown === 0) box.remove();
        };
        img.addEventListener("load", () => settle(true));
        img.addEventListener("error", () => settle(false));
        proposalImageSrc(proposalId, blob).then(
          (src) => {
            img.src = src;
          },
          () => settle(false),
        );
      }
    },
    [proposalId],
  );

  // Every drawn file gets its path on its wrapper (the tree jumps to it);
  // a file drawn whole gives its line counts and, for an image, a preview.
  const onDraw = useCallback(
    (el: HTMLElement, drawn: DiffFile[], complete: boolean) => {
      const wrappers = el.querySelectorAll<HTMLElement>(".d2h-file-wrapper");
      let counted = false;
      drawn.forEach((f, i) => {
        const w = wrappers[i];
        if (!w) return;
        const path = drawnPath(f);
        w.dataset.path = path;
        if (!complete) return;
        counts.current.set(path, { added: f.addedLines, deleted: f.deletedLines });
        counted = true;
        const change = byPathNow.current.get(path);
        if (change && (change.binary || f.isBinary)) addPreview(w, path, change);
      });
      if (counted && mounted.current) setCountsVersion((v) => v + 1);
    },
    [addPreview],
  );

  const rendererOf = useCallback(
    (isl: Island) => {
      if (!isl.renderer) {
        // diff2html's own file list only where there is no tree.
        const list = !tree && isl.start === 0 ? listEl.current : null;
        isl.renderer = import("./diffRender").then(
          (m) => new m.DiffRenderer(list, isl.el, formatNow.current, onDraw),
        );
      }
      return isl.renderer;
    },
    [tree, onDraw],
  );

  const firstIsland = useCallback((): Island => {
    if (islands.current.length === 0) {
      const el = document.createElement("div");
      el.className = "diff-island";
      bodyEl.current!.appendChild(el);
      islands.current.push({ start: 0, next: 0, done: false, el, gap: null, renderer: null, raw: "" });
    }
    return islands.current[0];
  }, []);

  const measure = useCallback((): Progress => {
    const all = islands.current;
    const loaded = all.reduce((n, i) => n + (i.next - i.start), 0);
    return { loaded, total: total.current, done: all.length > 0 && all.every((i) => i.done) };
  }, []);

  // Loads the next chunk of one island; set below, once its gap buttons exist.
  const loadIslandRef = useRef<(isl: Island) => Promise<void>>(async () => {});

  // Each island that has not reached the next one is followed by a gap
  // that says how much is not loaded there, with a button to load it.
  const drawGaps = useCallback(() => {
    const all = islands.current;
    all.forEach((isl, k) => {
      const after = all[k + 1];
      if (isl.done || !after) {
        isl.gap?.remove();
        isl.gap = null;
        return;
      }
      if (!isl.gap) {
        const gap = document.createElement("div");
        gap.className = "diff-gap";
        const words = document.createElement("span");
        const button = document.createElement("button");
        button.type = "button";
        button.className = "diff-gap-load";
        button.textContent = "Load";
        button.addEventListener("click", () => void loadIslandRef.current(isl));
        gap.append(words, button);
        isl.el.after(gap);
        isl.gap = gap;
      }
      const left = kb(after.start - isl.next);
      isl.gap.firstElementChild!.textContent = `${left} KB of the diff not loaded here`;
      isl.gap.lastElementChild!.setAttribute("aria-label", `Load the next ${left} KB of the diff`);
    });
  }, []);

  const loadIsland = useCallback(
    async (isl: Island) => {
      if (busy.current || isl.done) return;
      busy.current = true;
      setLoading(true);
      setError(null);
      let finish!: () => void;
      inflight.current = new Promise((r) => (finish = r));
      try {
        const chunk = await api.proposalDiff(proposalId, isl.next);
        if (!mounted.current) return;
        total.current = chunk.totalBytes;
        const after = islands.current[islands.current.indexOf(isl) + 1];
        let raw = chunk.text;
        let next = chunk.nextOffset;
        let reached = chunk.done;
        if (after && next >= after.start) {
          // This island now meets the next: what follows is loaded.
          raw = cutBytes(raw, after.start - isl.next);
          next = after.start;
          reached = true;
        }
        // The app sends content with invisible characters already written
        // as ⟨U+XXXX⟩; whatever is left raw is written so here. A chunk
        // ends on a line, so a line's end is never mistaken for the
        // chunk's.
        const text = showInvisible(raw);
        isl.raw += text;
        try {
          const r = await rendererOf(isl);
          if (!mounted.current) return;
          r.append(text, reached, totalFiles.current);
        } catch (e) {
          // Show the text itself rather than nothing: the person must be
          // able to read every line they approve.
          setRenderError(errorMessage(e));
        }
        isl.next = next;
        isl.done = reached;
        drawGaps();
        setMeta({ compared: chunk.compared, notices: chunk.notices });
        setProgress(measure());
      } catch (e) {
        if (mounted.current) setError(errorMessage(e));
      } finally {
        busy.current = false;
        finish();
        if (mounted.current) setLoading(false);
      }
    },
    [proposalId, rendererOf, drawGaps, measure],
  );
  loadIslandRef.current = loadIsland;

  /** The island the Load more button continues: the last one, else the first unfinished one. */
  const nextIsland = useCallback((): Island | undefined => {
    const all = islands.current;
    const last = all[all.length - 1];
    if (!last || !last.done) return last ?? (bodyEl.current ? firstIsland() : undefined);
    return all.find((i) => !i.done);
  }, [firstIsland]);

  const loadNext = useCallback(async () => {
    const isl = nextIsland();
    if (isl) await loadIsland(isl);
  }, [nextIsland, loadIsland]);

  // The first chunk, once the viewer is (nearly) on screen, or at once
  // for a card that waits for it.
  const eager = !!onLoadingChange;
  useEffect(() => {
    if ((visible.current || eager) && !progress && !busy.current && !error) void loadNext();
  });

  // The next chunks, while the end of what is loaded is near the viewport
  // (not to fill a gap above a file jumped to: that one has its button).
  useEffect(() => {
    const last = islands.current[islands.current.length - 1];
    if (progress && !progress.done && last && !last.done && nearEnd.current && !loading && !error) void loadIsland(last);
  });

  function findDrawn(path: string): HTMLElement | null {
    for (const w of bodyEl.current?.querySelectorAll<HTMLElement>(".d2h-file-wrapper[data-path]") ?? []) {
      if (w.dataset.path === path) return w;
    }
    return null;
  }

  function show(el: HTMLElement) {
    el.scrollIntoView?.({ block: "start" });
    if (!el.hasAttribute("tabindex")) el.tabIndex = -1;
    el.focus?.({ preventScroll: true });
  }

  /** Shows path's file in the diff, loading its part first when it is not loaded. */
  async function jumpTo(path: string) {
    const drawn = findDrawn(path);
    if (drawn) {
      show(drawn);
      return;
    }
    setJumping(path);
    setJumpError(null);
    try {
      await inflight.current;
      const at = await api.proposalDiffFile(proposalId, path);
      if (!mounted.current) return;
      firstIsland();
      const all = islands.current;
      let isl = all.find((i) => at.offset >= i.start && at.offset < i.next);
      if (!isl) {
        const k = all.findIndex((i) => i.start > at.offset);
        const el = document.createElement("div");
        el.className = "diff-island";
        if (k >= 0) all[k].el.before(el);
        else bodyEl.current!.appendChild(el);
        isl = { start: at.offset, next: at.offset, done: false, el, gap: null, renderer: null, raw: "" };
        all.splice(k >= 0 ? k : all.length, 0, isl);
        drawGaps();
        await inflight.current;
        await loadIsland(isl);
      }
      if (!mounted.current) return;
      show(findDrawn(path) ?? isl.el);
    } catch (e) {
      if (mounted.current) setJumpError(errorMessage(e));
    } finally {
      if (mounted.current) setJumping(null);
    }
  }

  // Still loading: nothing loaded yet (and no error to show instead), a
  // chunk on its way, a jump, or an image preview.
  const stillLoading = loading || (!progress && !error) || previewsLoading > 0 || jumping !== null;
  const reportLoading = useRef(onLoadingChange);
  reportLoading.current = onLoadingChange;
  useEffect(() => {
    reportLoading.current?.(stillLoading);
  }, [stillLoading]);

  function changeFormat(f: DiffFormat) {
    setFormat(f);
    formatNow.current = f;
    try {
      // A choice made on a narrow screen is for this diff only.
      if (!isNarrow()) localStorage.setItem(formatKey, f);
    } catch {
      // not remembered, still applied
    }
    for (const isl of islands.current) void isl.renderer?.then((r) => r.setFormat(f));
  }

  const left = progress ? progress.total - progress.loaded : 0;
  const empty = progress?.done && progress.total === 0;
  const lastIsland = islands.current[islands.current.length - 1];

  return (
    <section className="diff-view" ref={root} aria-label="Diff" aria-busy={loading}>
      <div className="diff-toolbar">
        <span className="diff-progress" role="status">
          {!progress && (loading ? "Loading diff…" : "Diff not loaded yet")}
          {progress &&
            !empty &&
            `${kb(progress.loaded)} of ${kb(progress.total)} KB loaded${progress.done ? "" : ` — ${kb(left)} KB not shown yet`}`}
          {empty && emptyWords(meta.compared)}
        </span>
        {meta.compared && !(empty && saysNoChanges(meta.compared)) && (
          <span className="muted diff-compared">{meta.compared}</span>
        )}
        {!empty && (
        <span className="segmented" role="group" aria-label="Diff layout">
          <button
            type="button"
            aria-pressed={format === "side-by-side"}
            className={format === "side-by-side" ? "on" : ""}
            onClick={() => changeFormat("side-by-side")}
          >
            Side by side
          </button>
          <button
            type="button"
            aria-pressed={format === "line-by-line"}
            className={format === "line-by-line" ? "on" : ""}
            onClick={() => changeFormat("line-by-line")}
          >
            Line by line
          </button>
        </span>
        )}
      </div>
      {meta.notices && meta.notices.length > 0 && (
        <ul className="diff-notices">
          {meta.notices.map((n, i) => (
            <li key={i}>{n}</li>
          ))}
        </ul>
      )}
      {tree && !empty && (
        <FileTree files={changes!} counts={counts.current} jumping={jumping} onJump={(p) => void jumpTo(p)} />
      )}
      {jumpError && (
        <p className="note" role="alert">
          Could not show that file: {jumpError}
        </p>
      )}
      <div ref={listEl} className="diff-files" />
      <div ref={bodyEl} className="diff-body" hidden={!!renderError} />
      {noteEditor}
      {renderError && (
        <div className="diff-raw">
          <p className="note">The diff viewer could not draw this diff ({renderError}); here it is as text.</p>
          <pre>
            {/* Read at render: every chunk's setProgress renders again. */}
            <code>{islands.current.map((i) => i.raw).join("\n…\n")}</code>
          </pre>
        </div>
      )}
      <div ref={endEl} className="diff-end" />
      {error && (
        <div className="panel error" role="alert">
          Could not load the diff: {error}{" "}
          <button type="button" className="link" onClick={() => void loadNext()}>
            Try again
          </button>
        </div>
      )}
      {progress && !progress.done && (
        <button type="button" className="diff-more" onClick={() => void loadNext()} disabled={loading}>
          {loading
            ? "Loading…"
            : lastIsland && !lastIsland.done
              ? `Load more (${kb(left)} KB left)`
              : `Load the rest (${kb(left)} KB left)`}
        </button>
      )}
    </section>
  );
}

function saysNoChanges(compared: string): boolean {
  return /^no file changes/i.test(compared);
}

/** "No file changes", with the server's reason when it gives one, said once. */
function emptyWords(compared: string | undefined): string {
  if (compared && saysNoChanges(compared)) return compared.charAt(0).toUpperCase() + compared.slice(1);
  return "No file changes";
}
