// "Approve and trust similar" on a pending card: opens the dialog that shows
// the rule it will save. On a destructive card it is disabled and says why:
// no rule may approve work that can be lost.
import { useState } from "react";
import type { Card } from "./api";
import { TrustRuleDialog } from "./TrustRuleDialog";

interface Props {
  card: Card;
  /** The note typed on the card, sent with the approval. */
  note: string;
  /** False while the card cannot be approved as shown (stale, busy). */
  enabled: boolean;
  onDecided?(c: Card): void;
}

export const destructiveWhy = "Changes that can lose work always need you: no rule can approve them.";

export function TrustSimilar({ card, note, enabled, onDecided }: Props) {
  const [open, setOpen] = useState(false);
  const whyId = `trust-why-${card.id}`;
  if (card.state !== "pending") return null;
  return (
    <>
      <button
        type="button"
        className="trust-similar"
        disabled={card.destructive || !enabled}
        aria-describedby={card.destructive ? whyId : undefined}
        onClick={() => setOpen(true)}
      >
        Approve and trust similar…
      </button>
      {card.destructive && (
        <small id={whyId} className="muted trust-why">
          {destructiveWhy}
        </small>
      )}
      {open && (
        <TrustRuleDialog
          card={card}
          note={note}
          onCancel={() => setOpen(false)}
          onDone={(r) => {
            setOpen(false);
            onDecided?.(r.card);
          }}
        />
      )}
    </>
  );
}
