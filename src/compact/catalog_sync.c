/* Mirror of tables into external Iceberg REST catalogs: see catalog_sync.h. */
#include "compact/catalog_sync.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/catalog_conf.h"
#include "base/diag.h"
#include "base/metrics.h"
#include "table/rest_catalog.h"
#include "table/iceberg_table.h"
#include "table/rest_commit.h"
#include "table/table_catalog.h"

#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 300000
#define MAX_TABLES 4096 /* tables tracked; beyond it the oldest entry is reused */

static LS_METRIC_COUNTER(m_commits, "lakestream_table_catalog_commits",
                         "Snapshots mirrored into an external catalog: registrations and commits "
                         "it accepted.",
                         "catalog");
static LS_METRIC_COUNTER(m_failures, "lakestream_table_catalog_failures",
                         "Attempts to mirror a table into an external catalog that failed; "
                         "reason: conflict (another writer's snapshot, never overwritten), "
                         "unavailable (retried with backoff), error (refused: auth, bad "
                         "request).",
                         "catalog", "reason");
static LS_METRIC_GAUGE(m_behind, "lakestream_table_catalog_behind",
                       "1 while the external catalog's copy of the table lacks its latest "
                       "snapshot (a sync failed or conflicts), else 0.",
                       "catalog", "namespace", "table");

typedef struct sync_entry {
    char *catalog, *ns, *table;
    char *synced;    /* metadata-location last mirrored (NULL: none yet) */
    int64_t next_ms; /* next attempt not before */
    int64_t backoff; /* ms, doubles per failure */
    int failures;    /* consecutive */
    int64_t behind_since_ms;
    char last_err[600];
    bool conflict;
    bool tried; /* an attempt was made since this broker started */
} sync_entry_t;

/* A catalog: its client, and while it is unreachable, until when no table
 * tries it (so a catalog that times out costs the worker one timeout per
 * backoff, not one per table). */
typedef struct cat_state {
    ls_rest_catalog_t *rc;
    int64_t down_until_ms;
    int64_t backoff;
    char why[600];
} cat_state_t;

struct ls_catalog_sync {
    sync_entry_t *v;
    size_t n;
    cat_state_t *cats;
    size_t ncats;
};

ls_catalog_sync_t *ls_catalog_sync_new(void) { return LS_NEW(ls_catalog_sync_t); }

void ls_catalog_sync_free(ls_catalog_sync_t *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        ls_free(s->v[i].catalog);
        ls_free(s->v[i].ns);
        ls_free(s->v[i].table);
        ls_free(s->v[i].synced);
    }
    ls_free(s->v);
    for (size_t i = 0; i < s->ncats; i++)
        ls_rest_catalog_close(s->cats[i].rc);
    ls_free(s->cats);
    ls_free(s);
}

static sync_entry_t *entry(ls_catalog_sync_t *s, const char *catalog, const char *ns,
                           const char *table, bool create)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].ns, ns) && !strcmp(s->v[i].table, table) &&
            !strcmp(s->v[i].catalog, catalog))
            return &s->v[i];
    if (!create) return NULL;
    if (s->n == MAX_TABLES) { /* bounded: forget the first (it re-syncs on its next commit) */
        sync_entry_t *e = &s->v[0];
        ls_free(e->catalog);
        ls_free(e->ns);
        ls_free(e->table);
        ls_free(e->synced);
        memmove(s->v, s->v + 1, (s->n - 1) * sizeof *s->v);
        s->n--;
    }
    s->v = ls_realloc(s->v, (s->n + 1) * sizeof *s->v);
    sync_entry_t *e = &s->v[s->n++];
    memset(e, 0, sizeof *e);
    e->catalog = ls_strdup(catalog);
    e->ns = ls_strdup(ns);
    e->table = ls_strdup(table);
    return e;
}

static cat_state_t *cat_state(ls_catalog_sync_t *s, const ls_catalog_conf_t *conf)
{
    for (size_t i = 0; i < s->ncats; i++)
        if (!strcmp(ls_rest_catalog_name(s->cats[i].rc), conf->name)) return &s->cats[i];
    s->cats = ls_realloc(s->cats, (s->ncats + 1) * sizeof *s->cats);
    cat_state_t *c = &s->cats[s->ncats++];
    memset(c, 0, sizeof *c);
    c->rc = ls_rest_catalog_open(conf);
    return c;
}

static void set_behind(const sync_entry_t *e, bool behind)
{
    const char *labels[] = {e->catalog, e->ns, e->table};
    ls_metric_set(ls_metrics_series(&m_behind, labels), behind ? 1 : 0);
}

/* Our current metadata: its location and parsed JSON. */
static ls_status load_ours(ls_meta_t *meta, ls_objstore_t *os, const char *ns, const char *table,
                           char **location, json_t **md, char *err, size_t errlen)
{
    ls_tcat_pointer_t p = {0};
    ls_status st = ls_tcat_get(meta, ns, table, &p, err, errlen);
    if (st != LS_OK) return st;
    ls_buf_t b;
    ls_buf_init(&b);
    st = ls_objstore_get(os, p.metadata_key, 0, UINT64_MAX, &b);
    if (st == LS_OK) {
        json_error_t je;
        *md = json_loadb((const char *)b.data, b.len, 0, &je);
        if (!*md) {
            snprintf(err, errlen, "%s: %s", p.metadata_key, je.text);
            st = LS_ECORRUPT;
        } else {
            *location = ls_strdup(p.metadata_location);
        }
    } else {
        snprintf(err, errlen, "reading %s: %s", p.metadata_key, ls_status_str(st));
    }
    ls_buf_free(&b);
    ls_tcat_pointer_clear(&p);
    return st;
}

/* One attempt; LS_OK when the catalog's copy is ours now. */
static ls_status sync_once(ls_rest_catalog_t *rc, const char *ns, const char *table,
                           const char *location, const json_t *ours, int *added, char *err,
                           size_t errlen)
{
    json_t *theirs = NULL;
    ls_status st = ls_rest_catalog_load(rc, ns, table, &theirs, NULL, err, errlen);
    if (st == LS_ENOTFOUND) {
        st = ls_rest_catalog_create_namespace(rc, ns, err, errlen);
        if (st == LS_OK) st = ls_rest_catalog_register(rc, ns, table, location, err, errlen);
        if (st == LS_OK) {
            *added = 1;
            LS_INFO("catalog", "table %s.%s: registered in catalog %s at %s", ns, table,
                    ls_rest_catalog_name(rc), location);
        }
        return st;
    }
    if (st != LS_OK) return st;
    /* the catalog writes its metadata files into a folder of its own */
    const char *loc = json_string_value(json_object_get(ours, "location"));
    char *mpath =
        loc ? ls_asprintf("%s/" LS_ICE_CATALOGS_DIR "/%s", loc, ls_rest_catalog_name(rc)) : NULL;
    ls_rest_plan_t plan;
    int prc = ls_rest_commit_plan(ours, theirs, mpath, &plan);
    ls_free(mpath);
    if (prc != 0) {
        snprintf(err, errlen, "%s", plan.why);
        json_decref(theirs);
        return LS_ECORRUPT;
    }
    json_decref(theirs);
    switch (plan.kind) {
    case LS_REST_IN_SYNC: st = LS_OK; break;
    case LS_REST_DIVERGED:
        snprintf(err, errlen, "%s", plan.why);
        st = LS_ECONFLICT;
        break;
    case LS_REST_COMMIT:
        st = ls_rest_catalog_commit(rc, ns, table, plan.body, err, errlen);
        if (st == LS_OK) *added = 1; /* a commit accepted (snapshots added and/or removed) */
        break;
    }
    ls_rest_plan_clear(&plan);
    return st;
}

void ls_catalog_sync_table(ls_catalog_sync_t *s, ls_meta_t *meta, ls_objstore_t *os,
                           const char *catalog, const char *ns, const char *table, bool committed,
                           int64_t now_ms)
{
    sync_entry_t *e = entry(s, catalog, ns, table, true);
    /* after a commit, a failure (when its retry is due) and once per table
     * after start (the catalog may have missed commits while we were down) */
    if (!committed && e->tried && !e->failures) return;
    if (now_ms < e->next_ms) return;
    e->tried = true;
    const ls_catalog_conf_t *conf = ls_catalog_conf_get(catalog);
    if (!conf) return; /* the policy refuses unknown names: removed from the configuration */
    char err[600] = "";
    char *location = NULL;
    json_t *ours = NULL;
    ls_status st = load_ours(meta, os, ns, table, &location, &ours, err, sizeof err);
    if (st == LS_ENOTFOUND) return; /* no table yet */
    if (st == LS_OK && e->synced && !strcmp(e->synced, location)) {
        ls_free(location);
        json_decref(ours);
        return; /* nothing new */
    }
    int added = 0;
    cat_state_t *cs = cat_state(s, conf);
    if (st == LS_OK && now_ms < cs->down_until_ms) {
        /* unreachable a moment ago: wait with it, without a request */
        if (!e->failures) {
            e->failures = 1;
            e->behind_since_ms = now_ms;
            snprintf(e->last_err, sizeof e->last_err, "%s", cs->why);
            set_behind(e, true);
        }
        e->next_ms = cs->down_until_ms;
        ls_free(location);
        json_decref(ours);
        return;
    }
    if (st == LS_OK) {
        st = sync_once(cs->rc, ns, table, location, ours, &added, err, sizeof err);
        if (st == LS_EAGAIN) {
            cs->backoff = cs->backoff ? cs->backoff * 2 : BACKOFF_MIN_MS;
            if (cs->backoff > BACKOFF_MAX_MS) cs->backoff = BACKOFF_MAX_MS;
            cs->down_until_ms = now_ms + cs->backoff;
            snprintf(cs->why, sizeof cs->why, "%s", err);
        } else {
            cs->backoff = 0;
            cs->down_until_ms = 0;
        }
    }
    if (st == LS_OK) {
        if (e->failures || e->conflict)
            LS_INFO("catalog", "table %s.%s: catalog %s has its latest snapshot again", ns, table,
                    catalog);
        ls_free(e->synced);
        e->synced = location;
        location = NULL;
        e->failures = 0;
        e->backoff = 0;
        e->next_ms = 0;
        e->behind_since_ms = 0;
        e->conflict = false;
        e->last_err[0] = 0;
        if (added) ls_metric_add(ls_metrics_series1(&m_commits, catalog), 1);
        set_behind(e, false);
    } else {
        bool conflict = st == LS_ECONFLICT, transient = st == LS_EAGAIN;
        const char *reason = conflict ? "conflict" : transient ? "unavailable" : "error";
        const char *labels[] = {catalog, reason};
        ls_metric_add(ls_metrics_series(&m_failures, labels), 1);
        if (!e->behind_since_ms) e->behind_since_ms = now_ms;
        e->failures++;
        e->conflict = conflict;
        e->backoff = e->backoff ? e->backoff * 2 : BACKOFF_MIN_MS;
        if (e->backoff > BACKOFF_MAX_MS) e->backoff = BACKOFF_MAX_MS;
        e->next_ms = now_ms + e->backoff;
        snprintf(e->last_err, sizeof e->last_err, "%s", err);
        set_behind(e, true);
        LS_WARN_RL("catalog",
                   "table %s.%s: catalog %s is behind this table (%s, %d attempts, for %lld ms, "
                   "next in %lld ms): %s%s",
                   ns, table, catalog, reason, e->failures,
                   (long long)(now_ms - e->behind_since_ms), (long long)e->backoff, err,
                   conflict ? "; the other writer's snapshot is not overwritten" : "");
    }
    ls_free(location);
    if (ours) json_decref(ours);
}

void ls_catalog_sync_status(ls_catalog_sync_t *s, const char *ns, const char *table, char *out,
                            size_t cap)
{
    if (cap) out[0] = 0;
    for (size_t i = 0; s && i < s->n; i++) {
        const sync_entry_t *e = &s->v[i];
        if (strcmp(e->ns, ns) || strcmp(e->table, table) || !e->failures) continue;
        time_t secs = (time_t)(e->behind_since_ms / 1000);
        struct tm tm;
        char when[32] = "?";
        if (gmtime_r(&secs, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(out, cap, "catalog %s behind since %s (%s, %d attempts): %s", e->catalog, when,
                 e->conflict ? "conflict" : "failing", e->failures, e->last_err);
        return;
    }
}
