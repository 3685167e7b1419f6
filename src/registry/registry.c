/* The registry object: its lifecycle, its error helpers and its two
 * caches. What the registry stores, its invariants and threads are in
 * registry.h; how the work is cut into files is in README.md.
 *
 * Caches: schemas by id never change, so they are cached without
 * invalidation (bounded by count and by bytes of text; emptied when full).
 * The latest version of a subject (at most LATEST_CACHE_MAX subjects) is
 * cached against a generation number that a watch on the
 * registry's keys bumps on every change anywhere in the cluster (and this
 * broker bumps at once after its own writes); while the watch is lost
 * nothing is cached, and the next call watches again. Both sit under
 * r->mu; r->gen and r->watch_lost are atomics read without it. */
#include "registry/registry_int.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "meta/meta_keys.h"

#define SCHEMA_CACHE_MAX 4096
#define SCHEMA_CACHE_BYTES (64u << 20) /* texts held by the cache (models ~ a few x) */
#define LATEST_CACHE_MAX 1024

/* ---- errors ------------------------------------------------------------------ */

ls_sr_code ls_sr_seterr(ls_sr_err_t *e, ls_sr_code code, const char *fmt, ...)
{
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return code;
}

ls_sr_code ls_sr_store_err(ls_registry_t *r, ls_sr_err_t *e, const char *what, ls_status st)
{
    LS_WARN("registry", "%s: %s (%s)", what, ls_status_str(st), ls_meta_error(r->meta));
    return ls_sr_seterr(e, LS_SR_STORE_ERROR, "Error in the backend data store: %s: %s", what,
                        ls_status_str(st));
}

/* ---- caches ------------------------------------------------------------------ */

ls_sr_code ls_registry_schema(ls_registry_t *r, int32_t id, ls_sr_schema_t **out, ls_sr_err_t *e)
{
    pthread_mutex_lock(&r->mu);
    ls_sr_schema_t *s = ls_sr_schema_keep(ls_i64map_get(&r->schemas, id));
    pthread_mutex_unlock(&r->mu);
    if (s) {
        *out = s;
        return LS_SR_OK;
    }
    record_t rec;
    if (ls_sr_read_record(r, id, &rec, e) != LS_SR_OK) return e->code;
    ls_sr_err_t inner;
    ls_sr_code c = ls_sr_parse_with_refs(r, rec.type, rec.text, rec.refs, rec.nrefs, &s, &inner);
    ls_sr_record_free(&rec);
    if (c != LS_SR_OK) {
        if (inner.code == LS_SR_STORE_ERROR) {
            *e = inner;
            return e->code;
        }
        LS_ERROR("registry", "stored schema %d no longer parses: %s", id, inner.message);
        return ls_sr_seterr(e, LS_SR_STORE_ERROR, "Error in the backend data store: schema %d: %s",
                            id, inner.message);
    }
    s->id = id;
    pthread_mutex_lock(&r->mu);
    ls_sr_schema_t *raced = ls_i64map_get(&r->schemas, id);
    if (raced) {
        ls_sr_schema_release(s);
        s = raced;
    } else {
        size_t bytes = strlen(s->text) + strlen(s->canon);
        if (r->schemas.count >= SCHEMA_CACHE_MAX || r->schema_bytes + bytes > SCHEMA_CACHE_BYTES) {
            int64_t k;
            void *v;
            for (size_t it = 0; ls_i64map_next(&r->schemas, &it, &k, &v);)
                ls_sr_schema_release(v);
            ls_i64map_free(&r->schemas);
            ls_i64map_init(&r->schemas);
            r->schema_bytes = 0;
        }
        ls_i64map_put(&r->schemas, id, s);
        r->schema_bytes += bytes;
    }
    ls_sr_schema_keep(s);
    pthread_mutex_unlock(&r->mu);
    *out = s;
    return LS_SR_OK;
}

static ls_sr_code refresh_watch(ls_registry_t *r);

ls_sr_code ls_registry_latest(ls_registry_t *r, const char *subject, ls_sr_version_t *version,
                              ls_sr_schema_t **schema, ls_sr_err_t *e)
{
    if (__atomic_load_n(&r->watch_lost, __ATOMIC_ACQUIRE)) refresh_watch(r);
    uint64_t gen = __atomic_load_n(&r->gen, __ATOMIC_ACQUIRE);
    bool cacheable = !__atomic_load_n(&r->watch_lost, __ATOMIC_ACQUIRE);
    bool hit = false;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->nlatest && cacheable; i++)
        if (r->latest[i].gen == gen && !strcmp(r->latest[i].subject, subject)) {
            *version = r->latest[i].v;
            version->subject = ls_strdup(subject);
            hit = true;
            break;
        }
    pthread_mutex_unlock(&r->mu);
    if (!hit && ls_registry_get_version(r, subject, -1, false, version, e)) return e->code;
    if (ls_registry_schema(r, version->id, schema, e)) {
        ls_free(version->subject);
        return e->code;
    }
    if (hit || !cacheable) return LS_SR_OK;
    pthread_mutex_lock(&r->mu);
    latest_entry_t *slot = NULL;
    for (size_t i = 0; i < r->nlatest && !slot; i++)
        if (!strcmp(r->latest[i].subject, subject) || r->latest[i].gen != gen) slot = &r->latest[i];
    if (!slot && r->nlatest < LATEST_CACHE_MAX) {
        r->latest = ls_realloc(r->latest, (r->nlatest + 1) * sizeof *r->latest);
        slot = &r->latest[r->nlatest++];
        slot->subject = NULL;
    }
    if (slot) {
        ls_free(slot->subject);
        slot->subject = ls_strdup(subject);
        slot->gen = gen;
        slot->v = *version;
        slot->v.subject = NULL;
    }
    pthread_mutex_unlock(&r->mu);
    return LS_SR_OK;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

static void on_change(void *arg, const ls_meta_event_t *ev, size_t n)
{
    ls_registry_t *r = arg;
    if (!ev) __atomic_store_n(&r->watch_lost, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&r->gen, 1, __ATOMIC_ACQ_REL);
}

static ls_sr_code refresh_watch(ls_registry_t *r)
{
    pthread_mutex_lock(&r->mu);
    if (r->watch) ls_meta_watch_cancel(r->meta, r->watch);
    r->watch = NULL;
    ls_status st = ls_meta_watch(r->meta, LS_KEY_REGISTRY, strlen(LS_KEY_REGISTRY), 0, on_change, r,
                                 &r->watch);
    if (st == LS_OK)
        __atomic_store_n(&r->watch_lost, 0, __ATOMIC_RELEASE);
    else
        r->watch = NULL;
    __atomic_add_fetch(&r->gen, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&r->mu);
    if (st != LS_OK)
        LS_WARN_RL("registry",
                   "cannot watch the registry's keys (%s): latest versions are read "
                   "from the store on every call until it works",
                   ls_status_str(st));
    return st == LS_OK ? LS_SR_OK : LS_SR_STORE_ERROR;
}

ls_registry_t *ls_registry_new(ls_meta_t *meta)
{
    ls_registry_t *r = LS_NEW(ls_registry_t);
    r->meta = meta;
    pthread_mutex_init(&r->mu, NULL);
    ls_i64map_init(&r->schemas);
    r->watch_lost = 1;
    refresh_watch(r);
    return r;
}

void ls_registry_free(ls_registry_t *r)
{
    if (!r) return;
    if (r->watch) ls_meta_watch_cancel(r->meta, r->watch);
    int64_t k;
    void *v;
    for (size_t it = 0; ls_i64map_next(&r->schemas, &it, &k, &v);)
        ls_sr_schema_release(v);
    ls_i64map_free(&r->schemas);
    for (size_t i = 0; i < r->nlatest; i++)
        ls_free(r->latest[i].subject);
    ls_free(r->latest);
    pthread_mutex_destroy(&r->mu);
    ls_free(r);
}
