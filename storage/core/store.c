/* storage/core/store.c — the engine's door (storage/core/store.h) over the backend's driver
 * (storage/core/driver.h): closing, migrations, the file's upkeep and the write of a batch, and the
 * one answer for a capability a backend does not have. Choosing the backend by URL is
 * storage/backends.c, above the backends. */
#include "storage/core/driver.h"

/* The one answer for an optional capability of fj_driver that the backend leaves NULL. */
static fj_status lacks(const fj_store *s, const char *what, fj_err *err)
{
    const fj_driver *d = fj_driver_of(s);
    return fj_err_set(err, FJ_EINVAL, "db", "the %s backend does not %s: %s", d->name, what,
                      d->own_tools ? d->own_tools : "no such capability");
}

void fj_store_close(fj_store *s)
{
    if (s)
        fj_driver_of(s)->close(s);
}

fj_status fj_store_migrate_status(fj_store *s, fj_migration_info *out, fj_err *err)
{
    return fj_driver_of(s)->migrate_status(s, out, err);
}

fj_status fj_store_migrate_up(fj_store *s, int *applied, fj_err *err)
{
    return fj_driver_of(s)->migrate_up(s, applied, err);
}

fj_status fj_store_compact(fj_store *s, fj_compact_info *out, fj_err *err)
{
    const fj_driver *d = fj_driver_of(s);
    return d->compact ? d->compact(s, out, err) : lacks(s, "compact a file", err);
}

fj_status fj_store_backup(fj_store *s, const char *dest, fj_backup_info *out, fj_err *err)
{
    const fj_driver *d = fj_driver_of(s);
    return d->backup ? d->backup(s, dest, out, err) : lacks(s, "back up to a file", err);
}

fj_status fj_store_write(fj_store *s, fj_batch *const *batches, size_t n, fj_write_count *counts, fj_err *err)
{
    return fj_driver_of(s)->write(s, batches, n, counts, err);
}
