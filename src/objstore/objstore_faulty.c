/* Fault-injecting ls_objstore wrapper (see objstore_faulty.h for the URL).
 *
 * Each call asks the fault core (base/fault.h) first: it counts the call,
 * sleeps the injected latency and stalls, and says whether to fail without
 * touching the inner store; otherwise the inner store is called, and a
 * put/del may still report failure (lost acknowledgement). Injected failures
 * set the error detail to "injected fault ..." so logs show them.
 * Threads: any (the core is thread-safe). */
#include "objstore/objstore_faulty.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

enum { OP_PUT, OP_GET, OP_HEAD, OP_DEL, OP_LIST, OP_N };
static const char *const op_names[OP_N] = {"put", "get", "head", "del", "list"};

typedef struct faulty_store {
    ls_objstore_t base;
    ls_objstore_t *inner;
    ls_fault_t fault;
} faulty_store_t;

static const ls_objstore_ops_t faulty_ops;

/* The verdict for op; a failing one has set the error detail. */
static ls_fault_verdict_t before(faulty_store_t *f, int op)
{
    return ls_fault_before(&f->fault, op, ls_objstore_errbuf(), LS_OBJSTORE_ERRMSG_CAP);
}

static ls_status ack_lost(const ls_fault_verdict_t *v, const char *op, const char *key)
{
    snprintf(ls_objstore_errbuf(), LS_OBJSTORE_ERRMSG_CAP, "injected fault: %s %s done, ack lost",
             op, key);
    return v->error;
}

static ls_status faulty_put(ls_objstore_t *os, const char *key, const struct iovec *iov, int iovcnt,
                            int flags)
{
    faulty_store_t *f = (faulty_store_t *)os;
    ls_fault_verdict_t v = before(f, OP_PUT);
    if (v.fail) return v.error;
    ls_status st = ls_objstore_put(f->inner, key, iov, iovcnt, flags);
    return st == LS_OK && v.lose_ack ? ack_lost(&v, "put", key) : st;
}

static ls_status faulty_get(ls_objstore_t *os, const char *key, uint64_t off, uint64_t len,
                            ls_buf_t *out)
{
    faulty_store_t *f = (faulty_store_t *)os;
    ls_fault_verdict_t v = before(f, OP_GET);
    if (v.fail) {
        out->len = 0;
        return v.error;
    }
    return ls_objstore_get(f->inner, key, off, len, out);
}

static ls_status faulty_head(ls_objstore_t *os, const char *key, ls_objinfo_t *info)
{
    faulty_store_t *f = (faulty_store_t *)os;
    ls_fault_verdict_t v = before(f, OP_HEAD);
    return v.fail ? v.error : ls_objstore_head(f->inner, key, info);
}

static ls_status faulty_del(ls_objstore_t *os, const char *key)
{
    faulty_store_t *f = (faulty_store_t *)os;
    ls_fault_verdict_t v = before(f, OP_DEL);
    if (v.fail) return v.error;
    ls_status st = ls_objstore_del(f->inner, key);
    return st == LS_OK && v.lose_ack ? ack_lost(&v, "del", key) : st;
}

static ls_status faulty_del_many(ls_objstore_t *os, const char *const *keys, size_t n)
{
    faulty_store_t *f = (faulty_store_t *)os;
    ls_fault_verdict_t v = before(f, OP_DEL);
    if (v.fail) return v.error;
    ls_status st = ls_objstore_del_many(f->inner, keys, n);
    return st == LS_OK && v.lose_ack ? ack_lost(&v, "del", n ? keys[0] : "") : st;
}

static ls_status faulty_list(ls_objstore_t *os, const char *prefix, ls_objinfo_t **out, size_t *n)
{
    faulty_store_t *f = (faulty_store_t *)os;
    ls_fault_verdict_t v = before(f, OP_LIST);
    if (v.fail) {
        *out = NULL;
        *n = 0;
        return v.error;
    }
    return ls_objstore_list(f->inner, prefix, out, n);
}

static void faulty_close(ls_objstore_t *os)
{
    faulty_store_t *f = (faulty_store_t *)os;
    ls_objstore_close(f->inner);
    ls_fault_destroy(&f->fault);
    ls_free(f);
}

static const ls_objstore_ops_t faulty_ops = {
    .name = "faulty",
    .put = faulty_put,
    .get = faulty_get,
    .head = faulty_head,
    .del = faulty_del,
    .list = faulty_list,
    .close = faulty_close,
    .del_many = faulty_del_many,
};

int ls_objstore_is_faulty(const ls_objstore_t *os) { return os && os->ops == &faulty_ops; }

ls_status ls_objstore_faulty_set(ls_objstore_t *os, const char *params, char *err, size_t errlen)
{
    if (!ls_objstore_is_faulty(os)) {
        if (err) snprintf(err, errlen, "not a faulty object store");
        return LS_EINVAL;
    }
    return ls_fault_configure(&((faulty_store_t *)os)->fault, params, NULL, err, errlen);
}

void ls_objstore_faulty_stats(ls_objstore_t *os, ls_fault_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (ls_objstore_is_faulty(os)) ls_fault_get_stats(&((faulty_store_t *)os)->fault, out);
}

ls_objstore_t *ls_objstore_faulty_open(const char *url, const ls_objstore_opts_t *o, char *err,
                                       size_t errlen)
{
    if (!url || strncmp(url, "faulty+", 7) != 0) {
        if (err) snprintf(err, errlen, "not a faulty+ URL");
        return NULL;
    }
    const char *inner_url = url + 7;
    const char *qm = strchr(inner_url, '?');
    faulty_store_t *f = LS_NEW(faulty_store_t);
    f->base.ops = &faulty_ops;
    ls_fault_init(&f->fault, "faulty object store", op_names, OP_N, 1u << OP_PUT | 1u << OP_DEL,
                  LS_EAGAIN);
    ls_buf_t rest; /* the inner store's own parameters */
    ls_buf_init(&rest);
    if (qm && ls_fault_configure(&f->fault, qm + 1, &rest, err, errlen) != 0) {
        ls_buf_free(&rest);
        ls_fault_destroy(&f->fault);
        ls_free(f);
        return NULL;
    }
    char *iu = qm ? ls_asprintf("%.*s%s%.*s", (int)(qm - inner_url), inner_url, rest.len ? "?" : "",
                                (int)rest.len, (const char *)rest.data)
                  : ls_strdup(inner_url);
    ls_buf_free(&rest);
    f->inner = ls_objstore_open_opts(iu, o, err, errlen);
    ls_free(iu);
    if (!f->inner) {
        ls_fault_destroy(&f->fault);
        ls_free(f);
        return NULL;
    }
    return &f->base;
}
