// Views live at /ui/<view>[/<id>]?<state>; "/" is the clusters view. The URL is the state: every
// filter and window change replaces it (history.pushState), and a link opens the same view.
import { useEffect, useState } from "preact/hooks";

export interface Route {
  view: string;
  id?: string;
  params: Record<string, string>;
}

export function parseRoute(pathname: string, search: string): Route {
  const params: Record<string, string> = {};
  new URLSearchParams(search).forEach((v, k) => {
    if (v !== "") params[k] = v;
  });
  const m = /^\/ui\/([a-z]+)(?:\/(.+))?$/.exec(pathname);
  if (!m) return { view: "clusters", params };
  return { view: m[1], id: m[2] ? decodeURIComponent(m[2]) : undefined, params };
}

export function href(view: string, params: Record<string, string | number | undefined | null> = {}, id?: string): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return `/ui/${view}${id !== undefined ? "/" + encodeURIComponent(id) : ""}${s ? "?" + s : ""}`;
}

export function navigate(url: string, replace = false): void {
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  dispatchEvent(new PopStateEvent("popstate"));
}

export function useRoute(): Route {
  const [loc, setLoc] = useState(() => parseRoute(location.pathname, location.search));
  useEffect(() => {
    const on = () => setLoc(parseRoute(location.pathname, location.search));
    addEventListener("popstate", on);
    // In-page links navigate without reloading the page.
    const click = (e: MouseEvent) => {
      const a = (e.target as Element).closest?.("a");
      if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || a.target) return;
      const url = new URL(a.href, location.href);
      if (url.origin !== location.origin || !url.pathname.startsWith("/ui/") || a.hasAttribute("download")) return;
      e.preventDefault();
      navigate(url.pathname + url.search);
    };
    document.addEventListener("click", click);
    return () => {
      removeEventListener("popstate", on);
      document.removeEventListener("click", click);
    };
  }, []);
  return loc;
}
