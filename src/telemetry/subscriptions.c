/* Client-metrics subscriptions: see subscriptions.h for the design note.
 *
 * The stored document is kept as it was written (describe answers from
 * it) beside its parsed form (sub_t, patterns compiled once per install),
 * both replaced together under the lock. */
#include "telemetry/subscriptions.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "meta/meta_follow.h"
#include "meta/meta_keys.h"

#define SUBS_CAS_RETRIES 16
/* bounds of one pattern's match (a hostile pattern costs bounded CPU) */
#define MATCH_LIMIT 100000
#define DEPTH_LIMIT 1000

static const char *const params[LS_TELEMETRY_NPARAMS] = {
    "client_instance_id",    "client_id",         "client_software_name", "client_software_version",
    "client_source_address", "client_source_port"};

typedef struct sub {
    char **metrics;
    int nmetrics;
    int32_t interval_ms;
    pcre2_code *pat[LS_TELEMETRY_NPARAMS]; /* NULL: no pattern on that param */
} sub_t;

struct ls_telemetry_subs {
    ls_meta_follow_t *follow;
    pthread_rwlock_t lock;
    json_t *doc; /* {name: {key: value}}; under lock */
    sub_t *subs; /* parsed doc, in its key order; under lock */
    int nsubs;
    int64_t rev; /* mod_rev of doc */
};

/* ------------------------------------------------------------- values */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

/* Kafka's LIST: the trimmed value split at commas, each item trimmed; an
 * empty value is the empty list. ls_free each item and the array. */
static char **split_list(const char *value, int *n)
{
    char *copy = ls_strdup(value), *t = trim(copy);
    int cap = 1;
    for (const char *p = t; *p; p++)
        cap += *p == ',';
    char **v = LS_NEWN(char *, cap + 1);
    *n = 0;
    char *rest = *t ? t : NULL; /* strsep ends it with NULL */
    for (char *item; (item = strsep(&rest, ",")) != NULL;)
        v[(*n)++] = ls_strdup(trim(item));
    ls_free(copy);
    return v;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++)
        ls_free(v[i]);
    ls_free(v);
}

static bool parse_interval(const char *s, int32_t *out)
{
    char *copy = ls_strdup(s), *t = trim(copy), *end;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    bool ok = *t && !*end && !errno && v >= INT32_MIN && v <= INT32_MAX;
    ls_free(copy);
    if (ok) *out = (int32_t)v;
    return ok;
}

static int param_index(const char *p)
{
    for (int i = 0; i < LS_TELEMETRY_NPARAMS; i++)
        if (!strcmp(p, params[i])) return i;
    return -1;
}

/* One match item, Kafka's way: split at '=' into exactly two parts (Java's
 * split, which drops a trailing empty part), a known param, a regex that
 * compiles. *code (when not NULL) takes the compiled pattern. */
static int parse_pattern(const char *item, int *param, pcre2_code **code)
{
    const char *eq = strchr(item, '=');
    if (!eq || strchr(eq + 1, '=') || !eq[1]) return -1;
    char *name = ls_strndup(item, (size_t)(eq - item)), *re = ls_strdup(eq + 1);
    *param = param_index(trim(name));
    int errcode;
    PCRE2_SIZE erroff;
    pcre2_code *c = *param < 0 ? NULL
                               : pcre2_compile((PCRE2_SPTR)trim(re), PCRE2_ZERO_TERMINATED,
                                               PCRE2_UTF, &errcode, &erroff, NULL);
    ls_free(name);
    ls_free(re);
    if (!c) return -1;
    if (code)
        *code = c;
    else
        pcre2_code_free(c);
    return 0;
}

ls_status ls_telemetry_subs_check(const char *key, const char *value, char *err, size_t errlen)
{
    if (strcmp(key, LS_TELEMETRY_METRICS) && strcmp(key, LS_TELEMETRY_INTERVAL) &&
        strcmp(key, LS_TELEMETRY_MATCH)) {
        snprintf(err, errlen,
                 "Unknown client metrics configuration: %s (known: " LS_TELEMETRY_METRICS
                 ", " LS_TELEMETRY_INTERVAL ", " LS_TELEMETRY_MATCH ")",
                 key);
        return LS_EINVAL;
    }
    if (!value) return LS_OK;
    if (!strcmp(key, LS_TELEMETRY_INTERVAL)) {
        int32_t v;
        if (!parse_interval(value, &v) || v < LS_TELEMETRY_INTERVAL_MIN ||
            v > LS_TELEMETRY_INTERVAL_MAX) {
            snprintf(err, errlen,
                     "Invalid value %s for %s, interval must be between 100 and 3600000 (1 hour)",
                     value, key);
            return LS_EINVAL;
        }
        return LS_OK;
    }
    if (!strcmp(key, LS_TELEMETRY_MATCH)) {
        int n;
        ls_status rc = LS_OK;
        char **items = split_list(value, &n);
        for (int i = 0; i < n && rc == LS_OK; i++) {
            int param;
            if (parse_pattern(items[i], &param, NULL) != 0) {
                snprintf(err, errlen,
                         "Invalid value %s for %s: illegal client matching pattern: %s (each is "
                         "<param>=<regex>, param one of client_instance_id, client_id, "
                         "client_software_name, client_software_version, "
                         "client_source_address, client_source_port)",
                         value, key, items[i]);
                rc = LS_EINVAL;
            }
        }
        free_list(items, n);
        return rc;
    }
    return LS_OK; /* metrics: any list of prefixes */
}

ls_status ls_telemetry_subs_check_list(const char *key, char *err, size_t errlen)
{
    if (!strcmp(key, LS_TELEMETRY_METRICS) || !strcmp(key, LS_TELEMETRY_MATCH)) return LS_OK;
    snprintf(err, errlen,
             "Config value append or subtract is not allowed for config key: %s (not a list)", key);
    return LS_EINVAL;
}

/* ------------------------------------------------------------- parsed set */

static void subs_free(sub_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        free_list(v[i].metrics, v[i].nmetrics);
        for (int k = 0; k < LS_TELEMETRY_NPARAMS; k++)
            pcre2_code_free(v[i].pat[k]);
    }
    ls_free(v);
}

static void sub_parse(sub_t *s, const json_t *kv)
{
    const char *m = json_string_value(json_object_get(kv, LS_TELEMETRY_METRICS));
    const char *iv = json_string_value(json_object_get(kv, LS_TELEMETRY_INTERVAL));
    const char *match = json_string_value(json_object_get(kv, LS_TELEMETRY_MATCH));
    s->metrics = split_list(m ? m : "", &s->nmetrics);
    if (!iv || !parse_interval(iv, &s->interval_ms)) s->interval_ms = LS_TELEMETRY_INTERVAL_DEFAULT;
    int n;
    char **items = split_list(match ? match : "", &n);
    for (int i = 0; i < n; i++) {
        int param;
        pcre2_code *c;
        if (parse_pattern(items[i], &param, &c) != 0) continue; /* checked at load */
        pcre2_code_free(s->pat[param]);                         /* a later one wins */
        s->pat[param] = c;
    }
    free_list(items, n);
}

static json_t *doc_parse(const uint8_t *val, size_t vlen)
{
    return ls_meta_follow_settings_parse(val, vlen, ls_telemetry_subs_check);
}

/* Keeps doc (taken) when newer than the installed one. */
static void doc_install(ls_telemetry_subs_t *s, json_t *doc, int64_t rev)
{
    int n = (int)json_object_size(doc), k = 0;
    sub_t *subs = LS_NEWN(sub_t, n + 1);
    const char *name;
    json_t *kv;
    json_object_foreach(doc, name, kv) sub_parse(&subs[k++], kv);
    pthread_rwlock_wrlock(&s->lock);
    if (rev > s->rev || !s->doc) {
        json_decref(s->doc);
        subs_free(s->subs, s->nsubs);
        s->doc = doc;
        s->subs = subs;
        s->nsubs = n;
        s->rev = rev;
        doc = NULL;
        subs = NULL;
    }
    pthread_rwlock_unlock(&s->lock);
    json_decref(doc);
    if (subs) subs_free(subs, n);
}

static bool on_record(void *arg, const uint8_t *val, size_t vlen, int64_t mod_rev)
{
    json_t *doc = doc_parse(val, vlen);
    if (!doc) return false;
    doc_install(arg, doc, mod_rev);
    return true;
}

/* ------------------------------------------------------------- open */

ls_telemetry_subs_t *ls_telemetry_subs_open(ls_meta_t *meta, char *err, size_t errlen)
{
    ls_telemetry_subs_t *s = LS_NEW(ls_telemetry_subs_t);
    pthread_rwlock_init(&s->lock, NULL);
    ls_meta_follow_cfg_t cfg = {.key = LS_KEY_CLIENT_METRICS,
                                .tag = "telemetry",
                                .what = "client-metrics subscription",
                                .thread = "ls-cm-resync",
                                .load = on_record,
                                .arg = s};
    ls_status st = ls_meta_follow_open(meta, &cfg, &s->follow);
    if (st != LS_OK) {
        snprintf(err, errlen, "cannot load the client-metrics subscriptions (%s): %s: %s",
                 LS_KEY_CLIENT_METRICS, ls_status_str(st), ls_meta_error(meta));
        ls_telemetry_subs_close(s);
        return NULL;
    }
    return s;
}

void ls_telemetry_subs_close(ls_telemetry_subs_t *s)
{
    if (!s) return;
    ls_meta_follow_close(s->follow);
    json_decref(s->doc);
    subs_free(s->subs, s->nsubs);
    pthread_rwlock_destroy(&s->lock);
    ls_free(s);
}

char *ls_telemetry_subs_get(ls_telemetry_subs_t *s, const char *name, const char *key)
{
    pthread_rwlock_rdlock(&s->lock);
    const char *v = json_string_value(json_object_get(json_object_get(s->doc, name), key));
    char *out = v ? ls_strdup(v) : NULL;
    pthread_rwlock_unlock(&s->lock);
    return out;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **ls_telemetry_subs_names(ls_telemetry_subs_t *s, int *n)
{
    pthread_rwlock_rdlock(&s->lock);
    char **v = LS_NEWN(char *, json_object_size(s->doc) + 1);
    int k = 0;
    const char *name;
    json_t *kv;
    json_object_foreach(s->doc, name, kv) v[k++] = ls_strdup(name);
    pthread_rwlock_unlock(&s->lock);
    qsort(v, (size_t)k, sizeof *v, cmp_str);
    *n = k;
    return v;
}

int64_t ls_telemetry_subs_version(ls_telemetry_subs_t *s)
{
    pthread_rwlock_rdlock(&s->lock);
    int64_t rev = s->rev;
    pthread_rwlock_unlock(&s->lock);
    return rev;
}

/* ------------------------------------------------------------- matching */

static bool attr_matches(const pcre2_code *re, const char *value)
{
    if (!value) return false;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    pcre2_set_match_limit(mc, MATCH_LIMIT);
    pcre2_set_depth_limit(mc, DEPTH_LIMIT);
    int rc = pcre2_match(re, (PCRE2_SPTR)value, strlen(value), 0,
                         PCRE2_ANCHORED | PCRE2_ENDANCHORED, md, mc);
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
    return rc >= 0;
}

static bool sub_matches(const sub_t *s, const ls_telemetry_client_t *c)
{
    for (int k = 0; k < LS_TELEMETRY_NPARAMS; k++)
        if (s->pat[k] && !attr_matches(s->pat[k], c->attr[k])) return false;
    return true;
}

void ls_telemetry_subs_match(ls_telemetry_subs_t *s, const ls_telemetry_client_t *c,
                             ls_telemetry_match_t *out)
{
    memset(out, 0, sizeof *out);
    out->interval_ms = LS_TELEMETRY_INTERVAL_DEFAULT;
    pthread_rwlock_rdlock(&s->lock);
    out->version = s->rev;
    int cap = 0;
    for (int i = 0; i < s->nsubs; i++)
        cap += s->subs[i].nmetrics;
    out->metrics = LS_NEWN(char *, cap + 1);
    bool all = false;
    for (int i = 0; i < s->nsubs; i++) {
        const sub_t *sub = &s->subs[i];
        if (!sub_matches(sub, c)) continue;
        if (sub->interval_ms < out->interval_ms) out->interval_ms = sub->interval_ms;
        for (int k = 0; k < sub->nmetrics; k++) {
            all |= !strcmp(sub->metrics[k], LS_TELEMETRY_ALL_METRICS);
            out->metrics[out->nmetrics++] = ls_strdup(sub->metrics[k]);
        }
    }
    pthread_rwlock_unlock(&s->lock);
    qsort(out->metrics, (size_t)out->nmetrics, sizeof *out->metrics, cmp_str);
    int k = 0; /* drop duplicates; "*" alone when any asks for every metric */
    for (int i = 0; i < out->nmetrics; i++) {
        bool keep = all ? !strcmp(out->metrics[i], LS_TELEMETRY_ALL_METRICS) && k == 0
                        : k == 0 || strcmp(out->metrics[k - 1], out->metrics[i]) != 0;
        if (keep)
            out->metrics[k++] = out->metrics[i];
        else
            ls_free(out->metrics[i]);
    }
    out->nmetrics = k;
}

void ls_telemetry_match_free(ls_telemetry_match_t *m)
{
    free_list(m->metrics, m->nmetrics);
    m->metrics = NULL;
    m->nmetrics = 0;
}

/* ------------------------------------------------------------- changes */

typedef struct alter {
    const char *name;
    bool replace;
    const ls_telemetry_subs_op_t *ops;
    int n;
    json_t *made; /* the document written last */
} alter_t;

/* s split at its commas in place, items trimmed as the list is read
 * (empty: no items); ls_free the array. */
static char **split_raw(char *s, int *n)
{
    int cap = 1;
    for (const char *p = s; *p; p++)
        cap += *p == ',';
    char **v = LS_NEWN(char *, cap);
    *n = 0;
    for (char *r = *s ? s : NULL, *it; (it = strsep(&r, ",")) != NULL;)
        v[(*n)++] = trim(it);
    return v;
}

/* The key's list with op's items appended (those missing, in op's order)
 * or subtracted (every one listed), joined with commas: Kafka's APPEND and
 * SUBTRACT. */
static json_t *list_op(const json_t *cur, const ls_telemetry_subs_op_t *op)
{
    const char *old = json_string_value(cur);
    char *ov = ls_strdup(old ? old : ""), *nv = ls_strdup(op->value);
    int no, nn;
    char **o = split_raw(ov, &no), **n = split_raw(nv, &nn);
    ls_buf_t b;
    ls_buf_init(&b);
    bool first = true;
    for (int i = 0; i < no; i++) {
        bool listed = false;
        for (int k = 0; k < nn && !listed; k++)
            listed = !strcmp(o[i], n[k]);
        if (op->list == LS_TELEMETRY_LIST_SUBTRACT && listed) continue;
        ls_buf_printf(&b, "%s%s", first ? "" : ",", o[i]);
        first = false;
    }
    for (int k = 0; op->list == LS_TELEMETRY_LIST_APPEND && k < nn; k++) {
        bool listed = false;
        for (int i = 0; i < no && !listed; i++)
            listed = !strcmp(o[i], n[k]);
        if (listed) continue;
        ls_buf_printf(&b, "%s%s", first ? "" : ",", n[k]);
        first = false;
    }
    ls_buf_append_u8(&b, 0);
    json_t *v = json_string((const char *)b.data);
    ls_buf_free(&b);
    ls_free(o);
    ls_free(n);
    ls_free(ov);
    ls_free(nv);
    return v;
}

/* doc (taken) with the subscription changed; one without keys is removed. */
static json_t *apply(const alter_t *a, json_t *doc)
{
    json_t *kv = a->replace ? json_object() : json_deep_copy(json_object_get(doc, a->name));
    if (!kv) kv = json_object();
    for (int i = 0; i < a->n; i++) {
        const ls_telemetry_subs_op_t *op = &a->ops[i];
        if (op->value && op->list != LS_TELEMETRY_LIST_NONE)
            json_object_set_new(kv, op->key, list_op(json_object_get(kv, op->key), op));
        else if (op->value)
            json_object_set_new(kv, op->key, json_string(op->value));
        else
            json_object_del(kv, op->key);
    }
    if (json_object_size(kv))
        json_object_set_new(doc, a->name, kv);
    else {
        json_object_del(doc, a->name);
        json_decref(kv);
    }
    return doc;
}

static ls_status alter_step(void *ctx, const uint8_t *val, size_t vlen, char **next)
{
    alter_t *a = ctx;
    json_t *doc = doc_parse(val, vlen);
    if (!doc) return LS_ECORRUPT;
    doc = apply(a, doc);
    json_decref(a->made);
    a->made = doc;
    *next = json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT); /* only fails out of memory */
    return *next ? LS_OK : LS_EIO;
}

ls_status ls_telemetry_subs_alter(ls_telemetry_subs_t *s, const char *name, bool replace,
                                  const ls_telemetry_subs_op_t *ops, int n, bool validate_only,
                                  char *err, size_t errlen)
{
    err[0] = 0;
    for (int i = 0; i < n; i++)
        if (ls_telemetry_subs_check(ops[i].key, ops[i].value, err, errlen) != 0 ||
            (ops[i].list != LS_TELEMETRY_LIST_NONE &&
             ls_telemetry_subs_check_list(ops[i].key, err, errlen) != 0))
            return LS_EINVAL;
    if (validate_only) return LS_OK;
    alter_t a = {name, replace, ops, n, NULL};
    int64_t rev = 0;
    ls_status st = ls_meta_follow_change(s->follow, SUBS_CAS_RETRIES, alter_step, &a, &rev);
    if (st == LS_ECORRUPT)
        snprintf(err, errlen, "the stored client-metrics subscriptions (%s) do not parse",
                 LS_KEY_CLIENT_METRICS);
    if (st == LS_OK && rev > 0) {
        /* seen at once here; the watch brings it to the other brokers */
        doc_install(s, a.made, rev);
        a.made = NULL;
    }
    json_decref(a.made);
    return st;
}
