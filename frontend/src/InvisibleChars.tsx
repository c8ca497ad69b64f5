// Invisible characters (bidi controls, zero-width characters, other
// format and control characters) change how text reads without showing
// themselves: a right-to-left override inside a string literal makes a
// line of code read differently from what runs ("Trojan Source"). The app
// lists every line of content that held one and sends its diff with each
// written as ⟨U+XXXX⟩; this module does the same to whatever text it is
// handed again, so that nothing reaches the screen raw, and lists the
// lines on the card.
import type { Card } from "./api";

/**
 * Whether a code point is invisible by the app's definition (app/invisible.go):
 * a format character (Cf), U+180E, or a control character other than
 * newline and tab.
 */
function isInvisible(cp: number): boolean {
  if (cp === 0x0a || cp === 0x09) return false;
  return cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp === 0x180e || /\p{Cf}/u.test(String.fromCodePoint(cp));
}

const anyInvisible = /[\p{Cf}\u0000-\u0008\u000b-\u001f\u007f-\u009f\u180e]/u;

/**
 * text with each invisible character written as ⟨U+XXXX⟩, as the app
 * writes them; a carriage return that ends a line and a byte order mark
 * that starts the text stay, as every text file may have them.
 */
export function showInvisible(text: string): string {
  if (!anyInvisible.test(text)) return text;
  let out = "";
  let i = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const next = text[i + ch.length];
    const lineEnd = cp === 0x0d && (next === undefined || next === "\n");
    if (isInvisible(cp) && !lineEnd && !(cp === 0xfeff && i === 0)) {
      out += `⟨U+${cp.toString(16).toUpperCase().padStart(4, "0")}⟩`;
    } else {
      out += ch;
    }
    i += ch.length;
  }
  return out;
}

/** Whether text shows an invisible character as ⟨U+XXXX⟩. */
export function showsInvisible(text: string): boolean {
  return /⟨U\+[0-9A-F]{4,6}⟩/.test(text);
}

/** The card's list of content lines that held invisible characters. */
export function InvisibleContent({ card }: { card: Card }) {
  const lines = card.invisibleContent ?? [];
  if (lines.length === 0) return null;
  const more = card.invisibleContentMore ?? 0;
  return (
    <div className="stale invisible-chars invisible-content" role="alert">
      <strong>Hidden characters in the content:</strong> these lines hold characters that change how code reads
      without showing themselves (direction overrides, zero-width characters), as in a Trojan Source attack. The diff
      shows each as ⟨U+XXXX⟩, on a marked line.
      <ul className="plain">
        {lines.map((l, i) => (
          <li key={i} className="invisible-line">
            <span className="invisible-where">{l.text}</span>
            {l.shown && (
              <>
                {" "}
                <code>{l.shown}</code>
              </>
            )}
          </li>
        ))}
        {more > 0 && <li className="muted">and {more} more line(s)</li>}
      </ul>
    </div>
  );
}
