/* SCRAM users in the metadata store (design note in users.h). */
#include "security/users.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "base/buf.h"
#include "meta/meta_keys.h"

static char *user_key(const char *name)
{
    ls_buf_t b;
    ls_buf_init(&b);
    ls_buf_append(&b, LS_KEY_USERS, strlen(LS_KEY_USERS));
    ls_buf_append_keypart(&b, name);
    ls_buf_append_u8(&b, 0);
    size_t n;
    return (char *)ls_buf_steal(&b, &n);
}

void ls_user_free(ls_user_t *u)
{
    ls_free(u->name);
    OPENSSL_cleanse(u, sizeof *u);
    memset(u, 0, sizeof *u);
}

static bool b64_field(json_t *o, const char *k, uint8_t *out, size_t cap, size_t *len)
{
    const char *s = json_string_value(json_object_get(o, k));
    uint8_t *d = NULL;
    size_t n = 0;
    if (!s || ls_base64_decode(s, &d, &n) != 0 || n == 0 || n > cap) {
        ls_free(d);
        return false;
    }
    memcpy(out, d, n);
    *len = n;
    ls_free(d);
    return true;
}

static ls_status decode(const uint8_t *val, size_t vlen, ls_user_t *out)
{
    memset(out, 0, sizeof *out);
    json_t *j = json_loadb((const char *)val, vlen, 0, NULL);
    const char *name = json_string_value(json_object_get(j, "name"));
    if (!name) {
        json_decref(j);
        return LS_ECORRUPT;
    }
    out->name = ls_strdup(name);
    for (int m = LS_SCRAM_SHA_256; m <= LS_SCRAM_SHA_512; m++) {
        json_t *c = json_object_get(j, ls_scram_mech_name((ls_scram_mech)m));
        if (!c) continue;
        ls_scram_cred_t *cr = &out->cred[m];
        size_t kl = ls_scram_key_len((ls_scram_mech)m), n1 = 0, n2 = 0;
        cr->mech = (ls_scram_mech)m;
        cr->iterations = (int32_t)json_integer_value(json_object_get(c, "iterations"));
        if (!b64_field(c, "salt", cr->salt, sizeof cr->salt, &cr->salt_len) ||
            !b64_field(c, "stored_key", cr->stored_key, kl, &n1) ||
            !b64_field(c, "server_key", cr->server_key, kl, &n2) || n1 != kl || n2 != kl ||
            cr->iterations < 1) {
            json_decref(j);
            ls_user_free(out);
            return LS_ECORRUPT;
        }
        out->has[m] = true;
    }
    json_decref(j);
    return LS_OK;
}

static void set_b64(json_t *o, const char *k, const uint8_t *p, size_t n)
{
    char *s = ls_base64_encode(p, n);
    json_object_set_new(o, k, json_string(s));
    ls_free(s);
}

ls_status ls_users_get(ls_meta_t *m, const char *name, ls_user_t *out, int64_t *rev)
{
    char *key = user_key(name);
    ls_kv_t kv;
    ls_status st = ls_meta_get(m, key, &kv);
    ls_free(key);
    if (rev) *rev = 0;
    if (st != LS_OK) return st;
    if (rev) *rev = kv.mod_rev;
    st = decode(kv.val, kv.vlen, out);
    ls_kv_free(&kv);
    return st;
}

ls_status ls_users_list(ls_meta_t *m, ls_user_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(m, LS_KEY_USERS, 0, &l);
    if (st != LS_OK) return st;
    ls_user_t *users = LS_NEWN(ls_user_t, l.n ? l.n : 1);
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++)
        if (decode(l.v[i].val, l.v[i].vlen, &users[k]) == LS_OK) k++;
    ls_kvlist_free(&l);
    *out = users;
    *n = k;
    return LS_OK;
}

ls_status ls_users_put(ls_meta_t *m, const ls_user_t *u, int64_t rev)
{
    char *key = user_key(u->name);
    bool any = false;
    json_t *j = json_object();
    json_object_set_new(j, "name", json_string(u->name));
    for (int i = LS_SCRAM_SHA_256; i <= LS_SCRAM_SHA_512; i++) {
        if (!u->has[i]) continue;
        const ls_scram_cred_t *cr = &u->cred[i];
        size_t kl = ls_scram_key_len(cr->mech);
        json_t *c = json_object();
        set_b64(c, "salt", cr->salt, cr->salt_len);
        json_object_set_new(c, "iterations", json_integer(cr->iterations));
        set_b64(c, "stored_key", cr->stored_key, kl);
        set_b64(c, "server_key", cr->server_key, kl);
        json_object_set_new(j, ls_scram_mech_name((ls_scram_mech)i), c);
        any = true;
    }
    char *val = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV, .key = key, .klen = strlen(key), .rev = rev};
    ls_meta_op_t op = {.kind = any ? LS_META_OP_PUT : LS_META_OP_DEL,
                       .key = key,
                       .klen = strlen(key),
                       .val = val,
                       .vlen = any ? strlen(val) : 0};
    ls_status st = ls_meta_txn(m, &cmp, 1, &op, 1, NULL);
    free(val);
    ls_free(key);
    return st;
}
