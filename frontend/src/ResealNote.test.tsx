import { cleanup, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { card } from "./testing";
import { ResealNote } from "./ResealNote";

afterEach(() => cleanup());

describe("ResealNote", () => {
  it("says a pending card was re-sealed on the moved branch with the same changes", () => {
    const { container: el } = render(
      <ResealNote
        card={card({
          resealed: {
            from: "sha256:a",
            to: "sha256:b",
            branch: "main",
            base: "1234567890abcdef",
            at: "2026-12-05T10:00:00Z",
            moves: [{ ref: "HEAD", from: "aaaaaaaaaa", to: "1234567890" }],
          },
        })}
      />,
    );
    const p = el.querySelector("#card-resealed")!;
    expect(p.textContent).toMatch(/Re-sealed on main at 1234567: same changes\./);
    expect(p.textContent).toMatch(/HEAD moved from aaaaaaa to 1234567/);
  });

  it("names the proposal a stacked card lands after, and nothing when it is not stacked", () => {
    const { container: el } = render(<ResealNote card={card({ below: "p-below-123" })} />);
    expect(el.querySelector("#card-stacked")?.textContent).toMatch(/Stacked on proposal p-below-: it lands after that one/);
    expect(el.querySelector("#card-stacked a")?.getAttribute("href")).toBe("#/proposal/p-below-123");
    const { container: none } = render(<ResealNote card={card({})} />);
    expect(none.querySelector("#card-resealed, #card-stacked")).toBeNull();
  });
});
