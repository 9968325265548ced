// Chimbuko: the anomaly-detection runs of a cluster and the ranks and functions with most anomalies.
import { getJson } from "../api";
import { Section, Status, Time, useLoad } from "../components";
import { fmtNum } from "../lib/format";
import { queryString } from "../lib/params";
import { href } from "../router";
import { PickCluster } from "./clusters";

async function load(p: Record<string, string>) {
  const c = encodeURIComponent(p.cluster);
  const runs = await getJson(`/api/v1/chimbuko/runs?cluster=${c}`);
  if (runs.runs.length === 0) return { runs: [], top: null };
  const top = await getJson(`/api/v1/chimbuko/top${queryString({ cluster: p.cluster, run: p.run, from: p.from ?? "0", to: p.to ?? "now", limit: 20 })}`);
  return { runs: runs.runs, top };
}

export function Chimbuko({ p }: { p: Record<string, string> }) {
  if (!p.cluster) return <><h1>Chimbuko</h1><PickCluster view="chimbuko" /></>;
  const s = useLoad(`chimbuko${queryString(p)}`, () => load(p));
  const d = s.data;
  return (
    <>
      <h1>Chimbuko anomalies of {p.cluster}</h1>
      <Status s={s} />
      {d && d.runs.length === 0 && <p class="muted" id="no-chimbuko">This cluster has no Chimbuko data.</p>}
      {d && d.runs.length > 0 && (
        <>
          <Section title="Runs">
            <div class="scroll"><table class="data" id="chimbuko-runs"><thead><tr><th>run</th><th class="num">packets</th><th>first</th><th>last</th>
              <th class="num">anomalies</th><th class="num">normal executions</th><th class="num">ranks</th></tr></thead>
              <tbody>{d.runs.map((r: any) => (
                <tr data-run={r.run}><td><a href={href("chimbuko", { cluster: p.cluster, run: r.run })} title="only this run's ranks and functions">{r.run}</a></td><td class="num" data-k="packets">{r.packets}</td><td><Time t={r.first} /></td><td><Time t={r.last} /></td>
                  <td class="num" data-k="anomalies">{r.anomalies}</td><td class="num">{r.normalexecs}</td><td class="num">{r.ranks}</td></tr>
              ))}</tbody></table></div>
          </Section>
          <Section title="Ranks with most anomalies">
            <div class="scroll"><table class="data" id="chimbuko-ranks"><thead><tr><th>run</th><th class="num">app</th><th class="num">rank</th><th class="num">anomalies</th>
              <th class="num">steps</th><th class="num">highest score</th><th>first</th><th>last</th></tr></thead>
              <tbody>{d.top.ranks.map((r: any) => (
                <tr><td>{r.run}</td><td class="num">{r.app}</td><td class="num">{r.rank}</td><td class="num" data-k="anomalies">{r.anomalies}</td>
                  <td class="num">{r.steps}</td><td class="num">{fmtNum(r.score_max, 3)}</td><td><Time t={r.first} /></td><td><Time t={r.last} /></td></tr>
              ))}</tbody></table></div>
          </Section>
          <Section title="Functions with most anomalies">
            <div class="scroll"><table class="data" id="chimbuko-functions"><thead><tr><th>run</th><th class="num">fid</th><th>function</th><th class="num">anomalies</th>
              <th class="num">ranks</th><th class="num">highest score</th><th class="num">severity</th></tr></thead>
              <tbody>{d.top.functions.map((f: any) => (
                <tr><td>{f.run}</td><td class="num">{f.fid}</td><td class="mono">{f.name}</td><td class="num" data-k="anomalies">{f.anomalies}</td>
                  <td class="num">{f.ranks}</td><td class="num">{fmtNum(f.score_max, 3)}</td><td class="num">{f.severity_total}</td></tr>
              ))}</tbody></table></div>
          </Section>
        </>
      )}
    </>
  );
}
