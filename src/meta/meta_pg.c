/* ls_meta PostgreSQL backend: metadata in tables of one PostgreSQL database,
 * shared by every broker pointed at it (a cluster, as etcd).
 *
 * Schema (schema_version 1; docs/FORMATS.md):
 *   ls_kv(key BYTEA PRIMARY KEY, val BYTEA, create_rev, mod_rev, lease BIGINT)
 *       -- bytea compares bytewise (memcmp, shorter first), as etcd keys
 *   ls_meta(name TEXT PRIMARY KEY, ival BIGINT)
 *       -- 'revision' (the store revision), 'compacted' (events pruned up to
 *          it), 'schema_version'
 *   ls_leases(id BIGSERIAL PRIMARY KEY, ttl_ms, expires_at BIGINT)
 *       -- expires_at in the SERVER's clock (ms), so brokers' clocks do not matter
 *   ls_events(rev, seq, kind, key, val, create_rev, lease; PRIMARY KEY(rev, seq))
 *       -- every change, for watchers; pruned to the newest PG_EVENTS_KEEP revisions
 *
 * Invariant (writes): every write txn first takes `SELECT ... FROM ls_meta
 * WHERE name = 'revision' FOR UPDATE`. That one row lock serializes all
 * writers of all brokers, so under READ COMMITTED each later statement of the
 * txn sees every earlier commit: compares, lease checks and the revision+1 it
 * writes are exact, and revisions commit in order (no gaps, no reordering).
 * Reads take no lock (a statement sees one committed state).
 *
 * Txn: BEGIN; lock revision; compares; lease checks; each op is one
 * statement that also inserts its events (DELETE/INSERT ... RETURNING feeding
 * an INSERT INTO ls_events); if any event was written: revision+1 and
 * pg_notify('ls_meta', rev); COMMIT. Any failure rolls back: nothing applied.
 *
 * Leases: any broker's backend reaps expired leases (its background thread,
 * every PG_TICK_MS): the lease row is deleted with the keys on it in one
 * revision, under the revision lock, and only if still expired, so a lease of
 * a broker that died expires while any broker runs, and two reapers never
 * both delete it.
 *
 * Watches: the background thread owns a second connection that LISTENs on
 * 'ls_meta'; on a notification (or every PG_TICK_MS, so a lost notification
 * costs latency, not events) it reads each watcher's events from ls_events
 * after the watcher's position, in (rev, seq) order, and calls it once per
 * revision. Positions live in this process, events in the database, so a
 * reconnect loses nothing. A watcher behind the pruned range gets
 * cb(arg, NULL, 0) once; a watch asked to start there is LS_ERANGE.
 *
 * Threads: calls from any thread share one connection under mu (libpq
 * connections must not be used by two threads at once); the background
 * thread uses its own connection. wmu guards the watcher list; busy marks the
 * watcher whose callback runs (cancel waits for it, except from inside it).
 *
 * Errors: a lost connection is reset on the next call; a call that fails
 * before COMMIT was sent is LS_EAGAIN (not applied), a COMMIT whose answer was
 * lost is LS_EIO (maybe applied), as the etcd backend. A statement without an
 * answer within PG_REQUEST_TIMEOUT_MS drops the connection (same mapping); the
 * server ends a session idle in a transaction for 10 s, so a broker stopped
 * mid-txn does not hold the revision lock. Messages name host:port. */
#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/thread.h"
#include "meta/meta_backend.h"
#include "meta/meta_pg.h"

#define PG_SCHEMA_VERSION 1
#define PG_TICK_MS 200
#define PG_REQUEST_TIMEOUT_MS 5000
#define PG_RETRY_MS 1000
#define PG_EVENTS_KEEP 100000 /* revisions of watch history kept */
#define PG_WATCH_BATCH 1000
#define PG_REAP_BATCH 64
#define PG_NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"

static const char pg_schema[] =
    "SELECT pg_advisory_xact_lock(7355608);"
    "CREATE TABLE IF NOT EXISTS ls_kv(key BYTEA PRIMARY KEY, val BYTEA NOT NULL,"
    " create_rev BIGINT NOT NULL, mod_rev BIGINT NOT NULL, lease BIGINT NOT NULL DEFAULT 0);"
    "CREATE INDEX IF NOT EXISTS ls_kv_by_lease ON ls_kv(lease) WHERE lease <> 0;"
    "CREATE TABLE IF NOT EXISTS ls_meta(name TEXT PRIMARY KEY, ival BIGINT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS ls_leases(id BIGSERIAL PRIMARY KEY, ttl_ms BIGINT NOT NULL,"
    " expires_at BIGINT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS ls_events(rev BIGINT NOT NULL, seq INT NOT NULL,"
    " kind SMALLINT NOT NULL, key BYTEA NOT NULL, val BYTEA, create_rev BIGINT NOT NULL,"
    " lease BIGINT NOT NULL, PRIMARY KEY(rev, seq));"
    "INSERT INTO ls_meta(name, ival) VALUES('revision', 0), ('compacted', 0),"
    " ('schema_version', 1) ON CONFLICT (name) DO NOTHING;";

typedef struct pg_conn {
    PGconn *c;
} pg_conn_t;

struct ls_meta_watch {
    struct ls_meta_watch *next;
    uint8_t *prefix, *end;
    size_t plen, elen; /* elen 0: no upper bound */
    int64_t pos;       /* last revision delivered */
    ls_meta_watch_cb cb;
    void *arg;
    int round;     /* the background round that last served it */
    int cancelled; /* cancelled from inside its callback: the thread frees it */
    int dead;      /* told it was compacted: nothing more */
};

typedef struct pg_meta {
    ls_meta_t base;
    char where[160];         /* "postgresql host:port/db", for messages */
    const char **kw, **vals; /* PQconnectdbParams arguments */
    pthread_mutex_t mu;      /* guards conn */
    PGconn *conn;
    pthread_mutex_t wmu; /* guards watchers, busy, stop */
    pthread_cond_t idle;
    ls_meta_watch_t *watchers, *busy;
    int stop, round;
    int wake[2]; /* a pipe: wakes the thread for a new watcher or stop */
    pthread_t thread;
    PGconn *bg; /* the background thread's connection */
} pg_meta_t;

/* ---- connections and errors ---- */

static ls_status pg_err(pg_meta_t *p, PGconn *c, const char *what, ls_status st)
{
    char msg[200];
    snprintf(msg, sizeof msg, "%s", c ? PQerrorMessage(c) : "no connection");
    msg[strcspn(msg, "\n")] = 0;
    snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "%.80s: %.40s: %.120s", p->where, what, msg);
    LS_ERROR("meta", "%s", ls_meta_errbuf());
    return st;
}

/* Server notices (e.g. "terminating connection due to immediate shutdown")
 * go to the broker's log instead of libpq's default, stderr. */
static void pg_notice(void *arg, const char *msg)
{
    pg_meta_t *p = arg;
    LS_WARN("meta", "%s: server says: %.*s", p->where, (int)strcspn(msg, "\n"), msg);
}

/* A live connection in *c (connects or resets as needed); LS_EAGAIN if the
 * server cannot be reached. */
static ls_status pg_ready(pg_meta_t *p, PGconn **c)
{
    if (*c && PQstatus(*c) == CONNECTION_OK) return LS_OK;
    if (*c) {
        PQreset(*c);
    } else {
        *c = PQconnectdbParams(p->kw, p->vals, 0);
        if (*c) PQsetNoticeProcessor(*c, pg_notice, p);
    }
    if (!*c || PQstatus(*c) != CONNECTION_OK) return pg_err(p, *c, "connect", LS_EAGAIN);
    return LS_OK;
}

/* The status of a failed statement: transient (connection lost, serialization
 * failure, deadlock) is LS_EAGAIN, anything else LS_EIO. */
static ls_status pg_res_fail(pg_meta_t *p, PGconn *c, PGresult *r, const char *what)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    int transient = PQstatus(c) != CONNECTION_OK || !state || !strncmp(state, "08", 2) ||
                    !strcmp(state, "40001") || !strcmp(state, "40P01") || !strncmp(state, "57P", 3);
    if (state && !strcmp(state, "53100")) return pg_err(p, c, what, LS_ENOSPC);
    return pg_err(p, c, what, transient ? LS_EAGAIN : LS_EIO);
}

/* Sends one statement and waits at most PG_REQUEST_TIMEOUT_MS for its
 * answer (PQexecParams would wait forever on a server that stopped answering
 * with the connection still open). On timeout the socket is shut down, so the
 * connection reads as broken (reset on the next call) and the statement's
 * fate is unknown: the caller's mapping makes that LS_EAGAIN, or LS_EIO for a
 * COMMIT. Returns the last result (NULL only when sending failed). */
static PGresult *pg_run(PGconn *c, const char *sql, int n, const char *const *vals, const int *lens,
                        const int *fmts)
{
    if (!PQsendQueryParams(c, sql, n, NULL, vals, lens, fmts, 1)) return NULL;
    int64_t deadline = ls_clock_mono_ms() + PG_REQUEST_TIMEOUT_MS;
    while (PQisBusy(c)) {
        int64_t left = deadline - ls_clock_mono_ms();
        struct pollfd pf = {.fd = PQsocket(c), .events = POLLIN};
        int rc = left > 0 ? poll(&pf, 1, (int)left) : 0;
        if (rc < 0 && errno == EINTR) continue;
        if (rc == 0) {
            LS_WARN("meta", "postgresql: no answer within %d ms; dropping the connection",
                    PG_REQUEST_TIMEOUT_MS);
            shutdown(PQsocket(c), SHUT_RDWR);
        }
        if (!PQconsumeInput(c)) break;
    }
    PGresult *last = NULL, *r;
    while ((r = PQgetResult(c)) != NULL) {
        PQclear(last);
        last = r;
    }
    return last;
}

/* Runs a parameterized statement (parameters binary when lens[i] >= 0, else
 * text; results binary). Returns the result when it succeeded, else NULL
 * with *st set. */
static PGresult *pg_q(pg_meta_t *p, PGconn *c, const char *sql, int n, const void *const *v,
                      const int *lens, ls_status *st)
{
    const char *vals[8];
    int fmts[8], ls[8];
    for (int i = 0; i < n; i++) {
        vals[i] = v[i] ? v[i] : "";
        fmts[i] = lens[i] >= 0;
        ls[i] = lens[i] >= 0 ? lens[i] : 0;
    }
    PGresult *r = pg_run(c, sql, n, vals, ls, fmts);
    ExecStatusType es = PQresultStatus(r);
    if (r && (es == PGRES_COMMAND_OK || es == PGRES_TUPLES_OK)) return r;
    *st = pg_res_fail(p, c, r, sql);
    PQclear(r);
    return NULL;
}

static int pg_exec(PGconn *c, const char *sql)
{
    PGresult *r = pg_run(c, sql, 0, NULL, NULL, NULL);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    return ok;
}

static int64_t be64(const char *b)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (uint8_t)b[i];
    return (int64_t)v;
}

/* An integer column of a binary result: int8, int4 or int2, big-endian. */
static int64_t col_i64(PGresult *r, int row, int col)
{
    const char *b = PQgetvalue(r, row, col);
    switch (PQgetlength(r, row, col)) {
    case 8: return be64(b);
    case 4:
        return (int32_t)((uint32_t)(uint8_t)b[0] << 24 | (uint32_t)(uint8_t)b[1] << 16 |
                         (uint32_t)(uint8_t)b[2] << 8 | (uint8_t)b[3]);
    case 2: return (int16_t)((uint16_t)(uint8_t)b[0] << 8 | (uint8_t)b[1]);
    default: return 0;
    }
}

/* ---- reads ---- */

static ls_status pg_get(ls_meta_t *m, const void *key, size_t klen, ls_kv_t *out)
{
    pg_meta_t *p = (pg_meta_t *)m;
    if (!key || !klen) return LS_EINVAL;
    pthread_mutex_lock(&p->mu);
    ls_status st = pg_ready(p, &p->conn);
    if (st == LS_OK) {
        const void *v[] = {key};
        int l[] = {(int)klen};
        PGresult *r =
            pg_q(p, p->conn, "SELECT val, create_rev, mod_rev, lease FROM ls_kv WHERE key = $1", 1,
                 v, l, &st);
        if (r) {
            if (PQntuples(r) == 0) {
                st = LS_ENOTFOUND;
            } else {
                ls_kv_set(out, key, klen, PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0));
                out->create_rev = col_i64(r, 0, 1);
                out->mod_rev = col_i64(r, 0, 2);
                out->lease = col_i64(r, 0, 3);
            }
            PQclear(r);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

static ls_status pg_scan(ls_meta_t *m, const void *start, size_t slen, const void *end, size_t elen,
                         size_t limit, int reverse, ls_kvlist_t *out)
{
    pg_meta_t *p = (pg_meta_t *)m;
    memset(out, 0, sizeof *out);
    char lim[24];
    /* one row more than the limit tells whether there are more */
    snprintf(lim, sizeof lim, "%lld", limit ? (long long)limit + 1 : -1LL);
    const char *sql = reverse ? "WITH r AS (SELECT ival FROM ls_meta WHERE name = 'revision') "
                                "SELECT key, val, create_rev, mod_rev, lease, (SELECT ival FROM r) "
                                "FROM ls_kv RIGHT JOIN (SELECT 1) one ON key >= $1 AND "
                                "($2 = ''::bytea OR key < $2) ORDER BY key DESC "
                                "LIMIT NULLIF($3::bigint, -1)"
                              : "WITH r AS (SELECT ival FROM ls_meta WHERE name = 'revision') "
                                "SELECT key, val, create_rev, mod_rev, lease, (SELECT ival FROM r) "
                                "FROM ls_kv RIGHT JOIN (SELECT 1) one ON key >= $1 AND "
                                "($2 = ''::bytea OR key < $2) ORDER BY key ASC NULLS LAST "
                                "LIMIT NULLIF($3::bigint, -1)";
    pthread_mutex_lock(&p->mu);
    ls_status st = pg_ready(p, &p->conn);
    if (st == LS_OK) {
        const void *v[] = {start, end, lim};
        int l[] = {start ? (int)slen : 0, end ? (int)elen : 0, -1};
        PGresult *r = pg_q(p, p->conn, sql, 3, v, l, &st);
        if (r) {
            int n = PQntuples(r);
            if (n) out->v = LS_NEWN(ls_kv_t, (size_t)n);
            for (int i = 0; i < n; i++) {
                out->revision = col_i64(r, i, 5);
                if (PQgetisnull(r, i, 0)) continue; /* the row that carries the revision */
                if (limit && out->n == limit) {
                    out->more = 1;
                    break;
                }
                ls_kv_t *kv = &out->v[out->n++];
                ls_kv_set(kv, PQgetvalue(r, i, 0), (size_t)PQgetlength(r, i, 0),
                          PQgetvalue(r, i, 1), (size_t)PQgetlength(r, i, 1));
                kv->create_rev = col_i64(r, i, 2);
                kv->mod_rev = col_i64(r, i, 3);
                kv->lease = col_i64(r, i, 4);
            }
            PQclear(r);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

/* ---- writes ---- */

/* BEGIN and take the revision lock (file comment); *rev is the current one. */
static ls_status pg_begin(pg_meta_t *p, PGconn *c, int64_t *rev)
{
    ls_status st = LS_OK;
    if (!pg_exec(c, "BEGIN")) return pg_res_fail(p, c, NULL, "begin");
    PGresult *r = pg_q(p, c, "SELECT ival FROM ls_meta WHERE name = 'revision' FOR UPDATE", 0, NULL,
                       NULL, &st);
    if (!r) return st;
    *rev = PQntuples(r) ? col_i64(r, 0, 0) : 0;
    PQclear(r);
    return LS_OK;
}

static void pg_rollback(PGconn *c)
{
    if (PQstatus(c) == CONNECTION_OK) pg_exec(c, "ROLLBACK");
}

/* Ends a write txn: bumps the revision and notifies when events were written,
 * then commits; rolls back on failure. A lost COMMIT answer is LS_EIO (maybe
 * applied). */
static ls_status pg_commit(pg_meta_t *p, PGconn *c, int64_t rev, int changed)
{
    ls_status st = LS_OK;
    if (changed) {
        char rv[24];
        snprintf(rv, sizeof rv, "%lld", (long long)rev);
        const void *v[] = {rv, rv};
        int l[] = {-1, -1};
        PGresult *r = pg_q(p, c,
                           "WITH u AS (UPDATE ls_meta SET ival = $1::bigint WHERE name = "
                           "'revision') SELECT pg_notify('ls_meta', $2::text)",
                           2, v, l, &st);
        if (!r) {
            pg_rollback(c);
            return st;
        }
        PQclear(r);
    }
    PGresult *r = pg_run(c, "COMMIT", 0, NULL, NULL, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        st = pg_res_fail(p, c, r, "commit");
        if (st == LS_EAGAIN) st = LS_EIO; /* the commit may have happened */
        pg_rollback(c);
    }
    PQclear(r);
    return st;
}

/* Runs an op statement that inserts its events; adds their count to *seq. */
static ls_status pg_op_events(pg_meta_t *p, PGconn *c, const char *sql, int n, const void **v,
                              int *l, int *seq)
{
    ls_status st = LS_OK;
    PGresult *r = pg_q(p, c, sql, n, v, l, &st);
    if (!r) return st;
    *seq += atoi(PQcmdTuples(r));
    PQclear(r);
    return LS_OK;
}

static ls_status pg_apply(pg_meta_t *p, PGconn *c, const ls_meta_op_t *op, int64_t rev, int *seq)
{
    char rv[24], sq[24], ls[24];
    snprintf(rv, sizeof rv, "%lld", (long long)rev);
    snprintf(sq, sizeof sq, "%d", *seq);
    snprintf(ls, sizeof ls, "%lld", (long long)op->lease);
    switch (op->kind) {
    case LS_META_OP_PUT: {
        const void *v[] = {op->key, op->val, rv, sq, ls};
        int l[] = {(int)op->klen, (int)op->vlen, -1, -1, -1};
        return pg_op_events(
            p, c,
            "WITH u AS (INSERT INTO ls_kv(key, val, create_rev, mod_rev, lease) "
            "VALUES($1, $2, $3::bigint, $3::bigint, $5::bigint) ON CONFLICT (key) DO UPDATE SET "
            "val = excluded.val, mod_rev = excluded.mod_rev, lease = excluded.lease "
            "RETURNING key, val, create_rev, lease) "
            "INSERT INTO ls_events SELECT $3::bigint, $4::int, 0, key, val, create_rev, lease FROM "
            "u",
            5, v, l, seq);
    }
    case LS_META_OP_DEL:
    case LS_META_OP_DEL_RANGE: {
        int range = op->kind == LS_META_OP_DEL_RANGE;
        const void *v[] = {op->key, range ? op->end : NULL, rv, sq};
        int l[] = {op->key ? (int)op->klen : 0, range && op->end ? (int)op->elen : 0, -1, -1};
        return pg_op_events(
            p, c,
            range ? "WITH d AS (DELETE FROM ls_kv WHERE key >= $1 AND ($2 = ''::bytea OR key < $2) "
                    "RETURNING key) INSERT INTO ls_events SELECT $3::bigint, $4::int + "
                    "(row_number() OVER (ORDER BY key))::int - 1, 1, key, NULL, 0, 0 FROM d"
                  : "WITH d AS (DELETE FROM ls_kv WHERE key = $1 AND $2 = ''::bytea RETURNING key) "
                    "INSERT INTO ls_events SELECT $3::bigint, $4::int, 1, key, NULL, 0, 0 FROM d",
            4, v, l, seq);
    }
    }
    return LS_EINVAL;
}

/* 1 if the compare holds, 0 if not, -1 on error (*st set). */
static int pg_cmp_holds(pg_meta_t *p, const ls_meta_cmp_t *c, ls_status *st)
{
    const void *v[] = {c->key};
    int l[] = {(int)c->klen};
    PGresult *r = pg_q(p, p->conn, "SELECT val, mod_rev FROM ls_kv WHERE key = $1", 1, v, l, st);
    if (!r) return -1;
    int holds;
    if (PQntuples(r) == 0)
        holds = c->kind == LS_META_CMP_MOD_REV && c->rev == 0;
    else if (c->kind == LS_META_CMP_MOD_REV)
        holds = col_i64(r, 0, 1) == c->rev;
    else
        holds = ls_meta_key_cmp(PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0),
                                c->val ? c->val : "", c->vlen) == 0;
    PQclear(r);
    return holds;
}

static ls_status pg_txn(ls_meta_t *m, const ls_meta_cmp_t *cmps, size_t ncmp,
                        const ls_meta_op_t *ops, size_t nops, int64_t *rev_out)
{
    pg_meta_t *p = (pg_meta_t *)m;
    ls_status st = ls_meta_txn_validate(m, cmps, ncmp, ops, nops);
    if (st != LS_OK) return st;
    int64_t rev = 0;
    int seq = 0;
    pthread_mutex_lock(&p->mu);
    if ((st = pg_ready(p, &p->conn)) != LS_OK) goto unlock;
    if ((st = pg_begin(p, p->conn, &rev)) != LS_OK) goto rollback;
    for (size_t i = 0; i < ncmp; i++) {
        int holds = pg_cmp_holds(p, &cmps[i], &st);
        if (holds < 0) goto rollback;
        if (!holds) {
            st = LS_ECONFLICT;
            goto rollback;
        }
    }
    for (size_t i = 0; i < nops; i++) {
        if (ops[i].kind != LS_META_OP_PUT || !ops[i].lease) continue;
        char ls[24];
        snprintf(ls, sizeof ls, "%lld", (long long)ops[i].lease);
        const void *v[] = {ls};
        int l[] = {-1};
        PGresult *r = pg_q(
            p, p->conn, "SELECT 1 FROM ls_leases WHERE id = $1::bigint AND expires_at > " PG_NOW_MS,
            1, v, l, &st);
        if (!r) goto rollback;
        int live = PQntuples(r) > 0;
        PQclear(r);
        if (!live) {
            snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP, "lease %lld not found",
                     (long long)ops[i].lease);
            st = LS_ENOTFOUND;
            goto rollback;
        }
    }
    for (size_t i = 0; i < nops; i++)
        if ((st = pg_apply(p, p->conn, &ops[i], rev + 1, &seq)) != LS_OK) goto rollback;
    if ((st = pg_commit(p, p->conn, rev + 1, seq > 0)) != LS_OK) goto unlock;
    if (rev_out) *rev_out = seq ? rev + 1 : rev;
    goto unlock;

rollback:
    pg_rollback(p->conn);
unlock:
    pthread_mutex_unlock(&p->mu);
    return st;
}

/* ---- leases ---- */

static ls_status pg_lease_grant(ls_meta_t *m, int64_t ttl_ms, int64_t *lease_out)
{
    pg_meta_t *p = (pg_meta_t *)m;
    if (ttl_ms <= 0) return LS_EINVAL;
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)ttl_ms);
    const void *v[] = {t};
    int l[] = {-1};
    pthread_mutex_lock(&p->mu);
    ls_status st = pg_ready(p, &p->conn);
    if (st == LS_OK) {
        PGresult *r = pg_q(p, p->conn,
                           "INSERT INTO ls_leases(ttl_ms, expires_at) VALUES($1::bigint, " PG_NOW_MS
                           " + $1::bigint) RETURNING id",
                           1, v, l, &st);
        if (r) {
            *lease_out = col_i64(r, 0, 0);
            PQclear(r);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

static ls_status pg_lease_keepalive(ls_meta_t *m, int64_t lease)
{
    pg_meta_t *p = (pg_meta_t *)m;
    char id[24];
    snprintf(id, sizeof id, "%lld", (long long)lease);
    const void *v[] = {id};
    int l[] = {-1};
    pthread_mutex_lock(&p->mu);
    ls_status st = pg_ready(p, &p->conn);
    if (st == LS_OK) {
        PGresult *r = pg_q(p, p->conn,
                           "UPDATE ls_leases SET expires_at = " PG_NOW_MS " + ttl_ms "
                           "WHERE id = $1::bigint AND expires_at > " PG_NOW_MS,
                           1, v, l, &st);
        if (r) {
            if (atoi(PQcmdTuples(r)) == 0) st = LS_ENOTFOUND;
            PQclear(r);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

/* Deletes the lease (only if expired, when only_expired) and its keys in one
 * revision, on connection c. LS_ENOTFOUND when there is no such lease. */
static ls_status pg_revoke_on(pg_meta_t *p, PGconn *c, int64_t lease, int only_expired)
{
    int64_t rev = 0;
    int seq = 0;
    char id[24], rv[24];
    ls_status st = pg_ready(p, &c);
    if (st != LS_OK) return st;
    if ((st = pg_begin(p, c, &rev)) != LS_OK) goto rollback;
    snprintf(id, sizeof id, "%lld", (long long)lease);
    snprintf(rv, sizeof rv, "%lld", (long long)rev + 1);
    const void *v[] = {id, only_expired ? "1" : "0"};
    int l[] = {-1, -1};
    PGresult *r = pg_q(p, c,
                       "DELETE FROM ls_leases WHERE id = $1::bigint AND "
                       "($2::int = 0 OR expires_at <= " PG_NOW_MS ")",
                       2, v, l, &st);
    if (!r) goto rollback;
    int gone = atoi(PQcmdTuples(r));
    PQclear(r);
    if (!gone) {
        st = LS_ENOTFOUND;
        goto rollback;
    }
    const void *v2[] = {id, rv};
    int l2[] = {-1, -1};
    if ((st = pg_op_events(p, c,
                           "WITH d AS (DELETE FROM ls_kv WHERE lease = $1::bigint AND lease <> 0 "
                           "RETURNING key) INSERT INTO ls_events SELECT $2::bigint, "
                           "(row_number() OVER (ORDER BY key))::int - 1, 1, key, NULL, 0, 0 FROM d",
                           2, v2, l2, &seq)) != LS_OK)
        goto rollback;
    return pg_commit(p, c, rev + 1, seq > 0);

rollback:
    pg_rollback(c);
    return st;
}

static ls_status pg_lease_revoke(ls_meta_t *m, int64_t lease)
{
    pg_meta_t *p = (pg_meta_t *)m;
    pthread_mutex_lock(&p->mu);
    ls_status st = pg_ready(p, &p->conn);
    if (st == LS_OK) st = pg_revoke_on(p, p->conn, lease, 0);
    pthread_mutex_unlock(&p->mu);
    return st;
}

/* ---- the background thread: lease reaping, watch delivery, pruning ---- */

static void pg_reap(pg_meta_t *p)
{
    ls_status st = LS_OK;
    char lim[16];
    snprintf(lim, sizeof lim, "%d", PG_REAP_BATCH);
    const void *v[] = {lim};
    int l[] = {-1};
    PGresult *r = pg_q(p, p->bg,
                       "SELECT id FROM ls_leases WHERE expires_at <= " PG_NOW_MS
                       " ORDER BY expires_at LIMIT $1::int",
                       1, v, l, &st);
    if (!r) return;
    for (int i = 0; i < PQntuples(r); i++)
        pg_revoke_on(p, p->bg, col_i64(r, i, 0), 1); /* failures are logged; next tick retries */
    PQclear(r);
}

/* Prunes events older than the newest PG_EVENTS_KEEP revisions. */
static void pg_prune(pg_meta_t *p)
{
    char keep[24];
    snprintf(keep, sizeof keep, "%d", PG_EVENTS_KEEP);
    const void *v[] = {keep};
    int l[] = {-1};
    ls_status st = LS_OK;
    PGresult *r =
        pg_q(p, p->bg,
             "WITH c AS (UPDATE ls_meta SET ival = GREATEST(ival, (SELECT ival FROM ls_meta "
             "WHERE name = 'revision') - $1::bigint) WHERE name = 'compacted' RETURNING "
             "ival) DELETE FROM ls_events WHERE rev <= (SELECT ival FROM c)",
             1, v, l, &st);
    if (r) PQclear(r);
}

/* Delivers w's events after w->pos, up to the store revision head, in
 * batches of about PG_WATCH_BATCH events (whole revisions). Runs inside the
 * round's snapshot (pg_serve_watchers), so head, compacted and the events
 * agree even while another broker prunes. */
static void pg_deliver(pg_meta_t *p, ls_meta_watch_t *w, int64_t head, int64_t compacted)
{
    if (w->dead) return;
    if (w->pos < compacted) {
        w->dead = 1;
        w->cb(w->arg, NULL, 0);
        return;
    }
    while (w->pos < head && !w->cancelled) {
        char from[24], to[24], lim[16];
        snprintf(from, sizeof from, "%lld", (long long)w->pos);
        snprintf(to, sizeof to, "%lld", (long long)head);
        snprintf(lim, sizeof lim, "%d", PG_WATCH_BATCH);
        ls_status st;
        const void *bv[] = {from, to, lim};
        int bl[] = {-1, -1, -1};
        PGresult *r = pg_q(p, p->bg,
                           "SELECT COALESCE(MAX(rev), $2::bigint) FROM (SELECT rev FROM ls_events "
                           "WHERE rev > $1::bigint AND rev <= $2::bigint ORDER BY rev, seq "
                           "LIMIT $3::int) b",
                           3, bv, bl, &st);
        if (!r) return; /* logged; the next round retries from w->pos */
        int64_t bound = col_i64(r, 0, 0);
        PQclear(r);
        snprintf(to, sizeof to, "%lld", (long long)bound);
        const void *v[] = {from, to, w->prefix, w->end};
        int l[] = {-1, -1, (int)w->plen, (int)w->elen};
        r = pg_q(p, p->bg,
                 "SELECT rev, kind, key, val, create_rev, lease FROM ls_events WHERE "
                 "rev > $1::bigint AND rev <= $2::bigint AND key >= $3 AND "
                 "($4 = ''::bytea OR key < $4) ORDER BY rev, seq",
                 4, v, l, &st);
        if (!r) return;
        int n = PQntuples(r);
        ls_meta_event_t *ev = n ? LS_NEWN(ls_meta_event_t, (size_t)n) : NULL;
        for (int i = 0; i < n; i++) {
            ev[i].kind = col_i64(r, i, 1) ? LS_META_EV_DEL : LS_META_EV_PUT;
            ls_kv_set(&ev[i].kv, PQgetvalue(r, i, 2), (size_t)PQgetlength(r, i, 2),
                      PQgetvalue(r, i, 3), (size_t)PQgetlength(r, i, 3));
            ev[i].kv.mod_rev = col_i64(r, i, 0);
            ev[i].kv.create_rev = col_i64(r, i, 4);
            ev[i].kv.lease = col_i64(r, i, 5);
        }
        PQclear(r);
        size_t i = 0;
        while (i < (size_t)n && !w->cancelled) {
            size_t j = i;
            while (j < (size_t)n && ev[j].kv.mod_rev == ev[i].kv.mod_rev)
                j++;
            w->cb(w->arg, ev + i, j - i);
            w->pos = ev[i].kv.mod_rev;
            i = j;
        }
        for (int k = 0; k < n; k++)
            ls_kv_free(&ev[k].kv);
        ls_free(ev);
        if (!w->cancelled) w->pos = bound; /* every matching event up to bound is delivered */
    }
}

static void pg_free_watch(ls_meta_watch_t *w)
{
    ls_free(w->prefix);
    ls_free(w->end);
    ls_free(w);
}

/* One pass over the watchers: each is served once (round stamps), with the
 * store revision and compacted revision read at the start. */
static void pg_serve_watchers(pg_meta_t *p)
{
    ls_status st;
    /* one snapshot for the round: see pg_deliver */
    if (!pg_exec(p->bg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")) return;
    PGresult *r = pg_q(p, p->bg,
                       "SELECT (SELECT ival FROM ls_meta WHERE name = 'revision'), "
                       "(SELECT ival FROM ls_meta WHERE name = 'compacted')",
                       0, NULL, NULL, &st);
    if (!r) {
        pg_rollback(p->bg);
        return;
    }
    int64_t head = col_i64(r, 0, 0), compacted = col_i64(r, 0, 1);
    PQclear(r);
    pthread_mutex_lock(&p->wmu);
    int round = ++p->round;
    for (;;) {
        ls_meta_watch_t *w = p->watchers;
        while (w && w->round == round)
            w = w->next;
        if (!w) break;
        w->round = round;
        p->busy = w;
        pthread_mutex_unlock(&p->wmu);
        pg_deliver(p, w, head, compacted);
        pthread_mutex_lock(&p->wmu);
        p->busy = NULL;
        if (w->cancelled) pg_free_watch(w); /* cancelled (and unlinked) inside its callback */
        pthread_cond_broadcast(&p->idle);
    }
    pthread_mutex_unlock(&p->wmu);
    pg_rollback(p->bg); /* read only: ends the snapshot */
}

static void *pg_thread(void *arg)
{
    pg_meta_t *p = arg;
    int listening = 0;
    int64_t last_prune = 0;
    for (;;) {
        pthread_mutex_lock(&p->wmu);
        int stop = p->stop;
        pthread_mutex_unlock(&p->wmu);
        if (stop) break;
        if (!p->bg || PQstatus(p->bg) != CONNECTION_OK) listening = 0;
        if (pg_ready(p, &p->bg) == LS_OK) {
            if (!listening) listening = pg_exec(p->bg, "LISTEN ls_meta");
            pg_reap(p);
            pg_serve_watchers(p);
            int64_t now = ls_clock_mono_ms();
            if (now - last_prune > 10000) {
                pg_prune(p);
                last_prune = now;
            }
        }
        /* down: retry the connection every PG_RETRY_MS, not every tick */
        int up = p->bg && PQstatus(p->bg) == CONNECTION_OK;
        struct pollfd fds[2] = {{.fd = p->wake[0], .events = POLLIN},
                                {.fd = up ? PQsocket(p->bg) : -1, .events = POLLIN}};
        if (poll(fds, 2, up ? PG_TICK_MS : PG_RETRY_MS) > 0) {
            char buf[64];
            if (fds[0].revents & POLLIN) (void)!read(p->wake[0], buf, sizeof buf);
            if (up && (fds[1].revents & POLLIN)) {
                PQconsumeInput(p->bg);
                PGnotify *nt;
                while ((nt = PQnotifies(p->bg)) != NULL)
                    PQfreemem(nt);
            }
        }
    }
    return NULL;
}

static void pg_kick(pg_meta_t *p) { (void)!write(p->wake[1], "w", 1); }

static ls_status pg_watch(ls_meta_t *m, const void *prefix, size_t plen, int64_t after_rev,
                          ls_meta_watch_cb cb, void *arg, ls_meta_watch_t **out)
{
    pg_meta_t *p = (pg_meta_t *)m;
    if (!cb || after_rev < 0 || (plen && !prefix)) return LS_EINVAL;
    ls_status st;
    pthread_mutex_lock(&p->mu);
    st = pg_ready(p, &p->conn);
    PGresult *r = st != LS_OK ? NULL
                              : pg_q(p, p->conn,
                                     "SELECT (SELECT ival FROM ls_meta WHERE name = 'revision'), "
                                     "(SELECT ival FROM ls_meta WHERE name = 'compacted')",
                                     0, NULL, NULL, &st);
    pthread_mutex_unlock(&p->mu);
    if (!r) return st;
    int64_t head = col_i64(r, 0, 0), compacted = col_i64(r, 0, 1);
    PQclear(r);
    if (after_rev == 0) after_rev = head;
    if (after_rev < compacted) {
        snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP,
                 "%s: watch from revision %lld: history compacted up to %lld", p->where,
                 (long long)after_rev, (long long)compacted);
        return LS_ERANGE;
    }
    ls_meta_watch_t *w = LS_NEW(ls_meta_watch_t);
    w->prefix = ls_memdup(prefix ? prefix : "", plen);
    w->plen = plen;
    w->end = ls_malloc(plen ? plen : 1);
    w->elen = ls_meta_prefix_end(prefix, plen, w->end);
    w->pos = after_rev;
    w->cb = cb;
    w->arg = arg;
    pthread_mutex_lock(&p->wmu);
    w->next = p->watchers;
    p->watchers = w;
    pthread_mutex_unlock(&p->wmu);
    pg_kick(p);
    *out = w;
    return LS_OK;
}

static void pg_watch_cancel(ls_meta_t *m, ls_meta_watch_t *w)
{
    pg_meta_t *p = (pg_meta_t *)m;
    if (!w) return;
    pthread_mutex_lock(&p->wmu);
    for (ls_meta_watch_t **pp = &p->watchers; *pp; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    if (p->busy == w && pthread_equal(pthread_self(), p->thread)) {
        w->cancelled = 1; /* inside its callback: the thread frees it after */
    } else {
        while (p->busy == w)
            pthread_cond_wait(&p->idle, &p->wmu);
        pg_free_watch(w);
    }
    pthread_mutex_unlock(&p->wmu);
}

/* ---- open and close ---- */

static void pg_free(pg_meta_t *p)
{
    if (p->conn) PQfinish(p->conn);
    if (p->bg) PQfinish(p->bg);
    if (p->kw) {
        for (int i = 0; p->kw[i]; i++) {
            if (!strcmp(p->kw[i], "password")) memset((char *)p->vals[i], 0, strlen(p->vals[i]));
            ls_free((char *)p->kw[i]);
            ls_free((char *)p->vals[i]);
        }
    }
    ls_free(p->kw);
    ls_free(p->vals);
    if (p->wake[0] >= 0) close(p->wake[0]);
    if (p->wake[1] >= 0) close(p->wake[1]);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->wmu);
    pthread_mutex_destroy(&p->mu);
    ls_free(p);
}

static void pg_close(ls_meta_t *m)
{
    pg_meta_t *p = (pg_meta_t *)m;
    pthread_mutex_lock(&p->wmu);
    p->stop = 1;
    pthread_mutex_unlock(&p->wmu);
    pg_kick(p);
    pthread_join(p->thread, NULL); /* no callback runs after this */
    int left = 0;
    while (p->watchers) {
        ls_meta_watch_t *w = p->watchers;
        p->watchers = w->next;
        pg_free_watch(w);
        left++;
    }
    if (left) LS_WARN("meta", "closing with %d watch(es) still registered", left);
    pg_free(p);
}

static const ls_meta_ops_t pg_ops = {
    .name = "postgresql",
    .max_txn_ops = LS_META_MAX_TXN_OPS,
    .get = pg_get,
    .scan = pg_scan,
    .txn = pg_txn,
    .lease_grant = pg_lease_grant,
    .lease_keepalive = pg_lease_keepalive,
    .lease_revoke = pg_lease_revoke,
    .watch = pg_watch,
    .watch_cancel = pg_watch_cancel,
    .close = pg_close,
};

static void pg_param(pg_meta_t *p, int *n, const char *k, const char *v, size_t vlen)
{
    p->kw[*n] = ls_strdup(k);
    p->vals[*n] = ls_strndup(v, vlen);
    (*n)++;
}

/* The password in file path, its first line; NULL if unreadable. */
static char *pg_read_password(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char buf[1024];
    char *line = fgets(buf, sizeof buf, f);
    fclose(f);
    if (!line) return NULL;
    buf[strcspn(buf, "\r\n")] = 0;
    char *pw = ls_strdup(buf);
    memset(buf, 0, sizeof buf);
    return pw;
}

/* Parses postgresql://user@host:port/db?query into libpq parameters
 * (docs/OPERATIONS.md "PostgreSQL"). LS_OK, or LS_EINVAL (LS_EIO: an unreadable
 * password file) with err set. */
static ls_status pg_parse_url(pg_meta_t *p, const char *url, char *err, size_t errlen)
{
    const char *s = strstr(url, "://") + 3;
    const char *slash = strchr(s, '/');
    const char *at = memchr(s, '@', slash ? (size_t)(slash - s) : strlen(s));
    const char *host = at ? at + 1 : s;
    size_t hlen = slash ? (size_t)(slash - host) : strlen(host);
    if (at && memchr(s, ':', (size_t)(at - s))) {
        snprintf(err, errlen,
                 "metadata URL: a password is not taken in the URL (it would be logged); name a "
                 "file holding it with password-file=");
        return LS_EINVAL;
    }
    const char *colon = memchr(host, ':', hlen);
    if (!hlen || !colon || colon == host || !colon[1] || !slash || !slash[1] || slash[1] == '?') {
        snprintf(err, errlen,
                 "metadata URL '%s': expected postgresql://user@host:port/database[?options]", url);
        return LS_EINVAL;
    }
    p->kw = LS_NEWN(const char *, 16);
    p->vals = LS_NEWN(const char *, 16);
    int n = 0;
    pg_param(p, &n, "host", host, (size_t)(colon - host));
    pg_param(p, &n, "port", colon + 1, (size_t)(host + hlen - colon - 1));
    const char *db = slash + 1, *q = strchr(db, '?');
    pg_param(p, &n, "dbname", db, q ? (size_t)(q - db) : strlen(db));
    if (at) pg_param(p, &n, "user", s, (size_t)(at - s));
    snprintf(p->where, sizeof p->where, "postgresql %.*s/%.*s", (int)hlen, host,
             (int)(q ? (size_t)(q - db) : strlen(db)), db);
    int timeout_set = 0;
    char *query = ls_strdup(q ? q + 1 : ""), *save = NULL;
    ls_status rc = LS_OK;
    for (char *kv = strtok_r(query, "&", &save); kv && rc == LS_OK;
         kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            snprintf(err, errlen, "metadata URL: option '%s' needs a value", kv);
            rc = LS_EINVAL;
            break;
        }
        *eq = 0;
        static const char *const known[] = {"sslmode", "sslrootcert",     "sslcert",
                                            "sslkey",  "connect_timeout", "application_name"};
        int ok = 0;
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            if (!strcmp(kv, known[i])) ok = 1;
        if (ok) {
            pg_param(p, &n, kv, eq + 1, strlen(eq + 1));
            timeout_set |= !strcmp(kv, "connect_timeout");
        } else if (!strcmp(kv, "password-file")) {
            char *pw = pg_read_password(eq + 1);
            if (!pw) {
                snprintf(err, errlen, "metadata URL: password-file %s: %s", eq + 1,
                         strerror(errno ? errno : EINVAL));
                rc = LS_EIO;
                break;
            }
            p->kw[n] = ls_strdup("password");
            p->vals[n++] = pw;
        } else if (!strcmp(kv, "password")) {
            snprintf(err, errlen,
                     "metadata URL: a password is not taken in the URL (it would be logged); "
                     "name a file holding it with password-file=");
            rc = LS_EINVAL;
        } else {
            snprintf(err, errlen,
                     "metadata URL: unknown option '%s' (known: sslmode, sslrootcert, sslcert, "
                     "sslkey, connect_timeout, application_name, password-file)",
                     kv);
            rc = LS_EINVAL;
        }
    }
    ls_free(query);
    if (rc != LS_OK) return rc;
    if (!timeout_set) pg_param(p, &n, "connect_timeout", "5", 1);
    /* a dead server is noticed in seconds, not the kernel's two hours */
    pg_param(p, &n, "keepalives_idle", "5", 1);
    pg_param(p, &n, "keepalives_interval", "2", 1);
    pg_param(p, &n, "keepalives_count", "3", 1);
    /* CREATE ... IF NOT EXISTS notices would go to stderr; a broker that
     * stops mid-txn (paused, cut off) must not hold the revision lock for
     * long: the server ends its session after 10 s idle in a transaction */
    static const char opts[] = "-c client_min_messages=warning "
                               "-c idle_in_transaction_session_timeout=10000";
    pg_param(p, &n, "options", opts, sizeof opts - 1);
    return LS_OK;
}

ls_meta_t *ls_meta_pg_open(const char *url, char *err, size_t errlen)
{
    char eb[128];
    if (!err || errlen == 0) err = eb, errlen = sizeof eb;
    err[0] = 0;
    pg_meta_t *p = LS_NEW(pg_meta_t);
    p->base.ops = &pg_ops;
    p->wake[0] = p->wake[1] = -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->wmu, NULL);
    pthread_cond_init(&p->idle, NULL);
    if (pg_parse_url(p, url, err, errlen) != 0) goto fail;
    p->conn = PQconnectdbParams(p->kw, p->vals, 0);
    PQsetNoticeProcessor(p->conn, pg_notice, p);
    if (PQstatus(p->conn) != CONNECTION_OK) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s", PQerrorMessage(p->conn));
        msg[strcspn(msg, "\n")] = 0;
        snprintf(err, errlen, "%s: cannot connect: %s", p->where, msg);
        goto fail;
    }
    PGresult *r = PQexec(p->conn, "BEGIN");
    PQclear(r);
    r = PQexec(p->conn, pg_schema);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        snprintf(err, errlen, "%s: schema: %s", p->where, PQresultErrorMessage(r));
        err[strcspn(err, "\n")] = 0;
        PQclear(r);
        goto fail;
    }
    PQclear(r);
    if (!pg_exec(p->conn, "COMMIT")) {
        snprintf(err, errlen, "%s: schema commit: %s", p->where, PQerrorMessage(p->conn));
        goto fail;
    }
    r = PQexec(p->conn, "SELECT ival FROM ls_meta WHERE name = 'schema_version'");
    long long version =
        PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    if (version != PG_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: schema version %lld, this build reads %d", p->where, version,
                 PG_SCHEMA_VERSION);
        goto fail;
    }
    if (pipe(p->wake) != 0) {
        snprintf(err, errlen, "%s: pipe: %s", p->where, strerror(errno));
        goto fail;
    }
    if (ls_thread_start(&p->thread, "ls-pg-meta", pg_thread, p) != 0) {
        snprintf(err, errlen, "%s: cannot start the background thread", p->where);
        goto fail;
    }
    LS_INFO("meta", "%s: open", p->where);
    return &p->base;

fail:
    pg_free(p);
    return NULL;
}
