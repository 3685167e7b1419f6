/* ls_meta sqlite backend: the embedded metadata store, one SQLite file.
 *
 * Schema (schema_version 1):
 *   kv(key BLOB PRIMARY KEY, val BLOB, create_rev INT, mod_rev INT, lease INT)
 *      WITHOUT ROWID                      -- BLOBs compare bytewise, as etcd keys
 *   meta(name TEXT PRIMARY KEY, ival INT) -- 'revision', 'schema_version'
 *   leases(id INTEGER PRIMARY KEY AUTOINCREMENT, ttl_ms INT, expires_at INT)
 * Keys and values are always bound as BLOBs (a TEXT would sort differently).
 *
 * Durability: journal_mode=WAL, synchronous=FULL, so a txn that returned
 * LS_OK survives power loss — an acknowledged produce depends on this commit.
 *
 * Txn: BEGIN IMMEDIATE; check compares; check leases; apply ops collecting
 * events; if anything changed, write revision+1 to meta; COMMIT; then publish
 * the events to the watch hub. Failure at any step rolls back: nothing applied.
 *
 * Threads and ownership: ONE connection, used only under mu (the connection
 * is opened SQLITE_OPEN_NOMUTEX; mu serializes it). mu also guards rev (the
 * cached store revision; the file has a single writer: this process) and
 * the connection state. Publishing happens under mu, so the hub sees revisions in order.
 * A single connection costs read concurrency, which metadata traffic here
 * does not need; it buys a simple lock story and in-order watch events.
 * An expirer thread deletes expired leases' keys (one revision per lease),
 * waking at the earliest expiry (at most 1 s later, or on grant). Lease
 * expiry uses the wall clock (expires_at is stored), so a lease of a crashed
 * process still expires after a restart; a wall-clock jump skews expiry.
 * Watch history does not survive a restart: after open, watches can start
 * from the current revision onward (older after_rev is LS_ERANGE). */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/thread.h"
#include "meta/meta_backend.h"

#define SQ_SCHEMA_VERSION 1
#define SQ_BUSY_TIMEOUT_MS 5000
#define SQ_EXPIRER_MAX_SLEEP_MS 1000
#define SQ_EXPIRE_BATCH 64

enum {
    SQ_BEGIN,
    SQ_COMMIT,
    SQ_ROLLBACK,
    SQ_GET,
    SQ_SCAN_ASC,      /* bounded [start, end) */
    SQ_SCAN_ASC_OPEN, /* [start, +inf) */
    SQ_SCAN_DESC,
    SQ_SCAN_DESC_OPEN,
    SQ_PUT,
    SQ_DEL,
    SQ_DEL_RANGE,
    SQ_DEL_RANGE_OPEN,
    SQ_SET_REV,
    SQ_LEASE_GET,
    SQ_LEASE_INSERT,
    SQ_LEASE_TOUCH,
    SQ_LEASE_DELETE,
    SQ_LEASE_DELETE_KEYS,
    SQ_LEASE_EXPIRED,
    SQ_LEASE_NEXT,
    SQ_NSTMT
};

static const char *const sq_sql[SQ_NSTMT] = {
    [SQ_BEGIN] = "BEGIN IMMEDIATE",
    [SQ_COMMIT] = "COMMIT",
    [SQ_ROLLBACK] = "ROLLBACK",
    [SQ_GET] = "SELECT val, create_rev, mod_rev, lease FROM kv WHERE key = ?1",
    [SQ_SCAN_ASC] = "SELECT key, val, create_rev, mod_rev, lease FROM kv "
                    "WHERE key >= ?1 AND key < ?2 ORDER BY key ASC LIMIT ?3",
    [SQ_SCAN_ASC_OPEN] = "SELECT key, val, create_rev, mod_rev, lease FROM kv "
                         "WHERE key >= ?1 ORDER BY key ASC LIMIT ?2",
    [SQ_SCAN_DESC] = "SELECT key, val, create_rev, mod_rev, lease FROM kv "
                     "WHERE key >= ?1 AND key < ?2 ORDER BY key DESC LIMIT ?3",
    [SQ_SCAN_DESC_OPEN] = "SELECT key, val, create_rev, mod_rev, lease FROM kv "
                          "WHERE key >= ?1 ORDER BY key DESC LIMIT ?2",
    [SQ_PUT] = "INSERT INTO kv(key, val, create_rev, mod_rev, lease) VALUES(?1, ?2, ?3, ?3, ?4) "
               "ON CONFLICT(key) DO UPDATE SET val = excluded.val, mod_rev = excluded.mod_rev, "
               "lease = excluded.lease RETURNING create_rev",
    [SQ_DEL] = "DELETE FROM kv WHERE key = ?1",
    [SQ_DEL_RANGE] = "DELETE FROM kv WHERE key >= ?1 AND key < ?2 RETURNING key",
    [SQ_DEL_RANGE_OPEN] = "DELETE FROM kv WHERE key >= ?1 RETURNING key",
    [SQ_SET_REV] = "UPDATE meta SET ival = ?1 WHERE name = 'revision'",
    [SQ_LEASE_GET] = "SELECT expires_at FROM leases WHERE id = ?1",
    [SQ_LEASE_INSERT] = "INSERT INTO leases(ttl_ms, expires_at) VALUES(?1, ?2)",
    [SQ_LEASE_TOUCH] =
        "UPDATE leases SET expires_at = ?2 + ttl_ms WHERE id = ?1 AND expires_at > ?2",
    [SQ_LEASE_DELETE] = "DELETE FROM leases WHERE id = ?1",
    [SQ_LEASE_DELETE_KEYS] = "DELETE FROM kv WHERE lease = ?1 AND lease != 0 RETURNING key",
    [SQ_LEASE_EXPIRED] =
        "SELECT id FROM leases WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2",
    [SQ_LEASE_NEXT] = "SELECT MIN(expires_at) FROM leases",
};

static const char sq_schema[] =
    "CREATE TABLE IF NOT EXISTS kv(key BLOB PRIMARY KEY, val BLOB NOT NULL,"
    " create_rev INTEGER NOT NULL, mod_rev INTEGER NOT NULL, lease INTEGER NOT NULL DEFAULT 0)"
    " WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS kv_by_lease ON kv(lease) WHERE lease != 0;"
    "CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, ival INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS leases(id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " ttl_ms INTEGER NOT NULL, expires_at INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO meta(name, ival) VALUES('revision', 0), ('schema_version', 1);";

typedef struct sq_meta {
    ls_meta_t base;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* wakes the expirer (CLOCK_MONOTONIC) */
    pthread_t expirer;
    int stop;
    sqlite3 *db;
    sqlite3_stmt *st[SQ_NSTMT];
    int64_t rev;
    char *path;
    ls_meta_hub_t *hub;
} sq_meta_t;

typedef struct sq_events {
    ls_meta_event_t *v;
    size_t n, cap;
} sq_events_t;

/* Records the SQLite error and maps it to a status. Caller holds mu. */
static ls_status sq_fail(sq_meta_t *s, int rc, const char *what)
{
    snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "sqlite %s: %s: %s (rc %d)", s->path, what,
             sqlite3_errmsg(s->db), rc);
    LS_ERROR("meta", "%s", ls_meta_errbuf());
    switch (rc & 0xff) {
    case SQLITE_FULL: return LS_ENOSPC;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return LS_EAGAIN;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return LS_ECORRUPT;
    default: return LS_EIO;
    }
}

static sqlite3_stmt *sq_stmt(sq_meta_t *s, int which)
{
    sqlite3_stmt *st = s->st[which];
    sqlite3_reset(st);
    return st;
}

static void sq_bind_blob(sqlite3_stmt *st, int idx, const void *p, size_t n)
{
    /* a zero-length sqlite3_bind_blob with a NULL pointer would bind SQL NULL */
    if (!n)
        sqlite3_bind_zeroblob(st, idx, 0);
    else
        sqlite3_bind_blob64(st, idx, p, n, SQLITE_STATIC);
}

static void sq_column_kv(sqlite3_stmt *st, int kcol, int vcol, ls_kv_t *kv)
{
    const void *k = sqlite3_column_blob(st, kcol);
    size_t klen = (size_t)sqlite3_column_bytes(st, kcol);
    const void *v = sqlite3_column_blob(st, vcol);
    size_t vlen = (size_t)sqlite3_column_bytes(st, vcol);
    ls_kv_set(kv, k, klen, v, vlen);
}

/* Runs a statement that returns no rows. */
static int sq_exec(sq_meta_t *s, int which)
{
    int rc = sqlite3_step(s->st[which]);
    sqlite3_reset(s->st[which]);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static void sq_rollback(sq_meta_t *s)
{
    sqlite3_stmt *st = sq_stmt(s, SQ_ROLLBACK);
    sqlite3_step(st);
    sqlite3_reset(st);
}

static ls_meta_event_t *sq_event(sq_events_t *evs, ls_meta_ev_kind kind)
{
    if (evs->n == evs->cap) {
        evs->cap = evs->cap ? evs->cap * 2 : 8;
        evs->v = ls_realloc(evs->v, evs->cap * sizeof *evs->v);
    }
    ls_meta_event_t *ev = &evs->v[evs->n++];
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    return ev;
}

static void sq_events_free(sq_events_t *evs)
{
    for (size_t i = 0; i < evs->n; i++)
        ls_kv_free(&evs->v[i].kv);
    ls_free(evs->v);
    evs->v = NULL;
    evs->n = evs->cap = 0;
}

static int sq_event_key_cmp(const void *a, const void *b)
{
    const ls_kv_t *x = &((const ls_meta_event_t *)a)->kv, *y = &((const ls_meta_event_t *)b)->kv;
    return ls_meta_key_cmp(x->key, x->klen, y->key, y->klen);
}

/* Steps a DELETE ... RETURNING key, adding DEL events (in key order). */
static int sq_collect_deletes(sqlite3_stmt *st, int64_t rev, sq_events_t *evs)
{
    size_t first = evs->n;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        ls_meta_event_t *ev = sq_event(evs, LS_META_EV_DEL);
        ls_kv_set(&ev->kv, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), NULL,
                  0);
        ev->kv.mod_rev = rev;
    }
    sqlite3_reset(st);
    if (evs->n - first > 1) qsort(evs->v + first, evs->n - first, sizeof *evs->v, sq_event_key_cmp);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Ends a write txn: bumps the revision if events exist, commits, publishes.
 * On failure rolls back and frees the events. Caller holds mu, txn open. */
static ls_status sq_finish(sq_meta_t *s, sq_events_t *evs)
{
    int rc;
    if (evs->n) {
        sqlite3_stmt *st = sq_stmt(s, SQ_SET_REV);
        sqlite3_bind_int64(st, 1, s->rev + 1);
        if ((rc = sq_exec(s, SQ_SET_REV)) != SQLITE_OK) goto rollback;
    }
    if ((rc = sq_exec(s, SQ_COMMIT)) != SQLITE_OK) goto rollback;
    if (evs->n) {
        s->rev++;
        ls_meta_hub_publish(s->hub, s->rev, evs->v, evs->n);
    } else {
        ls_free(evs->v);
    }
    evs->v = NULL;
    evs->n = evs->cap = 0;
    return LS_OK;

rollback:;
    ls_status st = sq_fail(s, rc, "commit");
    sq_rollback(s);
    sq_events_free(evs);
    return st;
}

static ls_status sq_get(ls_meta_t *m, const void *key, size_t klen, ls_kv_t *out)
{
    sq_meta_t *s = (sq_meta_t *)m;
    if (!key || !klen) return LS_EINVAL;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = sq_stmt(s, SQ_GET);
    sq_bind_blob(st, 1, key, klen);
    ls_status res = LS_ENOTFOUND;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        ls_kv_set(out, key, klen, sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0));
        out->create_rev = sqlite3_column_int64(st, 1);
        out->mod_rev = sqlite3_column_int64(st, 2);
        out->lease = sqlite3_column_int64(st, 3);
        res = LS_OK;
    } else if (rc != SQLITE_DONE) {
        res = sq_fail(s, rc, "get");
    }
    sqlite3_reset(st);
    pthread_mutex_unlock(&s->mu);
    return res;
}

static ls_status sq_scan(ls_meta_t *m, const void *start, size_t slen, const void *end, size_t elen,
                         size_t limit, int reverse, ls_kvlist_t *out)
{
    sq_meta_t *s = (sq_meta_t *)m;
    memset(out, 0, sizeof *out);
    int bounded = end && elen;
    int which = reverse ? (bounded ? SQ_SCAN_DESC : SQ_SCAN_DESC_OPEN)
                        : (bounded ? SQ_SCAN_ASC : SQ_SCAN_ASC_OPEN);
    /* ask for one row more than the limit to learn whether there are more */
    sqlite3_int64 want = limit && limit < (size_t)INT64_MAX ? (sqlite3_int64)limit + 1 : -1;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = sq_stmt(s, which);
    sq_bind_blob(st, 1, start, start ? slen : 0);
    if (bounded) sq_bind_blob(st, 2, end, elen);
    sqlite3_bind_int64(st, bounded ? 3 : 2, want);
    size_t cap = 0;
    int rc;
    ls_status res = LS_OK;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (limit && out->n == limit) {
            out->more = 1;
            break;
        }
        if (out->n == cap) {
            cap = cap ? cap * 2 : 16;
            out->v = ls_realloc(out->v, cap * sizeof *out->v);
        }
        ls_kv_t *kv = &out->v[out->n++];
        sq_column_kv(st, 0, 1, kv);
        kv->create_rev = sqlite3_column_int64(st, 2);
        kv->mod_rev = sqlite3_column_int64(st, 3);
        kv->lease = sqlite3_column_int64(st, 4);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        res = sq_fail(s, rc, "scan");
        ls_kvlist_free(out);
    }
    sqlite3_reset(st);
    out->revision = s->rev;
    pthread_mutex_unlock(&s->mu);
    return res;
}

/* 1 if the compare holds, 0 if not, -rc on error. Caller holds mu. */
static int sq_cmp_holds(sq_meta_t *s, const ls_meta_cmp_t *c)
{
    sqlite3_stmt *st = sq_stmt(s, SQ_GET);
    sq_bind_blob(st, 1, c->key, c->klen);
    int rc = sqlite3_step(st);
    int holds;
    if (rc == SQLITE_ROW) {
        if (c->kind == LS_META_CMP_MOD_REV)
            holds = sqlite3_column_int64(st, 2) == c->rev;
        else
            holds = ls_meta_key_cmp(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
                                    c->val ? c->val : "", c->vlen) == 0;
    } else if (rc == SQLITE_DONE) {
        holds = c->kind == LS_META_CMP_MOD_REV && c->rev == 0;
    } else {
        holds = -rc;
    }
    sqlite3_reset(st);
    return holds;
}

/* 1 if the lease exists and has not expired, 0 if not, -rc on error. */
static int sq_lease_live(sq_meta_t *s, int64_t lease, int64_t now)
{
    sqlite3_stmt *st = sq_stmt(s, SQ_LEASE_GET);
    sqlite3_bind_int64(st, 1, lease);
    int rc = sqlite3_step(st);
    int live = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) > now : rc == SQLITE_DONE ? 0 : -rc;
    sqlite3_reset(st);
    return live;
}

static int sq_apply(sq_meta_t *s, const ls_meta_op_t *op, int64_t rev, sq_events_t *evs)
{
    sqlite3_stmt *st;
    int rc;
    switch (op->kind) {
    case LS_META_OP_PUT:
        st = sq_stmt(s, SQ_PUT);
        sq_bind_blob(st, 1, op->key, op->klen);
        sq_bind_blob(st, 2, op->val, op->vlen);
        sqlite3_bind_int64(st, 3, rev);
        sqlite3_bind_int64(st, 4, op->lease);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            ls_meta_event_t *ev = sq_event(evs, LS_META_EV_PUT);
            ls_kv_set(&ev->kv, op->key, op->klen, op->val, op->vlen);
            ev->kv.create_rev = sqlite3_column_int64(st, 0);
            ev->kv.mod_rev = rev;
            ev->kv.lease = op->lease;
            rc = sqlite3_step(st);
        }
        sqlite3_reset(st);
        return rc == SQLITE_DONE ? SQLITE_OK : rc;
    case LS_META_OP_DEL:
        st = sq_stmt(s, SQ_DEL);
        sq_bind_blob(st, 1, op->key, op->klen);
        rc = sq_exec(s, SQ_DEL);
        if (rc == SQLITE_OK && sqlite3_changes(s->db) > 0) {
            ls_meta_event_t *ev = sq_event(evs, LS_META_EV_DEL);
            ls_kv_set(&ev->kv, op->key, op->klen, NULL, 0);
            ev->kv.mod_rev = rev;
        }
        return rc;
    case LS_META_OP_DEL_RANGE: {
        int bounded = op->end && op->elen;
        st = sq_stmt(s, bounded ? SQ_DEL_RANGE : SQ_DEL_RANGE_OPEN);
        sq_bind_blob(st, 1, op->key, op->key ? op->klen : 0);
        if (bounded) sq_bind_blob(st, 2, op->end, op->elen);
        return sq_collect_deletes(st, rev, evs);
    }
    }
    return SQLITE_MISUSE;
}

static ls_status sq_txn(ls_meta_t *m, const ls_meta_cmp_t *cmps, size_t ncmp,
                        const ls_meta_op_t *ops, size_t nops, int64_t *rev_out)
{
    sq_meta_t *s = (sq_meta_t *)m;
    ls_status res = ls_meta_txn_validate(m, cmps, ncmp, ops, nops);
    if (res != LS_OK) return res;
    sq_events_t evs = {0};
    pthread_mutex_lock(&s->mu);
    int rc = sq_exec(s, SQ_BEGIN);
    if (rc != SQLITE_OK) {
        res = sq_fail(s, rc, "begin");
        goto unlock;
    }
    for (size_t i = 0; i < ncmp; i++) {
        int holds = sq_cmp_holds(s, &cmps[i]);
        if (holds < 0) {
            res = sq_fail(s, -holds, "compare");
            goto rollback;
        }
        if (!holds) {
            res = LS_ECONFLICT;
            goto rollback;
        }
    }
    int64_t now = ls_clock_wall_ms();
    for (size_t i = 0; i < nops; i++) {
        if (ops[i].kind != LS_META_OP_PUT || !ops[i].lease) continue;
        int live = sq_lease_live(s, ops[i].lease, now);
        if (live < 0) {
            res = sq_fail(s, -live, "lease lookup");
            goto rollback;
        }
        if (!live) {
            snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "lease %lld not found",
                     (long long)ops[i].lease);
            res = LS_ENOTFOUND;
            goto rollback;
        }
    }
    for (size_t i = 0; i < nops; i++) {
        rc = sq_apply(s, &ops[i], s->rev + 1, &evs);
        if (rc != SQLITE_OK) {
            res = sq_fail(s, rc, "apply");
            goto rollback;
        }
    }
    res = sq_finish(s, &evs);
    goto unlock;

rollback:
    sq_rollback(s);
    sq_events_free(&evs);
unlock:
    if (res == LS_OK && rev_out) *rev_out = s->rev;
    pthread_mutex_unlock(&s->mu);
    return res;
}

static ls_status sq_lease_grant(ls_meta_t *m, int64_t ttl_ms, int64_t *lease_out)
{
    sq_meta_t *s = (sq_meta_t *)m;
    if (ttl_ms <= 0) return LS_EINVAL;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = sq_stmt(s, SQ_LEASE_INSERT);
    sqlite3_bind_int64(st, 1, ttl_ms);
    sqlite3_bind_int64(st, 2, ls_clock_wall_ms() + ttl_ms);
    int rc = sq_exec(s, SQ_LEASE_INSERT);
    ls_status res = LS_OK;
    if (rc != SQLITE_OK)
        res = sq_fail(s, rc, "lease grant");
    else
        *lease_out = sqlite3_last_insert_rowid(s->db);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return res;
}

static ls_status sq_lease_keepalive(ls_meta_t *m, int64_t lease)
{
    sq_meta_t *s = (sq_meta_t *)m;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st = sq_stmt(s, SQ_LEASE_TOUCH);
    sqlite3_bind_int64(st, 1, lease);
    sqlite3_bind_int64(st, 2, ls_clock_wall_ms());
    int rc = sq_exec(s, SQ_LEASE_TOUCH);
    ls_status res = LS_OK;
    if (rc != SQLITE_OK)
        res = sq_fail(s, rc, "lease keepalive");
    else if (sqlite3_changes(s->db) == 0)
        res = LS_ENOTFOUND;
    pthread_mutex_unlock(&s->mu);
    return res;
}

/* Deletes the lease and its keys in one txn (one revision). Caller holds mu. */
static ls_status sq_revoke_locked(sq_meta_t *s, int64_t lease)
{
    sq_events_t evs = {0};
    ls_status res;
    int rc = sq_exec(s, SQ_BEGIN);
    if (rc != SQLITE_OK) return sq_fail(s, rc, "begin");
    sqlite3_stmt *st = sq_stmt(s, SQ_LEASE_DELETE);
    sqlite3_bind_int64(st, 1, lease);
    if ((rc = sq_exec(s, SQ_LEASE_DELETE)) != SQLITE_OK) {
        res = sq_fail(s, rc, "lease revoke");
        goto rollback;
    }
    if (sqlite3_changes(s->db) == 0) {
        res = LS_ENOTFOUND;
        goto rollback;
    }
    st = sq_stmt(s, SQ_LEASE_DELETE_KEYS);
    sqlite3_bind_int64(st, 1, lease);
    if ((rc = sq_collect_deletes(st, s->rev + 1, &evs)) != SQLITE_OK) {
        res = sq_fail(s, rc, "lease revoke keys");
        goto rollback;
    }
    return sq_finish(s, &evs);

rollback:
    sq_rollback(s);
    sq_events_free(&evs);
    return res;
}

static ls_status sq_lease_revoke(ls_meta_t *m, int64_t lease)
{
    sq_meta_t *s = (sq_meta_t *)m;
    pthread_mutex_lock(&s->mu);
    ls_status res = sq_revoke_locked(s, lease);
    pthread_mutex_unlock(&s->mu);
    return res;
}

/* Revokes leases past expiry; returns the wall time of the next expiry (or 0). */
static int64_t sq_expire_due(sq_meta_t *s, int64_t now)
{
    int64_t ids[SQ_EXPIRE_BATCH];
    int n;
    do {
        sqlite3_stmt *st = sq_stmt(s, SQ_LEASE_EXPIRED);
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_int(st, 2, SQ_EXPIRE_BATCH);
        n = 0;
        while (n < SQ_EXPIRE_BATCH && sqlite3_step(st) == SQLITE_ROW)
            ids[n++] = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        for (int i = 0; i < n; i++) {
            ls_status res = sq_revoke_locked(s, ids[i]);
            if (res != LS_OK && res != LS_ENOTFOUND)
                return now + SQ_EXPIRER_MAX_SLEEP_MS; /* logged; retry later */
        }
    } while (n == SQ_EXPIRE_BATCH);
    sqlite3_stmt *st = sq_stmt(s, SQ_LEASE_NEXT);
    int64_t next = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        next = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return next;
}

static void *sq_expirer(void *arg)
{
    sq_meta_t *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        int64_t now = ls_clock_wall_ms();
        int64_t next = sq_expire_due(s, now);
        int64_t sleep_ms = SQ_EXPIRER_MAX_SLEEP_MS;
        if (next && next - now < sleep_ms) sleep_ms = next - now > 0 ? next - now : 1;
        ls_cond_wait_until(&s->cv, &s->mu, ls_clock_mono_ms() + sleep_ms);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static ls_status sq_watch(ls_meta_t *m, const void *prefix, size_t plen, int64_t after_rev,
                          ls_meta_watch_cb cb, void *arg, ls_meta_watch_t **out)
{
    return ls_meta_hub_watch(((sq_meta_t *)m)->hub, prefix, plen, after_rev, cb, arg, out);
}

static void sq_watch_cancel(ls_meta_t *m, ls_meta_watch_t *w)
{
    ls_meta_hub_cancel(((sq_meta_t *)m)->hub, w);
}

static void sq_free(sq_meta_t *s)
{
    for (int i = 0; i < SQ_NSTMT; i++)
        sqlite3_finalize(s->st[i]);
    if (s->db && sqlite3_close(s->db) != SQLITE_OK)
        LS_WARN("meta", "sqlite %s: close: %s", s->path, sqlite3_errmsg(s->db));
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    ls_free(s->path);
    ls_free(s);
}

static void sq_close(ls_meta_t *m)
{
    sq_meta_t *s = (sq_meta_t *)m;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->expirer, NULL);
    ls_meta_hub_free(s->hub);
    sq_free(s);
}

static const ls_meta_ops_t sq_ops = {
    .name = "sqlite",
    .max_txn_ops = LS_META_MAX_TXN_OPS,
    .get = sq_get,
    .scan = sq_scan,
    .txn = sq_txn,
    .lease_grant = sq_lease_grant,
    .lease_keepalive = sq_lease_keepalive,
    .lease_revoke = sq_lease_revoke,
    .watch = sq_watch,
    .watch_cancel = sq_watch_cancel,
    .close = sq_close,
};

static int sq_pragma_text(sqlite3 *db, const char *sql, char *out, size_t cap)
{
    sqlite3_stmt *st;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return 0;
}

static int64_t sq_meta_int(sqlite3 *db, const char *name, int64_t dflt)
{
    sqlite3_stmt *st;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, "SELECT ival FROM meta WHERE name = ?1", -1, &st, NULL) != SQLITE_OK)
        return dflt;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Creates the directories above a file path (the db file itself excluded). */
static void sq_mkdirs(const char *path)
{
    char *p = ls_strdup(path);
    for (char *q = p + 1; *q; q++) {
        if (*q != '/') continue;
        *q = 0;
        mkdir(p, 0755); /* errors surface when SQLite opens the file */
        *q = '/';
    }
    ls_free(p);
}

/* Why the OS refuses to open or create the database file, 0 when it does
 * not: SQLite's own text ("unable to open database file") hides it, and its
 * last system errno may come from a probe of another file. */
static int sq_open_errno(const char *path)
{
    if (access(path, R_OK | W_OK) == 0) return 0;
    if (errno != ENOENT) return errno;
    char *dir = ls_strdup(path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    int e = access(slash ? (*dir ? dir : "/") : ".", W_OK | X_OK) == 0 ? 0 : errno;
    ls_free(dir);
    return e;
}

ls_meta_t *ls_meta_sqlite_open(const char *path, char *err, size_t errlen)
{
    char eb[128];
    if (!err || errlen == 0) err = eb, errlen = sizeof eb;
    err[0] = 0;
    if (!path || !*path) {
        snprintf(err, errlen, "sqlite metadata path is empty");
        return NULL;
    }
    sq_meta_t *s = LS_NEW(sq_meta_t);
    s->base.ops = &sq_ops;
    s->path = ls_strdup(path);
    pthread_mutex_init(&s->mu, NULL);
    ls_cond_init_mono(&s->cv);

    sq_mkdirs(path);
    int rc = sqlite3_open_v2(
        path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        int oserr = sq_open_errno(path);
        snprintf(err, errlen, "sqlite %s: open: %s%s%s", path,
                 s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc), oserr ? ": " : "",
                 oserr ? strerror(oserr) : "");
        goto fail;
    }
    sqlite3_busy_timeout(s->db, SQ_BUSY_TIMEOUT_MS);
    char mode[16];
    if (sq_pragma_text(s->db, "PRAGMA journal_mode=WAL", mode, sizeof mode) != 0 ||
        strcmp(mode, "wal") != 0) {
        snprintf(err, errlen, "sqlite %s: cannot enable WAL journal mode (%s): %s", path, mode,
                 sqlite3_errmsg(s->db));
        goto fail;
    }
    char *emsg = NULL;
    if (sqlite3_exec(s->db, "PRAGMA synchronous=FULL", NULL, NULL, &emsg) != SQLITE_OK ||
        sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, &emsg) != SQLITE_OK) {
        snprintf(err, errlen, "sqlite %s: setup: %s", path, emsg ? emsg : "?");
        sqlite3_free(emsg);
        goto fail;
    }
    if (sqlite3_exec(s->db, sq_schema, NULL, NULL, &emsg) != SQLITE_OK ||
        sqlite3_exec(s->db, "COMMIT", NULL, NULL, &emsg) != SQLITE_OK) {
        snprintf(err, errlen, "sqlite %s: schema: %s", path, emsg ? emsg : "?");
        sqlite3_free(emsg);
        goto fail;
    }
    int64_t version = sq_meta_int(s->db, "schema_version", -1);
    if (version != SQ_SCHEMA_VERSION) {
        snprintf(err, errlen, "sqlite %s: schema version %lld, this build reads %d", path,
                 (long long)version, SQ_SCHEMA_VERSION);
        goto fail;
    }
    s->rev = sq_meta_int(s->db, "revision", -1);
    if (s->rev < 0) {
        snprintf(err, errlen, "sqlite %s: store revision missing", path);
        goto fail;
    }
    for (int i = 0; i < SQ_NSTMT; i++) {
        if (sqlite3_prepare_v3(s->db, sq_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL) !=
            SQLITE_OK) {
            snprintf(err, errlen, "sqlite %s: prepare '%s': %s", path, sq_sql[i],
                     sqlite3_errmsg(s->db));
            goto fail;
        }
    }
    s->hub = ls_meta_hub_new(s->rev, LS_META_HUB_HISTORY_BYTES);
    if (ls_thread_start(&s->expirer, "ls-sqlite-expiry", sq_expirer, s) != 0) {
        snprintf(err, errlen, "sqlite %s: cannot start the lease expirer", path);
        ls_meta_hub_free(s->hub);
        goto fail;
    }
    LS_INFO("meta", "sqlite %s: open at revision %lld", path, (long long)s->rev);
    return &s->base;

fail:
    sq_free(s);
    return NULL;
}
