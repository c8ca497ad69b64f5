import { cleanup, render, screen, waitFor, within } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DiffView } from "./DiffView";
import { showInvisible } from "./InvisibleChars";
import { card, diffRoutes, sampleDiff, status, stubEventSource, stubFetch } from "./testing";

beforeEach(() => stubEventSource());

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.resetModules();
});

describe("hidden characters on a card", () => {
  it("names every field that held one, escaped", async () => {
    const c = card({
      reason: "Rename ⟨U+202E⟩txt.exe",
      invisible: [
        { field: "reason", shown: "Rename ⟨U+202E⟩txt.exe" },
        { field: "args.message", shown: "Greet⟨U+200B⟩ the world" },
      ],
    });
    stubFetch({ "GET /api/proposals": { body: [c] }, ...diffRoutes("p1", [sampleDiff]) });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    const el = await screen.findByRole("article", { name: /merge in shop/i });
    const alert = within(el).getByText("Hidden characters:").closest("[role=alert]") as HTMLElement;
    expect(alert).toBeTruthy();
    expect(within(alert).getByText("args.message:")).toBeTruthy();
    expect(within(alert).getByText("Greet⟨U+200B⟩ the world")).toBeTruthy();
  });

  it("shows nothing for a card without any", async () => {
    stubFetch({ "GET /api/proposals": { body: [card({ invisible: [] })] }, ...diffRoutes("p1", [sampleDiff]) });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    await screen.findByRole("article", { name: /merge in shop/i });
    expect(screen.queryByText("Hidden characters:")).toBeNull();
  });
});

// Line 12 of src/auth.js reads as a role check and is, to the interpreter,
// a comment: the override turns the rest of the line around.
const trojanLine = 'if (user.role != "admin\u202e \u2066// check admin\u2069 \u2066") {';
const trojanDiff = `diff --git a/src/auth.js b/src/auth.js
index 1111111..2222222 100644
--- a/src/auth.js
+++ b/src/auth.js
@@ -11,3 +11,3 @@
 // line 11
-if (user.role != "admin") {
+${trojanLine}
   deny();
`;

describe("hidden characters in content", () => {
  it("shows a diff line's bidi controls as ⟨U+XXXX⟩ on a marked line, never raw", async () => {
    stubFetch(diffRoutes("p1", [trojanDiff]));
    const { container } = render(<DiffView proposalId="p1" />);
    const marked = await waitFor(
      () => {
        const el = container.querySelector<HTMLElement>(".diff-body .has-invisible");
        if (!el) throw new Error("no marked line yet");
        return el;
      },
      { timeout: 10_000 },
    );
    expect(marked.textContent).toContain('"admin⟨U+202E⟩ ⟨U+2066⟩// check admin⟨U+2069⟩ ⟨U+2066⟩")');
    const body = container.querySelector(".diff-body")!.textContent ?? "";
    expect(body).not.toMatch(/[\u202e\u2066\u2069]/);
    // Only that line is marked.
    expect(container.querySelectorAll(".diff-body .has-invisible")).toHaveLength(1);
  });

  it("lists each line of content that held one with its file and line", async () => {
    const c = card({
      risk: "medium",
      riskWhy: "the content holds invisible characters (src/auth.js line 12: right-to-left override U+202E)",
      invisibleContent: [
        {
          file: "src/auth.js",
          line: 12,
          chars: ["right-to-left override U+202E", "left-to-right isolate U+2066"],
          shown: showInvisible(trojanLine),
          text: "src/auth.js line 12: right-to-left override U+202E, left-to-right isolate U+2066",
        },
      ],
      invisibleContentMore: 3,
    });
    stubFetch({ "GET /api/proposals": { body: [c] }, ...diffRoutes("p1", [sampleDiff]) });
    const { PendingView } = await import("./PendingView");
    render(<PendingView status={status} />);
    const el = await screen.findByRole("article", { name: /merge in shop/i });
    const alert = within(el).getByText("Hidden characters in the content:").closest("[role=alert]") as HTMLElement;
    expect(within(alert).getByText(/^src\/auth\.js line 12: right-to-left override U\+202E/)).toBeTruthy();
    expect(within(alert).getByText(/admin⟨U\+202E⟩ ⟨U\+2066⟩/, { selector: "code" })).toBeTruthy();
    expect(within(alert).getByText("and 3 more line(s)")).toBeTruthy();
  });

  it("writes what the app left raw as the app does", () => {
    expect(showInvisible("a\u202eb\u200bc\u00add\x1b")).toBe("a⟨U+202E⟩b⟨U+200B⟩c⟨U+00AD⟩d⟨U+001B⟩");
    // A BOM that starts a file and CRLF line ends are no hidden text.
    expect(showInvisible("\ufeffone\r\ntwo\r")).toBe("\ufeffone\r\ntwo\r");
    expect(showInvisible("mid\rline\ttab\n")).toBe("mid⟨U+000D⟩line\ttab\n");
    expect(showInvisible("ünïcode – ok 😀")).toBe("ünïcode – ok 😀");
  });
});
