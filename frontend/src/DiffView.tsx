// A proposal's whole diff, never cut without saying so. The API hands it
// out in chunks; the first loads when the viewer comes into view, the rest
// with "Load more" or by themselves when the reader scrolls near the end.
// The count of what is loaded and what is left is always on screen.
import { useCallback, useEffect, useRef, useState } from "react";
import { api, type DiffChunk } from "./api";
import { errorMessage } from "./bits";
import type { DiffFormat, DiffRenderer } from "./diffRender";
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
 * files is the number of files the whole diff has, from the card's sealed
 * outcome: the file list shows it from the first chunk, not the number
 * streamed so far. onLoadingChange is told whether any part of the diff
 * is still loading (nothing shown yet, or a request in flight), so that a
 * card can hold its decision until what it shows is there; a view given
 * it loads its first chunk at once rather than when scrolled to.
 */
export function DiffView({
  proposalId,
  files,
  onLoadingChange,
}: {
  proposalId: string;
  files?: number;
  onLoadingChange?: (loading: boolean) => void;
}) {
  const root = useRef<HTMLDivElement>(null);
  const listEl = useRef<HTMLDivElement>(null);
  const bodyEl = useRef<HTMLDivElement>(null);
  // Notes for the agent on lines and files, while the card takes them.
  const noteEditor = useDiffNotes(proposalId, bodyEl);
  const endEl = useRef<HTMLDivElement>(null);
  const renderer = useRef<Promise<DiffRenderer> | null>(null);
  const offset = useRef(0);
  const busy = useRef(false);
  const rawText = useRef("");
  const totalFiles = useRef(files);
  totalFiles.current = files;
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
  const [meta, setMeta] = useState<Pick<DiffChunk, "compared" | "notices">>({});
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [renderError, setRenderError] = useState<string | null>(null);

  // Without an IntersectionObserver the first chunk still loads, and the
  // rest wait for the button.
  const visible = useInView(root, "200px", true);
  const nearEnd = useInView(endEl, "600px", false, !!progress && !progress.done);

  const getRenderer = useCallback(() => {
    if (!renderer.current) {
      renderer.current = import("./diffRender").then(
        (m) => new m.DiffRenderer(listEl.current!, bodyEl.current!, formatNow.current),
      );
    }
    return renderer.current;
  }, []);

  const loadNext = useCallback(async () => {
    if (busy.current) return;
    busy.current = true;
    setLoading(true);
    setError(null);
    try {
      const chunk = await api.proposalDiff(proposalId, offset.current);
      if (!mounted.current) return;
      // The app sends content with invisible characters already written
      // as ⟨U+XXXX⟩; whatever is left raw is written so here. A chunk
      // ends on a line, so a line's end is never mistaken for the
      // chunk's.
      const text = showInvisible(chunk.text);
      rawText.current += text;
      try {
        const r = await getRenderer();
        if (!mounted.current) return;
        r.append(text, chunk.done, totalFiles.current);
      } catch (e) {
        // Show the text itself rather than nothing: the person must be
        // able to read every line they approve.
        setRenderError(errorMessage(e));
      }
      offset.current = chunk.nextOffset;
      setMeta({ compared: chunk.compared, notices: chunk.notices });
      setProgress({ loaded: chunk.nextOffset, total: chunk.totalBytes, done: chunk.done });
    } catch (e) {
      if (mounted.current) setError(errorMessage(e));
    } finally {
      busy.current = false;
      if (mounted.current) setLoading(false);
    }
  }, [proposalId, getRenderer]);

  // The first chunk, once the viewer is (nearly) on screen, or at once
  // for a card that waits for it.
  const eager = !!onLoadingChange;
  useEffect(() => {
    if ((visible.current || eager) && !progress && !busy.current && !error) void loadNext();
  });

  // Still loading: nothing loaded yet (and no error to show instead), or a
  // chunk on its way.
  const stillLoading = loading || (!progress && !error);
  const reportLoading = useRef(onLoadingChange);
  reportLoading.current = onLoadingChange;
  useEffect(() => reportLoading.current?.(stillLoading), [stillLoading]);

  // The next chunks, while the end of what is loaded is near the viewport.
  useEffect(() => {
    if (progress && !progress.done && nearEnd.current && !loading && !error) void loadNext();
  });

  function changeFormat(f: DiffFormat) {
    setFormat(f);
    formatNow.current = f;
    try {
      // A choice made on a narrow screen is for this diff only.
      if (!isNarrow()) localStorage.setItem(formatKey, f);
    } catch {
      // not remembered, still applied
    }
    void renderer.current?.then((r) => r.setFormat(f));
  }

  const left = progress ? progress.total - progress.loaded : 0;
  const empty = progress?.done && progress.total === 0;

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
      <div ref={listEl} className="diff-files" />
      <div ref={bodyEl} className="diff-body" hidden={!!renderError} />
      {noteEditor}
      {renderError && (
        <div className="diff-raw">
          <p className="note">The diff viewer could not draw this diff ({renderError}); here it is as text.</p>
          <pre>
            {/* Read at render: every chunk's setProgress renders again. */}
            <code>{rawText.current}</code>
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
          {loading ? "Loading…" : `Load more (${kb(left)} KB left)`}
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
