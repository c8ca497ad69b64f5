import { act, cleanup, fireEvent, render, screen, waitFor, within } from "@testing-library/react";
import { createRef } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { FileChange } from "./api";
import type { CardActions } from "./ProposalCard";
import { DiffView } from "./DiffView";
import { FileTree, foldFrom } from "./FileTree";
import { card, diffOnScreen, findEl, stubEventSource, stubFetch, opFacts } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  localStorage.clear();
});

function change(path: string, over: Partial<FileChange> = {}): FileChange {
  return { status: "modified", path, size: 10, ...over };
}

/** The names on the tree's rows, in order (directories end in "/"). */
function rowNames(): string[] {
  return Array.from(document.querySelectorAll(".file-tree-row .file-tree-name")).map((e) => e.textContent ?? "");
}

function dirButton(name: string): HTMLButtonElement {
  const b = Array.from(document.querySelectorAll<HTMLButtonElement>(".file-tree-dir")).find(
    (e) => e.querySelector(".file-tree-name")?.textContent === name,
  );
  if (!b) throw new Error(`no directory row ${name}`);
  return b;
}

describe("the file tree", () => {
  const files = [
    change("src/app/cart.ts", { status: "added" }),
    change("src/app/checkout.ts"),
    change("src/lib/money.ts", { status: "deleted" }),
    change("docs/guide/intro.md", { status: "renamed", oldPath: "docs/intro.md" }),
    change("README.md"),
  ];

  it("shows directories with their files, each with its status and known line counts", () => {
    const counts = new Map([["src/app/cart.ts", { added: 12, deleted: 0 }]]);
    render(<FileTree files={files} counts={counts} onJump={() => {}} />);
    expect(screen.getByRole("navigation", { name: "Changed files" }).textContent).toContain("Files changed (5)");
    // A directory that holds only one directory is one row ("docs/guide").
    expect(rowNames()).toEqual(["docs/guide/", "intro.md", "src/", "app/", "cart.ts", "checkout.ts", "lib/", "money.ts", "README.md"]);
    const cart = screen.getByRole("button", { name: /cart\.ts, added/ });
    expect(cart.textContent).toContain("+12");
    expect(cart.textContent).toContain("−0");
    // Counts not known yet are not made up.
    expect(screen.getByRole("button", { name: /checkout\.ts, changed/ }).querySelector(".file-tree-lines")).toBeNull();
    expect(screen.getByRole("button", { name: /money\.ts, deleted/ }).querySelector(".file-tree-status")!.textContent).toBe("D");
  });

  it("folds and unfolds a directory", () => {
    render(<FileTree files={files} counts={new Map()} onJump={() => {}} />);
    const src = dirButton("src/");
    expect(src.getAttribute("aria-expanded")).toBe("true");
    fireEvent.click(src);
    expect(dirButton("src/").getAttribute("aria-expanded")).toBe("false");
    expect(rowNames()).toEqual(["docs/guide/", "intro.md", "src/", "README.md"]);
    fireEvent.click(dirButton("src/"));
    expect(rowNames()).toContain("money.ts");
  });

  it("filters by any part of the path, and says how many match", async () => {
    render(<FileTree files={files} counts={new Map()} onJump={() => {}} />);
    const filter = screen.getByRole("searchbox", { name: "Filter files by path" });
    fireEvent.change(filter, { target: { value: "APP/C" } });
    await waitFor(() => expect(rowNames()).toEqual(["src/app/", "cart.ts", "checkout.ts"]));
    expect(screen.getByText("2 files match")).toBeTruthy();
    fireEvent.change(filter, { target: { value: "nothing-like-this" } });
    await waitFor(() => expect(screen.getByText("No file matches “nothing-like-this”.")).toBeTruthy());
    fireEvent.change(filter, { target: { value: "" } });
    await waitFor(() => expect(rowNames()).toHaveLength(9));
  });

  it("tells which file was clicked", () => {
    const onJump = vi.fn();
    render(<FileTree files={files} counts={new Map()} onJump={onJump} />);
    fireEvent.click(screen.getByRole("button", { name: /checkout\.ts/ }));
    expect(onJump).toHaveBeenCalledWith("src/app/checkout.ts");
  });

  it("opens folded from a few hundred files and draws only the rows in view, even for 20,000 files", async () => {
    const many = Array.from({ length: 20_000 }, (_, i) => change(`pkg${i % 100}/sub${i % 7}/file${i}.go`));
    render(<FileTree files={many} counts={new Map()} onJump={() => {}} />);
    expect(many.length).toBeGreaterThanOrEqual(foldFrom);
    expect(screen.getByRole("navigation", { name: "Changed files" }).textContent).toContain("Files changed (20,000)");
    // Folded: the hundred top directories, of which only those in view are drawn.
    const drawn = document.querySelectorAll(".file-tree-row");
    expect(drawn.length).toBeGreaterThan(0);
    expect(drawn.length).toBeLessThan(100);
    expect(document.querySelector(".file-tree-rows")!.getAttribute("style")).toContain(`height: ${100 * 24}px`);
    expect(Array.from(document.querySelectorAll(".file-tree-dir")).every((b) => b.getAttribute("aria-expanded") === "false")).toBe(true);

    // A filter opens the directories of what matches, still drawing only a window of rows.
    fireEvent.change(screen.getByRole("searchbox", { name: "Filter files by path" }), { target: { value: "pkg42/" } });
    await waitFor(() => expect(screen.getByText("200 files match")).toBeTruthy());
    expect(document.querySelectorAll(".file-tree-row").length).toBeLessThan(100);
    expect(rowNames().slice(0, 2)).toEqual(["pkg42/", "sub0/"]);

    // Scrolling draws the rows further down.
    const list = document.querySelector<HTMLElement>(".file-tree-list")!;
    list.scrollTop = 150 * 24;
    fireEvent.scroll(list);
    await waitFor(() => expect(rowNames().some((n) => n.startsWith("file") && !rowNames().includes("pkg42/"))).toBe(true));
  });
});

// A diff of n small files, each "diff --git" section of the same shape.
function section(path: string, i: number): string {
  return `diff --git a/${path} b/${path}\nindex 1111111..2222222 100644\n--- a/${path}\n+++ b/${path}\n@@ -1,2 +1,2 @@\n line ${i}\n-old ${i}\n+new ${i}\n`;
}

/**
 * Routes for a diff the server hands out in chunks of `per` files from any
 * file's start, and says where each file starts.
 */
function pagedDiffRoutes(id: string, paths: string[], per: number, extra: string[] = []) {
  const parts = [...paths.map(section), ...extra];
  const text = parts.join("");
  const starts: number[] = [];
  let at = 0;
  for (const p of parts) {
    starts.push(at);
    at += p.length;
  }
  const routes: Record<string, { body: unknown }> = {};
  starts.forEach((s, k) => {
    const end = k + per < starts.length ? starts[k + per] : text.length;
    routes[`GET /api/proposals/${id}/diff?offset=${s}`] = {
      body: { text: text.slice(s, end), offset: s, nextOffset: end, totalBytes: text.length, done: end === text.length, notices: [] },
    };
  });
  paths.forEach((p, k) => {
    routes[`GET /api/proposals/${id}/diff/file?path=${encodeURIComponent(p)}`] = {
      body: { path: p, offset: starts[k], end: starts[k + 1] ?? text.length },
    };
  });
  return { routes, starts };
}

describe("jumping to a file", () => {
  it("loads only the part of the diff that file is in, then the gap before it on request", async () => {
    const paths = Array.from({ length: 40 }, (_, i) => `src/mod${String(i).padStart(2, "0")}.go`);
    const { routes, starts } = pagedDiffRoutes("pj", paths, 5);
    const calls = stubFetch(routes);
    const loading: boolean[] = [];
    const { container } = render(
      <DiffView proposalId="pj" files={40} changes={paths.map((p) => change(p))} onLoadingChange={(l) => loading.push(l)} />,
    );
    await waitFor(() => expect(container.querySelectorAll(".diff-body .d2h-file-wrapper[data-path]")).toHaveLength(5));
    expect(screen.getByRole("navigation", { name: "Changed files" }).textContent).toContain("Files changed (40)");
    // Line counts of the files drawn so far.
    await waitFor(() => expect(screen.getByRole("button", { name: /mod00\.go/ }).textContent).toContain("+1"));

    fireEvent.click(screen.getByRole("button", { name: /mod33\.go/ }));
    const target = await waitFor(() => {
      const w = container.querySelector<HTMLElement>(".d2h-file-wrapper[data-path='src/mod33.go']");
      if (!w) throw new Error("not drawn yet");
      return w;
    });
    // The file jumped to has the focus, so the reader (and a screen reader) is there.
    await waitFor(() => expect(document.activeElement).toBe(target));
    const diffCalls = calls.filter((c) => c.url.includes("/diff")).map((c) => c.url);
    expect(diffCalls).toEqual([
      "/api/proposals/pj/diff?offset=0",
      "/api/proposals/pj/diff/file?path=src%2Fmod33.go",
      `/api/proposals/pj/diff?offset=${starts[33]}`,
    ]);
    // mod05 … mod32 are not loaded: a gap says so and loads them on request.
    expect(container.querySelector(".d2h-file-wrapper[data-path='src/mod10.go']")).toBeNull();
    const gap = container.querySelector<HTMLElement>(".diff-gap")!;
    expect(gap.textContent).toMatch(/KB of the diff not loaded here/);
    // Files already drawn are shown without asking the server.
    fireEvent.click(screen.getByRole("button", { name: /mod02\.go/ }));
    expect(document.activeElement).toBe(container.querySelector(".d2h-file-wrapper[data-path='src/mod02.go']"));
    expect(calls.filter((c) => c.url.includes("/diff/file"))).toHaveLength(1);

    for (let i = 0; i < 6 && container.querySelector(".diff-gap"); i++) {
      const button = await waitFor(() => {
        const b = container.querySelector<HTMLButtonElement>(".diff-gap button");
        if (!b) throw new Error("no gap");
        return b;
      });
      fireEvent.click(button);
      await waitFor(() => expect(loading[loading.length - 1]).toBe(false));
    }
    await waitFor(() => expect(container.querySelector(".diff-gap")).toBeNull());
    // Every file of 0 … 37 once, in order, none twice where the parts met.
    const drawn = Array.from(container.querySelectorAll<HTMLElement>(".d2h-file-wrapper[data-path]")).map((w) => w.dataset.path);
    expect(drawn).toEqual(paths.slice(0, 38));
  });
});

/** The preview of path's image (hidden until one of its images loads). */
function previewOf(path: string): Promise<HTMLElement> {
  return findEl<HTMLElement>(`.image-preview[aria-label="Image preview of ${path}"]`);
}

const pngBlob = "a".repeat(40);
const oldPngBlob = "b".repeat(40);
const fontBlob = "c".repeat(40);

const binaryDiff =
  "diff --git a/img/logo.png b/img/logo.png\nindex bbbbbbb..aaaaaaa 100644\nBinary files a/img/logo.png and b/img/logo.png differ\n" +
  "diff --git a/fonts/a.woff b/fonts/a.woff\nnew file mode 100644\nindex 0000000..ccccccc\nBinary files /dev/null and b/fonts/a.woff differ\n";

const binaryChanges: FileChange[] = [
  change("img/logo.png", { binary: true, blob: pngBlob, oldBlob: oldPngBlob, size: 2048 }),
  change("fonts/a.woff", { status: "added", binary: true, blob: fontBlob, size: 4096 }),
];

function binaryRoutes(id: string) {
  return {
    [`GET /api/proposals/${id}/diff?offset=0`]: {
      body: { text: binaryDiff, offset: 0, nextOffset: binaryDiff.length, totalBytes: binaryDiff.length, done: true, notices: [] },
    },
  };
}

describe("image previews", () => {
  it("shows a changed image before and after instead of 'Binary file', and leaves other binaries as they were", async () => {
    stubFetch(binaryRoutes("pi"));
    const loading: boolean[] = [];
    const { container } = render(
      <DiffView proposalId="pi" files={2} changes={binaryChanges} onLoadingChange={(l) => loading.push(l)} />,
    );
    const preview = await previewOf("img/logo.png");
    const imgs = Array.from(preview.querySelectorAll("img"));
    // The app's route for the sealed blobs, never the agent's file name.
    expect(imgs.map((i) => i.getAttribute("src"))).toEqual([
      `/api/proposals/pi/blob/${oldPngBlob}`,
      `/api/proposals/pi/blob/${pngBlob}`,
    ]);
    expect(imgs.map((i) => i.alt)).toEqual(["img/logo.png, before", "img/logo.png, after"]);
    // Until the images answer, the diff is still loading.
    expect(loading[loading.length - 1]).toBe(true);
    const fontImg = container.querySelector<HTMLImageElement>(`img[src$='${fontBlob}']`)!;
    act(() => {
      imgs.forEach((i) => i.dispatchEvent(new Event("load")));
      // The app refuses what is not a PNG, JPEG, GIF or WebP.
      fontImg.dispatchEvent(new Event("error"));
    });
    await waitFor(() => expect(loading[loading.length - 1]).toBe(false));
    const logo = container.querySelector<HTMLElement>(".d2h-file-wrapper[data-path='img/logo.png']")!;
    expect(preview.style.display).toBe("");
    expect(within(preview).getByText("Before")).toBeTruthy();
    expect(within(preview).getByText("After")).toBeTruthy();
    expect(logo.querySelector<HTMLElement>(".d2h-files-diff, .d2h-file-diff")!.style.display).toBe("none");
    const font = container.querySelector<HTMLElement>(".d2h-file-wrapper[data-path='fonts/a.woff']")!;
    expect(font.querySelector(".image-preview")).toBeNull();
    expect(font.textContent).toContain("Binary file");
  });

  it("shows an added image alone, and a deleted one as it was", async () => {
    const diff =
      "diff --git a/new.gif b/new.gif\nnew file mode 100644\nindex 0000000..aaaaaaa\nBinary files /dev/null and b/new.gif differ\n" +
      "diff --git a/old.webp b/old.webp\ndeleted file mode 100644\nindex bbbbbbb..0000000\nBinary files a/old.webp and /dev/null differ\n";
    stubFetch({
      "GET /api/proposals/pa/diff?offset=0": {
        body: { text: diff, offset: 0, nextOffset: diff.length, totalBytes: diff.length, done: true, notices: [] },
      },
    });
    render(
      <DiffView
        proposalId="pa"
        files={2}
        changes={[
          change("new.gif", { status: "added", binary: true, blob: pngBlob }),
          change("old.webp", { status: "deleted", binary: true, oldBlob: oldPngBlob }),
        ]}
      />,
    );
    const added = await previewOf("new.gif");
    const deleted = await previewOf("old.webp");
    expect(Array.from(added.querySelectorAll("figcaption")).map((f) => f.textContent)).toEqual(["After"]);
    expect(Array.from(deleted.querySelectorAll("figcaption")).map((f) => f.textContent)).toEqual(["Before"]);
    expect(deleted.querySelector("img")!.getAttribute("src")).toBe(`/api/proposals/pa/blob/${oldPngBlob}`);
  });
});

describe("image previews in the desktop window", () => {
  afterEach(() => {
    delete (window as unknown as { go?: unknown }).go;
  });

  it("takes the image as a data: URL from the binding, which has no route to load it from", async () => {
    const asked: string[] = [];
    const dataUrl = "data:image/png;base64,iVBORw0KGgo=";
    (window as unknown as { go: unknown }).go = {
      app: {
        API: {
          ProposalDiff: async () => ({ text: binaryDiff, offset: 0, nextOffset: binaryDiff.length, totalBytes: binaryDiff.length, done: true, notices: [] }),
          ProposalImage: async (id: string, blob: string) => {
            asked.push(`${id} ${blob}`);
            if (blob === fontBlob) throw { code: "unsupported", message: "not a PNG, JPEG, GIF or WebP image" };
            return { contentType: "image/png", size: 8, dataUrl };
          },
        },
      },
    };
    const { container } = render(<DiffView proposalId="pd" files={2} changes={binaryChanges} />);
    const preview = await previewOf("img/logo.png");
    await waitFor(() => expect(Array.from(preview.querySelectorAll("img")).map((i) => i.getAttribute("src"))).toEqual([dataUrl, dataUrl]));
    expect(asked.sort()).toEqual([`pd ${pngBlob}`, `pd ${oldPngBlob}`, `pd ${fontBlob}`]);
    // What the binding refuses stays a binary file.
    await waitFor(() => expect(container.querySelector(".d2h-file-wrapper[data-path='fonts/a.woff'] .image-preview")).toBeNull());
  });
});

describe("Approve while the card loads", () => {
  it("is disabled, saying Loading…, until the diff and its images are on screen", async () => {
    stubEventSource();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    stubFetch({
      ...binaryRoutes("p1"),
      "GET /api/proposals/p1/preflight": { body: { stale: false, moved: [], changed: [], notes: [], blockers: [], notices: [] } },
    });
    const inner = globalThis.fetch;
    vi.stubGlobal("fetch", async (input: RequestInfo | URL, init?: RequestInit) => {
      if (String(input).includes("/diff?")) await gate;
      return inner(input, init);
    });
    const { ProposalCard } = await import("./ProposalCard");
    const c = card({
      op: "commit", label: "commit", subjectBranch: "", opFacts: opFacts({ writesCheckoutWhenConfined: true }),
      sealed: { before: "1".repeat(40), after: "2".repeat(40), files: binaryChanges },
    });
    const actions = createRef<CardActions>();
    render(<ProposalCard card={c} ref={actions} />);
    const approve = document.querySelector<HTMLButtonElement>("#card-p1 .approve")!;
    await screen.findByText("Loading diff…");
    expect(approve.disabled).toBe(true);
    const why = document.getElementById(approve.getAttribute("aria-describedby")!)!;
    expect(why.textContent).toMatch(/^Loading…/);
    // The a key says why it does nothing.
    act(() => actions.current!.approveShortcut());
    expect(document.querySelector(".refusal")?.textContent).toMatch(/Approve waits until the diff is on screen/);

    // The diff is there, the image not yet.
    release();
    const preview = await previewOf("img/logo.png");
    expect(approve.disabled).toBe(true);
    expect(document.querySelector(".approve-wait")).toBeTruthy();
    act(() => {
      preview.querySelectorAll("img").forEach((i) => i.dispatchEvent(new Event("load")));
      document.querySelector(`img[src$='${fontBlob}']`)!.dispatchEvent(new Event("error"));
    });
    await diffOnScreen("p1");
    expect(approve.disabled).toBe(false);
    expect(approve.getAttribute("aria-describedby")).toBeNull();
    expect(document.querySelector(".refusal")).toBeNull();
  });
});
