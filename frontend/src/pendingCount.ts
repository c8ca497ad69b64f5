// The number of proposals waiting, for the navigation and the title: read
// from the app's status and re-read whenever a proposal changes.
import { useEffect, useState } from "react";
import { api, onEvents, type EventName } from "./api";

const liveEvents: EventName[] = ["proposal:created", "proposal:updated", "proposals:resync"];

/** The pending count, starting from `initial` (null before the app answered). */
export function usePendingCount(initial: number | null): number | null {
  const [count, setCount] = useState(initial);
  useEffect(() => setCount(initial), [initial]);
  useEffect(() => {
    if (initial === null) return;
    let live = true;
    let seq = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      const n = ++seq;
      try {
        const s = await api.status();
        if (live && n === seq) setCount(s.pending);
      } catch {
        // The count stays as it was; the next event reads it again.
      }
    };
    const off = onEvents(liveEvents, () => {
      clearTimeout(timer);
      timer = setTimeout(() => void read(), 120);
    });
    return () => {
      live = false;
      clearTimeout(timer);
      off();
    };
  }, [initial === null]); // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(() => {
    document.title = count ? `(${count}) Sluice` : "Sluice";
  }, [count]);
  return count;
}
