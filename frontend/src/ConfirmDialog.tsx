// A modal question with a safe default: focus starts on Cancel, Escape
// cancels, and Tab stays inside the dialog while it is open.
import { useEffect, useId, useRef, type ReactNode } from "react";

interface Props {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  /** Extra class on the confirm button (end-to-end tests find it by class). */
  confirmClass?: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm(): void;
  onCancel(): void;
}

export function ConfirmDialog({ title, children, confirmLabel, confirmClass, danger, busy, onConfirm, onCancel }: Props) {
  const titleId = useId();
  const box = useRef<HTMLDivElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    cancel.current?.focus();
    return () => before?.focus?.();
  }, []);

  function onKeyDown(e: React.KeyboardEvent) {
    dialogKeys(e, box.current, onCancel);
  }

  return (
    <div className="overlay" onMouseDown={(e) => e.target === e.currentTarget && onCancel()}>
      <div className="dialog" role="dialog" aria-modal="true" aria-labelledby={titleId} ref={box} onKeyDown={onKeyDown}>
        <h2 id={titleId}>{title}</h2>
        <div className="dialog-body">{children}</div>
        <div className="actions">
          <button type="button" ref={cancel} onClick={onCancel} disabled={busy}>
            Cancel
          </button>
          <button
            type="button"
            className={`primary${danger ? " danger" : ""}${confirmClass ? ` ${confirmClass}` : ""}`}
            onClick={onConfirm}
            disabled={busy}
          >
            {busy ? "Working…" : confirmLabel}
          </button>
        </div>
      </div>
    </div>
  );
}

/**
 * The keys of a modal dialog: Escape cancels, and Tab and Shift+Tab cycle
 * through the focusable elements of box without leaving it.
 */
export function dialogKeys(e: React.KeyboardEvent, box: HTMLElement | null, onCancel: () => void) {
  if (e.key === "Escape") {
    e.preventDefault();
    onCancel();
    return;
  }
  if (e.key !== "Tab" || !box) return;
  const focusable = Array.from(box.querySelectorAll<HTMLElement>("button:not([disabled]), input, select, textarea, [href]"));
  if (focusable.length === 0) return;
  const first = focusable[0];
  const last = focusable[focusable.length - 1];
  if (e.shiftKey && document.activeElement === first) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && document.activeElement === last) {
    e.preventDefault();
    first.focus();
  }
}
