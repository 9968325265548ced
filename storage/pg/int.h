/* storage/pg/int.h — what the files of the PostgreSQL backend share: the handle, the prepared statements,
 * the error mapping, column arrays for batched writes and the name cache. Not a public header:
 * only storage/pg*.c include it. */
#ifndef FJ_PG_INT_H
#define FJ_PG_INT_H

#include "buf.h"
#include "storage/core/driver.h"
#include "storage/core/intern.h"
#include "storage/core/jobcpu.h"
#include "storage/core/store.h"
#include "storage/core/store_chimbuko.h"
#include "storage/core/store_measure.h"
#include "storage/core/store_query.h"
#include "storage/core/store_ts.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

/* --- name cache: (namespace, string) -> id ----------------------------------------------------- */

/* The handle's name cache is an fj_intern (storage/core/intern.h): fj_intern_get/put/clear. */
typedef fj_intern fj_pg_map;

#define FJ_PG_NS_CLUSTER (-1)
#define FJ_PG_NS_STRING 0 /* ns > 0: the nodes of cluster ns */

/* --- prepared statements ----------------------------------------------------------------------- */

/* Every statement fjord sends with data in it, prepared once per connection on first use. The
 * SQL of the long batched ones is built in storage/pg/write.c (sql NULL here). Parameters are text; the
 * SQL casts them. */
#define FJ_PG_STMTS(X)                                                                                   \
    X(CLUSTER_INS, "INSERT INTO clusters(name) SELECT v FROM unnest($1::text[]) v ORDER BY v "           \
                   "ON CONFLICT DO NOTHING")                                                             \
    X(CLUSTER_GET, "SELECT c.id, c.name FROM clusters c JOIN unnest($1::text[]) v ON c.name = v")        \
    X(NODE_INS, "INSERT INTO nodes(cluster_id,name) SELECT c, n FROM unnest($1::bigint[],$2::text[]) "   \
                "u(c,n) ORDER BY c, n ON CONFLICT DO NOTHING")                                           \
    X(NODE_GET, "SELECT x.id, x.cluster_id, x.name FROM nodes x JOIN unnest($1::bigint[],$2::text[]) "   \
                "u(c,n) ON x.cluster_id = u.c AND x.name = u.n")                                         \
    X(STRING_INS, "INSERT INTO strings(s) SELECT v FROM unnest($1::text[]) v ORDER BY v "                \
                  "ON CONFLICT DO NOTHING")                                                              \
    X(STRING_GET, "SELECT x.id, x.s FROM strings x JOIN unnest($1::text[]) v ON x.s = v")               \
    X(ENSURE_WEEK, "SELECT fj_ensure_partitions($1::bigint)")                                            \
    /* retention (storage/pg/weeks.c, storage/core/retention.h) */                                    \
    X(DROP_BY, "SELECT fj_drop_partitions_by($1::bigint, $2::text[], $3::bigint)")                       \
    X(KEEP_USAGE, "WITH c AS (SELECT h.rjob_id, h.node_id, j.job, j.epoch, j.pid, j.ppid, j.cmd_id, "   \
                  "(SELECT max(js.time) FROM job_samples js WHERE js.rjob_id = h.rjob_id AND "          \
                  "js.node_id = h.node_id AND js.time <= j.last_seen) AS last FROM job_hosts h JOIN "   \
                  "jobs j ON j.id = h.rjob_id WHERE h.usage_kept = 0 AND j.first_seen < $1::bigint), "  \
                  "u AS (SELECT c.rjob_id, c.node_id, p.cpu, p.rd, p.wr FROM c LEFT JOIN LATERAL "      \
                  "(SELECT sum(p.cpu_time) AS cpu, sum(p.data_read_kb) AS rd, sum(p.data_written_kb) "  \
                  "AS wr FROM sample_procs p WHERE p.node_id = c.node_id AND p.time = c.last AND "      \
                  "p.job = c.job AND p.epoch = c.epoch AND (c.job <> 0 OR (p.pid = c.pid AND "          \
                  "(c.cmd_id = 0 OR (p.ppid = c.ppid AND p.cmd_id = c.cmd_id))))) p ON true "           \
                  "WHERE c.last IS NULL OR c.last < $1::bigint) UPDATE job_hosts h SET usage_kept = 1, " \
                  "cpu_time_s = u.cpu, read_kb = u.rd, written_kb = u.wr FROM u WHERE h.rjob_id = "     \
                  "u.rjob_id AND h.node_id = u.node_id")                                                 \
    X(DEL_ERRORS, "DELETE FROM errors WHERE time < $1::bigint")                                          \
    X(DEL_SLURM, "WITH g AS (DELETE FROM slurm_jobs_current WHERE time < $1::bigint RETURNING "         \
                 "cluster_id, job_id, job_step), r AS (DELETE FROM slurm_jobs s USING g WHERE "          \
                 "s.cluster_id = g.cluster_id AND s.job_id = g.job_id AND s.job_step = g.job_step) "     \
                 "DELETE FROM slurm_job_nodes n USING g WHERE n.cluster_id = g.cluster_id AND "          \
                 "n.job_id = g.job_id AND n.job_step = g.job_step")                                      \
    X(MARK, "INSERT INTO retention_marks(kind, expired_before) VALUES ($1, $2::bigint) ON CONFLICT "     \
            "(kind) DO UPDATE SET expired_before = greatest(retention_marks.expired_before, "            \
            "excluded.expired_before)")                                                                  \
    X(MARKS, "SELECT kind, expired_before FROM retention_marks")                                         \
    X(LOCK_NODES, "SELECT id FROM nodes WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE")            \
    X(ENV_INS, NULL)                                                                                     \
    X(ERROR_INS, NULL)                                                                                   \
    X(NOTE_INS, NULL)                                                                                    \
    X(SAMPLE_INS, NULL)                                                                                  \
    X(SGPU_INS, NULL)                                                                                    \
    X(SDISK_INS, NULL)                                                                                   \
    /* a re-sent node-sample's stored sample jobs, read under the lock of its samples row */     \
    X(SJOB_LOCK, "SELECT 1 FROM samples x JOIN unnest($1::bigint[],$2::bigint[]) u(n,t) ON x.node_id = " \
                 "u.n AND x.time = u.t ORDER BY x.node_id, x.time FOR UPDATE OF x")                      \
    X(SJOB_STORED, "SELECT j.node_id, j.time, j.job, j.epoch FROM unnest($1::bigint[],$2::bigint[]) "     \
                   "k(n,t) CROSS JOIN LATERAL (SELECT * FROM sample_jobs WHERE node_id = k.n AND time = " \
                   "k.t OFFSET 0) j")                                                                    \
    X(PROC_INS, NULL)                                                                                    \
    X(PGPU_INS, NULL)                                                                                    \
    X(RJ_SLURM_PLACE, NULL)                                                                              \
    X(RJ_SLURM_LOCK, NULL)                                                                               \
    X(RJ_FIND, NULL)                                                                                     \
    X(RJ_IDS, "SELECT nextval(pg_get_serial_sequence('jobs','id')) FROM generate_series(1, $1::int)")    \
    X(RJ_INS, NULL)                                                                                      \
    X(RJ_UPD, NULL)                                                                                      \
    X(RJ_MOVE_JS, "INSERT INTO job_samples(rjob_id,node_id,time,nproc,cpu_m,mem_kb,gpu_m,gpumem_kb,"     \
                  "cpu_win_m) SELECT m.t, x.node_id, x.time, x.nproc, x.cpu_m, x.mem_kb, x.gpu_m, "      \
                  "x.gpumem_kb, x.cpu_win_m "                                                            \
                  "FROM job_samples x JOIN unnest($1::bigint[],$2::bigint[]) m(f,t) ON x.rjob_id = m.f " \
                  "ORDER BY 1, 2, 3 ON CONFLICT DO NOTHING")                                             \
    X(RJ_DEL_JS, "DELETE FROM job_samples WHERE rjob_id = ANY($1::bigint[])")                            \
    X(RJ_MOVE_JH, "INSERT INTO job_hosts(rjob_id,node_id) SELECT m.t, x.node_id FROM job_hosts x "       \
                  "JOIN unnest($1::bigint[],$2::bigint[]) m(f,t) ON x.rjob_id = m.f ORDER BY 1, 2 "      \
                  "ON CONFLICT DO NOTHING")                                                              \
    X(RJ_DEL_JH, "DELETE FROM job_hosts WHERE rjob_id = ANY($1::bigint[])")                              \
    X(RJ_MOVE_JC, "INSERT INTO job_cmds(rjob_id,cmd_id) SELECT m.t, x.cmd_id FROM job_cmds x "           \
                  "JOIN unnest($1::bigint[],$2::bigint[]) m(f,t) ON x.rjob_id = m.f ORDER BY 1, 2 "      \
                  "ON CONFLICT DO NOTHING")                                                              \
    X(RJ_DEL_JC, "DELETE FROM job_cmds WHERE rjob_id = ANY($1::bigint[])")                               \
    X(RJ_DEL, "DELETE FROM jobs WHERE id = ANY($1::bigint[])")                                           \
    /* The job CPU upkeep (storage/core/jobcpu.h, storage/pg/jobcpu.c). */                                          \
    X(JCPU_ROWS, "SELECT time, cpu_m, coalesce(cpu_win_m, -1) FROM job_samples WHERE rjob_id = $1 AND "  \
                 "node_id = $2 AND time >= $3 AND time <= $4 ORDER BY time")                             \
    X(JCPU_BEFORE, "SELECT time FROM job_samples WHERE rjob_id = $1 AND node_id = $2 AND time <= $3 "    \
                   "ORDER BY time DESC LIMIT 1")                                                         \
    X(JCPU_AFTER, "SELECT time FROM job_samples WHERE rjob_id = $1 AND node_id = $2 AND time > $3 "      \
                  "ORDER BY time LIMIT 1")                                                               \
    X(JCPU_PROCS, "SELECT pid, ppid, cmd_id, coalesce(cpu_time, 0), coalesce(cpu_avg_m, 0), "            \
                  "coalesce(cpu_util_m, 0), coalesce(num_threads, 0), coalesce(rolledup, 0) "            \
                  "FROM sample_procs WHERE node_id = $1 AND time = $2 AND job = $3 AND epoch = $4")      \
    X(JCPU_PRODUCER, "SELECT producer, version FROM envelopes WHERE cluster_id = $1 AND node_id = $2 AND "        \
                     "kind = 'sample' AND time = $3")                                                    \
    X(JCPU_SET, "UPDATE job_samples SET cpu_m = $4, cpu_win_m = nullif($5::bigint, -1) WHERE "           \
                "rjob_id = $1 AND node_id = $2 AND time = $3")                                           \
    X(JCPU_JOB, "SELECT job, epoch, pid, ppid, cmd_id, cluster_id, cpu_sum_m, n_samples, "               \
                "coalesce(cpu_win_peak_m, -1) FROM jobs WHERE id = $1")                                  \
    X(JCPU_ALL, "SELECT coalesce(sum(cpu_m), 0), coalesce(max(cpu_win_m), -1) FROM job_samples "         \
                "WHERE rjob_id = $1")                                                                    \
    X(JCPU_JOB_SET, "UPDATE jobs SET cpu_sum_m = $2, cpu_win_peak_m = nullif($3::bigint, -1), "          \
                    "cpu_peak_m = $4 WHERE id = $1")                                                     \
    X(JCPU_TODO, "SELECT rjob_id, node_id FROM job_cpu_todo ORDER BY rjob_id, node_id")                  \
    /* The same reads for a whole group at once, and its writes batched (storage/pg/jobcpu.c). */      \
    X(JCPU_JOBS_MANY, "SELECT id, job, epoch, pid, ppid, cmd_id, cluster_id, cpu_sum_m, n_samples, "     \
                      "coalesce(cpu_win_peak_m, -1) FROM jobs WHERE id = ANY($1::bigint[]) ORDER BY id") \
    /* every part lateral, OFFSET 0 keeping the last from being flattened into a join: an index \
     * lookup per key whatever the planner thinks of unnest and of a partition whose statistics \
     * lag its growth (as a join it became a scan of the whole table) */                        \
    X(JCPU_ROWS_MANY, "SELECT k.o, f.t, n.t, j.time, j.cpu_m, coalesce(j.cpu_win_m, -1) FROM "          \
                      "unnest($1::bigint[],$2::bigint[],$3::bigint[],$4::bigint[]) WITH ORDINALITY "     \
                      "k(r,n,lo,hi,o) LEFT JOIN LATERAL (SELECT time t FROM job_samples WHERE rjob_id " \
                      "= k.r AND node_id = k.n AND time <= k.lo - 120 ORDER BY time DESC LIMIT 1) f ON " \
                      "true LEFT JOIN LATERAL (SELECT time t FROM job_samples WHERE rjob_id = k.r AND "  \
                      "node_id = k.n AND time > k.hi ORDER BY time LIMIT 1) n ON true CROSS JOIN "     \
                      "LATERAL (SELECT time, cpu_m, cpu_win_m FROM job_samples WHERE rjob_id = k.r AND " \
                      "node_id = k.n AND time >= coalesce(f.t, -9223372036854775807) AND time <= "       \
                      "coalesce(n.t + 120, 9223372036854775807) OFFSET 0) j ORDER BY k.o, j.time")       \
    X(JCPU_PROCS_MANY, "SELECT k.o, p.job, p.epoch, p.pid, p.ppid, p.cmd_id, coalesce(p.cpu_time, 0), "  \
                       "coalesce(p.cpu_avg_m, 0), coalesce(p.cpu_util_m, 0), coalesce(p.num_threads, 0), " \
                       "coalesce(p.rolledup, 0) FROM unnest($1::bigint[],$2::bigint[]) WITH ORDINALITY "  \
                       "k(n,t,o) CROSS JOIN LATERAL (SELECT * FROM sample_procs x WHERE x.node_id = k.n " \
                       "AND x.time = k.t OFFSET 0) p ORDER BY k.o, p.job, p.epoch")                       \
    X(JCPU_PRODUCERS, "SELECT k.o, e.version FROM unnest($1::bigint[],$2::bigint[],$3::bigint[]) WITH ORDINALITY "  \
                      "k(c,n,t,o) JOIN envelopes e ON e.cluster_id = k.c AND e.node_id = k.n AND e.kind " \
                      "= 'sample' AND e.time = k.t WHERE e.producer = 'fjord-push'")                     \
    X(JCPU_SET_MANY, "UPDATE job_samples j SET cpu_m = u.m, cpu_win_m = nullif(u.w, -1) FROM "           \
                     "unnest($1::bigint[],$2::bigint[],$3::bigint[],$4::bigint[],$5::bigint[]) "          \
                     "u(r,n,t,m,w) WHERE j.rjob_id = u.r AND j.node_id = u.n AND j.time = u.t")           \
    X(JCPU_JOB_SET_MANY, "UPDATE jobs j SET cpu_sum_m = u.s, cpu_win_peak_m = nullif(u.w, -1), "         \
                         "cpu_peak_m = u.p FROM unnest($1::bigint[],$2::bigint[],$3::bigint[],"           \
                         "$4::bigint[]) u(id,s,w,p) WHERE j.id = u.id")                                   \
    X(JCPU_TODO_DEL, "DELETE FROM job_cpu_todo")                                                         \
    /* the node-hours whose load roll-ups a group's new samples change: their own, and the next     \
     * sample's where it has counters (its CPU interval starts at the new one) (storage/pg/rollup.c) */ \
    X(ROLLUP_TODO, "WITH f AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::boolean[]) AS "      \
                   "f(node_id, time, cpus)) INSERT INTO load_hourly_todo (node_id, hour) SELECT node_id, h " \
                   "FROM (SELECT node_id, time - (time % 3600 + 3600) % 3600 AS h FROM f UNION SELECT "  \
                   "f.node_id, n.time - (n.time % 3600 + 3600) % 3600 FROM f CROSS JOIN LATERAL (SELECT " \
                   "s.time FROM samples s WHERE s.node_id = f.node_id AND s.time > f.time AND s.cpus IS " \
                   "NOT NULL ORDER BY s.time LIMIT 1) n WHERE f.cpus) u ON CONFLICT DO NOTHING")          \
    X(RJS_INS, NULL)                                                                               \
    X(RJH_INS, NULL)                                                                               \
    X(RJC_INS, NULL)                                                                               \
    X(BLOB_FIND, "SELECT id, codec, data FROM blobs WHERE hash = $1::bigint AND size = $2::bigint "      \
                 "ORDER BY id")                                                                          \
    X(BLOB_INS, "INSERT INTO blobs(hash,size,codec,data) VALUES($1::bigint,$2::bigint,$3::text,"         \
                "$4::bytea) RETURNING id")                                                               \
    X(SYSINFO_INS, "INSERT INTO sysinfo(node_id,time,os_name,os_release,architecture,cpu_model,"         \
                   "numa_nodes,sockets,cores_per_socket,threads_per_core,memory_kb,n_gpus,"              \
                   "topo_svg_blob,topo_text_blob,distances) VALUES($1::bigint,$2::bigint,$3::text,"      \
                   "$4::text,$5::text,$6::text,$7::bigint,$8::bigint,$9::bigint,$10::bigint,"            \
                   "$11::bigint,$12::bigint,$13::bigint,$14::bigint,$15::text) ON CONFLICT DO NOTHING "  \
                   "RETURNING 1")                                                                        \
    X(SYSGPU_INS, "INSERT INTO sysinfo_gpus(node_id,time,idx,uuid,address,manufacturer,model,"           \
                  "architecture,driver,firmware,memory_kb,power_limit,max_power_limit,min_power_limit,"  \
                  "max_ce_clock,max_memory_clock) VALUES($1::bigint,$2::bigint,$3::bigint,$4::text,"     \
                  "$5::text,$6::text,$7::text,$8::text,$9::text,$10::text,$11::bigint,$12::bigint,"      \
                  "$13::bigint,$14::bigint,$15::bigint,$16::bigint) ON CONFLICT DO NOTHING RETURNING 1") \
    X(SLURM_INS, NULL)                                                                                   \
    X(SLURM_CUR_PLACE, "INSERT INTO slurm_jobs_current(cluster_id,job_id,job_step,time) "                \
                       "SELECT c, j, s, 0 FROM unnest($1::bigint[],$2::bigint[],$3::text[]) u(c,j,s) "   \
                       "ORDER BY c, j, s ON CONFLICT DO NOTHING")                                        \
    X(SLURM_CUR_LOCK, "SELECT 1 FROM slurm_jobs_current x JOIN unnest($1::bigint[],$2::bigint[],"        \
                      "$3::text[]) u(c,j,s) ON x.cluster_id = u.c AND x.job_id = u.j AND "               \
                      "x.job_step = u.s ORDER BY x.cluster_id, x.job_id, x.job_step FOR UPDATE OF x")    \
    X(SLURM_CUR_RECOMPUTE, NULL)                                                                         \
    X(SLURM_NODE_INS, NULL)                                                                        \
    X(CINFO_INS, NULL)                                                                                   \
    X(PART_INS, NULL)                                                                                    \
    X(PNODE_INS, NULL)                                                                                   \
    X(NSTATE_INS, NULL)                                                                                  \
    X(MS_LATEST, "SELECT time, hash, snapshot FROM measurement_snapshots WHERE cluster_id = $1::bigint " \
                 "AND node_id = $2::bigint ORDER BY time DESC LIMIT 1")                                  \
    X(MS_SNAP_INS, "INSERT INTO measurement_snapshots(cluster_id,node_id,time,hash,n_measurements,"      \
                   "n_subtypes,snapshot) VALUES($1::bigint,$2::bigint,$3::bigint,$4::bigint,$5::bigint," \
                   "$6::bigint,$7::text) ON CONFLICT DO NOTHING RETURNING 1")                            \
    X(MS_SUB_INS, "INSERT INTO measurements(cluster_id,node_id,time,type,instance,subtype,data) "        \
                  "VALUES($1::bigint,$2::bigint,$3::bigint,$4::text,$5::bigint,$6::text,$7::text) "      \
                  "ON CONFLICT DO NOTHING RETURNING 1")                                                  \
    X(CB_PACKET_INS, NULL)                                                                               \
    X(CB_RANK_INS, NULL)                                                                                 \
    X(CB_STEP_INS, NULL)                                                                                 \
    X(CB_FUNC_INS, NULL)                                                                                 \
    X(CB_COUNTER_INS, NULL)                                                                              \
    X(CB_METRICS_INS, NULL)                                                                              \
    X(CB_EVENT_INS, NULL)                                                                                \
    X(CB_META_INS, NULL)                                                                                 \
    X(CB_PROFILE_INS, NULL)                                                                              \
    X(CB_FINAL_COUNTER_INS, NULL)                                                                        \
    X(MS_ENV_INS, "INSERT INTO envelopes(cluster_id,node_id,kind,time,producer,version,format,"          \
                  "unknown_fields) VALUES($1::bigint,$2::bigint,$3::text,$4::bigint,$5::text,$6::text,"  \
                  "$7::bigint,$8::bigint) ON CONFLICT DO NOTHING")                                       \
    X(TS_INST_ADD, "INSERT INTO ts_instances(name) SELECT $1::text WHERE NOT EXISTS (SELECT 1 FROM "     \
                   "ts_instances WHERE name = $1::text) ON CONFLICT DO NOTHING")                         \
    X(TS_INST_GET, "SELECT i.id, i.durable_lsn, i.next_lsn, i.chunk_seq, (SELECT coalesce(max(lsn), 0) " \
                   "FROM request_log WHERE instance_id = i.id) FROM ts_instances i WHERE i.name = "      \
                   "$1::text")                                                                           \
    X(TS_INST_LOCK, "SELECT pg_try_advisory_lock(1718252659, $1::integer), pg_backend_pid()")            \
    X(TS_PEERS, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = "    \
                "(SELECT oid FROM pg_database WHERE datname = current_database()) AND classid = "        \
                "1718252659::oid AND objsubid = 2 AND objid <> $1::integer::oid")                        \
    X(TS_INST_PUT, "UPDATE ts_instances SET durable_lsn = $2::bigint, next_lsn = $3::bigint, chunk_seq = " \
                   "greatest(chunk_seq, $4::bigint) WHERE id = $1::integer")                             \
    X(TS_SERIES_BY_ID, "SELECT id, cluster, host, metric, type, type_id, stype, stype_id, ftype FROM ts_series " \
                       "WHERE id = $1")                                                                  \
    X(TS_SERIES_ADD, "INSERT INTO ts_series(cluster,host,metric,type,type_id,stype,stype_id,ftype) SELECT " \
                     "u.* FROM "                                                                         \
                     "unnest($1::text[],$2::text[],$3::text[],$4::text[],$5::text[],$6::text[],$7::text[]," \
                     "$8::smallint[]) u(c,h,m,t,ti,s,si,f) WHERE NOT EXISTS (SELECT 1 FROM ts_series x WHERE x.cluster = u.c " \
                     "AND x.host = u.h AND x.metric = u.m AND x.type = u.t AND x.type_id = u.ti AND "    \
                     "x.stype = u.s AND x.stype_id = u.si) ORDER BY 1, 2, 3, 4, 5, 6, 7 ON CONFLICT DO " \
                     "NOTHING")                                                                          \
    X(TS_SERIES_GET, "SELECT x.id, x.cluster, x.host, x.metric, x.type, x.type_id, x.stype, x.stype_id, " \
                     "x.ftype FROM ts_series x JOIN "                                                    \
                     "unnest($1::text[],$2::text[],$3::text[],$4::text[],$5::text[],$6::text[],$7::text[]," \
                     "$8::smallint[]) u(c,h,m,t,ti,s,si,f) ON x.cluster = u.c AND x.host = u.h AND x.metric = u.m AND x.type " \
                     "= u.t AND x.type_id = u.ti AND x.stype = u.s AND x.stype_id = u.si")               \
    X(TS_SERIES_LIST, "SELECT id, cluster, host, metric, type, type_id, stype, stype_id, ftype FROM ts_series " \
                      "WHERE cluster = $1::text AND ($2::text = '' OR host = $2::text) AND ($3::text = '' " \
                      "OR metric = $3::text) ORDER BY host COLLATE \"C\", metric COLLATE \"C\", type "   \
                      "COLLATE \"C\", type_id COLLATE \"C\", stype COLLATE \"C\", stype_id COLLATE \"C\"") \
    X(TS_CHUNK_INS, "INSERT INTO ts_chunk(series_id,t_last,seq,t_first,count,blob) SELECT * FROM "       \
                    "unnest($1::integer[],$2::bigint[],$3::bigint[],$4::bigint[],$5::integer[],$6::bytea[]) " \
                    "ON CONFLICT DO NOTHING")                                                            \
    X(TS_CHUNKS, "SELECT u.o, c.count, c.t_first, c.t_last, c.seq, c.blob FROM unnest($1::integer[], "  \
                 "$4::bigint[], $5::bigint[]) WITH ORDINALITY u(id, lo, hi, o) CROSS JOIN LATERAL "       \
                 "(SELECT count, t_first, t_last, seq, blob FROM ts_chunk WHERE series_id = u.id AND "    \
                 "t_last >= $2::bigint AND t_first <= $3::bigint AND seq NOT BETWEEN u.lo AND u.hi "      \
                 "OFFSET 0) c ORDER BY u.o")                                                              \
    X(TS_CHUNK_DEL, "DELETE FROM ts_chunk c USING unnest($1::integer[],$2::bigint[],$3::bigint[],"       \
                    "$4::bigint[],$5::bigint[]) u(s,l,h,q,r) WHERE c.series_id = u.s AND c.t_last "      \
                    "BETWEEN u.l AND u.h AND c.seq BETWEEN u.q AND u.r")                                 \
    X(TS_RETENTION, "DELETE FROM ts_chunk WHERE t_last < $1::bigint")                                    \
    X(TS_STRINGS_RETENTION, "DELETE FROM ts_strings WHERE t < $1::bigint")                               \
    X(TS_STRING_CHUNKS_RETENTION, "DELETE FROM ts_string_chunk WHERE t_last < $1::bigint")              \
    /* packing string points (storage/ts/strchunk.h): one server at a time, the rows locked */          \
    X(TS_PACK_LOCK, "SELECT pg_try_advisory_xact_lock(1718252660)")                                      \
    X(TS_PACK_SERIES, "SELECT series_id FROM ts_strings WHERE t < $1::bigint GROUP BY series_id HAVING " \
                      "count(*) >= 2 LIMIT 256")                                                         \
    X(TS_PACK_ROWS, "SELECT t, v FROM ts_strings WHERE series_id = $1::integer AND t < $2::bigint ORDER " \
                    "BY t FOR UPDATE")                                                                   \
    X(TS_PACK_CHUNKS, "SELECT blob FROM ts_string_chunk WHERE series_id = $1::integer AND t_last >= "    \
                      "$2::bigint AND t_first <= $3::bigint ORDER BY t_first FOR UPDATE")               \
    X(TS_PACK_DEL_CHUNKS, "DELETE FROM ts_string_chunk WHERE series_id = $1::integer AND t_last >= "     \
                          "$2::bigint AND t_first <= $3::bigint")                                        \
    X(TS_PACK_DEL_ROWS, "DELETE FROM ts_strings WHERE series_id = $1::integer AND t = ANY($2::bigint[])") \
    X(TS_PACK_INS, "INSERT INTO ts_string_chunk(series_id,t_last,t_first,count,blob) VALUES($1::integer," \
                   "$2::bigint,$3::bigint,$4::integer,$5::bytea)")                                       \
    /* string points (docs/metrics.md, "Field types"): the last of a (series, time) in the group */    \
    X(TS_STRING_INS, "INSERT INTO ts_strings(series_id,t,v) SELECT DISTINCT ON (u.s, u.t) u.s, u.t, u.v FROM " \
                     "unnest($1::integer[],$2::bigint[],$3::bytea[]) WITH ORDINALITY u(s,t,v,o) ORDER BY " \
                     "u.s, u.t, u.o DESC ON CONFLICT (series_id, t) DO UPDATE SET v = excluded.v")       \
    X(TS_LOG_INS, "INSERT INTO "                                                                         \
                  "request_log(instance_id,lsn,received,cluster,unit_ns,max_future_ns,size,body) SELECT " \
                  "$1::integer, u.* FROM "                                                               \
                  "unnest($2::bigint[],$3::bigint[],$4::text[],$5::bigint[],$6::bigint[],$7::bigint[],$8::bytea[]) " \
                  "u")                                                                                   \
    X(TS_LOG_READ, "SELECT lsn, received, cluster, unit_ns, max_future_ns, size, body FROM request_log " \
                   "WHERE instance_id = $1::integer AND lsn >= $2::bigint ORDER BY lsn LIMIT 64")        \
    X(TS_LOG_TRIM, "DELETE FROM request_log WHERE instance_id = $1::integer AND lsn < $2::bigint AND "   \
                   "received < $3::bigint")                                                              \
    X(CC_MSG_INS, "WITH u AS (SELECT * FROM "                                                            \
                  "unnest($1::bigint[],$2::bigint[],$3::text[],$4::text[],$5::text[],$6::bigint[],$7::text[],$8::text[]) " \
                  "WITH ORDINALITY u(c,t,k,n,h,x,g,p,o)), ins AS (INSERT INTO "                          \
                  "cc_messages(cluster_id,time,kind,name,host,hash,tags,payload) SELECT c, t, k, n, h, " \
                  "x, g, p FROM u ORDER BY c, t, k, n, h, x ON CONFLICT DO NOTHING RETURNING "           \
                  "cluster_id, time, kind, name, host, hash) SELECT min(u.o) FROM ins JOIN u ON u.c = "  \
                  "ins.cluster_id AND u.t = ins.time AND u.k = ins.kind AND u.n = ins.name AND u.h = "   \
                  "ins.host AND u.x = ins.hash GROUP BY ins.cluster_id, ins.time, ins.kind, ins.name, "  \
                  "ins.host, ins.hash")                                                                  \
    X(CC_JOB_DUP, "SELECT id FROM cc_jobs WHERE cluster_id = $1::bigint AND job_id = $2::bigint AND "    \
                  "start_time > $3::bigint - 86400 LIMIT 1")                                             \
    X(CC_JOB_INS, "INSERT INTO "                                                                         \
                  "cc_jobs(cluster_id,job_id,start_time,state,\"user\",project,partition,subcluster,num_nodes,num_hwthreads,num_acc,hosts,payload) " \
                  "VALUES($1::bigint,$2::bigint,$3::bigint,'running',$4::text,$5::text,$6::text,$7::text,$8::bigint,$9::bigint,$10::bigint,$11::text,$12::text) " \
                  "ON CONFLICT DO NOTHING RETURNING id")                                                 \
    X(CC_JOB_FIND, "SELECT id, start_time, state FROM cc_jobs WHERE cluster_id = $1::bigint AND job_id = " \
                   "$2::bigint AND ($3::bigint = 0 OR start_time = $3::bigint) ORDER BY start_time DESC " \
                   "LIMIT 1")                                                                            \
    X(CC_JOB_STOP, "UPDATE cc_jobs SET stop_time = $2::bigint, state = $3::text WHERE id = $1::bigint "  \
                   "AND state = 'running' RETURNING 1")                                                  \

typedef enum fj_pg_stmt_id {
#define FJ_PG_ENUM(name, sql) FJ_PG_##name,
    FJ_PG_STMTS(FJ_PG_ENUM)
#undef FJ_PG_ENUM
    FJ_PG__COUNT
} fj_pg_stmt_id;

/* The SQL of the statements whose text is NULL in FJ_PG_STMTS (storage/pg/write.c, storage/pg/chimbuko.c). */
const char *fj_pg_built_sql(fj_pg_stmt_id id);
const char *fj_pg_chimbuko_sql(fj_pg_stmt_id id); /* storage/pg/chimbuko.c: the CB_* statements */

/* --- column arrays for batched writes ---------------------------------------------------------- */

/* One column of a batch, as the text of a PostgreSQL array literal ("{1,NULL,\"x\"}"), or (COPY
 * mode) all rows of the batch in COPY's text format in the first column's buffer. */
typedef struct fj_pg_arr {
    fj_buf b;
    size_t n; /* elements */
} fj_pg_arr;

#define FJ_PG_MAXCOLS 48

/* The rows of one table for one statement: ncols arrays, and for each row the index of the
 * envelope it belongs to (for the inserted/duplicate counts). Appends after an allocation
 * failure do nothing; st keeps the failure. */
typedef struct fj_pg_cols {
    fj_pg_arr c[FJ_PG_MAXCOLS];
    int ncols;
    bool copy;     /* rows in COPY text format (c[0].b), each ended by its ordinal when ord */
    bool ord;
    int in_row;    /* COPY mode: values of the current row so far */
    size_t nrows;
    size_t *env;
    size_t env_cap;
    fj_status st;
} fj_pg_cols;

void fj_pg_cols_init(fj_pg_cols *t, int ncols);
void fj_pg_cols_reset(fj_pg_cols *t); /* empties, keeping memory; back to array mode */
/* Switches an empty batch to COPY mode (ord: end every row with its 1-based ordinal). */
void fj_pg_cols_copy(fj_pg_cols *t, bool ord);
void fj_pg_cols_free(fj_pg_cols *t);
void fj_pg_null(fj_pg_cols *t, int col);
void fj_pg_i64(fj_pg_cols *t, int col, int64_t v);
void fj_pg_u64(fj_pg_cols *t, int col, uint64_t v); /* saturates at INT64_MAX */
void fj_pg_f64(fj_pg_cols *t, int col, double v);
void fj_pg_text(fj_pg_cols *t, int col, const char *s); /* NULL -> SQL NULL */
void fj_pg_textn(fj_pg_cols *t, int col, const char *s, size_t n);
void fj_pg_bytea(fj_pg_cols *t, int col, const unsigned char *p, size_t n);
/* Ends a row that belongs to envelope env. */
void fj_pg_row(fj_pg_cols *t, size_t env);
/* Closes the arrays and points vals[0..ncols) at them. FJ_ENOMEM after a failed append. */
fj_status fj_pg_cols_finish(fj_pg_cols *t, const char **vals);

/* The SQL type of a column type letter of the batched writers' column lists: t text, f float8,
 * y bytea, i integer, o boolean, anything else (b) bigint. */
const char *fj_pg_type_name(char t);

/* --- the handle -------------------------------------------------------------------------------- */

struct fj_store {
    const fj_driver *driver; /* first: fj_driver_of (storage/core/driver.h) finds it through it */
    PGconn *conn;
    char *url;               /* as given (passwords included): for reconnecting */
    char *shown;             /* the URL without its password, for messages */
    fj_store_mode mode;
    bool migrating;
    int64_t job_gap_s;
    fj_retention retention;  /* per kind, 0: keep forever */
    bool prepared[FJ_PG__COUNT]; /* the driver's statements of this session (storage/pg/driver.c) */
    /* The SQL of a statement, set at open (storage/pg/backend.c): the driver below
     * asks the top for texts instead of calling up into the writers. */
    const char *(*stmt_text)(fj_pg_stmt_id id);
    bool staged[FJ_PG__COUNT]; /* the statement's staging table exists in this session */
    fj_intern kept;            /* SQL -> number of the session's kept statements (fj_pgq_prepare_kept) */
    unsigned stage_groups;     /* write groups since the staging tables were last emptied */
    unsigned plan_groups;      /* write groups since the session's statements were last prepared */
    fj_pg_map names;         /* interned names: see FJ_PG_NS_* */
    char sqlstate[6];        /* the SQLSTATE of the last failed statement (fj_pg_fail), "" if none */
    /* Week partitions known to exist (week start times). */
    int64_t *weeks;
    size_t n_weeks, cap_weeks;
    fj_time retention_ran;   /* when retention last ran (writer) */
    struct fj_pg_wstate *w;  /* the write path's reusable scratch (storage/pg/write.c) */
    struct fj_pg_ts *ts;     /* line-protocol metrics (storage/pg/ts.h), NULL until used */
    /* What stops this connection's statement from another thread (PQcancel): made for the
     * session (backend pid) it was made for, on a read's first statement (storage/pg/driver.c). */
    PGcancel *cancel;
    int cancel_pid;
    struct fj_pg_quota *quota; /* the server's quota book (storage/pg/quota.c); NULL: no limit set */
    int64_t commit_timeout_s;  /* fj_pg_commit's wait for a synchronous standby; <= 0: no limit */
    bool in_commit;            /* fj_pg_commit is waiting: a warning now means its wait was cut */
    bool commit_warned;
};

/* --- per-cluster quotas (storage/pg/quota.c; docs/security.md "Quotas") ------------------------ */

/* Joins the book of the server's writer handles with these limits (a writer handle at open; no
 * book when no limit is set). */
fj_status fj_pg_quota_open(fj_store *s, const fj_quota_limits *limits, fj_err *err);
void fj_pg_quota_close(fj_store *s);
/* After a rolled-back group: what it counted was not made; totals are read again. */
void fj_pg_quota_forget(fj_store *s);
bool fj_pg_quota_limited(const fj_store *s, fj_quota_kind kind);
/* A Sonar envelope (not line protocol), before its group's transaction: *ok false when its new
 * nodes or jobs pass its cluster's quota (cnt->limit says which); nothing of it may be written. */
fj_status fj_pg_quota_admit(fj_store *s, const fj_envelope *e, fj_write_count *cnt, bool *ok, fj_err *err);
/* One line-protocol series of cluster that the database does not have: FJ_LIMIT_NONE (counted)
 * or the limit that refuses it. */
fj_status fj_pg_quota_series(fj_store *s, const char *cluster, fj_limit *refused, fj_err *err);

/* Maps a failed result (or a failed connection when r is NULL) to fj_status and fills err with
 * "postgres: what: message". Connection failures give FJ_EBUSY and mark the handle for
 * reconnection; lock timeouts, deadlocks and serialization failures give FJ_EBUSY; data errors
 * FJ_EINVAL; anything else FJ_EIO. */
fj_status fj_pg_fail(fj_store *s, const PGresult *r, const char *what, fj_err *err);

/* Runs the prepared statement id with n text parameters (a NULL value is SQL NULL). On success
 * *res (when res is not NULL) holds the result, to be freed with PQclear. */
fj_status fj_pg_run(fj_store *s, fj_pg_stmt_id id, int n, const char *const *vals, PGresult **res,
                    const char *what, fj_err *err);

/* Drops the session's prepared statements (the driver's and the kept ones): each is prepared again
 * when next run, and PostgreSQL plans it with its tables as they are then. */
fj_status fj_pg_forget_plans(fj_store *s, fj_err *err);

/* COMMIT of a write group (and of the metrics writer's own transactions), waiting at most
 * commit_timeout_s for a synchronous standby (synchronous_standby_names): past it the wait is
 * cancelled (PostgreSQL answers with a warning; the transaction is committed on the primary only)
 * and this answers FJ_EBUSY (503, retried; a re-sent write adds nothing) rather than acknowledge
 * what no standby confirmed. Otherwise as fj_pg_exec. */
fj_status fj_pg_commit(fj_store *s, fj_err *err);

/* Runs SQL without parameters (transaction control, SET LOCAL). */
fj_status fj_pg_exec(fj_store *s, const char *sql, const char *what, fj_err *err);

/* The monitoring figures (storage/pg/stats.c). */

/* Hourly load roll-ups (storage/pg/rollup.c): recomputes every (node, hour) listed in
 * load_hourly_todo from the samples and empties the list. Inside the writer's transaction, after
 * the group's sample rows; also completes the backfill of migration 0004. */
fj_status fj_pg_load_rollup_drain(fj_store *s, fj_err *err);

/* A job_samples row of the write group that is not in the table yet: the drain gives it its
 * figure and peak candidate (win_m -1: none) before it is inserted, so that no new row is written
 * twice (an UPDATE right after the INSERT left a dead copy of most rows). */
typedef struct fj_pg_jcpu_added {
    int64_t rjob, node;
    fj_time t;
    int64_t cpu_m, win_m;
} fj_pg_jcpu_added;

/* A job of the write group that is not written yet: the drain reads its summary from here (as
 * the write will store it) and leaves its CPU summary here (set), so that a job row is written
 * once a group rather than updated again. */
typedef struct fj_pg_jcpu_job {
    int64_t id, job, epoch, pid, ppid, cmd_id, cluster_id;
    int64_t sum_m, n_samples, win_m; /* cpu_sum_m, n_samples, cpu_win_peak_m (-1 = NULL) */
    int64_t peak_m;                  /* cpu_peak_m, when set */
    bool set;
    size_t tag; /* the writer's own (its instance); the drain leaves it */
    bool fresh; /* made by this group, no stored job merged into it: none of its job_samples rows is
                 * stored yet, so the drain reads none */
} fj_pg_jcpu_job;

/* Writes the group's jobs and inserts the added rows, with the figures they have so far. */
typedef fj_status (*fj_pg_jcpu_insert_fn)(void *arg, fj_err *err);

/* A new sample job of the write group with its processes as stored (procs[first .. first + n) of
 * fj_pg_jcpu_pending; sorted (fj_jcpu_sort) or not), so that the drain need not read back what
 * the group has just written. job and epoch as stored (saturated at INT64_MAX). */
typedef struct fj_pg_jcpu_sjob {
    int64_t node;
    fj_time time;
    int64_t job, epoch;
    bool children_counted; /* its producer's cpu_time includes reaped children (not fjord-push) */
    size_t first, n;
} fj_pg_jcpu_sjob;

/* What a write group has not written yet, for the job CPU drain: its new job_samples rows (each
 * also a note) and, unless they are stored already (jobs NULL), its jobs, sorted by id; insert
 * writes them. And the group's new sample jobs, sorted by (node, time, job, epoch), with their
 * processes: written already, but read from here. */
typedef struct fj_pg_jcpu_pending {
    fj_pg_jcpu_added *added;
    size_t n_added;
    fj_pg_jcpu_job *jobs;
    size_t n_jobs;
    const fj_pg_jcpu_sjob *sjobs;
    size_t n_sjobs;
    const fj_jcpu_proc *procs;
    fj_pg_jcpu_insert_fn insert;
    void *arg;
    bool inserted; /* out: insert was called */
} fj_pg_jcpu_pending;

/* Job CPU upkeep (storage/pg/jobcpu.c, storage/core/jobcpu.h): the figures of the new node-samples noted
 * (rjob, node, time each), the jobs' CPU summaries, then job_cpu_todo (the backfill of migration
 * 0005). Inside the writer's transaction, after the group's processes are written. The pending
 * rows and jobs (p, NULL: none) are worked on in memory and their figures left in them; should
 * the drain have to ask the database a question its prefetch did not cover, it calls p->insert
 * first and writes later figures of them as updates. */
fj_status fj_pg_jcpu_drain(fj_store *s, const int64_t *rjob, const int64_t *node, const int64_t *t, size_t n,
                           fj_pg_jcpu_pending *p, fj_err *err);

/* A statement waits at most this long for a lock (session setting; DDL too, with SET LOCAL): behind
 * a long query it gives up (the write answers 503 and is retried) instead of queueing every other
 * request behind it, as SQLite's busy timeout. */
#define FJ_PG_LOCK_TIMEOUT "5s"

/* fj_pg_commit's wait for a synchronous standby by default (setting commit-timeout). */
#define FJ_PG_COMMIT_TIMEOUT_S 10

/* Connects afresh (closing the old connection, forgetting its prepared statements) with the
 * session settings fjord relies on. FJ_EBUSY when the server cannot be reached. */
fj_status fj_pg_reconnect(fj_store *s, fj_err *err);

/* Makes sure the connection is up: reconnects when it was lost. FJ_EBUSY when the server cannot
 * be reached. */
fj_status fj_pg_connect(fj_store *s, fj_err *err);

/* BEGIN (read-only snapshot when read_only), reconnecting once first when the connection turns
 * out to have been lost since the last use: a restarted server costs no failed request. */
fj_status fj_pg_begin(fj_store *s, bool read_only, fj_err *err);
/* ROLLBACK when a transaction is open (errors ignored). */
void fj_pg_rollback(fj_store *s);

/* Makes sure the week partitions holding times[0..n) exist (in its own transaction when
 * in_tx is false). */
fj_status fj_pg_ensure_weeks(fj_store *s, const fj_time *times, size_t n, bool in_tx, fj_err *err);
/* The Monday 00:00 UTC on or before t. */
int64_t fj_pg_week_of(fj_time t);
/* Forgets which partitions exist (after one was found missing). */
void fj_pg_weeks_forget(fj_store *s);

/* Retention (storage/pg/weeks.c), at most once an hour: keeps what the job list reads from process
 * rows about to go, drops the week partitions older than their kind's retention, deletes expired
 * errors and Slurm job steps, and records the marks. */
fj_status fj_pg_retention(fj_store *s, bool force, fj_err *err);

/* Parses a decimal integer column value (0 for NULL or garbage). */
int64_t fj_pg_int(const PGresult *r, int row, int col);

/* The write path (storage/pg/write.c). */
fj_status fj_pg_write(fj_store *s, fj_batch *const *batches, size_t n_batches, fj_write_count *counts,
                      fj_err *err);
void fj_pg_write_free(fj_store *s);

/* --- Chimbuko (storage/pg/chimbuko.c; schema migrations/postgres/0003_chimbuko.sql) --------------------- */

/* One FJ_KIND_CHIMBUKO envelope of a group commit, with its cluster's id and its counts. */
typedef struct fj_pg_cb_env {
    const fj_envelope *e;
    int64_t cluster_id;
    fj_write_count *cnt;
} fj_pg_cb_env;

/* Writes the Chimbuko envelopes of a group inside the writer's open transaction (storage/pg/write.c calls
 * it after the Sonar tables; their notes are written with the other envelopes'). Counts as SQLite
 * does (a function profile or counter equal to its previous point counts as a duplicate). The
 * records of every envelope go in one statement per table; a packet's profiles and counters are
 * compared with the points before them, so those go packet by packet in arrival order. */
fj_status fj_pg_write_chimbuko(fj_store *s, const fj_pg_cb_env *envs, size_t n, fj_err *err);

#endif
