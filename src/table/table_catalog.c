/* Table catalog: per-table metadata pointers in ls_meta; design note in
 * table_catalog.h. */
#include "table/table_catalog.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/utf8.h"
#include "meta/meta_keys.h"

int ls_tcat_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > LS_TCAT_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '/' || c < 0x20 || c == 0x7f) return 0;
    }
    return ls_utf8_valid((const uint8_t *)s, n);
}

static char *pointer_key(const char *ns, const char *name)
{
    return ls_asprintf(LS_KEY_TABLE "%s/%s", ns, name);
}

void ls_tcat_pointer_clear(ls_tcat_pointer_t *p)
{
    ls_free(p->ns);
    ls_free(p->name);
    ls_free(p->metadata_location);
    ls_free(p->metadata_key);
    ls_free(p->prefix);
    memset(p, 0, sizeof *p);
}

static char *str_field(json_t *o, const char *name)
{
    const char *v = json_string_value(json_object_get(o, name));
    return v && *v ? ls_strdup(v) : NULL;
}

ls_status ls_tcat_pointer_decode(const ls_kv_t *kv, ls_tcat_pointer_t *out, char *err,
                                 size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t plen = strlen(LS_KEY_TABLE);
    const char *k = (const char *)kv->key;
    const char *slash = kv->klen > plen && !memcmp(k, LS_KEY_TABLE, plen)
                            ? memchr(k + plen, '/', kv->klen - plen)
                            : NULL;
    if (!slash || !ls_tcat_name_ok(k + plen, (size_t)(slash - k) - plen) ||
        !ls_tcat_name_ok(slash + 1, kv->klen - (size_t)(slash + 1 - k))) {
        snprintf(err, errlen, "table pointer key '%.*s' is not " LS_KEY_TABLE "<ns>/<table>",
                 (int)(kv->klen > 300 ? 300 : kv->klen), k);
        return LS_ECORRUPT;
    }
    json_error_t je;
    json_t *o = json_loadb((const char *)kv->val, kv->vlen, 0, &je);
    json_t *ver = json_object_get(o, "version");
    out->metadata_location = str_field(o, "metadata-location");
    out->metadata_key = str_field(o, "metadata-key");
    out->prefix = str_field(o, "prefix");
    int ok = json_is_object(o) && json_is_integer(ver) && json_integer_value(ver) >= 1 &&
             json_integer_value(ver) <= INT32_MAX && out->metadata_location && out->metadata_key &&
             out->prefix;
    if (!ok) {
        snprintf(err, errlen, "table pointer %.*s: %s", (int)kv->klen, k,
                 o ? "needs version >= 1, metadata-location, metadata-key and prefix" : je.text);
        json_decref(o);
        ls_tcat_pointer_clear(out);
        return LS_ECORRUPT;
    }
    out->version = (int)json_integer_value(ver);
    out->updated_ms = (int64_t)json_integer_value(json_object_get(o, "updated-ms"));
    out->ns = ls_strndup(k + plen, (size_t)(slash - k) - plen);
    out->name = ls_strndup(slash + 1, kv->klen - (size_t)(slash + 1 - k));
    out->mod_rev = kv->mod_rev;
    json_decref(o);
    return LS_OK;
}

ls_status ls_tcat_get(ls_meta_t *m, const char *ns, const char *name, ls_tcat_pointer_t *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!ls_tcat_name_ok(ns, strlen(ns)) || !ls_tcat_name_ok(name, strlen(name)))
        return LS_ENOTFOUND;
    char *key = pointer_key(ns, name);
    ls_kv_t kv;
    ls_status st = ls_meta_get(m, key, &kv);
    if (st == LS_OK) {
        st = ls_tcat_pointer_decode(&kv, out, err, errlen);
        ls_kv_free(&kv);
    } else if (st != LS_ENOTFOUND) {
        snprintf(err, errlen, "reading %s: %s", key, ls_status_str(st));
    }
    ls_free(key);
    return st;
}

ls_status ls_tcat_list(ls_meta_t *m, const char *ns, ls_tcat_pointer_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (ns && !ls_tcat_name_ok(ns, strlen(ns))) return LS_OK;
    char *prefix = ns ? ls_asprintf(LS_KEY_TABLE "%s/", ns) : ls_strdup(LS_KEY_TABLE);
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(m, prefix, 0, &l);
    ls_free(prefix);
    if (st != LS_OK) return st;
    ls_tcat_pointer_t *v = LS_NEWN(ls_tcat_pointer_t, l.n ? l.n : 1);
    for (size_t i = 0; i < l.n; i++) {
        char err[512];
        if (ls_tcat_pointer_decode(&l.v[i], &v[*n], err, sizeof err) == LS_OK)
            (*n)++;
        else
            LS_WARN("tables", "skipping %s (fix or delete the key)", err);
    }
    ls_kvlist_free(&l);
    *out = v;
    return LS_OK;
}

void ls_tcat_list_free(ls_tcat_pointer_t *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        ls_tcat_pointer_clear(&v[i]);
    ls_free(v);
}

/* ---- the committer: compare-and-set of the pointer ---------------------- */

typedef struct pointer_ref {
    ls_meta_t *meta;
    char *key;
    char *prefix;
    int64_t mod_rev; /* of the pointer this table object stands on (0: absent) */
} pointer_ref_t;

static void pointer_ref_release(void *arg)
{
    pointer_ref_t *r = arg;
    ls_free(r->key);
    ls_free(r->prefix);
    ls_free(r);
}

static ls_status pointer_swap(void *arg, int version, const char *location, const char *key,
                              char *err, size_t errlen)
{
    pointer_ref_t *r = arg;
    json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:I}", "version", version, "metadata-location",
                          location, "metadata-key", key, "prefix", r->prefix, "updated-ms",
                          (json_int_t)ls_clock_wall_ms());
    char *val = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    size_t vlen = strlen(val), klen = strlen(r->key);
    ls_meta_cmp_t cmp = {
        .kind = LS_META_CMP_MOD_REV, .key = r->key, .klen = klen, .rev = r->mod_rev};
    ls_meta_op_t op = {
        .kind = LS_META_OP_PUT, .key = r->key, .klen = klen, .val = val, .vlen = vlen};
    int64_t rev = 0;
    ls_status st = ls_meta_txn(r->meta, &cmp, 1, &op, 1, &rev);
    if (st == LS_OK) {
        r->mod_rev = rev;
    } else if (st == LS_ECONFLICT) {
        snprintf(err, errlen, "%s moved: concurrent commit", r->key);
    } else {
        /* maybe applied: the pointer itself says */
        ls_kv_t kv;
        ls_status gs = ls_meta_get(r->meta, r->key, &kv);
        if (gs == LS_OK && kv.vlen == vlen && !memcmp(kv.val, val, vlen)) {
            r->mod_rev = kv.mod_rev;
            st = LS_OK;
        } else if ((gs == LS_OK && kv.mod_rev != r->mod_rev) ||
                   (gs == LS_ENOTFOUND && r->mod_rev != 0)) {
            snprintf(err, errlen, "%s moved: concurrent commit", r->key);
            st = LS_ECONFLICT;
        } else {
            snprintf(err, errlen, "swapping %s: %s (%s)", r->key, ls_status_str(st),
                     gs == LS_OK || gs == LS_ENOTFOUND ? "not applied" : "outcome unknown");
        }
        if (gs == LS_OK) ls_kv_free(&kv);
    }
    ls_free(val);
    return st;
}

static ls_ice_committer_t committer_for(ls_meta_t *m, const char *ns, const char *name,
                                        const char *prefix, int64_t mod_rev)
{
    pointer_ref_t *r = LS_NEW(pointer_ref_t);
    r->meta = m;
    r->key = pointer_key(ns, name);
    r->prefix = ls_strdup(prefix);
    r->mod_rev = mod_rev;
    return (ls_ice_committer_t){.commit = pointer_swap, .release = pointer_ref_release, .arg = r};
}

ls_status ls_tcat_open(ls_meta_t *m, ls_objstore_t *os, const char *ns, const char *name,
                       const char *prefix, ls_ice_table_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!ls_tcat_name_ok(ns, strlen(ns)) || !ls_tcat_name_ok(name, strlen(name))) {
        snprintf(err, errlen, "'%s.%s' is not a valid table name", ns, name);
        return LS_EINVAL;
    }
    ls_tcat_pointer_t p;
    ls_status st = ls_tcat_get(m, ns, name, &p, err, errlen);
    if (st == LS_OK) {
        ls_ice_committer_t c = committer_for(m, ns, name, p.prefix, p.mod_rev);
        st = ls_ice_table_load_file(os, p.prefix, p.metadata_key, p.version, &c, out, err, errlen);
        ls_tcat_pointer_clear(&p);
        return st;
    }
    if (st != LS_ENOTFOUND) return st;
    /* from before pointers: the layout; the next commit creates the pointer */
    ls_ice_committer_t c = committer_for(m, ns, name, prefix, 0);
    return ls_ice_table_load(os, prefix, &c, out, err, errlen);
}

ls_status ls_tcat_create(ls_meta_t *m, ls_objstore_t *os, const char *ns, const char *name,
                         const char *prefix, const char *location, const char *schema_json,
                         int last_column_id, const ls_ice_spec_t *spec, const char *const *props,
                         ls_ice_table_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!ls_tcat_name_ok(ns, strlen(ns)) || !ls_tcat_name_ok(name, strlen(name))) {
        snprintf(err, errlen, "'%s.%s' is not a valid table name", ns, name);
        return LS_EINVAL;
    }
    ls_ice_committer_t c = committer_for(m, ns, name, prefix, 0);
    return ls_ice_table_create(os, prefix, location, schema_json, last_column_id, spec, props, &c,
                               out, err, errlen);
}
