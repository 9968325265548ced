/* storage/query/cols.c — the column lists of the query API's result tables (storage/core/store_query.h). Every backend
 * emits exactly these columns in this order, and the API layer documents them from here (the
 * OpenAPI document and docs/api.md), so the one list is the contract. Units are in the names:
 * _kb kibibytes, _s seconds, percentages are plain (398.2 = 3.98 cores). */
#include "storage/core/store_account_usage.h"
#include "storage/core/store_problems.h"
#include "storage/core/store_query.h"
#include "storage/core/store_ts.h"

#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define TABLE(var, jname, cols, nkey) const fj_qtable var = {jname, cols, N(cols), nkey}

static const fj_qcol clusters_cols[] = {
    {"cluster", FJ_VT_TEXT, "cluster name"},
    {"nodes", FJ_VT_INT, "nodes fjord has seen in the cluster"},
    {"last_seen", FJ_VT_TIME, "time of the latest node sample"},
    {"slurm", FJ_VT_BOOL, "the latest cluster envelope says the cluster runs Slurm"},
    {"partitions", FJ_VT_LIST, "Slurm partitions in the latest cluster envelope"},
    {"metrics_hosts", FJ_VT_INT, "hosts with line-protocol (ClusterCockpit) metrics: POST /api/query"},
    {"chimbuko", FJ_VT_BOOL, "the cluster has Chimbuko data: GET /api/v1/chimbuko/runs"},
};
TABLE(fj_qt_clusters, "clusters", clusters_cols, 0);

/* Shared by the node list (latest) and a node's sysinfo history. */
#define SYSINFO_COLS                                                                                   \
    {"os_name", FJ_VT_TEXT, "operating system"}, {"os_release", FJ_VT_TEXT, "kernel release"},         \
        {"architecture", FJ_VT_TEXT, "CPU architecture"}, {"cpu_model", FJ_VT_TEXT, "CPU model"},     \
        {"sockets", FJ_VT_INT, "CPU sockets"}, {"cores_per_socket", FJ_VT_INT, "cores per socket"},   \
        {"threads_per_core", FJ_VT_INT, "hardware threads per core"},                                 \
        {"cores", FJ_VT_INT, "hardware threads in all (sockets x cores x threads)"},                  \
        {"memory_kb", FJ_VT_INT, "installed memory"}, {"numa_nodes", FJ_VT_INT, "NUMA nodes"},        \
        {"distances", FJ_VT_JSON, "NUMA distance matrix"}, {"gpus", FJ_VT_INT, "GPU cards"},         \
        {"gpu_cards", FJ_VT_JSON,                                                                     \
         "the cards: [{index,uuid,address,manufacturer,model,architecture,driver,firmware,memory_kb," \
         "power_limit,max_power_limit,min_power_limit,max_ce_clock,max_memory_clock}]"},              \
        {"topology", FJ_VT_LIST, "topology renderings stored (svg, text): GET /api/v1/nodes/{node}/topology"}

static const fj_qcol nodes_cols[] = {
    {"cluster", FJ_VT_TEXT, "cluster name"},
    {"node", FJ_VT_TEXT, "node name"},
    {"last_seen", FJ_VT_TIME, "latest sample or sysinfo of the node"},
    {"states", FJ_VT_LIST, "Slurm node states in the latest cluster envelope naming the node"},
    {"state_time", FJ_VT_TIME, "time of those states"},
    {"partitions", FJ_VT_LIST, "partitions holding the node in the latest cluster envelope"},
    {"sysinfo_time", FJ_VT_TIME, "time of the latest sysinfo (the fields below)"},
    SYSINFO_COLS,
};
TABLE(fj_qt_nodes, "nodes", nodes_cols, 0);

static const fj_qcol sysinfo_cols[] = {
    {"node", FJ_VT_TEXT, "node name"},
    {"time", FJ_VT_TIME, "time of the sysinfo record"},
    SYSINFO_COLS,
};
TABLE(fj_qt_sysinfo, "sysinfo", sysinfo_cols, 0);

static const fj_qcol jobs_cols[] = {
    {"id", FJ_VT_INT, "fjord's id of the rectified job: GET /api/v1/jobs/{id}"},
    {"cluster", FJ_VT_TEXT, "cluster name"},
    {"job", FJ_VT_INT, "Slurm job id, or process group id of a job without Slurm, 0 for a lone process"},
    {"epoch", FJ_VT_INT, "0 for Slurm jobs, else the node's boot time minus 1577836800"},
    {"node", FJ_VT_TEXT, "the node of a job without Slurm (null for Slurm jobs)"},
    {"pid", FJ_VT_INT, "the process of a job-0 record (null otherwise)"},
    {"user", FJ_VT_TEXT, "user name"},
    {"start", FJ_VT_TIME, "first sample of the job"},
    {"end", FJ_VT_TIME, "last sample of the job"},
    {"duration_s", FJ_VT_INT, "end - start"},
    {"running", FJ_VT_BOOL,
     "Slurm state when known (RUNNING, PENDING, SUSPENDED, COMPLETING, ...); otherwise the job is in the "
     "latest sample of each of its hosts"},
    {"hosts", FJ_VT_LIST, "nodes the job was seen on"},
    {"commands", FJ_VT_LIST, "distinct commands of its processes"},
    {"samples", FJ_VT_INT, "node-samples that contributed"},
    {"processes", FJ_VT_INT, "most processes in one node-sample (a rolled-up record counts rolledup + 1)"},
    {"cpu_avg", FJ_VT_REAL, "average CPU use per node-sample, percent of one core, from the processes' cpu_time (docs/storage.md, Job CPU)"},
    {"cpu_peak", FJ_VT_REAL, "highest CPU use of one node over a window of at least 120 s, at most its threads x 100 % (the average while no window is that long), percent of one core"},
    {"mem_avg_kb", FJ_VT_INT, "average resident memory per node-sample"},
    {"mem_peak_kb", FJ_VT_INT, "highest resident memory in one node-sample"},
    {"gpu_avg", FJ_VT_REAL, "average GPU use per node-sample, percent of one card"},
    {"gpu_peak", FJ_VT_REAL, "highest GPU use in one node-sample, percent of one card"},
    {"gpumem_avg_kb", FJ_VT_INT, "average GPU memory per node-sample"},
    {"gpumem_peak_kb", FJ_VT_INT, "highest GPU memory in one node-sample"},
    {"cpu_time_s", FJ_VT_INT,
     "CPU time: the processes' cumulative CPU seconds in the job's last sample on each host"},
    {"gpu_time_s", FJ_VT_INT, "GPU time estimated from samples: gpu_avg / 100 x duration x hosts"},
    {"read_kb", FJ_VT_INT, "bytes read (kB): the processes' cumulative counters in the last sample on each host"},
    {"written_kb", FJ_VT_INT, "bytes written (kB), likewise"},
    {"state", FJ_VT_TEXT, "Slurm: job state (CANCELLED by ... is CANCELLED)"},
    {"partition", FJ_VT_TEXT, "Slurm: partition"},
    {"account", FJ_VT_TEXT, "Slurm: account"},
    {"job_name", FJ_VT_TEXT, "Slurm: job name"},
    {"submit_time", FJ_VT_TIME, "Slurm: submit time"},
    {"time_limit_s", FJ_VT_INT, "Slurm: time limit (-1: unlimited)"},
    {"exit_code", FJ_VT_INT, "Slurm: exit code"},
    {"requested_cpus", FJ_VT_INT, "Slurm: requested CPUs"},
    {"requested_node_count", FJ_VT_INT, "Slurm: requested nodes"},
    {"requested_memory_per_node_kb", FJ_VT_INT, "Slurm: requested memory per node"},
    {"requested_resources", FJ_VT_TEXT, "Slurm: requested TRES"},
    {"allocated_resources", FJ_VT_TEXT, "Slurm: allocated TRES"},
    {"array_job_id", FJ_VT_INT, "Slurm: array job id"},
    {"array_task_id", FJ_VT_INT, "Slurm: array task id"},
    {"cpu_eff", FJ_VT_REAL,
     "CPU efficiency: mean cores used per node-sample x hosts / Slurm requested_cpus; null without an allocation "
     "(docs/storage.md, Usage and efficiency)"},
    {"mem_eff", FJ_VT_REAL, "memory efficiency: mem_peak_kb / Slurm requested_memory_per_node_kb; null without"},
    {"gpu_eff", FJ_VT_REAL,
     "GPU efficiency: mean cards in use (gpu percent / 100) per node-sample x hosts / cards allocated (Slurm TRES "
     "gres/gpu); null without, or with none allocated"},
    {"energy_kwh", FJ_VT_REAL,
     "energy to solution: the sum of the parts below that have a figure, null when none has (docs/energy.md)"},
    {"energy_gpu_kwh", FJ_VT_REAL,
     "GPU part: each card's power integrated over the job's node-samples, shared by use, with idle cards it held"},
    {"energy_cpu_kwh", FJ_VT_REAL, "CPU part (null: not measured)"},
    {"energy_mem_kwh", FJ_VT_REAL, "memory part (null: not measured)"},
    {"energy_node_kwh", FJ_VT_REAL, "node part (null: not measured)"},
    {"energy_how", FJ_VT_JSON,
     "how each part was found: {gpu,cpu,mem,node: measured|apportioned|cc-backend|missing, gpu_from: counter|power|counter+power, gpu_idle_kwh, gaps, joules: energy_kwh unrounded}, "
     "null when the job had no measured device"},
    {"energy_missing_s", FJ_VT_INT, "seconds of the job's intervals left out as gaps (no reading for over twice the cadence)"},
    {"co2e_kg", FJ_VT_REAL, "energy_kwh x pue x the cluster's carbon-intensity, when configured"},
    /* the job detail's only: the list is this array but its last column. The list leaves the
     * ClusterCockpit join out because it cost measurably (docs/api.md, GET /api/v1/jobs/{id}). */
    {"clustercockpit", FJ_VT_JSON,
     "the ClusterCockpit job of the same cluster and job id whose run overlaps this job's span, the most "
     "recent if several (null if none): {id,jobId,startTime,stopTime,jobState,user,project,partition,"
     "subCluster,numNodes,numHwthreads,numAcc,hosts}, cc-backend's names, times in epoch seconds"},
};
/* A detail row is a list row plus the joined ClusterCockpit job, so one array serves both. */
const fj_qtable fj_qt_jobs = {"jobs", jobs_cols, N(jobs_cols) - 1, 0};
TABLE(fj_qt_job, "job", jobs_cols, 0);

static const fj_qcol job_hosts_cols[] = {
    {"host", FJ_VT_TEXT, "node name"},
    {"samples", FJ_VT_INT, "samples of the job on this host"},
    {"start", FJ_VT_TIME, "first sample on this host"},
    {"end", FJ_VT_TIME, "last sample on this host"},
    {"processes", FJ_VT_INT, "most processes in one sample"},
    {"cpu_avg", FJ_VT_REAL, "average CPU use per sample, percent of one core, from cpu_time"},
    {"cpu_peak", FJ_VT_REAL, "highest CPU use over a window of at least 120 s (the average while none)"},
    {"mem_avg_kb", FJ_VT_INT, "average resident memory"},
    {"mem_peak_kb", FJ_VT_INT, "highest resident memory"},
    {"gpu_avg", FJ_VT_REAL, "average GPU use, percent of one card"},
    {"gpu_peak", FJ_VT_REAL, "highest GPU use"},
    {"gpumem_avg_kb", FJ_VT_INT, "average GPU memory"},
    {"gpumem_peak_kb", FJ_VT_INT, "highest GPU memory"},
};
TABLE(fj_qt_job_hosts, "hosts", job_hosts_cols, 0);

static const fj_qcol profile_cols[] = {
    {"host", FJ_VT_TEXT, "node name"},
    {"pid", FJ_VT_INT, "process id (null with by=host; 0 or synthetic for a rolled-up group)"},
    {"ppid", FJ_VT_INT, "parent process id (null with by=host)"},
    {"cmd", FJ_VT_TEXT, "command (null with by=host)"},
    {"time", FJ_VT_TIME, "start of the bucket"},
    {"samples", FJ_VT_INT, "samples in the bucket"},
    {"processes", FJ_VT_INT, "most processes in one sample (rolledup + 1 per record)"},
    {"cpu", FJ_VT_REAL, "average CPU use in the bucket, percent of one core"},
    {"cpu_max", FJ_VT_REAL, "highest CPU use in the bucket"},
    {"mem_kb", FJ_VT_INT, "average resident memory"},
    {"mem_max_kb", FJ_VT_INT, "highest resident memory"},
    {"gpu", FJ_VT_REAL, "average GPU use, percent of one card (summed over the process's cards)"},
    {"gpu_max", FJ_VT_REAL, "highest GPU use"},
    {"gpumem_kb", FJ_VT_INT, "average GPU memory"},
    {"gpumem_max_kb", FJ_VT_INT, "highest GPU memory"},
};
TABLE(fj_qt_profile, "profile", profile_cols, 4);

/* The metric columns of a load bucket, shared by node and cluster load. */
#define LOAD_COLS                                                                                      \
    {"cpu_util", FJ_VT_REAL, "CPU utilisation, percent of all cores, from the cumulative per-core counters"}, \
        {"cpu_util_max", FJ_VT_REAL, "highest utilisation of one sample interval (cluster: of one node)"},     \
        {"cpu_cores", FJ_VT_REAL, "busy cores (CPU-seconds per second)"},                             \
        {"mem_kb", FJ_VT_INT, "used memory, average"}, {"mem_max_kb", FJ_VT_INT, "used memory, highest"}, \
        {"load1", FJ_VT_REAL, "1-minute load average, average"},                                      \
        {"load1_max", FJ_VT_REAL, "1-minute load average, highest"},                                  \
        {"load5", FJ_VT_REAL, "5-minute load average, average"},                                      \
        {"load15", FJ_VT_REAL, "15-minute load average, average"},                                    \
        {"gpus", FJ_VT_INT, "GPU cards reporting"},                                                   \
        {"gpu_util", FJ_VT_REAL, "GPU utilisation, percent, average over cards"},                     \
        {"gpu_util_max", FJ_VT_REAL, "GPU utilisation of the busiest card, highest"},                 \
        {"gpu_mem_kb", FJ_VT_INT, "GPU memory used on all cards, average"},                           \
        {"gpu_mem_max_kb", FJ_VT_INT, "GPU memory used, highest"},                                    \
        {"gpu_power_w", FJ_VT_REAL, "GPU power draw of all cards, average"},                          \
        {"gpu_power_max_w", FJ_VT_REAL, "GPU power draw, highest"},                                   \
        {"gpu_temp_c", FJ_VT_REAL, "GPU temperature, average over cards"},                            \
        {"gpu_temp_max_c", FJ_VT_REAL, "GPU temperature of the hottest card, highest"}

static const fj_qcol node_load_cols[] = {
    {"node", FJ_VT_TEXT, "node name"},
    {"time", FJ_VT_TIME, "start of the bucket"},
    {"samples", FJ_VT_INT, "samples in the bucket"},
    {"cores", FJ_VT_INT, "cores counted (length of the per-core counters)"},
    LOAD_COLS,
};
TABLE(fj_qt_node_load, "load", node_load_cols, 1);

static const fj_qcol cluster_load_cols[] = {
    {"time", FJ_VT_TIME, "start of the bucket"},
    {"nodes", FJ_VT_INT, "nodes with a sample in the bucket"},
    {"cores", FJ_VT_INT, "cores of those nodes"},
    LOAD_COLS,
};
TABLE(fj_qt_cluster_load, "load", cluster_load_cols, 0);

static const fj_qcol gpu_load_cols[] = {
    {"node", FJ_VT_TEXT, "node name"},
    {"card", FJ_VT_INT, "the card's index on the node"},
    {"uuid", FJ_VT_TEXT, "the card's UUID (a new series when the card at an index changes)"},
    {"time", FJ_VT_TIME, "start of the bucket"},
    {"samples", FJ_VT_INT, "samples of the card in the bucket"},
    {"gpu_util", FJ_VT_REAL, "utilisation, percent, average"},
    {"gpu_util_max", FJ_VT_REAL, "utilisation, highest"},
    {"gpu_mem_kb", FJ_VT_INT, "memory used, average"},
    {"gpu_mem_max_kb", FJ_VT_INT, "memory used, highest"},
    {"gpu_power_w", FJ_VT_REAL, "power draw, average"},
    {"gpu_power_max_w", FJ_VT_REAL, "power draw, highest"},
    {"gpu_temp_c", FJ_VT_REAL, "temperature, average"},
    {"gpu_temp_max_c", FJ_VT_REAL, "temperature, highest"},
};
TABLE(fj_qt_gpu_load, "load", gpu_load_cols, 3);

static const fj_qcol slurm_jobs_cols[] = {
    {"cluster", FJ_VT_TEXT, "cluster name"},
    {"job_id", FJ_VT_INT, "Slurm job id"},
    {"step", FJ_VT_TEXT, "job step ('' for the job itself)"},
    {"updated", FJ_VT_TIME, "time of the latest record"},
    {"job_name", FJ_VT_TEXT, "job name"},
    {"state", FJ_VT_TEXT, "job state"},
    {"state_raw", FJ_VT_TEXT, "job state as sent (CANCELLED by 7205)"},
    {"user", FJ_VT_TEXT, "user name"},
    {"account", FJ_VT_TEXT, "account"},
    {"partition", FJ_VT_TEXT, "partition"},
    {"reservation", FJ_VT_TEXT, "reservation"},
    {"array_job_id", FJ_VT_INT, "array job id"},
    {"array_task_id", FJ_VT_INT, "array task id"},
    {"het_job_id", FJ_VT_INT, "heterogeneous job id"},
    {"het_job_offset", FJ_VT_INT, "heterogeneous job offset"},
    {"submit_time", FJ_VT_TIME, "submit time"},
    {"start_time", FJ_VT_TIME, "start time"},
    {"end_time", FJ_VT_TIME, "end time"},
    {"time_limit_s", FJ_VT_INT, "time limit (-1: unlimited)"},
    {"priority", FJ_VT_INT, "priority"},
    {"nodes", FJ_VT_TEXT, "node ranges as sent"},
    {"requested_cpus", FJ_VT_INT, "requested CPUs"},
    {"requested_memory_per_node_kb", FJ_VT_INT, "requested memory per node"},
    {"requested_node_count", FJ_VT_INT, "requested nodes"},
    {"minimum_cpus_per_node", FJ_VT_INT, "minimum CPUs per node"},
    {"requested_resources", FJ_VT_TEXT, "requested TRES"},
    {"allocated_resources", FJ_VT_TEXT, "allocated TRES"},
    {"exit_code", FJ_VT_INT, "exit code"},
    {"suspend_time_s", FJ_VT_INT, "time suspended"},
    {"elapsed_s", FJ_VT_INT, "sacct ElapsedRaw"},
    {"ave_cpu_s", FJ_VT_INT, "sacct AveCPU"},
    {"min_cpu_s", FJ_VT_INT, "sacct MinCPU"},
    {"user_cpu_s", FJ_VT_INT, "sacct UserCPU"},
    {"system_cpu_s", FJ_VT_INT, "sacct SystemCPU"},
    {"ave_rss_kb", FJ_VT_INT, "sacct AveRSS"},
    {"max_rss_kb", FJ_VT_INT, "sacct MaxRSS"},
    {"ave_vmsize_kb", FJ_VT_INT, "sacct AveVMSize"},
    {"max_vmsize_kb", FJ_VT_INT, "sacct MaxVMSize"},
    {"ave_disk_read", FJ_VT_INT, "sacct AveDiskRead"},
    {"ave_disk_write", FJ_VT_INT, "sacct AveDiskWrite"},
    {"alloc_tres", FJ_VT_TEXT, "sacct AllocTRES"},
};
TABLE(fj_qt_slurm_jobs, "jobs", slurm_jobs_cols, 0);

static const fj_qcol partitions_cols[] = {
    {"cluster", FJ_VT_TEXT, "cluster name"},
    {"partition", FJ_VT_TEXT, "partition name"},
    {"time", FJ_VT_TIME, "time of the cluster envelope"},
    {"nodes", FJ_VT_INT, "nodes in the partition"},
    {"hosts", FJ_VT_LIST, "the nodes, expanded"},
};
TABLE(fj_qt_partitions, "partitions", partitions_cols, 0);

static const fj_qcol node_states_cols[] = {
    {"node", FJ_VT_TEXT, "node name"},
    {"time", FJ_VT_TIME, "time of the cluster envelope"},
    {"states", FJ_VT_LIST, "states (IDLE, MIXED, DRAIN, ...)"},
};
TABLE(fj_qt_node_states, "nodes", node_states_cols, 0);

static const fj_qcol uptime_cols[] = {
    {"node", FJ_VT_TEXT, "node name"},
    {"device", FJ_VT_TEXT, "'node', or 'gpu' and the card index (gpu0, gpu1, ...)"},
    {"state", FJ_VT_TEXT, "up or down"},
    {"start", FJ_VT_TIME, "start of the interval"},
    {"end", FJ_VT_TIME, "end of the interval"},
    {"duration_s", FJ_VT_INT, "end - start"},
};
TABLE(fj_qt_uptime, "uptime", uptime_cols, 0);

static const fj_qcol errors_cols[] = {
    {"cluster", FJ_VT_TEXT, "cluster name"},
    {"node", FJ_VT_TEXT, "node name (null when the record named none)"},
    {"time", FJ_VT_TIME, "time of the error"},
    {"source", FJ_VT_TEXT, "envelope (an envelope carrying errors instead of data) or sample (a sample's soft errors)"},
    {"kind", FJ_VT_TEXT, "the envelope kind it came with"},
    {"detail", FJ_VT_TEXT, "the error text"},
};
TABLE(fj_qt_errors, "errors", errors_cols, 0);

/* ClusterCockpit records (storage/core/store_ts.h); the API writes them in cc-backend's shape. */
static const fj_qcol cc_events_cols[] = {
    {"kind", FJ_VT_TEXT, "event, log or control"},
    {"name", FJ_VT_TEXT, "the line's measurement"},
    {"host", FJ_VT_TEXT, "the line's hostname tag"},
    {"time_ns", FJ_VT_INT, "time, nanoseconds since 1970"},
    {"tags", FJ_VT_JSON, "the line's other tags, an object"},
    {"payload", FJ_VT_TEXT, "the event, log or control text"},
};
TABLE(fj_qt_cc_events, "events", cc_events_cols, 0);

static const fj_qcol cc_jobs_cols[] = {
    {"id", FJ_VT_INT, "fjord's id of the ClusterCockpit job"},
    {"job_id", FJ_VT_INT, "the job id cc-backend gave"},
    {"start_time", FJ_VT_INT, "start, seconds since 1970"},
    {"stop_time", FJ_VT_INT, "stop, seconds since 1970 (null while running)"},
    {"state", FJ_VT_TEXT, "cc-backend's job state"},
    {"user", FJ_VT_TEXT, "user name"},
    {"project", FJ_VT_TEXT, "project"},
    {"partition", FJ_VT_TEXT, "partition"},
    {"num_nodes", FJ_VT_INT, "nodes"},
    {"hosts", FJ_VT_JSON, "the job's hosts, an array"},
    {"sonar_instances", FJ_VT_INT, "rectified Sonar jobs of the same Slurm job id (0: none)"},
    {"sonar_first", FJ_VT_INT, "their first sample, seconds since 1970"},
    {"sonar_last", FJ_VT_INT, "their last sample, seconds since 1970"},
    {"sonar_samples", FJ_VT_INT, "their node-samples"},
    {"slurm", FJ_VT_BOOL, "Sonar holds a Slurm record of the job"},
    {"slurm_state", FJ_VT_TEXT, "its current job state"},
};
TABLE(fj_qt_cc_jobs, "jobs", cc_jobs_cols, 0);

/* --- the problem-jobs report (storage/query/problems.c) ----------------------------------- */

static const fj_qcol problems_cols[] = {
    {"rule", FJ_VT_TEXT, "the rule broken: gpu_idle, gpu_unused, cpu_low, mem_low or deadweight (docs/problems.md)"},
    {"id", FJ_VT_INT, "fjord's id of the rectified job: GET /api/v1/jobs/{id}"},
    {"job", FJ_VT_INT, "Slurm job id, or process group id of a job without Slurm"},
    {"user", FJ_VT_TEXT, "user name"},
    {"node", FJ_VT_TEXT,
     "the node, for the rules judged per node (gpu_idle, gpu_unused, deadweight); null for the job"},
    {"card", FJ_VT_INT,
     "gpu_idle: the idle GPU card's index on the node; null for the other rules, and for a node on which the "
     "job had no process on any card"},
    {"nodes", FJ_VT_INT, "nodes the job ran on"},
    {"start", FJ_VT_TIME, "first sample of the job"},
    {"end", FJ_VT_TIME, "last sample of the job"},
    {"for_s", FJ_VT_INT, "how long the rule held: the idle stretch at the job's end on the node (gpu_idle, "
                         "deadweight), the time on the node (gpu_unused), the job's duration (cpu_low, mem_low)"},
    {"used", FJ_VT_REAL, "cpu_low: mean cores used (per node); mem_low: peak resident memory in kB (per node); "
                         "0 for the GPU rules; null for deadweight"},
    {"held", FJ_VT_REAL, "cpu_low: cores held per node (Slurm allocation, else the node's); mem_low: memory "
                         "requested per node in kB; gpu_idle of a card: 1; other GPU rows: the node's GPU "
                         "cards (null when unknown)"},
    {"ratio", FJ_VT_REAL, "used / held (cpu_low, mem_low)"},
    {"detail", FJ_VT_TEXT, "the finding in words, with the threshold"},
    {"api", FJ_VT_TEXT, "the job's API path"},
    {"url", FJ_VT_TEXT, "the job's dashboard path"},
    {"gpu_idle_kwh", FJ_VT_REAL,
     "gpu_idle, gpu_unused: the energy in kWh its allocation's cards drew while it held them idle (the job's whole "
     "span, energy_how's gpu_idle_kwh: docs/energy.md); null when the job has no GPU energy figure"},
};
TABLE(fj_qt_problems, "problems", problems_cols, 0);

static const fj_qcol users_cols[] = {
    {"user", FJ_VT_TEXT, "user name"},
    {"jobs", FJ_VT_INT, "jobs with at least one problem"},
    {"problems", FJ_VT_INT, "problem rows (a job can break several rules, a per-node rule on several nodes)"},
    {"gpu_idle", FJ_VT_INT, "rows of the rule"},
    {"gpu_unused", FJ_VT_INT, "rows of the rule"},
    {"cpu_low", FJ_VT_INT, "rows of the rule"},
    {"mem_low", FJ_VT_INT, "rows of the rule"},
    {"deadweight", FJ_VT_INT, "rows of the rule"},
    {"idle_core_hours", FJ_VT_REAL, "cpu_low: (cores held - used) x nodes x duration, summed"},
    {"idle_gpu_hours", FJ_VT_REAL,
     "gpu_idle and gpu_unused: the cards of the row (held) x for_s, summed (cards unknown: 1)"},
};
TABLE(fj_qt_problem_users, "users", users_cols, 0);

static const fj_qcol node_usage_cols[] = {
    {"node", FJ_VT_TEXT, "node name"},
    {"time", FJ_VT_TIME, "latest sample of the node"},
    {"interval_s", FJ_VT_INT, "seconds to the sample before it (the CPU interval)"},
    {"cpu_busy", FJ_VT_REAL, "cores busy on average over that interval"},
    {"used_memory_kb", FJ_VT_INT, "memory in use at the latest sample"},
    {"load1", FJ_VT_REAL, "1-minute load average"},
    {"gpus", FJ_VT_INT, "GPU cards in the latest sample"},
    {"gpu_busy", FJ_VT_REAL, "cards busy (sum of their compute utilisation / 100)"},
    {"gpu_memory_kb", FJ_VT_INT, "GPU memory in use, all cards"},
};
TABLE(fj_qt_node_usage, "usage", node_usage_cols, 0);

/* --- usage per user, account, partition (storage/query/account_usage.c) ------------------ */

static const fj_qcol account_usage_cols[] = {
    {"bucket", FJ_VT_TIME, "start of the time bucket (UTC day, ISO week from Monday, month); null without bucket"},
    {"group", FJ_VT_TEXT,
     "the user, account or partition (by), or the cluster; null for jobs without one (account and partition "
     "come from Slurm, or a ClusterCockpit job's project and partition)"},
    {"jobs", FJ_VT_INT, "jobs that ran in the bucket"},
    {"jobs_alloc", FJ_VT_INT, "of them, jobs with an allocation: a Slurm record, else a ClusterCockpit job"},
    {"wall_h", FJ_VT_REAL,
     "the jobs' hours inside the bucket: Slurm's start to end (or the ClusterCockpit job's), else first to last "
     "sample"},
    {"core_h_alloc", FJ_VT_REAL,
     "cores allocated (Slurm requested_cpus; a ClusterCockpit job's numHwthreads) x wall hours; null when no job's is "
     "known"},
    {"core_h_used", FJ_VT_REAL,
     "cores in use (mean over the job's node-samples in the bucket, times its hosts) x sampled hours, every job"},
    {"cpu_eff", FJ_VT_REAL,
     "core_h_used of the jobs whose cores allocated are known over core_h_alloc; null when unknown or 0"},
    {"gpu_h_alloc", FJ_VT_REAL,
     "GPU cards allocated (Slurm TRES gres/gpu; a ClusterCockpit job's numAcc) x wall hours; null when unknown"},
    {"gpu_h_used", FJ_VT_REAL, "cards in use (GPU percent / 100, mean as for cores) x sampled hours"},
    {"gpu_eff", FJ_VT_REAL, "gpu_h_used of the jobs whose cards allocated are known over gpu_h_alloc; null when "
                            "unknown or 0"},
    {"mem_gib_h_alloc", FJ_VT_REAL,
     "memory requested (per node x nodes) in GiB x wall hours; null when unknown"},
    {"mem_gib_h_used", FJ_VT_REAL, "resident memory in GiB (mean as for cores) x sampled hours"},
    {"mem_eff", FJ_VT_REAL, "mem_gib_h_used of the jobs whose request is known over mem_gib_h_alloc"},
    {"energy_kwh", FJ_VT_REAL,
     "the GPU part of the jobs' energy inside the bucket in kWh (docs/energy.md); null when no job had a figure"},
    {"co2e_kg", FJ_VT_REAL, "energy_kwh x pue x the cluster's carbon-intensity, when configured"},
};
TABLE(fj_qt_account_usage, "usage", account_usage_cols, 0);

int fj_qtable_col(const fj_qtable *t, const char *name)
{
    for (size_t i = 0; i < t->n_cols; i++)
        if (strcmp(t->cols[i].name, name) == 0)
            return (int)i;
    return -1;
}

const char *const fj_job_metric_names[FJ_JM__COUNT] = {
#define FJ_JM_NAME(id, name) name,
    FJ_JOB_METRICS(FJ_JM_NAME)
#undef FJ_JM_NAME
};

const char *fj_job_sort_name(int sort)
{
    static const char *const base[] = {"start", "end", "duration", "job"};
    if (sort < 0 || sort >= FJ_JS__COUNT)
        return NULL;
    if (sort < FJ_JS_METRIC0)
        return base[sort];
    return fj_job_metric_names[sort - FJ_JS_METRIC0];
}
