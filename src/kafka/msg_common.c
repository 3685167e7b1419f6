/* Helpers shared by the message codecs (msg_*.c): bounded arrays, strict
 * non-nullable strings, []int32/[]string fields and tagged-field sections. */
#include <string.h>

#include "kafka/msg.h"

bool ls_kmsg_version_ok(ls_kr_t *r, int16_t v, int16_t min, int16_t max)
{
    if (v < min || v > max) {
        ls_kr_fail(r, "unsupported version");
        return false;
    }
    return !r->err;
}

int32_t ls_kmsg_arrlen(ls_kr_t *r, bool flex, size_t min_elem, bool nullable, const char *what)
{
    int32_t n = ls_kr_arrlen(r, flex, min_elem);
    if (n < 0 && !nullable) {
        ls_kr_fail(r, what);
        return 0;
    }
    return n;
}

void *ls_kmsg_alloc(ls_arena_t *a, int32_t n, size_t elem)
{
    if (n <= 0)
        return NULL;
    return ls_arena_alloc(a, (size_t)n * elem);
}

ls_kstr_t ls_kmsg_str(ls_kr_t *r, bool flex, const char *what)
{
    ls_kstr_t s = ls_kr_str(r, flex);
    if (s.len < 0 && !r->err) {
        ls_kr_fail(r, what);
        s.ptr = "";
        s.len = 0;
    }
    return s;
}

void ls_kmsg_wstr(ls_kw_t *w, bool flex, ls_kstr_t s) { ls_kw_strn(w, flex, s.ptr, s.len); }

void ls_kmsg_wstr_nn(ls_kw_t *w, bool flex, ls_kstr_t s)
{
    if (s.len < 0)
        ls_kw_strn(w, flex, "", 0);
    else
        ls_kw_strn(w, flex, s.ptr, s.len);
}

int32_t *ls_kmsg_i32s(ls_kr_t *r, bool flex, ls_arena_t *a, bool nullable, int32_t *n,
                      const char *what)
{
    *n = ls_kmsg_arrlen(r, flex, 4, nullable, what);
    int32_t *v = ls_kmsg_alloc(a, *n, sizeof *v);
    for (int32_t i = 0; i < *n && !r->err; i++)
        v[i] = ls_kr_i32(r);
    return v;
}

void ls_kmsg_wi32s(ls_kw_t *w, bool flex, const int32_t *v, int32_t n)
{
    ls_kw_arrlen(w, flex, n);
    for (int32_t i = 0; i < n; i++)
        ls_kw_i32(w, v[i]);
}

ls_kstr_t *ls_kmsg_strs(ls_kr_t *r, bool flex, ls_arena_t *a, bool nullable, int32_t *n,
                        const char *what)
{
    *n = ls_kmsg_arrlen(r, flex, flex ? 1 : 2, nullable, what);
    ls_kstr_t *v = ls_kmsg_alloc(a, *n, sizeof *v);
    for (int32_t i = 0; i < *n && !r->err; i++)
        v[i] = ls_kmsg_str(r, flex, what);
    return v;
}

void ls_kmsg_wstrs(ls_kw_t *w, bool flex, const ls_kstr_t *v, int32_t n)
{
    ls_kw_arrlen(w, flex, n);
    for (int32_t i = 0; i < n; i++)
        ls_kmsg_wstr_nn(w, flex, v[i]);
}

uint32_t ls_kmsg_tags_begin(ls_kr_t *r, bool flex)
{
    if (!flex || r->err)
        return 0;
    uint32_t n = ls_kr_uvarint(r);
    if (!r->err && n > ls_kr_remaining(r) / 2) {
        ls_kr_fail(r, "tagged field count");
        return 0;
    }
    return n;
}

uint32_t ls_kmsg_tag_next(ls_kr_t *r, ls_kr_t *sub)
{
    uint32_t tag = ls_kr_uvarint(r);
    uint32_t size = ls_kr_uvarint(r);
    if (!r->err && size > ls_kr_remaining(r))
        ls_kr_fail(r, "tagged field size");
    if (r->err) {
        ls_kr_init(sub, r->p, 0);
        sub->err = 1;
        sub->what = r->what;
        return UINT32_MAX;
    }
    ls_kr_init(sub, r->p, size);
    r->p += size;
    return tag;
}

void ls_kmsg_tag_end(ls_kr_t *r, ls_kr_t *sub)
{
    if (sub->err && !r->err)
        ls_kr_fail(r, sub->what ? sub->what : "tagged field");
}

void ls_kmsg_wtag(ls_kw_t *w, uint32_t tag, const ls_kw_t *payload)
{
    ls_kw_uvarint(w, tag);
    ls_kw_uvarint(w, (uint32_t)payload->buf.len);
    ls_kw_raw(w, payload->buf.data, payload->buf.len);
}

ls_kafka_NodeEndpoint *ls_kmsg_node_endpoints(ls_kr_t *r, ls_arena_t *a, int32_t *n)
{
    *n = ls_kmsg_arrlen(r, true, 4 + 1 + 4 + 1 + 1, false, "NodeEndpoints");
    ls_kafka_NodeEndpoint *v = ls_kmsg_alloc(a, *n, sizeof *v);
    for (int32_t i = 0; i < *n && !r->err; i++) {
        v[i].NodeId = ls_kr_i32(r);
        v[i].Host = ls_kmsg_str(r, true, "NodeEndpoint.Host");
        v[i].Port = ls_kr_i32(r);
        v[i].Rack = ls_kr_str(r, true);
        ls_kr_tags(r, true);
    }
    return v;
}

void ls_kmsg_wnode_endpoints(ls_kw_t *w, const ls_kafka_NodeEndpoint *v, int32_t n)
{
    ls_kw_arrlen(w, true, n);
    for (int32_t i = 0; i < n; i++) {
        ls_kw_i32(w, v[i].NodeId);
        ls_kmsg_wstr_nn(w, true, v[i].Host);
        ls_kw_i32(w, v[i].Port);
        ls_kmsg_wstr(w, true, v[i].Rack);
        ls_kw_tags(w, true);
    }
}

int16_t ls_kafka_error_for_version(int16_t api_key, int16_t version, int16_t err)
{
    if (err == 56 && ((api_key == LS_KAFKA_API_PRODUCE && version < 4) ||
                      (api_key == LS_KAFKA_API_FETCH && version < 6)))
        return 6;
    if (err == 100 && api_key == LS_KAFKA_API_FETCH && version < 13)
        return 3;
    return err;
}
