/* storage/sqlite/backend.c — the SQLite backend's top: its driver's table (fj_sqlite_driver,
 * storage/core/driver.h), opening (WAL, pragmas, schema check), what its migrations keep of their
 * own (storage/core/migrate.c keeps the books), checkpoints, compact and backup (tokens are
 * storage/core/tokens.c). It calls down into the other files of storage/sqlite/, which call down
 * into the driver's bottom (storage/sqlite/driver.c) and the name interning
 * (storage/sqlite/intern.c), never back up. The write path is in storage/sqlite/write.c, the
 * metrics in ts.c, the bulk load reader in load.c; the queries are written once
 * (storage/query/); the schema in migrations/sqlite/. */
#include "storage/sqlite/chimbuko.h"
#include "storage/sqlite/int.h"
#include "storage/sqlite/migrations.h"
#include "storage/sqlite/query_int.h"

#include "alloc.h"
#include "cancel.h"
#include "redact.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 5000

/* --- statements --------------------------------------------------------------------------- */

static const char *const stmt_sql[FJ_SQ__COUNT] = {
#define FJ_SQ_TEXT(name, sql) sql,
    FJ_SQ_STMTS(FJ_SQ_TEXT)
#undef FJ_SQ_TEXT
};

/* The SQL of statement id for the driver's cache: the fixed texts above, or the ones the writer
 * builds from its column lists. */
static const char *stmt_text(fj_sq_stmt_id id)
{
    return stmt_sql[id] ? stmt_sql[id] : fj_sq_built_sql(id);
}

/* --- URL ---------------------------------------------------------------------------------- */

static bool sq_accepts(const char *url)
{
    if (!url || !*url)
        return false;
    return strncmp(url, "postgres://", 11) != 0 && strncmp(url, "postgresql://", 13) != 0;
}

/* A read connection's long statement stops when the read running on this thread is cancelled
 * (query-timeout, client gone, drain: common/cancel.h): SQLite then fails it with
 * SQLITE_INTERRUPT. Checked every READ_PROGRESS_OPS virtual-machine steps, a thread-local load. */
enum { READ_PROGRESS_OPS = 4096 };
static int read_progress(void *ud)
{
    (void)ud;
    return fj_cancel_check(fj_cancel_current()) != FJ_CANCEL_NONE;
}

/* The file name to hand to sqlite3_open_v2, and whether it is a URI. "sqlite://PATH" and
 * "sqlite:PATH" name PATH; "file:..." is passed on as an SQLite URI. */
static const char *url_path(const char *url, bool *uri)
{
    *uri = false;
    if (strncmp(url, "sqlite://", 9) == 0)
        return url + 9;
    if (strncmp(url, "sqlite:", 7) == 0)
        return url + 7;
    if (strncmp(url, "file:", 5) == 0)
        *uri = true;
    return url;
}

/* --- migrations (the bookkeeping is storage/core/migrate.c) ------------------------------- */

static fj_status run_text(fj_store *s, const fj_migration *m, fj_err *err)
{
    char *msg = NULL;
    int rc = sqlite3_exec(s->db, m->sql, NULL, NULL, &msg);
    fj_status st = FJ_OK;
    if (rc != SQLITE_OK)
        st = fj_err_set(err, fj_sq_status(rc), "db", "migration %04d_%s failed: %s", m->version, m->name,
                        msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return st;
}

/* Roll-ups and job CPU a migration listed (0006's and 0008's backfills). */
static fj_status backfill(fj_store *s, fj_err *err)
{
    fj_status st = fj_sq_load_rollup_drain(s, err);
    return st == FJ_OK ? fj_sq_jcpu_drain(s, err) : st; /* 0008's backfill of job CPU */
}

static fj_migrator migrator(const fj_store *s)
{
    return (fj_migrator){
        .kind = "SQLite",
        .shown = s->path,
        .list = fj_sqlite_migrations,
        .n = fj_sqlite_n_migrations,
        .begin = "BEGIN IMMEDIATE",
        .create_table = "CREATE TABLE IF NOT EXISTS schema_migrations(version INTEGER PRIMARY KEY, "
                        "name TEXT, applied_at INTEGER)",
        .has_table = "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='schema_migrations'",
        .count_tables = "SELECT count(*) FROM sqlite_master WHERE type IN ('table','view') AND "
                        "name NOT LIKE 'sqlite_%'",
        .query_int = fj_sq_query_i64,
        .run_text = run_text,
        .backfill = backfill,
        .lock = NULL, /* the writer is alone on its file */
    };
}

/* --- open / close ------------------------------------------------------------------------- */

/* --- checkpoints --------------------------------------------------------------------------- */

/* A writer handle does not checkpoint inside its commits (SQLite's autocheckpoint would copy the
 * WAL into the database and fsync twice within the COMMIT of whichever group crossed 1000 pages,
 * and the requests of that group wait). Instead its WAL hook wakes a thread that checkpoints with
 * its own connection, PASSIVE (it never blocks the writer or readers), each time CKPT_FRAMES
 * pages have accumulated. SQLite starts the WAL over only when every frame has been copied, which
 * a checkpoint running beside a busy writer never sees; so past CKPT_RESTART_FRAMES the writer
 * copies the remainder itself, right after its commit (little is left: the thread has done the
 * rest), and its next transaction rewinds the WAL. */
#define CKPT_FRAMES 1000
#define CKPT_RESTART_FRAMES 4000
#define CKPT_WAL_LIMIT (64 << 20) /* journal_size_limit: the WAL file is cut back to this on rewind */

struct fj_sq_ckpt {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    int frames; /* the WAL's length after the writer's last commit */
    int copied; /* frames of it already in the database, as the thread last saw */
};

/* Enough new frames for a checkpoint (called with mu held). */
static bool ckpt_due(const struct fj_sq_ckpt *c)
{
    return c->frames - c->copied >= CKPT_FRAMES;
}

static void *ckpt_main(void *arg)
{
    fj_store *s = arg;
    struct fj_sq_ckpt *c = s->ckpt;
    prctl(PR_SET_NAME, "fj-checkpoint", 0, 0, 0);
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(s->path, &db, (s->open_flags & ~SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA synchronous=%s", s->sync); /* the checkpoint's fsyncs */
        rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    }
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!ckpt_due(c) && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->stop)
            break;
        pthread_mutex_unlock(&c->mu);
        int wal = 0, copied = 0;
        if (rc == SQLITE_OK)
            sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &wal, &copied);
        pthread_mutex_lock(&c->mu);
        /* BUSY (the writer is copying the rest itself) counts as done: wait for new frames. A
         * count past the writer's latest is from before a rewind. */
        c->copied = copied > 0 && copied <= c->frames ? copied : c->frames;
    }
    pthread_mutex_unlock(&c->mu);
    sqlite3_close_v2(db);
    return NULL;
}

/* Wakes the checkpoint thread when CKPT_FRAMES frames wait to be copied, starting it the first
 * time; false when there is no thread (it could not be started). */
static bool ckpt_wake(fj_store *s, int frames)
{
    struct fj_sq_ckpt *c = s->ckpt;
    if (!c) {
        if (frames < CKPT_FRAMES)
            return true;
        if (!(c = fj_calloc(1, sizeof *c)))
            return false;
        pthread_mutex_init(&c->mu, NULL);
        pthread_cond_init(&c->cv, NULL);
        s->ckpt = c;
        if (pthread_create(&c->thread, NULL, ckpt_main, s) != 0) {
            pthread_mutex_destroy(&c->mu);
            pthread_cond_destroy(&c->cv);
            fj_free(c);
            s->ckpt = NULL;
            return false;
        }
    }
    pthread_mutex_lock(&c->mu);
    if (frames < c->frames || frames < c->copied) /* the WAL was rewound since */
        c->copied = 0;
    c->frames = frames;
    if (ckpt_due(c))
        pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return true;
}

/* sqlite3_wal_hook: runs in the writer after each commit; frames is the WAL's length. */
static int ckpt_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    fj_store *s = arg;
    if (frames >= CKPT_RESTART_FRAMES || !ckpt_wake(s, frames))
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL); /* BUSY: next time */
    return SQLITE_OK;
}

static void ckpt_stop(fj_store *s)
{
    struct fj_sq_ckpt *c = s->ckpt;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    fj_free(c);
    s->ckpt = NULL;
}

static void sq_close(fj_store *s)
{
    if (!s)
        return;
    fj_sq_ts_close(s); /* seals and commits buffered metrics while the connection is open */
    ckpt_stop(s); /* its connection goes first: the writer's close then checkpoints and drops the WAL */
    fj_sq_load_rollup_free(s);
    for (int i = 0; i < FJ_SQ__COUNT; i++)
        sqlite3_finalize(s->stmts[i]);
    fj_sq_write_free(s);
    /* No PRAGMA optimize here: on SQLite 3.40 it may ANALYZE a big table and stall shutdown; the
     * queries use explicit indexes and need no statistics. */
    if (s->db)
        sqlite3_close_v2(s->db);
    fj_intern_clear(&s->names);
    fj_quota_free(s->quota);
    fj_intern_clear(&s->jobs_seen);
    fj_free(s->path);
    fj_free(s);
}

/* --- page cache -------------------------------------------------------------------------- */

/* A thin wrapper around SQLite's default page cache (pcache1). pcache1 remembers the largest page
 * number it ever held (iMaxKey) and, at the end of every write transaction, truncates to the
 * database size; when iMaxKey is far past that size the truncation walks the whole hash table, one
 * cache miss per cached page. B-tree balancing swaps page numbers through a temporary one past the
 * end of the file (the lock-byte page), so after any page split iMaxKey stays huge and every
 * COMMIT walked every cached page: with the 64 MB cache, about 7% of the writer's time. The wrapper
 * keeps its own bound on the cached page numbers and lets pcache1 truncate only when there may be
 * something to drop; every other call goes straight through. */
#define PC_HIGH_MAX 8

typedef struct pc_wrap {
    sqlite3_pcache *inner;
    unsigned max_key;             /* no cached page has a larger number, except those in high */
    unsigned high[PC_HIGH_MAX];   /* numbers past max_key that pages were moved to */
    int n_high;
    bool unknown;                 /* high overflowed: truncate for real */
} pc_wrap;

static sqlite3_pcache_methods2 pc_default;

static int pc_init(void *arg)
{
    return pc_default.xInit ? pc_default.xInit(pc_default.pArg) : SQLITE_OK;
}

static void pc_shutdown(void *arg)
{
    if (pc_default.xShutdown)
        pc_default.xShutdown(pc_default.pArg);
}

static sqlite3_pcache *pc_create(int page_size, int extra, int purgeable)
{
    /* sqlite3_malloc: SQLite's own allocations are not part of fjord's failure injection */
    pc_wrap *p = sqlite3_malloc(sizeof *p);
    if (!p)
        return NULL;
    memset(p, 0, sizeof *p);
    p->inner = pc_default.xCreate(page_size, extra, purgeable);
    if (!p->inner) {
        sqlite3_free(p);
        return NULL;
    }
    return (sqlite3_pcache *)p;
}

static void pc_cachesize(sqlite3_pcache *c, int n)
{
    pc_default.xCachesize(((pc_wrap *)c)->inner, n);
}

static int pc_pagecount(sqlite3_pcache *c)
{
    return pc_default.xPagecount(((pc_wrap *)c)->inner);
}

static sqlite3_pcache_page *pc_fetch(sqlite3_pcache *c, unsigned key, int create)
{
    pc_wrap *p = (pc_wrap *)c;
    sqlite3_pcache_page *pg = pc_default.xFetch(p->inner, key, create);
    if (pg && create && key > p->max_key) { /* a lookup without create adds nothing */
        for (int i = 0; i < p->n_high; i++)
            if (p->high[i] == key)
                return pg; /* already accounted for */
        p->max_key = key;
    }
    return pg;
}

static void pc_unpin(sqlite3_pcache *c, sqlite3_pcache_page *pg, int discard)
{
    pc_default.xUnpin(((pc_wrap *)c)->inner, pg, discard);
}

static void pc_rekey(sqlite3_pcache *c, sqlite3_pcache_page *pg, unsigned old_key, unsigned new_key)
{
    pc_wrap *p = (pc_wrap *)c;
    pc_default.xRekey(p->inner, pg, old_key, new_key);
    for (int i = 0; i < p->n_high; i++)
        if (p->high[i] == old_key) {
            p->high[i] = p->high[--p->n_high];
            break;
        }
    if (new_key <= p->max_key)
        return;
    if (p->n_high < PC_HIGH_MAX)
        p->high[p->n_high++] = new_key;
    else
        p->unknown = true;
}

static void pc_truncate(sqlite3_pcache *c, unsigned limit)
{
    pc_wrap *p = (pc_wrap *)c;
    bool needed = p->unknown || p->max_key >= limit;
    for (int i = 0; !needed && i < p->n_high; i++)
        needed = p->high[i] >= limit;
    if (!needed) /* no cached page has a number >= limit: nothing to drop */
        return;
    pc_default.xTruncate(p->inner, limit);
    /* every cached page is now below limit */
    if (limit && p->max_key >= limit)
        p->max_key = limit - 1;
    int n = 0;
    for (int i = 0; i < p->n_high; i++)
        if (p->high[i] < limit)
            p->high[n++] = p->high[i];
    p->n_high = n;
    if (p->unknown) {
        p->unknown = false;
        p->n_high = 0;
        p->max_key = limit ? limit - 1 : 0;
    }
}

static void pc_destroy(sqlite3_pcache *c)
{
    pc_wrap *p = (pc_wrap *)c;
    pc_default.xDestroy(p->inner);
    sqlite3_free(p);
}

static void pc_shrink(sqlite3_pcache *c)
{
    pc_default.xShrink(((pc_wrap *)c)->inner);
}

static const sqlite3_pcache_methods2 pc_methods = {
    1, NULL, pc_init, pc_shutdown, pc_create, pc_cachesize, pc_pagecount, pc_fetch, pc_unpin, pc_rekey,
    pc_truncate, pc_destroy, pc_shrink,
};

/* Process-wide SQLite settings, applied once before the library initialises. Debian's SQLite is
 * built without lookaside, so every small allocation of a statement goes to malloc, and with
 * memory statistics on (the default) each one takes a global mutex: turning the statistics off
 * removes those locks from the write path (fjord never reads sqlite3_memory_used). Then the page
 * cache wrapper above. When SQLite was already initialised (by another user in the process)
 * sqlite3_config refuses and nothing changes. */
static pthread_once_t sq_global_once = PTHREAD_ONCE_INIT;

static void sq_global_init(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_pcache_methods2 def;
    memset(&def, 0, sizeof def);
    if (sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &def) == SQLITE_OK && def.iVersion >= 1 && def.xCreate &&
        def.xTruncate && def.xRekey) {
        pc_default = def;
        if (sqlite3_config(SQLITE_CONFIG_PCACHE2, &pc_methods) != SQLITE_OK)
            memset(&pc_default, 0, sizeof pc_default);
    }
}

static fj_status sq_open(const char *url, const fj_store_opts *opts, fj_store **out, fj_err *err)
{
    pthread_once(&sq_global_once, sq_global_init);
    static const fj_store_opts defaults = {0};
    if (!opts)
        opts = &defaults;
    *out = NULL;
    const char *sync = opts->synchronous && *opts->synchronous ? opts->synchronous : "NORMAL";
    if (strcmp(sync, "OFF") && strcmp(sync, "NORMAL") && strcmp(sync, "FULL"))
        return fj_err_set(err, FJ_EINVAL, "synchronous", "synchronous must be OFF, NORMAL or FULL, not '%s'", sync);

    fj_store *s = fj_calloc(1, sizeof *s);
    if (!s)
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    s->driver = &fj_sqlite_driver;
    s->stmt_text = stmt_text;
    s->mode = opts->mode;
    s->migrating = opts->migrating;
    s->job_gap_s = opts->job_gap_s > 0 ? opts->job_gap_s : FJ_JOB_GAP_DEFAULT_S;
    fj_sq_retention_init(s, &opts->retention);
    if (opts->mode == FJ_STORE_WRITE && !(s->quota = fj_quota_new(&opts->quota))) {
        sq_close(s);
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }
    bool uri;
    const char *path = url_path(url, &uri);
    s->path = fj_strdup(path);
    if (!s->path) {
        sq_close(s);
        return fj_err_set(err, FJ_ENOMEM, "db", "out of memory");
    }

    int flags = SQLITE_OPEN_NOMUTEX | (uri ? SQLITE_OPEN_URI : 0);
    if (opts->mode == FJ_STORE_READ)
        flags |= SQLITE_OPEN_READONLY;
    else
        flags |= SQLITE_OPEN_READWRITE | (opts->create ? SQLITE_OPEN_CREATE : 0);
    s->open_flags = flags;
    snprintf(s->sync, sizeof s->sync, "%s", sync);
    int rc = sqlite3_open_v2(path, &s->db, flags, NULL);
    if (rc != SQLITE_OK) {
        /* a mistyped PostgreSQL URL ends up here, credentials and all */
        char shown[1024];
        fj_status st = fj_err_set(err, rc == SQLITE_CANTOPEN ? FJ_EIO : fj_sq_status(rc), "db",
                                  "cannot open database %s: %s", fj_redact_conn(path, shown, sizeof shown),
                                  s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        sq_close(s);
        return st;
    }
    sqlite3_extended_result_codes(s->db, 1);
    sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
    if (opts->mode == FJ_STORE_READ)
        sqlite3_progress_handler(s->db, READ_PROGRESS_OPS, read_progress, NULL);

    fj_status st = FJ_OK;
    char sql[128];
    if (opts->mode == FJ_STORE_WRITE) {
        /* WAL: readers never block the writer nor the writer them; a commit is one append to the
         * WAL, made durable per the synchronous setting (NORMAL survives a process crash, FULL
         * also power loss). */
        /* A new database gives freed pages back to the file system on request (the request log
         * is deleted about as fast as it is written; see release_free_pages in storage/sqlite/ts.c).
         * SQLite takes this only before the first table and before the switch to WAL; on an older
         * database it changes nothing until a VACUUM. */
        st = fj_sq_exec(s, "PRAGMA auto_vacuum=INCREMENTAL", err);
        int64_t dummy;
        if (st == FJ_OK)
            st = fj_sq_query_i64(s, "PRAGMA journal_mode=WAL", &dummy, err);
        if (st == FJ_OK) {
            snprintf(sql, sizeof sql, "PRAGMA synchronous=%s; PRAGMA journal_size_limit=%d", sync, CKPT_WAL_LIMIT);
            st = fj_sq_exec(s, sql, err);
        }
        /* checkpoints off the commit path (see ckpt_hook); replaces the autocheckpoint hook */
        if (st == FJ_OK)
            sqlite3_wal_hook(s->db, ckpt_hook, s);
    }
    /* A 64 MB page cache keeps the hot ends of the sample tables and their indexes in memory;
     * mmap saves a copy on reads. Foreign keys are not declared (see the migration). */
    if (st == FJ_OK)
        st = fj_sq_exec(s, "PRAGMA cache_size=-65536; PRAGMA temp_store=MEMORY; PRAGMA mmap_size=268435456", err);
    if (st == FJ_OK) {
        fj_migrator m = migrator(s);
        st = fj_migrate_check(s, &m, opts, err);
    }
    if (st != FJ_OK) {
        sq_close(s);
        return st;
    }
    *out = s;
    return FJ_OK;
}

static fj_status sq_migrate_status(fj_store *s, fj_migration_info *out, fj_err *err)
{
    fj_migrator m = migrator(s);
    out->latest = fj_migrate_latest(&m);
    return fj_migrate_current(s, &m, &out->current, NULL, err);
}

static fj_status sq_migrate_up(fj_store *s, int *applied, fj_err *err)
{
    fj_migrator m = migrator(s);
    return fj_migrate_up(s, &m, applied, err);
}

/* Databases made before fjord set auto_vacuum=INCREMENTAL (at open, before the first table) keep
 * every page they ever freed: the request log of line-protocol metrics is deleted about as fast
 * as it is written, so such a file grows far past its data. SQLite changes auto_vacuum of an
 * existing file only by a VACUUM, which rewrites the whole file (it needs that much free disk and
 * the database to itself); a file that already has it only needs its free pages released. The
 * WAL is checkpointed after, so the main file shrinks now and not at the next checkpoint. */
static fj_status sq_compact(fj_store *s, fj_compact_info *out, fj_err *err)
{
    memset(out, 0, sizeof *out);
    if (s->mode != FJ_STORE_WRITE)
        return fj_err_set(err, FJ_EINVAL, "db", "compact needs a writable handle");
    int64_t pages, page_size, mode;
    fj_status st = fj_sq_query_i64(s, "PRAGMA page_count", &pages, err);
    if (st == FJ_OK)
        st = fj_sq_query_i64(s, "PRAGMA page_size", &page_size, err);
    if (st == FJ_OK)
        st = fj_sq_query_i64(s, "PRAGMA auto_vacuum", &mode, err);
    if (st != FJ_OK)
        return st;
    out->bytes_before = pages * page_size;
    out->rewritten = mode == 0; /* NONE; 1 (FULL) and 2 (INCREMENTAL) can release pages */
    if (out->rewritten)
        st = fj_sq_exec(s, "PRAGMA auto_vacuum=INCREMENTAL; VACUUM", err);
    else
        st = fj_sq_exec(s, "PRAGMA incremental_vacuum", err);
    if (st == FJ_OK)
        st = fj_sq_exec(s, "PRAGMA wal_checkpoint(TRUNCATE)", err);
    if (st == FJ_OK)
        st = fj_sq_query_i64(s, "PRAGMA page_count", &pages, err);
    out->bytes_after = pages * page_size;
    return st;
}

/* from becomes to on disk: its data first, then the name, then the directory that holds it, so a
 * crash leaves either no dest or a whole one. */
static fj_status durable_rename(const char *from, const char *to, fj_err *err)
{
    int fd = open(from, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        if (fd >= 0)
            close(fd);
        return fj_err_set(err, FJ_EIO, "dest", "%s: %s", from, strerror(errno));
    }
    close(fd);
    if (rename(from, to) != 0)
        return fj_err_set(err, FJ_EIO, "dest", "rename to %s: %s", to, strerror(errno));
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", to);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash == dir ? (void)(dir[1] = '\0') : (void)(*slash = '\0');
    else
        snprintf(dir, sizeof dir, ".");
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        fsync(fd);
        close(fd);
    }
    return FJ_OK;
}

/* SQLite's online backup API, all pages in one step: one read transaction, so the copy is the
 * database as of its start (every commit acknowledged before it is in), and in WAL mode the
 * server's writer goes on meanwhile. A copy made in steps would restart whenever the writer
 * committed between two of them, which under steady ingest is always. */
static fj_status sq_backup(fj_store *s, const char *dest, fj_backup_info *out, fj_err *err)
{
    memset(out, 0, sizeof *out);
    if (access(dest, F_OK) == 0)
        return fj_err_set(err, FJ_EINVAL, "dest", "%s exists: a backup is written to a new file", dest);
    size_t n = strlen(dest);
    char *partial = fj_malloc(n + sizeof ".partial");
    if (!partial)
        return fj_err_set(err, FJ_ENOMEM, "dest", "out of memory");
    memcpy(partial, dest, n);
    memcpy(partial + n, ".partial", sizeof ".partial");
    unlink(partial); /* left by an interrupted backup */
    sqlite3 *copy = NULL;
    fj_status st = FJ_OK;
    int rc = sqlite3_open_v2(partial, &copy, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    sqlite3_backup *b = rc == SQLITE_OK ? sqlite3_backup_init(copy, "main", s->db, "main") : NULL;
    if (b) {
        sqlite3_busy_timeout(copy, BUSY_TIMEOUT_MS);
        rc = sqlite3_backup_step(b, -1);
        int pages = sqlite3_backup_pagecount(b);
        int finish = sqlite3_backup_finish(b);
        if (rc == SQLITE_DONE)
            rc = finish;
        int64_t page_size = 0;
        sqlite3_stmt *q = NULL;
        if (rc == SQLITE_OK && sqlite3_prepare_v2(copy, "PRAGMA page_size", -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW)
            page_size = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
        out->bytes = (int64_t)pages * page_size;
    } else if (rc == SQLITE_OK) {
        rc = sqlite3_errcode(copy);
    }
    if (rc != SQLITE_OK)
        st = fj_err_set(err, FJ_EIO, "dest", "backup to %s failed: %s", dest,
                        copy ? sqlite3_errmsg(copy) : sqlite3_errstr(rc));
    if (sqlite3_close(copy) != SQLITE_OK && st == FJ_OK)
        st = fj_err_set(err, FJ_EIO, "dest", "closing %s failed", partial);
    if (st == FJ_OK)
        st = durable_rename(partial, dest, err);
    if (st != FJ_OK)
        unlink(partial);
    fj_free(partial);
    return st;
}

/* The driver (storage/core/driver.h), in its order, a line per section: what SQLite does its own
 * way; every other function of the engine is written once over it. */
const fj_driver fj_sqlite_driver = {
    .name = "sqlite",
    .dialect = {.mark = '?', .bytewise = "", .greatest = "max", .cross = "CROSS JOIN", .real = "",
                .glob_regex = false,
                .insert_ignore_head = "INSERT OR IGNORE INTO", .insert_ignore_tail = "", .blob_type = "BLOB"},
    .layout = &fj_sq_driver_layout,
    /* a query's statements; the store's own (storage/sqlite/driver.c) */
    .begin_read = fj_sq_driver_begin_read, .end_read = fj_sq_driver_end_read, .prepare = fj_sq_driver_prepare,
    .finalize = fj_sq_driver_finalize, .exec = fj_sq_driver_exec, .rollback = fj_sq_driver_rollback,
    .writable = fj_sq_driver_writable, .run = fj_sq_driver_run,
    .accepts = sq_accepts, .open = sq_open, .close = sq_close,
    .migrate_status = sq_migrate_status, .migrate_up = sq_migrate_up,
    .compact = sq_compact, .backup = sq_backup,
    .write = fj_sq_write,
    .ts_start = fj_sq_ts_start, .ts_engine = fj_sq_ts_engine, .ts_maintain = fj_sq_maintain,
    .ts_series = fj_sq_ts_series, .ts_read = fj_sq_ts_read,
    .load_bulk = fj_sq_load_bulk,
};
