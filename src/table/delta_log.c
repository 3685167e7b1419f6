/* A Delta Lake transaction log: replay and the next commit (design note in
 * delta_log.h). State of a loaded log: the newest version, per live path
 * its add action, per txn appId its version, the newest metaData and
 * protocol, all from replaying the commits in version order (a later
 * action of a path or appId replaces an earlier one, as the protocol's
 * "Action Reconciliation" says). */
#include "table/delta_log.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "base/buf.h"
#include "table/delta_checkpoint.h"

#define VERSION_DIGITS 20

struct ls_delta_log {
    int64_t version;
    json_t *live;       /* path -> add action */
    json_t *tombs;      /* path -> remove action (removed, not added again) */
    json_t *txns;       /* appId -> txn action */
    json_t *metadata;   /* newest metaData action, or NULL */
    json_t *protocol;   /* newest protocol action, or NULL */
    const char **paths; /* ls_delta_log_live_paths' answer */
};

struct ls_delta_commit {
    json_t *actions; /* commitInfo first */
    size_t files;
    int64_t now_ms;
    bool has_remove;
};

/* The version of a log key "<prefix>/_delta_log/<20 digits>.json", or -1
 * for any other key under the log (checkpoints, _last_checkpoint, temp files
 * of other writers). */
static int64_t commit_version(const char *key, size_t dirlen)
{
    const char *name = key + dirlen;
    if (strlen(name) != VERSION_DIGITS + 5 || strcmp(name + VERSION_DIGITS, ".json") != 0)
        return -1;
    int64_t v = 0;
    for (int i = 0; i < VERSION_DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

static void apply_action(ls_delta_log_t *l, json_t *a)
{
    json_t *x;
    if ((x = json_object_get(a, "add"))) {
        const char *p = json_string_value(json_object_get(x, "path"));
        if (p) json_object_set(l->live, p, x), json_object_del(l->tombs, p);
    } else if ((x = json_object_get(a, "remove"))) {
        const char *p = json_string_value(json_object_get(x, "path"));
        if (p) json_object_del(l->live, p), json_object_set(l->tombs, p, x);
    } else if ((x = json_object_get(a, "txn"))) {
        const char *app = json_string_value(json_object_get(x, "appId"));
        if (app) json_object_set(l->txns, app, x);
    } else if ((x = json_object_get(a, "metaData"))) {
        json_decref(l->metadata);
        l->metadata = json_incref(x);
    } else if ((x = json_object_get(a, "protocol"))) {
        json_decref(l->protocol);
        l->protocol = json_incref(x);
    }
}

static ls_status replay_commit(ls_delta_log_t *l, const ls_buf_t *b, const char *key, char *err,
                               size_t errlen)
{
    const char *p = (const char *)b->data, *end = p + b->len;
    int line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        line++;
        if (n) {
            json_error_t je;
            json_t *a = json_loadb(p, n, 0, &je);
            if (!json_is_object(a)) {
                snprintf(err, errlen, "%s line %d: not a JSON action: %s", key, line, je.text);
                json_decref(a);
                return LS_ECORRUPT;
            }
            apply_action(l, a);
            json_decref(a);
        }
        p += n + 1;
    }
    return LS_OK;
}

/* The state of the checkpoint _last_checkpoint names into l (nothing when
 * there is none). */
static ls_status load_checkpoint(ls_objstore_t *os, const char *prefix, ls_delta_log_t *l,
                                 char *err, size_t errlen)
{
    char *key = ls_asprintf("%s/" LS_DELTA_LOG_DIR "/_last_checkpoint", prefix);
    ls_buf_t b;
    ls_buf_init(&b);
    ls_status st = ls_objstore_get(os, key, 0, UINT64_MAX, &b);
    json_t *last = st == LS_OK ? json_loadb((const char *)b.data, b.len, 0, NULL) : NULL;
    if (st == LS_ENOTFOUND) {
        st = LS_OK;
    } else if (st != LS_OK) {
        snprintf(err, errlen, "get %s: %s", key, ls_status_str(st));
    } else if (!json_is_integer(json_object_get(last, "version"))) {
        snprintf(err, errlen, "%s: no version", key);
        st = LS_ECORRUPT;
    } else {
        int64_t v = (int64_t)json_integer_value(json_object_get(last, "version"));
        char *cp = ls_asprintf("%s/" LS_DELTA_LOG_DIR "/%0*lld.checkpoint.parquet", prefix,
                               VERSION_DIGITS, (long long)v);
        json_t *actions = NULL;
        if ((st = ls_objstore_get(os, cp, 0, UINT64_MAX, &b)) != LS_OK)
            snprintf(err, errlen, "get %s: %s", cp, ls_status_str(st));
        else
            st = ls_delta_checkpoint_decode(b.data, b.len, &actions, err, errlen);
        size_t i;
        json_t *a;
        json_array_foreach(actions, i, a) apply_action(l, a);
        if (st == LS_OK) l->version = v;
        json_decref(actions);
        ls_free(cp);
    }
    json_decref(last);
    ls_buf_free(&b);
    ls_free(key);
    return st;
}

ls_status ls_delta_log_load(ls_objstore_t *os, const char *prefix, ls_delta_log_t **out, char *err,
                            size_t errlen)
{
    *out = NULL;
    char *dir = ls_asprintf("%s/" LS_DELTA_LOG_DIR "/", prefix);
    ls_objinfo_t *objs = NULL;
    size_t n = 0;
    ls_status st = ls_objstore_list(os, dir, &objs, &n);
    if (st != LS_OK) {
        snprintf(err, errlen, "list %s: %s", dir, ls_status_str(st));
        ls_free(dir);
        return st;
    }
    ls_delta_log_t *l = LS_NEWN(ls_delta_log_t, 1);
    l->version = -1;
    l->live = json_object();
    l->tombs = json_object();
    l->txns = json_object();
    ls_buf_t b;
    ls_buf_init(&b);
    size_t dirlen = strlen(dir);
    st = load_checkpoint(os, prefix, l, err, errlen);
    for (size_t i = 0; i < n && st == LS_OK; i++) { /* listed in key order: version order */
        int64_t v = commit_version(objs[i].key, dirlen);
        if (v <= l->version) continue; /* not a commit, or in the checkpoint */
        if (v != l->version + 1) {
            snprintf(err, errlen, "%s: version %lld follows %lld (a gap in the log)", objs[i].key,
                     (long long)v, (long long)l->version);
            st = LS_ECORRUPT;
            break;
        }
        if ((st = ls_objstore_get(os, objs[i].key, 0, UINT64_MAX, &b)) != LS_OK) {
            snprintf(err, errlen, "get %s: %s", objs[i].key, ls_status_str(st));
            break;
        }
        if ((st = replay_commit(l, &b, objs[i].key, err, errlen)) == LS_OK) l->version = v;
    }
    ls_buf_free(&b);
    ls_objinfo_free(objs, n);
    ls_free(dir);
    if (st != LS_OK) {
        ls_delta_log_free(l);
        return st;
    }
    *out = l;
    return LS_OK;
}

void ls_delta_log_free(ls_delta_log_t *l)
{
    if (!l) return;
    json_decref(l->live);
    json_decref(l->tombs);
    json_decref(l->txns);
    json_decref(l->metadata);
    json_decref(l->protocol);
    ls_free(l->paths);
    ls_free(l);
}

int64_t ls_delta_log_version(const ls_delta_log_t *l) { return l->version; }

int64_t ls_delta_log_txn(const ls_delta_log_t *l, const char *app_id)
{
    json_t *v = json_object_get(json_object_get(l->txns, app_id), "version");
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

bool ls_delta_log_live(const ls_delta_log_t *l, const char *path)
{
    return json_object_get(l->live, path) != NULL;
}

int64_t ls_delta_log_live_size(const ls_delta_log_t *l, const char *path)
{
    return (int64_t)json_integer_value(json_object_get(json_object_get(l->live, path), "size"));
}

const char **ls_delta_log_live_paths(const ls_delta_log_t *l, size_t *n)
{
    ls_delta_log_t *m = (ls_delta_log_t *)l; /* the answer is cached in l */
    ls_free(m->paths);
    m->paths = LS_NEWN(const char *, json_object_size(l->live) + 1);
    size_t k = 0;
    const char *key;
    json_t *v;
    json_object_foreach(l->live, key, v) m->paths[k++] = key;
    *n = k;
    return m->paths;
}

const char *ls_delta_log_schema(const ls_delta_log_t *l)
{
    return json_string_value(json_object_get(l->metadata, "schemaString"));
}

char *ls_delta_log_configuration(const ls_delta_log_t *l)
{
    json_t *c = json_object_get(l->metadata, "configuration");
    char *text = c ? json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char *out = text ? ls_strdup(text) : NULL;
    free(text);
    return out;
}

const char *ls_delta_log_table_id(const ls_delta_log_t *l)
{
    return json_string_value(json_object_get(l->metadata, "id"));
}

int ls_delta_log_reader_version(const ls_delta_log_t *l)
{
    return (int)json_integer_value(json_object_get(l->protocol, "minReaderVersion"));
}

/* ---- checkpoints and log clean-up ---------------------------------------- */

static void push(json_t *actions, const char *kind, json_t *body)
{
    if (body) json_array_append_new(actions, json_pack("{s:O}", kind, body));
}

ls_status ls_delta_log_checkpoint(ls_objstore_t *os, const char *prefix, const ls_delta_log_t *l,
                                  int64_t tombs_after_ms, char *err, size_t errlen)
{
    json_t *actions = json_array(), *x;
    const char *k;
    push(actions, "protocol", l->protocol);
    push(actions, "metaData", l->metadata);
    json_object_foreach(l->txns, k, x) push(actions, "txn", x);
    json_object_foreach(l->live, k, x) push(actions, "add", x);
    json_object_foreach(l->tombs, k, x)
    {
        if (json_integer_value(json_object_get(x, "deletionTimestamp")) >= tombs_after_ms)
            push(actions, "remove", x);
    }
    ls_buf_t b;
    ls_buf_init(&b);
    ls_status st = ls_delta_checkpoint_encode(actions, &b, err, errlen);
    char *cp = ls_asprintf("%s/" LS_DELTA_LOG_DIR "/%0*lld.checkpoint.parquet", prefix,
                           VERSION_DIGITS, (long long)l->version);
    char *last = ls_asprintf("%s/" LS_DELTA_LOG_DIR "/_last_checkpoint", prefix);
    /* the checkpoint first: _last_checkpoint only ever names a whole one
     * (a checkpoint written again has the same actions) */
    struct iovec iov = {b.data, b.len};
    if (st == LS_OK && (st = ls_objstore_put(os, cp, &iov, 1, 0)) != LS_OK)
        snprintf(err, errlen, "put %s: %s", cp, ls_status_str(st));
    if (st == LS_OK) {
        char *text = ls_asprintf("{\"version\":%lld,\"size\":%zu,\"sizeInBytes\":%zu}",
                                 (long long)l->version, json_array_size(actions), b.len);
        struct iovec liov = {text, strlen(text)};
        if ((st = ls_objstore_put(os, last, &liov, 1, 0)) != LS_OK)
            snprintf(err, errlen, "put %s: %s", last, ls_status_str(st));
        ls_free(text);
    }
    ls_free(cp);
    ls_free(last);
    ls_buf_free(&b);
    json_decref(actions);
    return st;
}

/* The version of a checkpoint key "<20 digits>.checkpoint.parquet", or -1. */
static int64_t checkpoint_version(const char *key, size_t dirlen)
{
    const char *name = key + dirlen;
    if (strlen(name) != VERSION_DIGITS + 19 ||
        strcmp(name + VERSION_DIGITS, ".checkpoint.parquet") != 0)
        return -1;
    int64_t v = 0;
    for (int i = 0; i < VERSION_DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

ls_status ls_delta_log_cleanup(ls_objstore_t *os, const char *prefix, int64_t upto_version,
                               int64_t older_than_ms, size_t *deleted, char *err, size_t errlen)
{
    *deleted = 0;
    char *dir = ls_asprintf("%s/" LS_DELTA_LOG_DIR "/", prefix);
    size_t dirlen = strlen(dir), n = 0;
    ls_objinfo_t *objs = NULL;
    ls_status st = ls_objstore_list(os, dir, &objs, &n);
    if (st != LS_OK) snprintf(err, errlen, "list %s: %s", dir, ls_status_str(st));
    int64_t keep = -1; /* the newest checkpoint at most upto_version that is old enough */
    for (size_t i = 0; st == LS_OK && i < n; i++) {
        int64_t v = checkpoint_version(objs[i].key, dirlen);
        if (v >= 0 && v <= upto_version && objs[i].mtime_ms < older_than_ms && v > keep) keep = v;
    }
    for (size_t i = 0; st == LS_OK && keep > 0 && i < n; i++) {
        int64_t v = commit_version(objs[i].key, dirlen);
        if (v < 0) v = checkpoint_version(objs[i].key, dirlen);
        if (v < 0 || v >= keep) continue;
        if ((st = ls_objstore_del(os, objs[i].key)) != LS_OK)
            snprintf(err, errlen, "delete %s: %s", objs[i].key, ls_status_str(st));
        else
            (*deleted)++;
    }
    ls_objinfo_free(objs, n);
    ls_free(dir);
    return st;
}

/* ---- the next commit ---------------------------------------------------- */

ls_delta_commit_t *ls_delta_commit_new(int64_t now_ms, const char *operation)
{
    ls_delta_commit_t *c = LS_NEWN(ls_delta_commit_t, 1);
    c->now_ms = now_ms;
    c->actions = json_array();
    json_array_append_new(c->actions, json_pack("{s:{s:I,s:s,s:{},s:s}}", "commitInfo", "timestamp",
                                                (json_int_t)now_ms, "operation", operation,
                                                "operationParameters", "engineInfo", "lakestream"));
    return c;
}

void ls_delta_commit_free(ls_delta_commit_t *c)
{
    if (!c) return;
    json_decref(c->actions);
    ls_free(c);
}

static json_t *string_array(const char *const *v)
{
    json_t *a = json_array();
    for (size_t i = 0; v && v[i]; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

void ls_delta_commit_protocol(ls_delta_commit_t *c, int min_reader, int min_writer,
                              const char *const *features)
{
    json_t *p =
        json_pack("{s:i,s:i}", "minReaderVersion", min_reader, "minWriterVersion", min_writer);
    if (features) {
        json_object_set_new(p, "readerFeatures", string_array(features));
        json_object_set_new(p, "writerFeatures", string_array(features));
    }
    json_array_append_new(c->actions, json_pack("{s:o}", "protocol", p));
}

void ls_delta_commit_metadata(ls_delta_commit_t *c, const char *id, const char *schema_string,
                              const char *const *configuration, int64_t created_ms)
{
    json_t *conf = json_object();
    for (size_t i = 0; configuration && configuration[i]; i += 2)
        json_object_set_new(conf, configuration[i], json_string(configuration[i + 1]));
    json_array_append_new(c->actions,
                          json_pack("{s:{s:s,s:{s:s,s:{}},s:s,s:[],s:o,s:I}}", "metaData", "id", id,
                                    "format", "provider", "parquet", "options", "schemaString",
                                    schema_string, "partitionColumns", "configuration", conf,
                                    "createdTime", (json_int_t)created_ms));
}

void ls_delta_commit_add(ls_delta_commit_t *c, const char *path, int64_t size, int64_t mtime_ms,
                         const char *stats)
{
    json_t *a =
        json_pack("{s:s,s:{},s:I,s:I,s:b}", "path", path, "partitionValues", "size",
                  (json_int_t)size, "modificationTime", (json_int_t)mtime_ms, "dataChange", 1);
    if (stats) json_object_set_new(a, "stats", json_string(stats));
    json_array_append_new(c->actions, json_pack("{s:o}", "add", a));
    c->files++;
}

void ls_delta_commit_remove(ls_delta_commit_t *c, const char *path, int64_t size)
{
    json_array_append_new(c->actions, json_pack("{s:{s:s,s:I,s:b,s:b,s:{},s:I}}", "remove", "path",
                                                path, "deletionTimestamp", (json_int_t)c->now_ms,
                                                "dataChange", 1, "extendedFileMetadata", 1,
                                                "partitionValues", "size", (json_int_t)size));
    c->files++;
    c->has_remove = true;
}

void ls_delta_commit_txn(ls_delta_commit_t *c, const char *app_id, int64_t version)
{
    json_array_append_new(c->actions,
                          json_pack("{s:{s:s,s:I,s:I}}", "txn", "appId", app_id, "version",
                                    (json_int_t)version, "lastUpdated", (json_int_t)c->now_ms));
}

size_t ls_delta_commit_files(const ls_delta_commit_t *c) { return c->files; }

size_t ls_delta_commit_actions(const ls_delta_commit_t *c) { return json_array_size(c->actions); }

char *ls_delta_commit_encode(const ls_delta_commit_t *c, size_t *len)
{
    json_t *info = json_object_get(json_array_get(c->actions, 0), "commitInfo");
    json_object_set_new(info, "isBlindAppend", json_boolean(!c->has_remove));
    ls_buf_t b;
    ls_buf_init(&b);
    size_t i;
    json_t *a;
    json_array_foreach(c->actions, i, a)
    {
        char *s = json_dumps(a, JSON_COMPACT);
        ls_buf_printf(&b, "%s\n", s);
        free(s);
    }
    ls_buf_append_u8(&b, 0);
    char *out = (char *)ls_buf_steal(&b, len);
    *len -= 1;
    return out;
}

ls_status ls_delta_commit_put(ls_objstore_t *os, const char *prefix, const ls_delta_log_t *l,
                              const ls_delta_commit_t *c, char *err, size_t errlen)
{
    char *key = ls_asprintf("%s/" LS_DELTA_LOG_DIR "/%0*lld.json", prefix, VERSION_DIGITS,
                            (long long)(l->version + 1));
    size_t len;
    char *bytes = ls_delta_commit_encode(c, &len);
    struct iovec iov = {bytes, len};
    ls_status st = ls_objstore_put(os, key, &iov, 1, LS_OBJSTORE_PUT_CREATE_ONLY);
    if (st == LS_EEXISTS) {
        snprintf(err, errlen, "%s exists: another writer committed version %lld", key,
                 (long long)(l->version + 1));
        st = LS_ECONFLICT;
    } else if (st != LS_OK) {
        snprintf(err, errlen, "put %s: %s", key, ls_status_str(st));
    }
    ls_free(bytes);
    ls_free(key);
    return st;
}

ls_status ls_delta_log_drop(ls_objstore_t *os, const char *prefix, int64_t older_than_ms,
                            size_t *deleted, char *err, size_t errlen)
{
    *deleted = 0;
    char *dir = ls_asprintf("%s/" LS_DELTA_LOG_DIR "/", prefix);
    size_t n = 0;
    ls_objinfo_t *objs = NULL;
    ls_status st = ls_objstore_list(os, dir, &objs, &n);
    if (st != LS_OK) snprintf(err, errlen, "list %s: %s", dir, ls_status_str(st));
    bool old = true;
    for (size_t i = 0; st == LS_OK && i < n; i++)
        old &= objs[i].mtime_ms < older_than_ms;
    /* newest first (_last_checkpoint sorts last): what a crash leaves is
     * the log of an older version, never one with a gap */
    for (size_t i = n; st == LS_OK && old && i-- > 0;) {
        if ((st = ls_objstore_del(os, objs[i].key)) != LS_OK)
            snprintf(err, errlen, "delete %s: %s", objs[i].key, ls_status_str(st));
        else
            (*deleted)++;
    }
    ls_objinfo_free(objs, n);
    ls_free(dir);
    return st;
}

char *ls_delta_path_encode(const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    ls_buf_t b;
    ls_buf_init(&b);
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        unsigned char ch = *p;
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || strchr("-._~/=", ch);
        if (plain) {
            ls_buf_append_u8(&b, ch);
        } else {
            ls_buf_append_u8(&b, '%');
            ls_buf_append_u8(&b, (uint8_t)hex[ch >> 4]);
            ls_buf_append_u8(&b, (uint8_t)hex[ch & 15]);
        }
    }
    ls_buf_append_u8(&b, 0);
    return (char *)ls_buf_steal(&b, NULL);
}
