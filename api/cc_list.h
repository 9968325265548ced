/* cc_list.h — the ClusterCockpit listings of the read API: events, logs and controls, and jobs
 * joined with what Sonar knows of them. The store hands over rows (storage/core/store_ts.h:
 * cc_messages, cc_jobs); these handlers write them in cc-backend's shape. docs/metrics.md
 * describes the answers. */
#ifndef FJ_CC_LIST_H
#define FJ_CC_LIST_H

#include "server/http.h"

/* GET /api/v1/events?cluster=&from=&to=&kind=&name=&host=&limit=: {"events":[...]} oldest first. */
void fj_api_cc_events(fj_http_req *r);
/* GET /api/v1/cc/jobs?cluster=&from=&to=&limit=: {"jobs":[...]}, ClusterCockpit jobs joined with
 * Sonar's Slurm jobs ("sonar": rectified instances, first/last seen, samples; "slurm": the current
 * Slurm record's state). */
void fj_api_cc_jobs(fj_http_req *r);

#endif
