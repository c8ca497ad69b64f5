// The changed files of a card's diff as a tree: directories fold, a box
// filters by path, each file says how it changed (and its added and removed
// lines once its part of the diff is loaded), and a click shows that file
// in the diff, loading its part if it is not loaded yet. It stays quick on
// tens of thousands of files: the tree is built once per file list, only
// the rows in view are drawn, and large trees open folded.
import { useDeferredValue, useMemo, useRef, useState } from "react";
import type { FileChange, Sealed } from "./api";
import "./fileTree.css";
import { filesChangedTitle } from "./outcomeWords";

/** Added and removed lines of a file, known once its part of the diff is read. */
export interface LineCounts {
  added: number;
  deleted: number;
}

/** From this many files on, directories start folded. */
export const foldFrom = 300;
/** The height of one row in pixels (fileTree.css says the same). */
const rowHeight = 24;
/** Rows drawn beyond the visible ones, above and below. */
const overscan = 12;
/** Rows drawn when the list's height cannot be measured (no layout). */
const unmeasuredRows = 40;

/**
 * The files a sealed outcome's diff shows, in its order: each step's, and
 * for a soft or mixed reset what leaves the branch. A path is listed once.
 */
export function sealedDiffChanges(sealed: Sealed | undefined): FileChange[] | undefined {
  if (!sealed) return undefined;
  const outcomes = sealed.steps && sealed.steps.length > 0 ? sealed.steps : [sealed];
  const seen = new Set<string>();
  const out: FileChange[] = [];
  for (const s of outcomes) {
    const list = s.effect !== "loses" && s.kept && s.kept.length > 0 ? s.kept : (s.files ?? []);
    for (const f of list) {
      if (seen.has(f.path)) continue;
      seen.add(f.path);
      out.push(f);
    }
  }
  return out;
}

interface Dir {
  /** Shown: one directory, or a chain of directories that hold only each other ("src/app"). */
  name: string;
  path: string;
  dirs: Dir[];
  files: FileChange[];
  /** Files below it, at any depth. */
  count: number;
}

function buildTree(files: FileChange[]): Dir {
  const root: Dir = { name: "", path: "", dirs: [], files: [], count: 0 };
  const dirs = new Map<string, Dir>([["", root]]);
  for (const f of files) {
    let parent = root;
    let at = 0;
    root.count++;
    for (;;) {
      const slash = f.path.indexOf("/", at);
      if (slash < 0) break;
      const p = f.path.slice(0, slash);
      let d = dirs.get(p);
      if (!d) {
        d = { name: f.path.slice(at, slash), path: p, dirs: [], files: [], count: 0 };
        dirs.set(p, d);
        parent.dirs.push(d);
      }
      d.count++;
      parent = d;
      at = slash + 1;
    }
    parent.files.push(f);
  }
  const tidy = (d: Dir) => {
    // A directory that holds one directory and no file is shown with it.
    d.dirs = d.dirs.map((c) => {
      while (c.dirs.length === 1 && c.files.length === 0) {
        const only = c.dirs[0];
        c = { ...only, name: `${c.name}/${only.name}` };
      }
      return c;
    });
    d.dirs.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    d.files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    d.dirs.forEach(tidy);
  };
  tidy(root);
  return root;
}

type Row = { kind: "dir"; dir: Dir; depth: number; open: boolean } | { kind: "file"; file: FileChange; depth: number };

/** The rows in view order: the contents of open directories only. */
function flatten(root: Dir, isOpen: (d: Dir) => boolean): Row[] {
  const rows: Row[] = [];
  const walk = (d: Dir, depth: number) => {
    for (const c of d.dirs) {
      const open = isOpen(c);
      rows.push({ kind: "dir", dir: c, depth, open });
      if (open) walk(c, depth + 1);
    }
    for (const f of d.files) rows.push({ kind: "file", file: f, depth });
  };
  walk(root, 0);
  return rows;
}

const statusLetter: Record<FileChange["status"], string> = {
  added: "A",
  modified: "M",
  deleted: "D",
  renamed: "R",
  type_changed: "T",
};

const statusWord: Record<FileChange["status"], string> = {
  added: "added",
  modified: "changed",
  deleted: "deleted",
  renamed: "renamed",
  type_changed: "type changed",
};

function baseName(p: string): string {
  return p.slice(p.lastIndexOf("/") + 1);
}

/**
 * files: every changed file (the sealed outcome's, so the count is final
 * from the start). counts: line counts of the files read so far, looked
 * up per drawn row. jumping: the file being loaded for a jump.
 */
export function FileTree({
  files,
  counts,
  jumping,
  onJump,
}: {
  files: FileChange[];
  counts: ReadonlyMap<string, LineCounts>;
  jumping?: string | null;
  onJump: (path: string) => void;
}) {
  const [filter, setFilter] = useState("");
  // Typing stays quick on a long list: the rows follow a moment later.
  const deferred = useDeferredValue(filter.trim().toLowerCase());
  // Directories the person opened or closed, against how they start.
  const [toggled, setToggled] = useState<ReadonlySet<string>>(() => new Set());
  const [scrollTop, setScrollTop] = useState(0);
  const listEl = useRef<HTMLDivElement>(null);

  const tree = useMemo(() => buildTree(files), [files]);
  const matching = useMemo(
    () => (deferred ? files.filter((f) => f.path.toLowerCase().includes(deferred)) : null),
    [files, deferred],
  );
  const shownTree = useMemo(() => (matching ? buildTree(matching) : tree), [matching, tree]);
  const foldedAtFirst = files.length >= foldFrom && !matching;
  const rows = useMemo(
    // Filtered, every directory with a match is open; a person can still
    // fold one.
    () => flatten(shownTree, (d) => (matching ? true : !foldedAtFirst) !== toggled.has(d.path)),
    [shownTree, matching, foldedAtFirst, toggled],
  );

  const height = listEl.current?.clientHeight ?? 0;
  const visible = height > 0 ? Math.ceil(height / rowHeight) : unmeasuredRows;
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - overscan);
  const last = Math.min(rows.length, first + visible + 2 * overscan);

  function toggle(path: string) {
    setToggled((t) => {
      const n = new Set(t);
      if (n.has(path)) n.delete(path);
      else n.add(path);
      return n;
    });
  }

  return (
    <nav className="file-tree" aria-label="Changed files">
      <div className="file-tree-head">
        <strong className="file-tree-title">{filesChangedTitle(files.length, files.length, true)}</strong>
        <input
          type="search"
          className="file-tree-filter"
          placeholder="Filter files"
          aria-label="Filter files by path"
          autoComplete="off"
          spellCheck={false}
          value={filter}
          onChange={(e) => {
            setFilter(e.target.value);
            setScrollTop(0);
            if (listEl.current) listEl.current.scrollTop = 0;
          }}
        />
        {matching && (
          <span className="muted file-tree-matches" role="status">
            {matching.length === 1 ? "1 file matches" : `${matching.length.toLocaleString("en-US")} files match`}
          </span>
        )}
        {!matching && foldedAtFirst && toggled.size === 0 && (
          <span className="muted file-tree-folded">Folded: open a directory, or filter</span>
        )}
      </div>
      <div
        ref={listEl}
        className="file-tree-list"
        onScroll={(e) => setScrollTop((e.target as HTMLElement).scrollTop)}
      >
        <ul className="file-tree-rows" style={{ height: rows.length * rowHeight }}>
          {rows.slice(first, last).map((r, i) => {
            const top = (first + i) * rowHeight;
            const indent = { paddingLeft: `${0.3 + r.depth * 1.1}rem` };
            if (r.kind === "dir") {
              return (
                <li key={`d:${r.dir.path}`} className="file-tree-row dir" style={{ top }}>
                  <button
                    type="button"
                    className="file-tree-dir"
                    style={indent}
                    aria-expanded={r.open}
                    data-path={r.dir.path}
                    onClick={() => toggle(r.dir.path)}
                  >
                    <span className="file-tree-caret" aria-hidden="true">
                      {r.open ? "▾" : "▸"}
                    </span>
                    <span className="file-tree-name">{r.dir.name}/</span>
                    <span className="muted file-tree-count">{r.dir.count.toLocaleString("en-US")}</span>
                  </button>
                </li>
              );
            }
            const f = r.file;
            const c = counts.get(f.path);
            return (
              <li key={`f:${f.path}`} className={`file-tree-row file st-${f.status}`} style={{ top }}>
                <button
                  type="button"
                  className="file-tree-file"
                  style={indent}
                  data-path={f.path}
                  title={f.oldPath ? `${f.path} (from ${f.oldPath})` : f.path}
                  aria-busy={jumping === f.path || undefined}
                  onClick={() => onJump(f.path)}
                >
                  <span className={`file-tree-status st-${f.status}`} title={statusWord[f.status]} aria-hidden="true">
                    {statusLetter[f.status]}
                  </span>
                  <span className="file-tree-name">{baseName(f.path)}</span>
                  <span className="visually-hidden">, {statusWord[f.status]}</span>
                  {c && !f.binary && (
                    <span className="file-tree-lines">
                      <span className="file-tree-add">+{c.added}</span> <span className="file-tree-del">−{c.deleted}</span>
                    </span>
                  )}
                  {f.binary && <span className="muted file-tree-lines">binary</span>}
                  {jumping === f.path && <span className="muted file-tree-loading">Loading…</span>}
                </button>
              </li>
            );
          })}
        </ul>
        {rows.length === 0 && <p className="muted file-tree-none">No file matches “{filter.trim()}”.</p>}
      </div>
    </nav>
  );
}
