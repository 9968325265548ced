/* writer.h — the writer threads and their queue: group commit.
 *
 * Request threads submit decoded batches; a writer thread takes everything queued (up to a
 * limit), commits it in one transaction, then calls each request's `done` callback from that
 * thread. A request is acknowledged only from `done`, so a 2xx always means committed.
 * Thread-safe: submit from any thread.
 *
 * One thread per store handle given: SQLite has one writer; PostgreSQL may have several (the
 * setting `writers`), each its own connection and transactions, which PostgreSQL runs side by
 * side (the write path locks what two writers could both change: docs/postgres.md). Batches with
 * metric points go to the first thread only, whose handle holds the metrics engine, and only it
 * runs the store's periodic maintenance. */
#ifndef FJ_WRITER_H
#define FJ_WRITER_H

#include "storage/core/store.h"

typedef struct fj_writer fj_writer;

typedef struct fj_write_req fj_write_req;
struct fj_write_req {
    fj_batch *batch;         /* in: owned by the submitter until done is called */
    fj_write_count *counts;  /* in: room for batch->n_envs results */
    fj_status status;        /* out: outcome of the transaction that held this batch */
    fj_err err;              /* out: detail when status != FJ_OK */
    void (*done)(fj_write_req *r); /* called once, on the writer thread; must not block long */
    void *ctx;
    fj_write_req *next;      /* queue link, private */
};

/* Starts a writer thread over each of stores[0 .. n_stores) (open writer-mode handles of one
 * database, not owned; 1 to 16; stores[0] the one whose metrics engine is started). queue_max:
 * batches waiting beyond which submit answers FJ_EBUSY; group_ms: how long to wait for more work
 * after the first batch when the queue is short. NULL on failure. */
fj_writer *fj_writer_start(fj_store *const *stores, size_t n_stores, size_t queue_max, unsigned group_ms);

/* Queues r. FJ_EBUSY when the queue is full or the writer is stopping (r->done is then NOT
 * called). */
fj_status fj_writer_submit(fj_writer *w, fj_write_req *r);

/* Commits everything already queued, then stops the threads and frees the writer. */
void fj_writer_stop(fj_writer *w);

/* Batches waiting now (for metrics and admission decisions). */
size_t fj_writer_queued(fj_writer *w);

#endif
