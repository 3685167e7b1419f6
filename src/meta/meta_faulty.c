/* Fault-injecting ls_meta wrapper (see meta_faulty.h for the URL).
 * Each get, scan and txn asks the fault core (base/fault.h) first: it may
 * sleep, then fail without touching the inner store; a delegated txn may
 * additionally report failure after it was applied (lost acknowledgement),
 * the case that makes callers resolve ambiguous commits. Leases and watches
 * pass through. */
#include "meta/meta_faulty.h"
#include "meta/meta_backend.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

enum { OP_GET, OP_SCAN, OP_TXN, OP_N };
static const char *const op_names[OP_N] = {"get", "scan", "txn"};

typedef struct faulty_meta {
    ls_meta_t base;
    ls_meta_t *inner;
    ls_fault_t fault;
} faulty_meta_t;

static const ls_meta_ops_t faulty_meta_ops;

/* The verdict for op; a failing one has set this thread's error detail. */
static ls_fault_verdict_t before(faulty_meta_t *f, int op)
{
    return ls_fault_before(&f->fault, op, ls_meta_errbuf(), LS_META_ERRMSG_CAP);
}

static ls_status f_get(ls_meta_t *m, const void *key, size_t klen, ls_kv_t *out)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    ls_fault_verdict_t v = before(f, OP_GET);
    return v.fail ? v.error : ls_meta_get_bytes(f->inner, key, klen, out);
}

static ls_status f_scan(ls_meta_t *m, const void *s, size_t sl, const void *e, size_t el,
                        size_t limit, int reverse, ls_kvlist_t *out)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    ls_fault_verdict_t v = before(f, OP_SCAN);
    return v.fail ? v.error : ls_meta_scan(f->inner, s, sl, e, el, limit, reverse, out);
}

static ls_status f_txn(ls_meta_t *m, const ls_meta_cmp_t *c, size_t nc, const ls_meta_op_t *o,
                       size_t no, int64_t *rev)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    ls_fault_verdict_t v = before(f, OP_TXN);
    if (v.fail) return v.error;
    ls_status st = ls_meta_txn(f->inner, c, nc, o, no, rev);
    if (st != LS_OK || !v.lose_ack) return st;
    snprintf(ls_meta_errbuf(), LS_META_ERRMSG_CAP,
             "injected fault: txn applied, acknowledgement lost");
    return v.error;
}

static ls_status f_lease_grant(ls_meta_t *m, int64_t ttl, int64_t *out)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    return ls_meta_lease_grant(f->inner, ttl, out);
}

static ls_status f_lease_keepalive(ls_meta_t *m, int64_t lease)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    return ls_meta_lease_keepalive(f->inner, lease);
}

static ls_status f_lease_revoke(ls_meta_t *m, int64_t lease)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    return ls_meta_lease_revoke(f->inner, lease);
}

static ls_status f_watch(ls_meta_t *m, const void *p, size_t pl, int64_t after, ls_meta_watch_cb cb,
                         void *arg, ls_meta_watch_t **out)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    return ls_meta_watch(f->inner, p, pl, after, cb, arg, out);
}

static void f_watch_cancel(ls_meta_t *m, ls_meta_watch_t *w)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    ls_meta_watch_cancel(f->inner, w);
}

static void f_close(ls_meta_t *m)
{
    faulty_meta_t *f = (faulty_meta_t *)m;
    ls_meta_close(f->inner);
    ls_fault_destroy(&f->fault);
    ls_free(f);
}

static const ls_meta_ops_t faulty_meta_ops = {
    .name = "faulty",
    .max_txn_ops = LS_META_MAX_TXN_OPS,
    .get = f_get,
    .scan = f_scan,
    .txn = f_txn,
    .lease_grant = f_lease_grant,
    .lease_keepalive = f_lease_keepalive,
    .lease_revoke = f_lease_revoke,
    .watch = f_watch,
    .watch_cancel = f_watch_cancel,
    .close = f_close,
};

ls_meta_t *ls_meta_faulty_open(const char *url, char *err, size_t errlen)
{
    if (strncmp(url, "faulty+", 7) != 0) {
        snprintf(err, errlen, "faulty metadata URL must start with faulty+: '%s'", url);
        return NULL;
    }
    char *inner_url = ls_strdup(url + 7);
    char *q = strchr(inner_url, '?');
    if (q) *q++ = 0;
    faulty_meta_t *f = LS_NEW(faulty_meta_t);
    f->base.ops = &faulty_meta_ops;
    ls_fault_init(&f->fault, "faulty metadata", op_names, OP_N, 1u << OP_TXN, LS_EIO);
    if (q && ls_fault_configure(&f->fault, q, NULL, err, errlen) != 0) {
        ls_fault_destroy(&f->fault);
        ls_free(f);
        ls_free(inner_url);
        return NULL;
    }
    f->inner = ls_meta_open(inner_url, err, errlen);
    ls_free(inner_url);
    if (!f->inner) {
        ls_fault_destroy(&f->fault);
        ls_free(f);
        return NULL;
    }
    return &f->base;
}

ls_status ls_meta_faulty_set(ls_meta_t *m, const char *params, char *err, size_t errlen)
{
    if (m->ops != &faulty_meta_ops) {
        snprintf(err, errlen, "not a faulty metadata store");
        return LS_EINVAL;
    }
    return ls_fault_configure(&((faulty_meta_t *)m)->fault, params, NULL, err, errlen);
}

void ls_meta_faulty_stats(ls_meta_t *m, ls_fault_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (m->ops == &faulty_meta_ops) ls_fault_get_stats(&((faulty_meta_t *)m)->fault, out);
}
