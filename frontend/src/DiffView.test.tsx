import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DiffView } from "./DiffView";
import { diffRoutes, sampleDiff, secondDiff, stubFetch } from "./testing";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  localStorage.clear();
});

function diffRequests(calls: { url: string }[]) {
  return calls.filter((c) => c.url.includes("/diff?")).map((c) => c.url);
}

describe("DiffView", () => {
  it("renders the first chunk with diff2html and loads the rest with Load more until done", async () => {
    const calls = stubFetch(diffRoutes("p1", [sampleDiff, secondDiff]));
    const { container } = render(<DiffView proposalId="p1" />);

    await waitFor(() => expect(container.querySelectorAll(".diff-body .d2h-file-wrapper")).toHaveLength(1));
    expect(container.querySelector(".diff-view")).toBeTruthy();
    expect(screen.getByRole("status").textContent).toMatch(/0\.2 of 0\.4 KB loaded — 0\.2 KB not shown yet/);
    // diff2html's file list and syntax highlighting are on.
    expect(container.querySelector(".d2h-file-list-wrapper")?.textContent).toContain("src/checkout.go");
    expect(container.querySelector(".diff-body .hljs")).toBeTruthy();

    const more = container.querySelector<HTMLButtonElement>(".diff-more")!;
    expect(more.textContent).toBe("Load more (0.2 KB left)");
    fireEvent.click(more);

    await waitFor(() => expect(container.querySelectorAll(".diff-body .d2h-file-wrapper")).toHaveLength(2));
    // The file is drawn before the loading flag clears: wait for both.
    await waitFor(() => expect(container.querySelector(".diff-more")).toBeNull());
    expect(screen.getByRole("status").textContent).toBe("0.4 of 0.4 KB loaded");
    expect(container.querySelector(".d2h-file-list")?.textContent).toContain("src/cart.go");
    expect(diffRequests(calls)).toEqual([
      "/api/proposals/p1/diff?offset=0",
      `/api/proposals/p1/diff?offset=${sampleDiff.length}`,
    ]);
  });

  it("loads by itself while the end of the diff is in view", async () => {
    // An observer that always reports its element in view.
    class SeeAll {
      constructor(private cb: IntersectionObserverCallback) {}
      observe(el: Element) {
        queueMicrotask(() => this.cb([{ isIntersecting: true, target: el } as IntersectionObserverEntry], this as never));
      }
      disconnect() {}
    }
    vi.stubGlobal("IntersectionObserver", SeeAll);
    const lines = Array.from({ length: 6 }, (_, i) => `+line ${i}\n`);
    const big = `diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,6 @@\n`;
    // The chunks split one file in the middle, on line boundaries.
    const chunks = [big + lines.slice(0, 2).join(""), lines.slice(2, 4).join(""), lines.slice(4).join("") + sampleDiff];
    const calls = stubFetch(diffRoutes("p2", chunks));
    const { container } = render(<DiffView proposalId="p2" />);

    // The first test loads the diff renderer cold: a generous hang guard.
    await waitFor(() => expect(screen.getByRole("status").textContent).toMatch(/^0\.\d of 0\.\d KB loaded$/), { timeout: 10_000 });
    expect(diffRequests(calls)).toHaveLength(3);
    await waitFor(() => expect(container.querySelector(".diff-more")).toBeNull());
    // Each file drawn once, whole.
    const files = container.querySelectorAll(".diff-body .d2h-file-wrapper");
    expect(files).toHaveLength(2);
    expect(files[0].textContent).toContain("line 5");
    expect(files[0].querySelectorAll(".d2h-ins").length).toBeGreaterThanOrEqual(6);
  });

  it("switches between side-by-side and line-by-line and remembers the choice", async () => {
    stubFetch(diffRoutes("p1", [sampleDiff]));
    const { container } = render(<DiffView proposalId="p1" />);
    await waitFor(() => expect(container.querySelector(".d2h-files-diff")).toBeTruthy());

    fireEvent.click(screen.getByRole("button", { name: "Line by line" }));
    await waitFor(() => expect(container.querySelector(".d2h-files-diff")).toBeNull());
    expect(container.querySelector(".d2h-file-diff")).toBeTruthy();
    expect(localStorage.getItem("sluice.diffFormat")).toBe("line-by-line");
  });

  it("says when a proposal changes no files", async () => {
    stubFetch(diffRoutes("p3", []));
    render(<DiffView proposalId="p3" />);
    expect(await screen.findByText("No file changes")).toBeTruthy();
    // Said once, and no layout to choose for a diff that has no lines.
    expect(document.querySelector(".diff-toolbar")!.textContent).toBe("No file changes");
    expect(screen.queryByRole("group", { name: "Diff layout" })).toBeNull();
  });

  it("gives the server's reason for an empty diff once", async () => {
    stubFetch({
      "GET /api/proposals/p5/diff?offset=0": {
        body: { text: "", offset: 0, nextOffset: 0, totalBytes: 0, done: true, notices: [], compared: "no file changes: only refs move" },
      },
    });
    render(<DiffView proposalId="p5" />);
    expect(await screen.findByText("No file changes: only refs move")).toBeTruthy();
    expect(document.querySelector(".diff-toolbar")!.textContent!.match(/no file changes/gi)).toHaveLength(1);
  });

  it("opens line by line on a narrow screen, whatever was chosen on a wide one", async () => {
    localStorage.setItem("sluice.diffFormat", "side-by-side");
    vi.stubGlobal("matchMedia", (q: string) => ({ matches: q.includes("max-width"), media: q, addEventListener() {}, removeEventListener() {} }));
    stubFetch(diffRoutes("p6", [sampleDiff]));
    render(<DiffView proposalId="p6" />);
    const line = await screen.findByRole("button", { name: "Line by line" });
    expect(line.getAttribute("aria-pressed")).toBe("true");
    expect(screen.getByRole("button", { name: "Side by side" }).getAttribute("aria-pressed")).toBe("false");
    // Choosing on the narrow screen does not change the wide screen's choice.
    fireEvent.click(screen.getByRole("button", { name: "Side by side" }));
    expect(localStorage.getItem("sluice.diffFormat")).toBe("side-by-side");
    fireEvent.click(line);
    expect(localStorage.getItem("sluice.diffFormat")).toBe("side-by-side");
    localStorage.removeItem("sluice.diffFormat");
  });

  it("shows the server's notices about an incomplete diff and retries a failed chunk", async () => {
    let fail = true;
    stubFetch({
      "GET /api/proposals/p4/diff?offset=0": () =>
        fail
          ? { status: 500, body: { error: { code: "internal", message: "git failed" } } }
          : {
              body: {
                text: sampleDiff,
                offset: 0,
                nextOffset: sampleDiff.length,
                totalBytes: sampleDiff.length,
                done: true,
                notices: ["one file's diff is larger than 512 KiB and is shown cut at that size"],
              },
            },
    });
    render(<DiffView proposalId="p4" />);
    expect(await screen.findByText(/Could not load the diff: git failed/)).toBeTruthy();
    fail = false;
    fireEvent.click(screen.getByRole("button", { name: "Try again" }));
    expect(await screen.findByText(/shown cut at that size/)).toBeTruthy();
  });
});
