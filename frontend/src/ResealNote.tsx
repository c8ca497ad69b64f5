// What happened to a pending card's base: re-sealed on a branch that
// moved under it (the same changes, on a new tree and digest), or stacked
// on another pending proposal of the agent's, which lands first.
import type { Card } from "./api";
import { href } from "./route";

export function ResealNote({ card }: { card: Card }) {
  const r = card.resealed;
  const pending = card.state === "pending";
  return (
    <>
      {r && (
        <p className="resealed" id="card-resealed" role="status">
          {pending ? "Re-sealed" : "It was re-sealed"} on {r.branch ? <code>{r.branch}</code> : "a detached HEAD"} at{" "}
          <code>{r.base.slice(0, 7)}</code>: same changes.{" "}
          <span className="muted">
            {r.moves
              .map((m) => `${m.ref.replace(/^refs\/heads\//, "")} moved from ${(m.from ?? "").slice(0, 7)} to ${(m.to ?? "").slice(0, 7)}`)
              .join("; ")}
            {r.moves.length > 0 ? "; " : ""}
            {pending ? "nothing this card changes moved, so it was sealed again there." : "nothing it changed had moved."}
          </span>
        </p>
      )}
      {pending && card.below && (
        <p className="stacked" id="card-stacked">
          Stacked on proposal <a href={href("proposal", card.below)}>{card.below.slice(0, 8)}</a>: it lands after that one, and
          is re-sealed on the commit that one makes.
        </p>
      )}
    </>
  );
}
