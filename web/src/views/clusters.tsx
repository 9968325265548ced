// Clusters: each cluster's nodes, how many are up, down or silent, the latest sample, partitions.
import { getJson } from "../api";
import { Status, Time, useLoad } from "../components";
import { fmtAgo } from "../lib/format";
import { countStates, mergeAliases, nodeState } from "../lib/nodes";
import { href } from "../router";
import { ClusterRow, getClusters } from "./common";

interface Row extends ClusterRow {
  /** nodes once a Slurm name and a sampled name of one machine are merged */
  machines: number;
  up: number;
  down: number;
  silent: number;
}

async function load(): Promise<Row[]> {
  const list = await getClusters();
  return Promise.all(list.map(async (c) => {
    // one row per machine: c1-10 (Slurm) and c1-10.fox (samples) are one node
    const nodes = c.nodes ? mergeAliases((await getJson(`/api/v1/nodes?cluster=${encodeURIComponent(c.cluster)}`)).nodes as any[]) : [];
    const n = countStates(nodes.map((x: any) => nodeState(x.states, x.last_seen, c.last_seen)));
    return { ...c, ...n, machines: nodes.length };
  }));
}

/** Links to what the cluster has: Sonar's nodes and jobs, line-protocol metrics, Chimbuko runs. */
function dataLinks(c: Row) {
  const links: [string, string][] = [];
  if (c.nodes) links.push(["jobs", "jobs"]);
  if (c.metrics_hosts) links.push(["metrics", `metrics (${c.metrics_hosts} host${c.metrics_hosts === 1 ? "" : "s"})`]);
  if (c.chimbuko) links.push(["chimbuko", "Chimbuko"]);
  return links.map(([v, label], i) => <>{i ? " · " : ""}<a href={href(v, { cluster: c.cluster })} data-view={v}>{label}</a></>);
}

export function Clusters() {
  const s = useLoad("clusters", load);
  const now = Date.now();
  return (
    <>
      <h1>Clusters</h1>
      <Status s={s} />
      {s.data && (
        <div class="scroll"><table class="data" id="clusters">
          <thead>
            <tr><th>cluster</th><th class="num">nodes</th><th class="num">up</th><th class="num">down</th>
              <th class="num" title="no sample for 15 minutes before the cluster's latest">silent</th>
              <th>latest sample</th><th>Slurm</th><th>partitions</th><th>data</th></tr>
          </thead>
          <tbody>
            {s.data.map((c) => (
              <tr data-cluster={c.cluster}>
                <td><a href={href(c.nodes ? "nodes" : c.metrics_hosts ? "metrics" : c.chimbuko ? "chimbuko" : "nodes", { cluster: c.cluster })}>{c.cluster}</a></td>
                <td class="num" data-k="nodes" title={c.machines !== c.nodes ? `${c.nodes} names: a Slurm name and the name its samples carry are one node` : undefined}>{c.machines}</td>
                <td class="num up" data-k="up">{c.up}</td>
                <td class="num down" data-k="down">{c.down}</td>
                <td class="num silent" data-k="silent">{c.silent}</td>
                <td data-k="last_seen">{c.last_seen ? <><Time t={c.last_seen} /> <span class="muted">{fmtAgo(c.last_seen, now)}</span></>
                  : <span class="muted">{c.nodes ? "no sample" : "no Sonar data"}</span>}</td>
                <td>{c.slurm === null ? "" : c.slurm ? "yes" : "no"}</td>
                <td class="partitions">{c.partitions.map((p, i) => (
                  <>{i ? " " : ""}<a href={href("jobs", { cluster: c.cluster, partition: p })}>{p}</a></>
                ))}</td>
                <td class="list" data-k="data">{dataLinks(c)}</td>
              </tr>
            ))}
          </tbody>
        </table></div>
      )}
    </>
  );
}

/** Shown by views that need a cluster when the URL names none. */
export function PickCluster({ view }: { view: string }) {
  const s = useLoad("clusters-pick", getClusters);
  return (
    <>
      <p>Choose a cluster:</p>
      <Status s={s} />
      <ul class="pick">{s.data?.map((c) => <li><a href={href(view, { cluster: c.cluster })}>{c.cluster}</a></li>)}</ul>
    </>
  );
}
