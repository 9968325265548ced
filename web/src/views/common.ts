// What several views share: the cluster list (fetched once per page load) and the window's anchor.
import { getJson } from "../api";
import { windowOf, Window } from "../lib/timewin";

export interface ClusterRow {
  cluster: string;
  nodes: number;
  last_seen: string | null;
  slurm: boolean | null;
  partitions: string[];
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
 * it has none). */
export async function viewWindow(p: Record<string, string>, span = 86400): Promise<Window> {
  const nowS = Math.floor(Date.now() / 1000);
  let anchor = nowS;
  if (!p.to && p.cluster) {
    const c = (await getClusters()).find((x) => x.cluster === p.cluster);
    if (c?.last_seen) anchor = Math.ceil(Date.parse(c.last_seen) / 1000) + 60;
  }
  return windowOf(p.from, p.to, anchor, nowS, span);
}
