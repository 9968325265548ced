/* sqlite_test_db.h — temporary SQLite databases for the storage unit tests: a fresh path per test,
 * removal with the -wal and -shm files, and a one-value query straight on the file (what the test
 * checks, read past fjord's own code). Header-only; one copy per test file. */
#ifndef FJ_SQLITE_TEST_DB_H
#define FJ_SQLITE_TEST_DB_H

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

/* Removes a database file and its -wal and -shm companions; absent files are fine. */
static inline void fj_test_rm_db(const char *path)
{
    char b[600];
    unlink(path);
    snprintf(b, sizeof b, "%s-wal", path);
    unlink(b);
    snprintf(b, sizeof b, "%s-shm", path);
    unlink(b);
}

/* A path no other test of this process uses, /tmp/fj_test_<tag>_<pid>_<n><suffix>, removed. */
static inline void fj_test_db_path(char *out, size_t cap, const char *tag, const char *suffix)
{
    static int counter;
    snprintf(out, cap, "/tmp/fj_test_%s_%d_%d%s", tag, (int)getpid(), counter++, suffix);
    fj_test_rm_db(out);
}

/* The first column of the first row of sql on the file at path, or -1 when there is no row. */
static inline int64_t fj_test_q1(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

#endif
