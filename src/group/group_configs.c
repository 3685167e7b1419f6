/* Dynamic group configs: see group_configs.h for the design note. */
#include "group/group_configs.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "meta/meta_follow.h"
#include "meta/meta_keys.h"

#define GROUPCFG_CAS_RETRIES 16

struct ls_group_configs {
    ls_meta_follow_t *follow;
    pthread_rwlock_t lock;
    json_t *doc; /* {group: {key: value}}; under lock */
    int64_t rev; /* mod_rev of doc */
};

/* ------------------------------------------------------------- values */

/* The keys whose values are ints, with their ranges. */
static const struct {
    const char *key;
    int32_t min, max;
} int_keys[] = {
    {LS_GROUP_CONFIG_SESSION, 1, INT32_MAX},
    {LS_GROUP_CONFIG_HEARTBEAT, 1, INT32_MAX},
    {LS_GROUP_CONFIG_SHARE_SESSION, 1, INT32_MAX},
    {LS_GROUP_CONFIG_SHARE_HEARTBEAT, 1, INT32_MAX},
    {LS_GROUP_CONFIG_SHARE_LOCK, 1000, INT32_MAX},
    {LS_GROUP_CONFIG_SHARE_DELIVERY, 2, INT32_MAX},
    {LS_GROUP_CONFIG_SHARE_LOCKS, 100, INT32_MAX},
    {LS_GROUP_CONFIG_STREAMS_SESSION, 1, INT32_MAX},
    {LS_GROUP_CONFIG_STREAMS_HEARTBEAT, 1, INT32_MAX},
    {LS_GROUP_CONFIG_STREAMS_STANDBYS, 0, 2},
};

static int int_key(const char *key)
{
    for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++)
        if (!strcmp(key, int_keys[i].key)) return (int)i;
    return -1;
}

static bool parse_int(const char *key, const char *s, int32_t *out)
{
    int k = int_key(key);
    if (k < 0 || !s || !*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno || v < int_keys[k].min || v > int_keys[k].max) return false;
    *out = (int32_t)v;
    return true;
}

/* The keys whose values are words, as the int lookups return them. */
static const struct {
    const char *key, *words[2]; /* words[i] reads as i */
} word_keys[] = {
    {LS_GROUP_CONFIG_SHARE_RESET, {"latest", "earliest"}},
    {LS_GROUP_CONFIG_SHARE_ISOLATION, {"read_uncommitted", "read_committed"}},
};

static int word_key(const char *key)
{
    for (size_t i = 0; i < sizeof word_keys / sizeof word_keys[0]; i++)
        if (!strcmp(key, word_keys[i].key)) return (int)i;
    return -1;
}

const char *ls_group_config_word(const char *key, int32_t v)
{
    int w = word_key(key);
    return w >= 0 && v >= 0 && v < 2 ? word_keys[w].words[v] : NULL;
}

/* A stored value as the int lookups return it: ints as written, words as
 * their index in word_keys. */
static bool parse_value(const char *key, const char *s, int32_t *out)
{
    int w = word_key(key);
    if (w < 0) return parse_int(key, s, out);
    for (int32_t i = 0; s && i < 2; i++)
        if (!strcmp(s, word_keys[w].words[i])) {
            *out = i;
            return true;
        }
    return false;
}

/* The keys served, for the refusal of the others. */
#define SERVED                                                                                     \
    "consumer.session.timeout.ms, consumer.heartbeat.interval.ms, share.session.timeout.ms, "      \
    "share.heartbeat.interval.ms, share.record.lock.duration.ms, share.delivery.count.limit, "     \
    "share.partition.max.record.locks, "                                                           \
    "share.auto.offset.reset, share.isolation.level, streams.session.timeout.ms, "                 \
    "streams.heartbeat.interval.ms, streams.num.standby.replicas"

#define BY_DURATION "by_duration:"

/* A number of a duration's part: digits, with a fraction for seconds. */
static bool duration_number(const char **p, bool fraction, double *out)
{
    const char *s = *p;
    if (*s == '+') s++;
    if (*s < '0' || *s > '9') return false;
    double v = 0;
    while (*s >= '0' && *s <= '9')
        v = v * 10 + (*s++ - '0');
    if (fraction && (*s == '.' || *s == ',')) {
        double scale = 0.1;
        for (s++; *s >= '0' && *s <= '9'; s++, scale /= 10)
            v += (*s - '0') * scale;
    }
    *out = v;
    *p = s;
    return true;
}

int64_t ls_group_config_duration_ms(const char *value)
{
    if (!value || strncmp(value, BY_DURATION, strlen(BY_DURATION)) != 0) return -1;
    const char *p = value + strlen(BY_DURATION);
    if (*p == '+') p++;
    if (*p != 'P' && *p != 'p') return -1; /* a sign before P: negative */
    p++;
    /* Java's Duration.parse: [nD][T[nH][nM][n.nS]], each part at most once,
     * in that order; negative parts make a negative duration: refused */
    static const struct {
        char unit;
        bool in_t;
        double ms;
    } parts[] = {{'D', false, 86400000.0},
                 {'H', true, 3600000.0},
                 {'M', true, 60000.0},
                 {'S', true, 1000.0}};
    size_t next = 0;
    bool in_t = false, any = false;
    double ms = 0;
    while (*p) {
        if ((*p == 'T' || *p == 't') && !in_t) {
            in_t = true;
            p++;
            if (!*p) return -1;
            continue;
        }
        double n;
        if (!duration_number(&p, in_t, &n)) return -1;
        char u = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        while (next < 4 && (parts[next].unit != u || parts[next].in_t != in_t))
            next++;
        if (next == 4) return -1;
        ms += n * parts[next++].ms;
        any = true;
        p++;
    }
    return any && ms < 9.2e18 ? (int64_t)ms : -1;
}

ls_status ls_group_config_check(const char *key, const char *value, char *err, size_t errlen)
{
    int32_t v;
    int w = word_key(key);
    if (w >= 0) {
        bool reset = !strcmp(key, LS_GROUP_CONFIG_SHARE_RESET);
        if (value && !parse_value(key, value, &v) &&
            !(reset && ls_group_config_duration_ms(value) >= 0)) {
            snprintf(err, errlen, "Invalid value %s for configuration %s: %s or %s%s", value, key,
                     word_keys[w].words[1], word_keys[w].words[0],
                     reset ? " or by_duration:<ISO-8601 duration, not negative> (e.g. "
                             "by_duration:PT1H)"
                           : "");
            return LS_EINVAL;
        }
        return LS_OK;
    }
    int k = int_key(key);
    if (k < 0) {
        if (!strncmp(key, "share.", 6) || !strncmp(key, "streams.", 8))
            snprintf(err, errlen, "Group config '%s' is not supported (served: " SERVED ").", key);
        else
            snprintf(err, errlen, "Unknown group config name: %s (known: " SERVED ")", key);
        return LS_EINVAL;
    }
    if (value && !parse_int(key, value, &v)) {
        if (int_keys[k].max == INT32_MAX)
            snprintf(err, errlen,
                     "Invalid value %s for configuration %s: Value must be at least %d", value, key,
                     (int)int_keys[k].min);
        else
            snprintf(err, errlen, "Invalid value %s for configuration %s: an int from %d to %d",
                     value, key, (int)int_keys[k].min, (int)int_keys[k].max);
        return LS_EINVAL;
    }
    return LS_OK;
}

static json_t *doc_parse(const uint8_t *val, size_t vlen)
{
    return ls_meta_follow_settings_parse(val, vlen, ls_group_config_check);
}

/* Keeps doc (taken) when newer than the installed one. */
static void doc_install(ls_group_configs_t *gc, json_t *doc, int64_t rev)
{
    pthread_rwlock_wrlock(&gc->lock);
    if (rev > gc->rev || !gc->doc) {
        json_decref(gc->doc);
        gc->doc = doc;
        gc->rev = rev;
        doc = NULL;
    }
    pthread_rwlock_unlock(&gc->lock);
    json_decref(doc);
}

static bool on_record(void *arg, const uint8_t *val, size_t vlen, int64_t mod_rev)
{
    json_t *doc = doc_parse(val, vlen);
    if (!doc) return false;
    doc_install(arg, doc, mod_rev);
    return true;
}

/* ------------------------------------------------------------- open */

ls_group_configs_t *ls_group_configs_open(ls_meta_t *meta, char *err, size_t errlen)
{
    ls_group_configs_t *gc = LS_NEW(ls_group_configs_t);
    pthread_rwlock_init(&gc->lock, NULL);
    ls_meta_follow_cfg_t cfg = {.key = LS_KEY_GROUPCFG,
                                .tag = "group",
                                .what = "group config",
                                .thread = "ls-gcfg-resync",
                                .load = on_record,
                                .arg = gc};
    ls_status st = ls_meta_follow_open(meta, &cfg, &gc->follow);
    if (st != LS_OK) {
        snprintf(err, errlen, "cannot load the group configs (%s): %s: %s", LS_KEY_GROUPCFG,
                 ls_status_str(st), ls_meta_error(meta));
        ls_group_configs_close(gc);
        return NULL;
    }
    return gc;
}

void ls_group_configs_close(ls_group_configs_t *gc)
{
    if (!gc) return;
    ls_meta_follow_close(gc->follow);
    json_decref(gc->doc);
    pthread_rwlock_destroy(&gc->lock);
    ls_free(gc);
}

bool ls_group_configs_get(ls_group_configs_t *gc, const char *group, const char *key,
                          int32_t *value)
{
    pthread_rwlock_rdlock(&gc->lock);
    json_t *v = json_object_get(json_object_get(gc->doc, group), key);
    bool ok = v && parse_value(key, json_string_value(v), value);
    pthread_rwlock_unlock(&gc->lock);
    return ok;
}

bool ls_group_configs_get_text(ls_group_configs_t *gc, const char *group, const char *key,
                               char *buf, size_t cap)
{
    pthread_rwlock_rdlock(&gc->lock);
    const char *v = json_string_value(json_object_get(json_object_get(gc->doc, group), key));
    if (v) snprintf(buf, cap, "%s", v);
    pthread_rwlock_unlock(&gc->lock);
    return v != NULL;
}

char **ls_group_configs_groups(ls_group_configs_t *gc, int *n)
{
    pthread_rwlock_rdlock(&gc->lock);
    char **v = LS_NEWN(char *, json_object_size(gc->doc) + 1);
    int k = 0;
    const char *g;
    json_t *kv;
    json_object_foreach(gc->doc, g, kv) v[k++] = ls_strdup(g);
    pthread_rwlock_unlock(&gc->lock);
    *n = k;
    return v;
}

/* ------------------------------------------------------------- changes */

typedef struct alter {
    const char *group;
    bool replace;
    const ls_group_config_op_t *ops;
    int n;
    const ls_group_config_defaults_t *defs;
    char *err;
    size_t errlen;
    json_t *made; /* the document written last */
} alter_t;

static int32_t effective(const json_t *kv, const char *key, int32_t def)
{
    int32_t v;
    return parse_int(key, json_string_value(json_object_get(kv, key)), &v) ? v : def;
}

/* Kafka's rule for one protocol's pair: false with err when broken. */
static bool heartbeat_below_session(alter_t *a, const json_t *kv, const char *skey,
                                    const char *hkey, int32_t sdef, int32_t hdef)
{
    int32_t s = effective(kv, skey, sdef), h = effective(kv, hkey, hdef);
    if (h < s) return true;
    snprintf(a->err, a->errlen, "%s (%d) must be less than %s (%d) for group %s", hkey, (int)h,
             skey, (int)s, a->group);
    return false;
}

/* Kafka's bounds of one key of kind (consumer, streams), set by the broker's
 * group.<kind>.{min,max}.<rest of the key>: false with err (Kafka's
 * GroupConfig wording) when the group's value lies outside. */
static bool within_bounds(alter_t *a, const json_t *kv, const char *key, const char *kind,
                          ls_group_config_bound_t b)
{
    const char *rest = key + strlen(kind) + 1; /* session.timeout.ms */
    int32_t v = effective(kv, key, b.min);
    if (v >= b.min && v <= b.max) return true;
    snprintf(a->err, a->errlen, "%s must be %s group.%s.%s.%s (%d)", key,
             v < b.min ? "greater than or equal to" : "less than or equal to", kind,
             v < b.min ? "min" : "max", rest, (int)(v < b.min ? b.min : b.max));
    return false;
}

ls_group_config_defaults_t ls_group_config_defaults_of(const ls_config_t *cfg)
{
    return (ls_group_config_defaults_t){
        .consumer = {cfg->group_consumer_session_timeout_ms,
                     cfg->group_consumer_heartbeat_interval_ms,
                     {cfg->group_consumer_min_session_timeout_ms,
                      cfg->group_consumer_max_session_timeout_ms},
                     {cfg->group_consumer_min_heartbeat_interval_ms,
                      cfg->group_consumer_max_heartbeat_interval_ms}},
        .share = {cfg->group_share_session_timeout_ms,
                  cfg->group_share_heartbeat_interval_ms,
                  {cfg->group_share_min_session_timeout_ms,
                   cfg->group_share_max_session_timeout_ms},
                  {cfg->group_share_min_heartbeat_interval_ms,
                   cfg->group_share_max_heartbeat_interval_ms}},
        .streams = {cfg->group_streams_session_timeout_ms,
                    cfg->group_streams_heartbeat_interval_ms,
                    {cfg->group_streams_min_session_timeout_ms,
                     cfg->group_streams_max_session_timeout_ms},
                    {cfg->group_streams_min_heartbeat_interval_ms,
                     cfg->group_streams_max_heartbeat_interval_ms}},
        .share_lock_bounds = {cfg->group_share_min_record_lock_duration_ms,
                              cfg->group_share_max_record_lock_duration_ms},
        .share_delivery_bounds = {cfg->group_share_min_delivery_count_limit,
                                  cfg->group_share_max_delivery_count_limit},
        .share_locks_bounds = {cfg->group_share_min_partition_max_record_locks,
                               cfg->group_share_max_partition_max_record_locks},
    };
}

/* doc (taken) with the group's overrides changed; NULL with err set when
 * the result breaks a bound or the heartbeat-below-session rule. */
static json_t *apply(alter_t *a, json_t *doc)
{
    json_t *kv = a->replace ? json_object() : json_deep_copy(json_object_get(doc, a->group));
    if (!kv) kv = json_object();
    for (int i = 0; i < a->n; i++) {
        if (a->ops[i].value)
            json_object_set_new(kv, a->ops[i].key, json_string(a->ops[i].value));
        else
            json_object_del(kv, a->ops[i].key);
    }
    const ls_group_config_defaults_t *d = a->defs;
    const struct {
        const char *kind, *session, *heartbeat;
        const ls_group_config_kind_defaults_t *defs;
    } kinds[] = {
        {"consumer", LS_GROUP_CONFIG_SESSION, LS_GROUP_CONFIG_HEARTBEAT, &d->consumer},
        {"share", LS_GROUP_CONFIG_SHARE_SESSION, LS_GROUP_CONFIG_SHARE_HEARTBEAT, &d->share},
        {"streams", LS_GROUP_CONFIG_STREAMS_SESSION, LS_GROUP_CONFIG_STREAMS_HEARTBEAT,
         &d->streams},
    };
    bool ok =
        within_bounds(a, kv, LS_GROUP_CONFIG_SHARE_LOCK, "share", d->share_lock_bounds) &&
        within_bounds(a, kv, LS_GROUP_CONFIG_SHARE_DELIVERY, "share", d->share_delivery_bounds) &&
        within_bounds(a, kv, LS_GROUP_CONFIG_SHARE_LOCKS, "share", d->share_locks_bounds);
    for (size_t i = 0; ok && i < sizeof kinds / sizeof kinds[0]; i++)
        ok = within_bounds(a, kv, kinds[i].session, kinds[i].kind, kinds[i].defs->session_bounds) &&
             within_bounds(a, kv, kinds[i].heartbeat, kinds[i].kind,
                           kinds[i].defs->heartbeat_bounds) &&
             heartbeat_below_session(a, kv, kinds[i].session, kinds[i].heartbeat,
                                     kinds[i].defs->session, kinds[i].defs->heartbeat);
    if (!ok) {
        json_decref(kv);
        json_decref(doc);
        return NULL;
    }
    if (json_object_size(kv))
        json_object_set_new(doc, a->group, kv);
    else {
        json_object_del(doc, a->group);
        json_decref(kv);
    }
    return doc;
}

static ls_status alter_step(void *ctx, const uint8_t *val, size_t vlen, char **next)
{
    alter_t *a = ctx;
    json_t *doc = doc_parse(val, vlen);
    if (!doc) {
        snprintf(a->err, a->errlen, "the stored group configs (%s) do not parse", LS_KEY_GROUPCFG);
        return LS_ECORRUPT;
    }
    doc = apply(a, doc);
    if (!doc) return LS_EINVAL;
    json_decref(a->made);
    a->made = doc;
    *next = json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT); /* only fails out of memory */
    return *next ? LS_OK : LS_EIO;
}

ls_status ls_group_configs_alter(ls_group_configs_t *gc, const char *group, bool replace,
                                 const ls_group_config_op_t *ops, int n,
                                 const ls_group_config_defaults_t *defs, bool validate_only,
                                 char *err, size_t errlen)
{
    alter_t a = {group, replace, ops, n, defs, err, errlen, NULL};
    err[0] = 0;
    if (validate_only) {
        pthread_rwlock_rdlock(&gc->lock);
        json_t *doc = gc->doc ? json_deep_copy(gc->doc) : json_object();
        pthread_rwlock_unlock(&gc->lock);
        doc = apply(&a, doc);
        json_decref(doc);
        return doc ? LS_OK : LS_EINVAL;
    }
    int64_t rev = 0;
    ls_status st = ls_meta_follow_change(gc->follow, GROUPCFG_CAS_RETRIES, alter_step, &a, &rev);
    if (st == LS_OK && rev > 0) {
        /* seen at once here; the watch brings it to the other brokers */
        doc_install(gc, a.made, rev);
        a.made = NULL;
    }
    json_decref(a.made);
    return st;
}
