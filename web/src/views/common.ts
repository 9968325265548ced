// What several views share: the cluster list (fetched once per page load) and the window's anchor.
import { getJson } from "../api";
import { windowError, windowOf, Window } from "../lib/timewin";

export interface ClusterRow {
  cluster: string;
  nodes: number;
  last_seen: string | null;
  slurm: boolean | null;
  partitions: string[];
  /** hosts with line-protocol metrics (a cluster may send only those) */
  metrics_hosts?: number;
  /** the cluster has Chimbuko data */
  chimbuko?: boolean;
}

let clusters: Promise<ClusterRow[]> | null = null;
export function getClusters(): Promise<ClusterRow[]> {
  if (!clusters) {
    clusters = getJson<{ clusters: ClusterRow[] }>("/api/v1/clusters").then((j) => j.clusters);
    clusters.catch(() => (clusters = null));
  }
  return clusters;
}

/** The view's window: the URL's from/to, else the day up to the cluster's latest sample (now when
 * it has none). A from or to that is not a time fails with the reason in words. */
export async function viewWindow(p: Record<string, string>, span = 86400): Promise<Window> {
  const nowS = Math.floor(Date.now() / 1000);
  // a window the API would refuse is said so here, the same on every view (not an empty view)
  const bad = windowError(p.from, p.to, nowS);
  if (bad) throw new Error(bad);
  let anchor = nowS;
  if (!p.to && p.cluster) {
    const c = (await getClusters()).find((x) => x.cluster === p.cluster);
    if (c?.last_seen) anchor = Math.ceil(Date.parse(c.last_seen) / 1000) + 60;
  }
  return windowOf(p.from, p.to, anchor, nowS, span);
}
