/* Helpers of the generated message codecs (kafka/msg_gen.c): bounded arrays,
 * strict non-nullable strings and bytes, zero-copy records and tagged-field
 * sections. */
#include <string.h>

#include "kafka/msg_rt.h"

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
    if (n <= 0) return NULL;
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

ls_kbytes_t ls_kmsg_bytes(ls_kr_t *r, bool flex, const char *what)
{
    ls_kbytes_t b = ls_kr_bytes(r, flex);
    if (b.len < 0 && !r->err) {
        ls_kr_fail(r, what);
        b.ptr = NULL;
        b.len = 0;
    }
    return b;
}

void ls_kmsg_wstr(ls_kw_t *w, bool flex, ls_kstr_t s) { ls_kw_strn(w, flex, s.ptr, s.len); }

void ls_kmsg_wstr_nn(ls_kw_t *w, bool flex, ls_kstr_t s)
{
    if (s.len < 0)
        ls_kw_strn(w, flex, "", 0);
    else
        ls_kw_strn(w, flex, s.ptr, s.len);
}

void ls_kmsg_wbytes(ls_kw_t *w, bool flex, ls_kbytes_t b, bool nullable)
{
    if (b.len < 0 && !nullable)
        ls_kw_bytes(w, flex, "", 0);
    else
        ls_kw_bytes(w, flex, b.ptr, b.len);
}

void ls_kmsg_wrecords(ls_kw_t *w, bool flex, const ls_kref_t *refs, int nrefs, ls_kbytes_t b,
                      bool nullable)
{
    if (nrefs <= 0) {
        ls_kmsg_wbytes(w, flex, b, nullable);
        return;
    }
    size_t total = 0;
    for (int i = 0; i < nrefs; i++)
        total += refs[i].len;
    if (total > INT32_MAX - 1)
        total = INT32_MAX - 1; /* cannot happen with bounded fetch sizes; keep the prefix sane */
    if (flex)
        ls_kw_uvarint(w, (uint32_t)total + 1);
    else
        ls_kw_i32(w, (int32_t)total);
    for (int i = 0; i < nrefs; i++)
        ls_kw_ref(w, refs[i].chunk, refs[i].off, refs[i].len);
}

void ls_kmsg_warrlen(ls_kw_t *w, bool flex, int32_t n, bool nullable)
{
    ls_kw_arrlen(w, flex, n < 0 && !nullable ? 0 : n);
}

uint32_t ls_kmsg_tags_begin(ls_kr_t *r, bool flex)
{
    if (!flex || r->err) return 0;
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
    if (!r->err && size > ls_kr_remaining(r)) ls_kr_fail(r, "tagged field size");
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
    if (sub->err && !r->err) ls_kr_fail(r, sub->what ? sub->what : "tagged field");
}

void ls_kmsg_wtag(ls_kw_t *w, uint32_t tag, const ls_kw_t *payload)
{
    ls_kw_uvarint(w, tag);
    ls_kw_uvarint(w, (uint32_t)payload->buf.len);
    ls_kw_raw(w, payload->buf.data, payload->buf.len);
}
