/* storage/backends.c — the backends compiled in, and the choice among them by the database URL
 * (fj_store_open, storage/core/store.h): the one file of storage/ that names the backends, above
 * them, so that storage/core/ stays below every backend. */
#include "storage/core/driver.h"

#include "redact.h"

#include <stddef.h>

/* SQLite takes every URL the others do not, so it comes last. */
static const fj_driver *const backends[] = {
#ifdef FJ_HAVE_PG
    &fj_pg_driver,
#endif
    &fj_sqlite_driver,
};

fj_status fj_store_open(const char *url, const fj_store_opts *opts, fj_store **out, fj_err *err)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (backends[i]->accepts(url))
            return backends[i]->open(url, opts, out, err);
    char shown[1024];
    return fj_err_set(err, FJ_EINVAL, "db", "no storage backend handles database URL '%s'",
                      fj_redact_conn(url, shown, sizeof shown));
}
