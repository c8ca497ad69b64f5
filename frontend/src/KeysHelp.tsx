// The Pending screen's keys, listed in a dialog that `?` opens. Escape or
// `?` again closes it and gives the focus back to where it was.
import { useEffect, useId, useRef } from "react";
import { dialogKeys } from "./ConfirmDialog";

/** Every key the Pending screen answers, in the order a person learns them. */
export const reviewKeys: { keys: string[]; what: string }[] = [
  { keys: ["j", "k"], what: "open the next or the previous proposal" },
  { keys: ["a"], what: "approve the open proposal (on a destructive one: go to the confirmation field)" },
  { keys: ["r"], what: "reject the open proposal, with the note typed on it; it is sent after a few seconds" },
  { keys: ["u"], what: "undo that reject before it is sent" },
  { keys: ["s"], what: "send a stale proposal back to the agent, saying what moved" },
  { keys: ["/"], what: "search the queue by subject, repository, agent or file name" },
  { keys: ["Esc"], what: "leave the search box, close this list" },
  { keys: ["?"], what: "show or hide this list" },
];

export function KeysHelp({ onClose }: { onClose: () => void }) {
  const titleId = useId();
  const box = useRef<HTMLDivElement>(null);
  const close = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    close.current?.focus();
    return () => before?.focus?.({ preventScroll: true });
  }, []);

  return (
    <div className="overlay" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div
        className="dialog keys-help"
        id="keys-help"
        role="dialog"
        aria-modal="true"
        aria-labelledby={titleId}
        ref={box}
        onKeyDown={(e) => {
          if (e.key === "?") {
            e.preventDefault();
            onClose();
            return;
          }
          dialogKeys(e, box.current, onClose);
        }}
      >
        <h2 id={titleId}>Keyboard shortcuts</h2>
        <dl className="keys-list">
          {reviewKeys.map((k) => (
            <div key={k.keys.join()} className="keys-entry">
              <dt>
                {k.keys.map((key, i) => (
                  <span key={key}>
                    {i > 0 && " / "}
                    <kbd>{key}</kbd>
                  </span>
                ))}
              </dt>
              <dd>{k.what}</dd>
            </div>
          ))}
        </dl>
        <p className="muted keys-note">
          Keys do nothing while you type in a field. When the card you had open is replaced (withdrawn, expired, approved
          by a rule, re-sealed), a and r wait until you have seen the new one.
        </p>
        <div className="actions">
          <button type="button" ref={close} onClick={onClose}>
            Close
          </button>
        </div>
      </div>
    </div>
  );
}
