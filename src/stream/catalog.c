/* Stream catalog: namespaces and streams over ls_meta, with an in-memory copy.
 *
 * Metadata keyspace (values are compact JSON, keys sorted; unknown fields are
 * ignored on read so later versions can add fields):
 *
 *   /ls/ns/<ns>             {"created_ms":<ms>,"properties":{}}
 *                           written (if absent) by the first create in <ns>
 *   /ls/stream/<ns>/<name>  {"config":{"<k>":"<v>",...},"created_ms":<ms>,
 *                            "id":"<uuid>","partitions":<n>,"stream_no":<n>}
 *                           one per live stream; its mod_rev is the stream's
 *                           revision, the compare-and-set token of every change
 *   /ls/tomb/<uuid>         {"dropped_ms":<ms>,"name":"<name>","ns":"<ns>",
 *                            "partitions":<n>,"stream_no":<n>}
 *                           permanent; written in the txn that deletes the stream
 *                           key (partitions tells GC which logs to reclaim)
 *   /ls/counter/stream_no   decimal; the last stream number handed out
 *   /ls/cluster/broker-config {"created_ms":<ms>,"properties":{}}
 *                           the cluster-wide dynamic broker configs (Kafka's
 *                           default broker resource, stream/broker_config.h);
 *                           loaded and watched like the namespace records
 *
 * Names (<ns>, <name>) follow Kafka topic rules ([a-zA-Z0-9._-], 1..249, not
 * "." or ".."), so they never contain '/' and keys parse unambiguously.
 *
 * Invariants:
 *  - stream_no comes from the counter (ls_meta_counter_add) before the create
 *    txn; a failed create burns the number, never reuses it;
 *  - the create txn compares mod_rev == 0 on the stream key (and on the
 *    namespace key when it writes it); every later change compares the
 *    mod_rev it read, retrying from a fresh read on LS_ECONFLICT;
 *  - the copy (map) holds exactly the streams of the last reload plus this
 *    process's own committed mutations; each entry is an immutable snapshot,
 *    so a change makes a new snapshot and swaps it in.
 *
 * Threads: lookups from any thread take mu briefly (map only, never I/O).
 * Mutations and reload take write_mu for their whole duration, so within one
 * process they are serialized and a reload can never resurrect a stream a
 * concurrent drop removed; they write the store first, then take mu to swap
 * snapshots. Namespace reloads (a mutation's own, the watch's, the
 * compactor's) take ns_mu for their whole duration: two that overlapped
 * could otherwise install their reads out of order, the older last, and
 * leave a namespace's just-written properties unseen until the next change
 * (seen as a unit-test flake). Lock order: write_mu -> mu, ns_mu -> mu.
 * Snapshot refcounts are atomic. */
#include "stream/catalog.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/check.h"
#include "base/clock.h"
#include "base/diag.h"
#include "base/hash.h"
#include "base/thread.h"
#include "meta/meta_keys.h"

#define CAT_NAME_MAX 249
#define CAT_KEY_MAX (sizeof LS_KEY_STREAM + 2 * CAT_NAME_MAX + 2)
#define CAT_CAS_RETRIES 16
#define CAT_SCAN_PAGE 512
/* log_id = stream_no << LS_LOG_PARTITION_BITS must stay a positive int64 */
#define CAT_STREAM_NO_MAX ((INT64_C(1) << (63 - LS_LOG_PARTITION_BITS)) - 1)

typedef struct cat_node {
    ls_stream_t *s; /* one reference owned by the map */
    uint64_t name_hash, id_hash;
    struct cat_node *name_next, *id_next;
} cat_node_t;

typedef struct cat_map {
    cat_node_t **by_name, **by_id; /* nbuckets chains each, power of two */
    size_t nbuckets, n;
} cat_map_t;

struct ls_catalog {
    ls_meta_t *meta;
    pthread_mutex_t write_mu;
    pthread_mutex_t ns_mu; /* one namespace reload at a time (design note above) */
    pthread_mutex_t mu;
    cat_map_t map;
    int64_t loaded_rev; /* store revision of the last reload (write_mu) */
    ls_meta_watch_t *watch;
    pthread_t rewatch; /* resync after the watch fell behind */
    bool rewatching;
    ls_namespace_t **nss; /* namespace snapshots, sorted by name (mu) */
    int nns;
    ls_namespace_t *broker_cfg; /* dynamic broker configs, name "" (mu; never NULL once open) */
    int32_t max_per_stream;     /* ls_catalog_set_limits; read-only after */
    int64_t max_total;
};

static void cat_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cat_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

typedef struct cat_grow_arg {
    ls_catalog_t *c;
    int32_t want;
} cat_grow_arg_t;

void ls_catalog_set_limits(ls_catalog_t *c, int32_t per_stream, int64_t total)
{
    c->max_per_stream =
        per_stream > 0 && per_stream < LS_MAX_PARTITIONS ? per_stream : LS_MAX_PARTITIONS;
    c->max_total = total;
}

/* Checks a stream of `partitions` replacing one of `had` against the limits. */
static ls_status cat_check_limits(ls_catalog_t *c, const char *name, int32_t had,
                                  int32_t partitions, char *err, size_t errlen)
{
    int32_t per = c->max_per_stream ? c->max_per_stream : LS_MAX_PARTITIONS;
    if (partitions < 1 || partitions > per) {
        cat_err(err, errlen,
                "Number of partitions %d of topic '%s' is outside 1..%d (max.partitions.per.topic)",
                (int)partitions, name, (int)per);
        return LS_EINVAL;
    }
    if (c->max_total <= 0) return LS_OK;
    int64_t total = 0;
    pthread_mutex_lock(&c->mu);
    for (size_t b = 0; b < c->map.nbuckets; b++)
        for (cat_node_t *node = c->map.by_name[b]; node; node = node->name_next)
            total += node->s->partitions;
    pthread_mutex_unlock(&c->mu);
    if (total - had + partitions > c->max_total) {
        cat_err(err, errlen,
                "%d partitions for topic '%s' would take the cluster to %lld partitions, above "
                "max.partitions=%lld",
                (int)partitions, name, (long long)(total - had + partitions),
                (long long)c->max_total);
        return LS_ELIMIT;
    }
    return LS_OK;
}

int ls_stream_name_valid(const char *name)
{
    if (!name) return 0;
    size_t len = strlen(name);
    if (len < 1 || len > CAT_NAME_MAX || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return 0;
    for (const char *p = name; *p; p++) {
        char ch = *p;
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return 0;
    }
    return 1;
}

/* ---- snapshots ---- */

ls_stream_t *ls_stream_keep(ls_stream_t *s)
{
    if (s) __atomic_add_fetch(&s->refcnt, 1, __ATOMIC_RELAXED);
    return s;
}

static void cat_config_free(ls_prop_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        ls_free(v[i].key);
        ls_free(v[i].value);
    }
    ls_free(v);
}

void ls_stream_release(ls_stream_t *s)
{
    if (!s || __atomic_sub_fetch(&s->refcnt, 1, __ATOMIC_ACQ_REL) > 0) return;
    ls_free(s->ns);
    ls_free(s->name);
    cat_config_free(s->config, s->nconfig);
    ls_free(s);
}

void ls_stream_list_release(ls_stream_t **v, int n)
{
    for (int i = 0; i < n; i++)
        ls_stream_release(v[i]);
    ls_free(v);
}

static int cat_prop_cmp(const void *a, const void *b)
{
    return strcmp(((const ls_prop_t *)a)->key, ((const ls_prop_t *)b)->key);
}

const char *ls_stream_config_get(const ls_stream_t *s, const char *key)
{
    if (!s || !key || !s->nconfig) return NULL;
    ls_prop_t probe = {(char *)key, NULL};
    const ls_prop_t *p =
        bsearch(&probe, s->config, (size_t)s->nconfig, sizeof *s->config, cat_prop_cmp);
    return p ? p->value : NULL;
}

ls_cleanup_policy_t ls_stream_cleanup_policy(const ls_stream_t *s)
{
    ls_cleanup_policy_t p = {.compact = false, .delete = true};
    const char *v = ls_stream_config_get(s, "cleanup.policy");
    if (!v) return p;
    p.delete = false;
    for (const char *q = v; *q;) {
        q += strspn(q, " ,");
        size_t n = strcspn(q, " ,");
        if (n == 7 && strncmp(q, "compact", 7) == 0)
            p.compact = true;
        else if (n == 6 && strncmp(q, "delete", 6) == 0)
            p.delete = true;
        q += n;
    }
    if (!p.compact && !p.delete) p.delete = true; /* an empty list: Kafka's default */
    return p;
}

/* Takes ownership of config (sorted here). refcnt starts at 1. */
static ls_stream_t *cat_stream_new(const char *ns, const char *name, const ls_uuid_t *id,
                                   int64_t stream_no, int32_t partitions, int64_t created_ms,
                                   ls_prop_t *config, int nconfig, int64_t mod_rev)
{
    ls_stream_t *s = LS_NEW(ls_stream_t);
    s->refcnt = 1;
    s->ns = ls_strdup(ns);
    s->name = ls_strdup(name);
    s->id = *id;
    s->stream_no = stream_no;
    s->partitions = partitions;
    s->created_ms = created_ms;
    if (nconfig) qsort(config, (size_t)nconfig, sizeof *config, cat_prop_cmp);
    s->config = config;
    s->nconfig = nconfig;
    s->mod_rev = mod_rev;
    return s;
}

static ls_prop_t *cat_config_copy(const ls_prop_t *config, int n)
{
    ls_prop_t *v = n ? LS_NEWN(ls_prop_t, (size_t)n) : NULL;
    for (int i = 0; i < n; i++) {
        v[i].key = ls_strdup(config[i].key);
        v[i].value = ls_strdup(config[i].value);
    }
    return v;
}

/* A new snapshot like s but with the given partitions/config/revision. */
static ls_stream_t *cat_stream_derive(const ls_stream_t *s, int32_t partitions,
                                      const ls_prop_t *config, int nconfig, int64_t mod_rev)
{
    return cat_stream_new(s->ns, s->name, &s->id, s->stream_no, partitions, s->created_ms,
                          cat_config_copy(config, nconfig), nconfig, mod_rev);
}

/* ---- the in-memory map ---- */

static uint64_t cat_hash_name(const char *ns, const char *name)
{
    return ls_hash_str(ls_hash_str(ls_hash_str(LS_HASH_INIT, ns), "/"), name);
}

static uint64_t cat_hash_id(const ls_uuid_t *id)
{
    uint64_t h;
    memcpy(&h, id->b, sizeof h); /* v4 UUIDs are random already */
    return h ^ (h >> 29);
}

static void cat_map_init(cat_map_t *m)
{
    m->nbuckets = 64;
    m->n = 0;
    m->by_name = LS_NEWN(cat_node_t *, m->nbuckets);
    m->by_id = LS_NEWN(cat_node_t *, m->nbuckets);
}

static void cat_map_free(cat_map_t *m)
{
    for (size_t b = 0; b < m->nbuckets; b++) {
        cat_node_t *next;
        for (cat_node_t *n = m->by_name[b]; n; n = next) {
            next = n->name_next;
            ls_stream_release(n->s);
            ls_free(n);
        }
    }
    ls_free(m->by_name);
    ls_free(m->by_id);
    m->by_name = m->by_id = NULL;
    m->nbuckets = m->n = 0;
}

static void cat_map_link(cat_map_t *m, cat_node_t *n)
{
    size_t bn = n->name_hash & (m->nbuckets - 1), bi = n->id_hash & (m->nbuckets - 1);
    n->name_next = m->by_name[bn];
    m->by_name[bn] = n;
    n->id_next = m->by_id[bi];
    m->by_id[bi] = n;
}

static void cat_map_grow(cat_map_t *m)
{
    cat_node_t **old = m->by_name;
    size_t oldn = m->nbuckets;
    ls_free(m->by_id);
    m->nbuckets *= 2;
    m->by_name = LS_NEWN(cat_node_t *, m->nbuckets);
    m->by_id = LS_NEWN(cat_node_t *, m->nbuckets);
    for (size_t b = 0; b < oldn; b++) {
        cat_node_t *next;
        for (cat_node_t *n = old[b]; n; n = next) {
            next = n->name_next;
            cat_map_link(m, n);
        }
    }
    ls_free(old);
}

static cat_node_t *cat_map_find_name(const cat_map_t *m, const char *ns, const char *name)
{
    uint64_t h = cat_hash_name(ns, name);
    for (cat_node_t *n = m->by_name[h & (m->nbuckets - 1)]; n; n = n->name_next)
        if (n->name_hash == h && strcmp(n->s->name, name) == 0 && strcmp(n->s->ns, ns) == 0)
            return n;
    return NULL;
}

static cat_node_t *cat_map_find_id(const cat_map_t *m, const ls_uuid_t *id)
{
    uint64_t h = cat_hash_id(id);
    for (cat_node_t *n = m->by_id[h & (m->nbuckets - 1)]; n; n = n->id_next)
        if (n->id_hash == h && memcmp(n->s->id.b, id->b, sizeof id->b) == 0) return n;
    return NULL;
}

/* Unlinks and frees node n, dropping the map's reference. */
static void cat_map_remove(cat_map_t *m, cat_node_t *n)
{
    cat_node_t **pp;
    for (pp = &m->by_name[n->name_hash & (m->nbuckets - 1)]; *pp != n; pp = &(*pp)->name_next)
        ;
    *pp = n->name_next;
    for (pp = &m->by_id[n->id_hash & (m->nbuckets - 1)]; *pp != n; pp = &(*pp)->id_next)
        ;
    *pp = n->id_next;
    ls_stream_release(n->s);
    ls_free(n);
    m->n--;
}

/* Puts s (taking the caller's reference), replacing any stream of that name. */
static void cat_map_put(cat_map_t *m, ls_stream_t *s)
{
    cat_node_t *old = cat_map_find_name(m, s->ns, s->name);
    if (old) cat_map_remove(m, old);
    if (m->n + 1 > m->nbuckets) cat_map_grow(m);
    cat_node_t *n = LS_NEW(cat_node_t);
    n->s = s;
    n->name_hash = cat_hash_name(s->ns, s->name);
    n->id_hash = cat_hash_id(&s->id);
    cat_map_link(m, n);
    m->n++;
}

/* The map's invariants (caller holds mu): every node is on the name chain
 * and the id chain its hashes pick, the hashes are those of its stream, the
 * count matches, a name and an id are there once, partitions are in range. */
static void cat_map_check(const cat_map_t *m)
{
    size_t count = 0;
    for (size_t b = 0; b < m->nbuckets; b++)
        for (const cat_node_t *n = m->by_name[b]; n; n = n->name_next) {
            count++;
            LS_CHECKF(n->name_hash == cat_hash_name(n->s->ns, n->s->name) &&
                          (n->name_hash & (m->nbuckets - 1)) == b,
                      "catalog: %s/%s sits on the wrong name chain", n->s->ns, n->s->name);
            LS_CHECKF(n->id_hash == cat_hash_id(&n->s->id) && cat_map_find_id(m, &n->s->id) == n,
                      "catalog: %s/%s is not found by its id", n->s->ns, n->s->name);
            LS_CHECKF(cat_map_find_name(m, n->s->ns, n->s->name) == n,
                      "catalog: %s/%s is there twice", n->s->ns, n->s->name);
            LS_CHECKF(n->s->partitions >= 1 && n->s->partitions <= LS_MAX_PARTITIONS,
                      "catalog: %s/%s has %d partitions", n->s->ns, n->s->name,
                      (int)n->s->partitions);
        }
    LS_CHECKF(count == m->n, "catalog: %zu streams linked, %zu counted", count, m->n);
}

void ls_catalog_check_invariants(ls_catalog_t *c)
{
    pthread_mutex_lock(&c->mu);
    cat_map_check(&c->map);
    pthread_mutex_unlock(&c->mu);
}

static void cat_cache_put(ls_catalog_t *c, ls_stream_t *s)
{
    pthread_mutex_lock(&c->mu);
    cat_map_put(&c->map, s);
    pthread_mutex_unlock(&c->mu);
}

/* ---- JSON encode / decode ---- */

/* Serializes and frees o. The inputs were validated (ASCII names, UTF-8
 * config), so jansson cannot refuse them. */
static char *cat_dumps(json_t *o)
{
    char *txt = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (!txt) LS_PANIC("catalog: JSON encoding failed");
    json_decref(o);
    char *out = ls_strdup(txt);
    free(txt);
    return out;
}

static char *cat_stream_json(const ls_uuid_t *id, int64_t stream_no, int32_t partitions,
                             int64_t created_ms, const ls_prop_t *config, int nconfig)
{
    char ids[37];
    ls_uuid_format(id, ids);
    json_t *cfg = json_object();
    for (int i = 0; i < nconfig; i++)
        json_object_set_new(cfg, config[i].key, json_string(config[i].value));
    return cat_dumps(json_pack("{s:s, s:I, s:i, s:I, s:o}", "id", ids, "stream_no",
                               (json_int_t)stream_no, "partitions", (int)partitions, "created_ms",
                               (json_int_t)created_ms, "config", cfg));
}

/* Builds a snapshot from a stream key and its JSON value; NULL (logged) if corrupt. */
static ls_stream_t *cat_stream_parse(const ls_kv_t *kv)
{
    const char *key = (const char *)kv->key;
    char ns[CAT_NAME_MAX + 1], name[CAT_NAME_MAX + 1];
    const char *rest = key + strlen(LS_KEY_STREAM);
    const char *slash = strchr(rest, '/');
    if (kv->klen <= strlen(LS_KEY_STREAM) || !slash || (size_t)(slash - rest) > CAT_NAME_MAX ||
        strlen(slash + 1) > CAT_NAME_MAX) {
        LS_ERROR("catalog", "corrupt stream key '%s': not " LS_KEY_STREAM "<ns>/<name>", key);
        return NULL;
    }
    memcpy(ns, rest, (size_t)(slash - rest));
    ns[slash - rest] = 0;
    snprintf(name, sizeof name, "%s", slash + 1);
    if (!ls_stream_name_valid(ns) || !ls_stream_name_valid(name)) {
        LS_ERROR("catalog", "corrupt stream key '%s': invalid namespace or name", key);
        return NULL;
    }
    json_error_t jerr;
    json_t *o = json_loadb((const char *)kv->val, kv->vlen, 0, &jerr);
    if (!o) {
        LS_ERROR("catalog", "corrupt stream value at %s: JSON error at byte %d: %s", key,
                 jerr.position, jerr.text);
        return NULL;
    }
    const char *ids = NULL;
    json_int_t stream_no = 0, partitions = 0, created_ms = 0;
    json_t *cfg = NULL;
    ls_uuid_t id;
    ls_stream_t *s = NULL;
    if (json_unpack_ex(o, &jerr, 0, "{s:s, s:I, s:I, s:I, s:o}", "id", &ids, "stream_no",
                       &stream_no, "partitions", &partitions, "created_ms", &created_ms, "config",
                       &cfg) != 0) {
        LS_ERROR("catalog", "corrupt stream value at %s: %s", key, jerr.text);
        goto done;
    }
    if (ls_uuid_parse(ids, &id) != 0 || stream_no <= 0 || stream_no > CAT_STREAM_NO_MAX ||
        partitions < 1 || partitions > LS_MAX_PARTITIONS || !json_is_object(cfg)) {
        LS_ERROR("catalog", "corrupt stream value at %s: field out of range", key);
        goto done;
    }
    int n = (int)json_object_size(cfg), i = 0;
    ls_prop_t *config = n ? LS_NEWN(ls_prop_t, (size_t)n) : NULL;
    const char *k;
    json_t *v;
    json_object_foreach(cfg, k, v)
    {
        if (!json_is_string(v)) {
            LS_ERROR("catalog", "corrupt stream value at %s: config '%s' is not a string", key, k);
            cat_config_free(config, i);
            goto done;
        }
        config[i].key = ls_strdup(k);
        config[i].value = ls_strdup(json_string_value(v));
        i++;
    }
    s = cat_stream_new(ns, name, &id, stream_no, (int32_t)partitions, created_ms, config, n,
                       kv->mod_rev);
done:
    json_decref(o);
    return s;
}

/* Config must have keys, values, no duplicate keys, and be representable as
 * JSON: LS_OK, or LS_EINVAL with err naming the entry. */
static ls_status cat_config_check(const ls_prop_t *config, int n, char *err, size_t errlen)
{
    if (n < 0 || (n > 0 && !config)) {
        cat_err(err, errlen, "invalid config set");
        return LS_EINVAL;
    }
    for (int i = 0; i < n; i++) {
        if (!config[i].key || !*config[i].key || !config[i].value) {
            cat_err(err, errlen, "config entry %d has no key or no value", i);
            return LS_EINVAL;
        }
        json_t *kprobe = json_string(config[i].key), *vprobe = json_string(config[i].value);
        int utf8 = kprobe && vprobe;
        json_decref(kprobe);
        json_decref(vprobe);
        if (!utf8) {
            cat_err(err, errlen, "config '%s' is not valid UTF-8", config[i].key);
            return LS_EINVAL;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(config[i].key, config[j].key) == 0) {
                cat_err(err, errlen, "config '%s' is given twice", config[i].key);
                return LS_EINVAL;
            }
    }
    return LS_OK;
}

static void cat_stream_key(char *out, size_t cap, const char *ns, const char *name)
{
    snprintf(out, cap, LS_KEY_STREAM "%s/%s", ns, name);
}

/* Reads the stream's current snapshot from the store (authoritative, not the copy). */
static ls_status cat_read(ls_catalog_t *c, const char *key, ls_stream_t **out)
{
    ls_kv_t kv;
    ls_status st = ls_meta_get(c->meta, key, &kv);
    if (st != LS_OK) return st;
    *out = cat_stream_parse(&kv);
    ls_kv_free(&kv);
    return *out ? LS_OK : LS_ECORRUPT;
}

/* ---- open / reload ---- */

ls_status ls_catalog_reload(ls_catalog_t *c)
{
    pthread_mutex_lock(&c->write_mu);
    cat_map_t fresh;
    cat_map_init(&fresh);
    size_t plen = strlen(LS_KEY_STREAM);
    uint8_t end[sizeof LS_KEY_STREAM];
    size_t elen = ls_meta_prefix_end(LS_KEY_STREAM, plen, end);
    uint8_t *start = ls_memdup(LS_KEY_STREAM, plen);
    size_t slen = plen;
    ls_status st;
    int corrupt = 0;
    int64_t start_rev = -1;
    for (;;) {
        ls_kvlist_t l;
        st = ls_meta_scan(c->meta, start, slen, end, elen, CAT_SCAN_PAGE, 0, &l);
        if (st != LS_OK) break;
        if (start_rev < 0)
            start_rev = l.revision; /* pages are read later: changes after it are watched */
        for (size_t i = 0; i < l.n; i++) {
            ls_stream_t *s = cat_stream_parse(&l.v[i]);
            if (s)
                cat_map_put(&fresh, s);
            else
                corrupt++;
        }
        int more = l.more && l.n > 0;
        if (more) {
            /* next page starts just after the last key: key + "\0" */
            ls_free(start);
            slen = l.v[l.n - 1].klen + 1;
            start = ls_malloc(slen);
            memcpy(start, l.v[l.n - 1].key, slen); /* copies its NUL terminator */
        }
        ls_kvlist_free(&l);
        if (!more) break;
    }
    ls_free(start);
    if (st != LS_OK) {
        LS_ERROR("catalog", "reload failed: %s: %s", ls_status_str(st), ls_meta_error(c->meta));
        cat_map_free(&fresh);
        pthread_mutex_unlock(&c->write_mu);
        return st;
    }
    if (corrupt) LS_ERROR("catalog", "reload skipped %d corrupt stream record(s)", corrupt);
    pthread_mutex_lock(&c->mu);
    cat_map_t old = c->map;
    c->map = fresh;
    if (ls_check_invariants_enabled()) cat_map_check(&c->map);
    pthread_mutex_unlock(&c->mu);
    cat_map_free(&old);
    c->loaded_rev = start_rev;
    pthread_mutex_unlock(&c->write_mu);
    return LS_OK;
}

/* ---- watch: changes made by other brokers ----
 * Every stream and namespace change in the store reaches the copy through a
 * watch started at the revision of the load: a stream PUT newer than the
 * copy's snapshot (mod_rev) replaces it, a DEL removes it, a namespace
 * change rereads the (small) namespace list. This process's own mutations
 * come back too and are recognized by their revision. A watch that falls
 * behind the store's history is replaced: full reload, watch again. */

static bool cat_key_split(const uint8_t *key, size_t klen, char *ns, char *name)
{
    size_t plen = strlen(LS_KEY_STREAM);
    const char *rest = (const char *)key + plen;
    const char *slash = klen > plen ? memchr(rest, '/', klen - plen) : NULL;
    if (!slash || (size_t)(slash - rest) > CAT_NAME_MAX ||
        klen - plen - (size_t)(slash - rest) - 1 > CAT_NAME_MAX)
        return false;
    memcpy(ns, rest, (size_t)(slash - rest));
    ns[slash - rest] = 0;
    size_t nl = klen - plen - (size_t)(slash - rest) - 1;
    memcpy(name, slash + 1, nl);
    name[nl] = 0;
    return true;
}

static void cat_apply_stream_event(ls_catalog_t *c, const ls_meta_event_t *e)
{
    pthread_mutex_lock(&c->write_mu);
    char ns[CAT_NAME_MAX + 1], name[CAT_NAME_MAX + 1];
    if (!cat_key_split(e->kv.key, e->kv.klen, ns, name)) {
        pthread_mutex_unlock(&c->write_mu);
        return;
    }
    pthread_mutex_lock(&c->mu);
    cat_node_t *cur = cat_map_find_name(&c->map, ns, name);
    bool newer = !cur || cur->s->mod_rev < e->kv.mod_rev;
    if (newer && e->kind == LS_META_EV_DEL && cur) cat_map_remove(&c->map, cur);
    pthread_mutex_unlock(&c->mu);
    if (newer && e->kind == LS_META_EV_PUT) {
        ls_stream_t *st = cat_stream_parse(&e->kv);
        if (st) cat_cache_put(c, st);
    }
    if (ls_check_invariants_enabled()) ls_catalog_check_invariants(c);
    pthread_mutex_unlock(&c->write_mu);
}

static void cat_on_watch(void *arg, const ls_meta_event_t *ev, size_t n);

static void *cat_rewatch_main(void *arg)
{
    ls_catalog_t *c = arg;
    ls_meta_watch_cancel(c->meta, c->watch);
    c->watch = NULL;
    for (int attempt = 0;; attempt++) {
        ls_status st = ls_catalog_reload(c);
        if (st == LS_OK) st = ls_catalog_reload_namespaces(c);
        if (st == LS_OK)
            st = ls_meta_watch(c->meta, LS_KEY_ROOT, sizeof LS_KEY_ROOT - 1, c->loaded_rev,
                               cat_on_watch, c, &c->watch);
        if (st == LS_OK) {
            LS_INFO("catalog", "watch resynchronized at revision %lld", (long long)c->loaded_rev);
            break;
        }
        LS_ERROR("catalog", "resynchronizing the catalog watch: %s; retrying", ls_status_str(st));
        sleep(1);
    }
    return NULL;
}

static void cat_on_watch(void *arg, const ls_meta_event_t *ev, size_t n)
{
    ls_catalog_t *c = arg;
    if (!ev) {
        LS_WARN("catalog", "watch fell behind the store's history; reloading the catalog");
        /* a previous resync thread has finished: it started this watch */
        if (c->rewatching) pthread_join(c->rewatch, NULL);
        c->rewatching = ls_thread_start(&c->rewatch, "ls-cat-rewatch", cat_rewatch_main, c) == 0;
        return;
    }
    bool ns_changed = false;
    for (size_t i = 0; i < n; i++) {
        const ls_kv_t *kv = &ev[i].kv;
        if (kv->klen > strlen(LS_KEY_STREAM) &&
            memcmp(kv->key, LS_KEY_STREAM, strlen(LS_KEY_STREAM)) == 0)
            cat_apply_stream_event(c, &ev[i]);
        else if ((kv->klen > strlen(LS_KEY_NS) &&
                  memcmp(kv->key, LS_KEY_NS, strlen(LS_KEY_NS)) == 0) ||
                 (kv->klen == strlen(LS_KEY_CLUSTER_BROKER_CONFIG) &&
                  memcmp(kv->key, LS_KEY_CLUSTER_BROKER_CONFIG, kv->klen) == 0))
            ns_changed = true;
    }
    if (ns_changed && ls_catalog_reload_namespaces(c) != LS_OK)
        LS_ERROR("catalog", "rereading namespaces after a change: %s", ls_meta_error(c->meta));
}

ls_catalog_t *ls_catalog_open(ls_meta_t *meta, char *err, size_t errlen)
{
    ls_catalog_t *c = LS_NEW(ls_catalog_t);
    c->meta = meta;
    pthread_mutex_init(&c->write_mu, NULL);
    pthread_mutex_init(&c->ns_mu, NULL);
    pthread_mutex_init(&c->mu, NULL);
    cat_map_init(&c->map);
    ls_status st = ls_catalog_reload(c);
    if (st != LS_OK) {
        cat_err(err, errlen, "cannot load the stream catalog: %s: %s", ls_status_str(st),
                ls_meta_error(meta));
        ls_catalog_close(c);
        return NULL;
    }
    st = ls_catalog_reload_namespaces(c);
    if (st != LS_OK) {
        cat_err(err, errlen, "cannot load the namespaces: %s: %s", ls_status_str(st),
                ls_meta_error(meta));
        ls_catalog_close(c);
        return NULL;
    }
    st = ls_meta_watch(meta, LS_KEY_ROOT, sizeof LS_KEY_ROOT - 1, c->loaded_rev, cat_on_watch, c,
                       &c->watch);
    if (st != LS_OK) {
        cat_err(err, errlen, "cannot watch the stream catalog: %s: %s", ls_status_str(st),
                ls_meta_error(meta));
        ls_catalog_close(c);
        return NULL;
    }
    LS_INFO("catalog", "loaded %zu stream(s)", c->map.n);
    return c;
}

void ls_catalog_close(ls_catalog_t *c)
{
    if (!c) return;
    if (c->rewatching) pthread_join(c->rewatch, NULL);
    if (c->watch) ls_meta_watch_cancel(c->meta, c->watch);
    cat_map_free(&c->map);
    for (int i = 0; i < c->nns; i++)
        ls_namespace_release(c->nss[i]);
    ls_free(c->nss);
    ls_namespace_release(c->broker_cfg);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->ns_mu);
    pthread_mutex_destroy(&c->write_mu);
    ls_free(c);
}

/* ---- mutations ---- */

/* Compare-and-set write of the stream key with value json; LS_OK sets *rev. */
static ls_status cat_cas_put(ls_catalog_t *c, const char *key, int64_t mod_rev, const char *json,
                             int64_t *rev)
{
    size_t klen = strlen(key);
    ls_meta_cmp_t cmp = {.kind = LS_META_CMP_MOD_REV, .key = key, .klen = klen, .rev = mod_rev};
    ls_meta_op_t op = {
        .kind = LS_META_OP_PUT, .key = key, .klen = klen, .val = json, .vlen = strlen(json)};
    return ls_meta_txn(c->meta, &cmp, 1, &op, 1, rev);
}

/* Equal once every '.' is read as '_'. */
static bool cat_names_collide(const char *x, const char *y)
{
    for (; *x && *y; x++, y++)
        if (*x != *y && !((*x == '.' || *x == '_') && (*y == '.' || *y == '_'))) return false;
    return !*x && !*y;
}

bool ls_catalog_collision(ls_catalog_t *c, const char *ns, const char *name, char *other,
                          size_t cap)
{
    if (!strpbrk(name, "._")) return false;
    bool found = false;
    pthread_mutex_lock(&c->mu);
    for (size_t b = 0; b < c->map.nbuckets && !found; b++)
        for (cat_node_t *node = c->map.by_name[b]; node && !found; node = node->name_next)
            if (strcmp(node->s->ns, ns) == 0 && strcmp(node->s->name, name) != 0 &&
                cat_names_collide(node->s->name, name)) {
                snprintf(other, cap, "%s", node->s->name);
                found = true;
            }
    pthread_mutex_unlock(&c->mu);
    return found;
}

ls_status ls_catalog_create(ls_catalog_t *c, const char *ns, const char *name, int32_t partitions,
                            const ls_prop_t *config, int nconfig, int validate_only,
                            ls_stream_t **out, char *err, size_t errlen)
{
    if (out) *out = NULL;
    if (err && errlen > 0) err[0] = 0;
    if (!ns) ns = LS_DEFAULT_NAMESPACE;
    if (!ls_stream_name_valid(ns)) {
        cat_err(err, errlen, "invalid namespace name '%s'", ns);
        return LS_EINVAL;
    }
    if (!ls_stream_name_valid(name)) {
        cat_err(err, errlen,
                "invalid topic name '%s': use 1 to 249 of [a-zA-Z0-9._-], not '.' or '..'",
                name ? name : "(null)");
        return LS_EINVAL;
    }
    if (partitions < 1 || partitions > LS_MAX_PARTITIONS) {
        cat_err(err, errlen, "invalid partition count %d: must be 1..%d", (int)partitions,
                LS_MAX_PARTITIONS);
        return LS_EINVAL;
    }
    if (cat_config_check(config, nconfig, err, errlen) != LS_OK) return LS_EINVAL;
    ls_status lst = cat_check_limits(c, name, 0, partitions, err, errlen);
    if (lst != LS_OK) return lst;

    char skey[CAT_KEY_MAX], nskey[CAT_KEY_MAX];
    cat_stream_key(skey, sizeof skey, ns, name);
    snprintf(nskey, sizeof nskey, LS_KEY_NS "%s", ns);
    char *json = NULL, *nsjson = NULL;
    ls_kv_t kv;
    pthread_mutex_lock(&c->write_mu);
    ls_status st = ls_meta_get(c->meta, skey, &kv);
    if (st == LS_OK) {
        ls_kv_free(&kv);
        cat_err(err, errlen, "topic '%s' already exists", name);
        st = LS_EEXISTS;
        goto unlock;
    }
    if (st != LS_ENOTFOUND) goto meta_error;
    char other[256]; /* a stream name: at most 249 bytes */
    if (ls_catalog_collision(c, ns, name, other, sizeof other)) {
        cat_err(err, errlen, "Topic '%s' collides with existing topic: %s", name, other);
        st = LS_EINVAL;
        goto unlock;
    }
    if (validate_only) {
        st = LS_OK;
        goto unlock;
    }
    int64_t stream_no;
    st = ls_meta_counter_add(c->meta, LS_KEY_COUNTER_STREAM_NO, 1, &stream_no);
    if (st != LS_OK) goto meta_error;
    if (stream_no > CAT_STREAM_NO_MAX) {
        cat_err(err, errlen, "stream numbers exhausted");
        st = LS_ELIMIT;
        goto unlock;
    }
    ls_uuid_t id;
    do
        ls_uuid_random(&id);
    while (ls_uuid_is_zero(&id));
    int64_t now = ls_clock_wall_ms();
    json = cat_stream_json(&id, stream_no, partitions, now, config, nconfig);
    nsjson = cat_dumps(json_pack("{s:I, s:{}}", "created_ms", (json_int_t)now, "properties"));
    int64_t rev = 0;
    for (int attempt = 0;; attempt++) {
        /* create the namespace record with the first stream in it */
        st = ls_meta_get(c->meta, nskey, &kv);
        int need_ns = st == LS_ENOTFOUND;
        if (st == LS_OK)
            ls_kv_free(&kv);
        else if (!need_ns)
            goto meta_error;
        ls_meta_cmp_t cmps[2] = {
            {.kind = LS_META_CMP_MOD_REV, .key = skey, .klen = strlen(skey), .rev = 0},
            {.kind = LS_META_CMP_MOD_REV, .key = nskey, .klen = strlen(nskey), .rev = 0},
        };
        ls_meta_op_t ops[2] = {
            {.kind = LS_META_OP_PUT,
             .key = skey,
             .klen = strlen(skey),
             .val = json,
             .vlen = strlen(json)},
            {.kind = LS_META_OP_PUT,
             .key = nskey,
             .klen = strlen(nskey),
             .val = nsjson,
             .vlen = strlen(nsjson)},
        };
        st = ls_meta_txn(c->meta, cmps, need_ns ? 2 : 1, ops, need_ns ? 2 : 1, &rev);
        if (st == LS_OK) break;
        if (st != LS_ECONFLICT) goto meta_error;
        st = ls_meta_get(c->meta, skey, &kv);
        if (st == LS_OK) {
            ls_kv_free(&kv);
            cat_err(err, errlen, "topic '%s' already exists", name);
            st = LS_EEXISTS;
            goto unlock;
        }
        if (attempt + 1 == CAT_CAS_RETRIES) {
            cat_err(err, errlen, "creating topic '%s': too much contention", name);
            st = LS_ECONFLICT;
            goto unlock;
        }
    }
    ls_stream_t *s = cat_stream_new(ns, name, &id, stream_no, partitions, now,
                                    cat_config_copy(config, nconfig), nconfig, rev);
    if (out) *out = ls_stream_keep(s);
    cat_cache_put(c, s);
    LS_INFO("catalog", "created %s/%s stream_no %" PRId64 " with %d partition(s)", ns, name,
            stream_no, (int)partitions);
    goto unlock;

meta_error:
    cat_err(err, errlen, "metadata store: %s: %s", ls_status_str(st), ls_meta_error(c->meta));
unlock:
    pthread_mutex_unlock(&c->write_mu);
    ls_free(json);
    ls_free(nsjson);
    return st;
}

ls_status ls_catalog_drop(ls_catalog_t *c, const char *ns, const char *name, ls_stream_t **dropped)
{
    if (dropped) *dropped = NULL;
    if (!ns) ns = LS_DEFAULT_NAMESPACE;
    if (!ls_stream_name_valid(ns) || !ls_stream_name_valid(name)) return LS_ENOTFOUND;
    char skey[CAT_KEY_MAX];
    cat_stream_key(skey, sizeof skey, ns, name);
    ls_stream_t *s = NULL;
    ls_status st;
    pthread_mutex_lock(&c->write_mu);
    for (int attempt = 0; attempt < CAT_CAS_RETRIES; attempt++) {
        st = cat_read(c, skey, &s);
        if (st != LS_OK) break;
        char ids[37], tkey[sizeof LS_KEY_TOMB + 37];
        ls_uuid_format(&s->id, ids);
        snprintf(tkey, sizeof tkey, LS_KEY_TOMB "%s", ids);
        char *tomb =
            cat_dumps(json_pack("{s:s, s:s, s:I, s:i, s:I}", "ns", ns, "name", name, "stream_no",
                                (json_int_t)s->stream_no, "partitions", (int)s->partitions,
                                "dropped_ms", (json_int_t)ls_clock_wall_ms()));
        ls_meta_cmp_t cmp = {
            .kind = LS_META_CMP_MOD_REV, .key = skey, .klen = strlen(skey), .rev = s->mod_rev};
        ls_meta_op_t ops[2] = {
            {.kind = LS_META_OP_DEL, .key = skey, .klen = strlen(skey)},
            {.kind = LS_META_OP_PUT,
             .key = tkey,
             .klen = strlen(tkey),
             .val = tomb,
             .vlen = strlen(tomb)},
        };
        st = ls_meta_txn(c->meta, &cmp, 1, ops, 2, NULL);
        ls_free(tomb);
        if (st != LS_ECONFLICT) break;
        ls_stream_release(s);
        s = NULL;
    }
    if (st == LS_OK) {
        pthread_mutex_lock(&c->mu);
        cat_node_t *n = cat_map_find_name(&c->map, ns, name);
        if (n) cat_map_remove(&c->map, n);
        pthread_mutex_unlock(&c->mu);
        LS_INFO("catalog", "dropped %s/%s stream_no %" PRId64, ns, name, s->stream_no);
        if (dropped)
            *dropped = s;
        else
            ls_stream_release(s);
    } else {
        if (st == LS_ENOTFOUND) {
            /* gone from the store: make sure the copy agrees */
            pthread_mutex_lock(&c->mu);
            cat_node_t *n = cat_map_find_name(&c->map, ns, name);
            if (n) cat_map_remove(&c->map, n);
            pthread_mutex_unlock(&c->mu);
        }
        ls_stream_release(s);
    }
    pthread_mutex_unlock(&c->write_mu);
    return st;
}

/* Read-modify-CAS of one stream. change() validates and fills the new
 * partitions/config from the current snapshot; returns LS_OK to write. */
typedef ls_status (*cat_change_fn)(const ls_stream_t *cur, void *arg, int32_t *partitions,
                                   const ls_prop_t **config, int *nconfig, char *err,
                                   size_t errlen);

static ls_status cat_update(ls_catalog_t *c, const char *ns, const char *name, int validate_only,
                            cat_change_fn change, void *arg, char *err, size_t errlen)
{
    if (!ns) ns = LS_DEFAULT_NAMESPACE;
    if (!ls_stream_name_valid(ns) || !ls_stream_name_valid(name)) {
        cat_err(err, errlen, "topic '%s' does not exist", name ? name : "(null)");
        return LS_ENOTFOUND;
    }
    char skey[CAT_KEY_MAX];
    cat_stream_key(skey, sizeof skey, ns, name);
    ls_status st = LS_ECONFLICT;
    pthread_mutex_lock(&c->write_mu);
    for (int attempt = 0; attempt < CAT_CAS_RETRIES; attempt++) {
        ls_stream_t *cur;
        st = cat_read(c, skey, &cur);
        if (st == LS_ENOTFOUND) {
            cat_err(err, errlen, "topic '%s' does not exist", name);
            break;
        }
        if (st != LS_OK) {
            cat_err(err, errlen, "metadata store: %s: %s", ls_status_str(st),
                    ls_meta_error(c->meta));
            break;
        }
        int32_t partitions = cur->partitions;
        const ls_prop_t *config = cur->config;
        int nconfig = cur->nconfig;
        st = change(cur, arg, &partitions, &config, &nconfig, err, errlen);
        if (st != LS_OK || validate_only) {
            ls_stream_release(cur);
            break;
        }
        char *json =
            cat_stream_json(&cur->id, cur->stream_no, partitions, cur->created_ms, config, nconfig);
        int64_t rev;
        st = cat_cas_put(c, skey, cur->mod_rev, json, &rev);
        ls_free(json);
        if (st == LS_OK) cat_cache_put(c, cat_stream_derive(cur, partitions, config, nconfig, rev));
        ls_stream_release(cur);
        if (st != LS_ECONFLICT) {
            if (st != LS_OK)
                cat_err(err, errlen, "metadata store: %s: %s", ls_status_str(st),
                        ls_meta_error(c->meta));
            break;
        }
    }
    if (st == LS_ECONFLICT) cat_err(err, errlen, "updating topic '%s': too much contention", name);
    pthread_mutex_unlock(&c->write_mu);
    return st;
}

static ls_status cat_grow(const ls_stream_t *cur, void *arg, int32_t *partitions,
                          const ls_prop_t **config, int *nconfig, char *err, size_t errlen)
{
    const cat_grow_arg_t *g = arg;
    if (g->want <= cur->partitions) {
        cat_err(err, errlen, "topic '%s' has %d partitions; the count can only grow", cur->name,
                (int)cur->partitions);
        return LS_EINVAL;
    }
    ls_status st = cat_check_limits(g->c, cur->name, cur->partitions, g->want, err, errlen);
    if (st != LS_OK) return st;
    *partitions = g->want;
    return LS_OK;
}

ls_status ls_catalog_add_partitions(ls_catalog_t *c, const char *ns, const char *name,
                                    int32_t new_total, int validate_only, char *err, size_t errlen)
{
    if (err && errlen > 0) err[0] = 0;
    if (new_total < 1 || new_total > LS_MAX_PARTITIONS) {
        cat_err(err, errlen, "invalid partition count %d: must be 1..%d", (int)new_total,
                LS_MAX_PARTITIONS);
        return LS_EINVAL;
    }
    cat_grow_arg_t g = {c, new_total};
    return cat_update(c, ns, name, validate_only, cat_grow, &g, err, errlen);
}

typedef struct cat_config_arg {
    const ls_prop_t *config;
    int nconfig;
} cat_config_arg_t;

static ls_status cat_replace_config(const ls_stream_t *cur, void *arg, int32_t *partitions,
                                    const ls_prop_t **config, int *nconfig, char *err,
                                    size_t errlen)
{
    const cat_config_arg_t *a = arg;
    *config = a->config;
    *nconfig = a->nconfig;
    return LS_OK;
}

ls_status ls_catalog_set_config(ls_catalog_t *c, const char *ns, const char *name,
                                const ls_prop_t *config, int nconfig)
{
    char err[256];
    if (cat_config_check(config, nconfig, err, sizeof err) != LS_OK) {
        LS_WARN("catalog", "set_config %s: %s", name ? name : "(null)", err);
        return LS_EINVAL;
    }
    cat_config_arg_t a = {config, nconfig};
    return cat_update(c, ns, name, 0, cat_replace_config, &a, err, sizeof err);
}

typedef struct cat_props_arg {
    ls_props_change_fn fn;
    void *arg;
} cat_props_arg_t;

static ls_status cat_change_props(const ls_stream_t *cur, void *arg, int32_t *partitions,
                                  const ls_prop_t **config, int *nconfig, char *err, size_t errlen)
{
    const cat_props_arg_t *a = arg;
    ls_status st = a->fn(cur->config, cur->nconfig, a->arg, config, nconfig, err, errlen);
    if (st == LS_OK) st = cat_config_check(*config, *nconfig, err, errlen);
    return st;
}

ls_status ls_catalog_update_config(ls_catalog_t *c, const char *ns, const char *name,
                                   int validate_only, ls_props_change_fn change, void *arg,
                                   char *err, size_t errlen)
{
    if (err && errlen > 0) err[0] = 0;
    cat_props_arg_t a = {change, arg};
    return cat_update(c, ns, name, validate_only, cat_change_props, &a, err, errlen);
}

/* ---- lookups ---- */

ls_stream_t *ls_catalog_lookup(ls_catalog_t *c, const char *ns, const char *name)
{
    if (!name) return NULL;
    if (!ns) ns = LS_DEFAULT_NAMESPACE;
    pthread_mutex_lock(&c->mu);
    cat_node_t *n = cat_map_find_name(&c->map, ns, name);
    ls_stream_t *s = n ? ls_stream_keep(n->s) : NULL;
    pthread_mutex_unlock(&c->mu);
    return s;
}

ls_stream_t *ls_catalog_lookup_id(ls_catalog_t *c, const ls_uuid_t *id)
{
    if (!id || ls_uuid_is_zero(id)) return NULL;
    pthread_mutex_lock(&c->mu);
    cat_node_t *n = cat_map_find_id(&c->map, id);
    ls_stream_t *s = n ? ls_stream_keep(n->s) : NULL;
    pthread_mutex_unlock(&c->mu);
    return s;
}

static int cat_stream_order(const void *a, const void *b)
{
    const ls_stream_t *x = *(ls_stream_t *const *)a, *y = *(ls_stream_t *const *)b;
    int d = strcmp(x->ns, y->ns);
    return d ? d : strcmp(x->name, y->name);
}

ls_stream_t **ls_catalog_list(ls_catalog_t *c, const char *ns, int *n)
{
    pthread_mutex_lock(&c->mu);
    ls_stream_t **v = LS_NEWN(ls_stream_t *, c->map.n);
    int k = 0;
    for (size_t b = 0; b < c->map.nbuckets; b++)
        for (cat_node_t *node = c->map.by_name[b]; node; node = node->name_next)
            if (!ns || strcmp(node->s->ns, ns) == 0) v[k++] = ls_stream_keep(node->s);
    pthread_mutex_unlock(&c->mu);
    if (k > 1) qsort(v, (size_t)k, sizeof *v, cat_stream_order);
    *n = k;
    return v;
}

/* ---- namespaces ---- */

void ls_namespace_release(ls_namespace_t *n)
{
    if (!n || __atomic_sub_fetch(&n->refcnt, 1, __ATOMIC_ACQ_REL) > 0) return;
    ls_free(n->name);
    cat_config_free(n->props, n->nprops);
    ls_free(n);
}

/* Snapshot of a property record (a /ls/ns/<ns> record, named by its
 * namespace, or the broker-config record, named ""); NULL (logged) if corrupt. */
static ls_namespace_t *cat_props_parse(const ls_kv_t *kv, const char *name)
{
    const char *key = (const char *)kv->key;
    json_error_t jerr;
    json_t *o = json_loadb((const char *)kv->val, kv->vlen, 0, &jerr);
    json_t *props = o ? json_object_get(o, "properties") : NULL;
    if (!o || (props && !json_is_object(props))) {
        LS_ERROR("catalog", "corrupt property record at %s: %s", key,
                 o ? "properties is not an object" : jerr.text);
        json_decref(o);
        return NULL;
    }
    ls_namespace_t *n = LS_NEW(ls_namespace_t);
    n->refcnt = 1;
    n->name = ls_strdup(name);
    n->props =
        props && json_object_size(props) ? LS_NEWN(ls_prop_t, json_object_size(props)) : NULL;
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v)
    {
        if (!json_is_string(v)) {
            LS_ERROR("catalog", "%s: property '%s' is not a string; ignored", key, k);
            continue;
        }
        n->props[n->nprops].key = ls_strdup(k);
        n->props[n->nprops++].value = ls_strdup(json_string_value(v));
    }
    if (n->nprops) qsort(n->props, (size_t)n->nprops, sizeof *n->props, cat_prop_cmp);
    json_decref(o);
    return n;
}

static ls_namespace_t *cat_ns_parse(const ls_kv_t *kv)
{
    const char *key = (const char *)kv->key, *name = key + strlen(LS_KEY_NS);
    if (kv->klen <= strlen(LS_KEY_NS) || !ls_stream_name_valid(name)) {
        LS_ERROR("catalog", "corrupt namespace key '%s'", key);
        return NULL;
    }
    return cat_props_parse(kv, name);
}

static ls_namespace_t *cat_props_empty(void)
{
    ls_namespace_t *n = LS_NEW(ls_namespace_t);
    n->refcnt = 1;
    n->name = ls_strdup("");
    return n;
}

static int cat_ns_order(const void *a, const void *b)
{
    return strcmp((*(ls_namespace_t *const *)a)->name, (*(ls_namespace_t *const *)b)->name);
}

static ls_status reload_namespaces(ls_catalog_t *c)
{
    ls_kvlist_t l;
    ls_status st = ls_meta_scan_prefix(c->meta, LS_KEY_NS, 0, &l);
    if (st != LS_OK) return st;
    ls_namespace_t **v = l.n ? LS_NEWN(ls_namespace_t *, l.n) : NULL;
    int n = 0;
    for (size_t i = 0; i < l.n; i++)
        if ((v[n] = cat_ns_parse(&l.v[i]))) n++;
    ls_kvlist_free(&l);
    if (n > 1) qsort(v, (size_t)n, sizeof *v, cat_ns_order);
    ls_kv_t kv;
    ls_namespace_t *bc = NULL;
    st = ls_meta_get(c->meta, LS_KEY_CLUSTER_BROKER_CONFIG, &kv);
    if (st == LS_OK) {
        bc = cat_props_parse(&kv, "");
        ls_kv_free(&kv);
    } else if (st != LS_ENOTFOUND) {
        for (int i = 0; i < n; i++)
            ls_namespace_release(v[i]);
        ls_free(v);
        return st;
    }
    if (!bc) bc = cat_props_empty(); /* absent, or corrupt (logged): Kafka's defaults */
    pthread_mutex_lock(&c->mu);
    ls_namespace_t **old = c->nss;
    int nold = c->nns;
    ls_namespace_t *old_bc = c->broker_cfg;
    c->nss = v;
    c->nns = n;
    c->broker_cfg = bc;
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; i < nold; i++)
        ls_namespace_release(old[i]);
    ls_free(old);
    ls_namespace_release(old_bc);
    return LS_OK;
}

ls_status ls_catalog_reload_namespaces(ls_catalog_t *c)
{
    pthread_mutex_lock(&c->ns_mu);
    ls_status st = reload_namespaces(c);
    pthread_mutex_unlock(&c->ns_mu);
    return st;
}

ls_namespace_t *ls_catalog_namespace(ls_catalog_t *c, const char *ns)
{
    if (!ns) ns = LS_DEFAULT_NAMESPACE;
    ls_namespace_t *found = NULL;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < c->nns && !found; i++)
        if (strcmp(c->nss[i]->name, ns) == 0) {
            found = c->nss[i];
            __atomic_add_fetch(&found->refcnt, 1, __ATOMIC_RELAXED);
        }
    pthread_mutex_unlock(&c->mu);
    return found;
}

ls_namespace_t **ls_catalog_namespaces(ls_catalog_t *c, int *n)
{
    pthread_mutex_lock(&c->mu);
    ls_namespace_t **v = LS_NEWN(ls_namespace_t *, (size_t)c->nns + 1);
    for (int i = 0; i < c->nns; i++) {
        v[i] = c->nss[i];
        __atomic_add_fetch(&v[i]->refcnt, 1, __ATOMIC_RELAXED);
    }
    *n = c->nns;
    pthread_mutex_unlock(&c->mu);
    return v;
}

ls_namespace_t *ls_catalog_broker_config(ls_catalog_t *c)
{
    pthread_mutex_lock(&c->mu);
    ls_namespace_t *bc = c->broker_cfg;
    __atomic_add_fetch(&bc->refcnt, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&c->mu);
    return bc;
}

/* Read-modify-CAS of the property record at key (what names it in errors);
 * creates the record if absent, rereads the copy after. */
static ls_status cat_props_update(ls_catalog_t *c, const char *key, const char *what,
                                  ls_props_change_fn change, void *arg, char *err, size_t errlen)
{
    ls_status st = LS_ECONFLICT;
    pthread_mutex_lock(&c->write_mu);
    for (int attempt = 0; attempt < CAT_CAS_RETRIES && st == LS_ECONFLICT; attempt++) {
        ls_kv_t kv;
        ls_namespace_t *cur = NULL;
        int64_t rev = 0, created = ls_clock_wall_ms();
        st = ls_meta_get(c->meta, key, &kv);
        if (st == LS_OK) {
            cur = cat_props_parse(&kv, "");
            rev = kv.mod_rev;
            json_t *o = json_loadb((const char *)kv.val, kv.vlen, 0, NULL);
            json_t *cm = o ? json_object_get(o, "created_ms") : NULL;
            if (json_is_integer(cm)) created = json_integer_value(cm);
            json_decref(o);
            ls_kv_free(&kv);
            if (!cur) {
                cat_err(err, errlen, "%s record %s is corrupt", what, key);
                st = LS_ECORRUPT;
                break;
            }
        } else if (st != LS_ENOTFOUND) {
            cat_err(err, errlen, "metadata store: %s: %s", ls_status_str(st),
                    ls_meta_error(c->meta));
            break;
        }
        const ls_prop_t *props;
        int nprops;
        st = change(cur ? cur->props : NULL, cur ? cur->nprops : 0, arg, &props, &nprops, err,
                    errlen);
        if (st == LS_OK) st = cat_config_check(props, nprops, err, errlen);
        if (st != LS_OK) {
            ls_namespace_release(cur);
            break;
        }
        json_t *po = json_object();
        for (int i = 0; i < nprops; i++)
            json_object_set_new(po, props[i].key, json_string(props[i].value));
        ls_namespace_release(cur); /* props may point into it */
        char *json =
            cat_dumps(json_pack("{s:I, s:o}", "created_ms", (json_int_t)created, "properties", po));
        st = cat_cas_put(c, key, rev, json, NULL);
        ls_free(json);
        if (st != LS_OK && st != LS_ECONFLICT)
            cat_err(err, errlen, "metadata store: %s: %s", ls_status_str(st),
                    ls_meta_error(c->meta));
    }
    if (st == LS_ECONFLICT) cat_err(err, errlen, "updating %s: too much contention", what);
    pthread_mutex_unlock(&c->write_mu);
    if (st == LS_OK) st = ls_catalog_reload_namespaces(c);
    return st;
}

ls_status ls_catalog_update_namespace(ls_catalog_t *c, const char *ns, ls_props_change_fn change,
                                      void *arg, char *err, size_t errlen)
{
    if (err && errlen > 0) err[0] = 0;
    if (!ls_stream_name_valid(ns)) {
        cat_err(err, errlen, "invalid namespace name '%s'", ns ? ns : "(null)");
        return LS_EINVAL;
    }
    char key[CAT_KEY_MAX], what[CAT_NAME_MAX + 16];
    snprintf(key, sizeof key, LS_KEY_NS "%s", ns);
    snprintf(what, sizeof what, "namespace '%s'", ns);
    return cat_props_update(c, key, what, change, arg, err, errlen);
}

ls_status ls_catalog_update_broker_config(ls_catalog_t *c, ls_props_change_fn change, void *arg,
                                          char *err, size_t errlen)
{
    if (err && errlen > 0) err[0] = 0;
    return cat_props_update(c, LS_KEY_CLUSTER_BROKER_CONFIG, "the dynamic broker configs", change,
                            arg, err, errlen);
}
