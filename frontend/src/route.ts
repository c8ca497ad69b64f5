// Screens live in the URL's hash ("#/history", "#/proposal/<id>"), so a
// reload, the back button and a notification's link all land on the right
// screen, and the Go server needs to know nothing about them.
import { useEffect, useState } from "react";

export type Screen =
  | "pending"
  | "history"
  | "proposal"
  | "timeline"
  | "workspaces"
  | "sessions"
  | "audit"
  | "settings"
  | "connect"
  | "consent"
  | "rules";

export interface Route {
  screen: Screen;
  /** The proposal id on the proposal page. */
  id?: string;
  params: URLSearchParams;
}

const screens: Screen[] = [
  "pending",
  "history",
  "proposal",
  "timeline",
  "workspaces",
  "sessions",
  "audit",
  "settings",
  "connect",
  "consent",
  "rules",
];

export function parseRoute(hash: string): Route {
  const h = hash.replace(/^#\/?/, "");
  const [path, query = ""] = h.split("?", 2);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const screen = (screens as string[]).includes(parts[0]) ? (parts[0] as Screen) : "pending";
  const route: Route = { screen, params: new URLSearchParams(query) };
  if (screen === "consent") route.id = parts[1] ?? "";
  if (screen === "proposal") {
    if (!parts[1]) return { screen: "history", params: new URLSearchParams() };
    route.id = parts[1];
  }
  return route;
}

export function href(screen: Screen, id?: string, params?: Record<string, string>): string {
  let h = `#/${screen}`;
  if (id) h += `/${encodeURIComponent(id)}`;
  const q = params ? new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "")).toString() : "";
  return q ? `${h}?${q}` : h;
}

export function navigate(screen: Screen, id?: string, params?: Record<string, string>) {
  window.location.hash = href(screen, id, params);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", on);
    return () => window.removeEventListener("hashchange", on);
  }, []);
  return route;
}
