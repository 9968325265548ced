// The dashboard's entry: the login form until a credential is given, then the views (router.ts).
import { options, render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { forgetCredential, loadCredential, setUnauthorizedHandler } from "./api";
import { installBidiGuard } from "./lib/bidi";
import { href, navigate, useRoute } from "./router";
import { Login } from "./views/login";
import { Clusters } from "./views/clusters";
import { Nodes, NodePage } from "./views/nodes";
import { Jobs, JobPage } from "./views/jobs";
import { Metrics } from "./views/metrics";
import { Errors, Uptime } from "./views/health";
import { Chimbuko } from "./views/chimbuko";
import { Problems } from "./views/problems";
import { Usage } from "./views/usage";

const VIEWS: [string, string][] = [["clusters", "Clusters"], ["nodes", "Nodes"], ["jobs", "Jobs"],
  ["problems", "Problems"], ["usage", "Usage"], ["metrics", "Metrics"], ["errors", "Errors"], ["uptime", "Uptime"], ["chimbuko", "Chimbuko"]];

/** The tab's title names the view and what it shows ("Job 4711 · fox · fjord"), so tabs and
 * history entries tell apart. */
function titleOf(view: string, id: string | undefined, cluster: string | undefined): string {
  const names: Record<string, string> = Object.fromEntries(VIEWS);
  const what = view === "job" ? `Job ${id ?? ""}` : view === "node" ? `Node ${id ?? ""}` : names[view] ?? "Clusters";
  return [what, cluster, "fjord"].filter(Boolean).join(" · ");
}

function App() {
  const route = useRoute();
  const [authed, setAuthed] = useState(() => loadCredential() !== null);
  // why the login page is back, when the server refused the credential the tab held
  const [why, setWhy] = useState("");
  useEffect(() => setUnauthorizedHandler((reason) => {
    forgetCredential();
    setWhy(reason);
    setAuthed(false);
  }), []);
  const p = route.params;
  const cluster = p.cluster;
  useEffect(() => {
    document.title = authed ? titleOf(route.view, route.id, cluster) : "Sign in · fjord";
  }, [authed, route.view, route.id, cluster]);
  if (!authed) return <Login reason={why} onDone={() => {
    setWhy("");
    setAuthed(true);
  }} />;
  const view = () => {
    switch (route.view) {
      case "nodes": return <Nodes p={p} />;
      case "node": return <NodePage p={p} node={route.id ?? ""} />;
      case "jobs": return <Jobs p={p} />;
      case "job": return <JobPage p={p} id={route.id ?? ""} />;
      case "problems": return <Problems p={p} />;
      case "usage": return <Usage p={p} />;
      case "metrics": return <Metrics p={p} />;
      case "errors": return <Errors p={p} />;
      case "uptime": return <Uptime p={p} />;
      case "chimbuko": return <Chimbuko p={p} />;
      default: return <Clusters />;
    }
  };
  const current = route.view === "node" ? "nodes" : route.view === "job" ? "jobs" : route.view;
  return (
    <>
      <header>
        <a class="brand" href={href("clusters")}>fjord</a>
        <nav>
          {VIEWS.map(([v, label]) => (
            <a href={href(v, v === "clusters" ? {} : { cluster })} aria-current={current === v ? "page" : undefined}>{label}</a>
          ))}
        </nav>
        {cluster && <span class="cluster-name" title="cluster">{cluster}</span>}
        <button type="button" class="forget" onClick={() => {
          forgetCredential();
          setWhy("");
          setAuthed(false);
          navigate(href("clusters"));
        }}>Forget credential</button>
      </header>
      <main>{view()}</main>
      <footer>
        Times in your time zone ({Intl.DateTimeFormat().resolvedOptions().timeZone}); hover for UTC.{" "}
        <a href="/ui/licenses.txt" target="_blank" rel="noopener">Licences</a>
      </footer>
    </>
  );
}

// Every text shown, and every tooltip, with bidirectional controls written out (lib/bidi.ts): names
// come from users, and U+202E would turn them around on screen.
installBidiGuard(options);
render(<App />, document.getElementById("app")!);
