/* The topology of a streams group: see stgroup_topology.h. */
#include "group/stgroup_topology.h"
#include <stdio.h>
#include <string.h>
#include "base/alloc.h"
#include "base/hash.h"

/* Repartition topics of the topology, with the counts decided so far. */
typedef struct rep {
    const ls_stgroup_topic_info_t *info;
    int32_t count; /* 0: not decided yet */
} rep_t;

typedef struct cfgctx {
    const ls_stgroup_topology_t *t;
    ls_stgroup_partitions_fn fn;
    void *arg;
    rep_t *reps;
    int nreps;
    ls_buf_t detail;
    int8_t code;
} cfgctx_t;

static const char **strv_dup(const char *const *v, int n)
{
    const char **o = LS_NEWN(const char *, n + 1);
    for (int i = 0; i < n; i++)
        o[i] = ls_strdup(v[i]);
    return o;
}

static void strv_free(const char *const *v, int n)
{
    for (int i = 0; i < n; i++)
        ls_free((char *)v[i]);
    ls_free((void *)v);
}

ls_stgroup_kv_t *ls_stgroup_kv_dup(const ls_stgroup_kv_t *v, int n)
{
    ls_stgroup_kv_t *o = LS_NEWN(ls_stgroup_kv_t, n + 1);
    for (int i = 0; i < n; i++)
        o[i] = (ls_stgroup_kv_t){ls_strdup(v[i].key), ls_strdup(v[i].value)};
    return o;
}

void ls_stgroup_kv_free(const ls_stgroup_kv_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        ls_free((char *)v[i].key);
        ls_free((char *)v[i].value);
    }
    ls_free((void *)v);
}

static ls_stgroup_topic_info_t *infos_dup(const ls_stgroup_topic_info_t *v, int n)
{
    ls_stgroup_topic_info_t *o = LS_NEWN(ls_stgroup_topic_info_t, n + 1);
    for (int i = 0; i < n; i++) {
        o[i] = v[i];
        o[i].name = ls_strdup(v[i].name);
        o[i].configs = ls_stgroup_kv_dup(v[i].configs, v[i].nconfigs);
    }
    return o;
}

static void infos_free(const ls_stgroup_topic_info_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        ls_free((char *)v[i].name);
        ls_stgroup_kv_free(v[i].configs, v[i].nconfigs);
    }
    ls_free((void *)v);
}

static int16_t *i16_dup(const int16_t *v, int n)
{
    int16_t *o = LS_NEWN(int16_t, n + 1);
    if (n) memcpy(o, v, (size_t)n * sizeof *v);
    return o;
}

ls_stgroup_topology_t *ls_stgroup_topology_dup(const ls_stgroup_topology_t *t)
{
    ls_stgroup_topology_t *o = LS_NEW(ls_stgroup_topology_t);
    ls_stgroup_subtopology_t *subs = LS_NEWN(ls_stgroup_subtopology_t, t->nsubs + 1);
    for (int i = 0; i < t->nsubs; i++) {
        const ls_stgroup_subtopology_t *s = &t->subs[i];
        ls_stgroup_copart_t *cp = LS_NEWN(ls_stgroup_copart_t, s->ncoparts + 1);
        for (int j = 0; j < s->ncoparts; j++)
            cp[j] = (ls_stgroup_copart_t){
                i16_dup(s->coparts[j].sources, s->coparts[j].nsources), s->coparts[j].nsources,
                i16_dup(s->coparts[j].repartitions, s->coparts[j].nrepartitions),
                s->coparts[j].nrepartitions};
        subs[i] = (ls_stgroup_subtopology_t){
            .id = ls_strdup(s->id),
            .sources = strv_dup(s->sources, s->nsources),
            .nsources = s->nsources,
            .sinks = strv_dup(s->sinks, s->nsinks),
            .nsinks = s->nsinks,
            .repartitions = infos_dup(s->repartitions, s->nrepartitions),
            .nrepartitions = s->nrepartitions,
            .changelogs = infos_dup(s->changelogs, s->nchangelogs),
            .nchangelogs = s->nchangelogs,
            .coparts = cp,
            .ncoparts = s->ncoparts,
        };
    }
    *o = (ls_stgroup_topology_t){t->epoch, subs, t->nsubs};
    return o;
}

void ls_stgroup_topology_free(ls_stgroup_topology_t *t)
{
    if (!t) return;
    for (int i = 0; i < t->nsubs; i++) {
        const ls_stgroup_subtopology_t *s = &t->subs[i];
        ls_free((char *)s->id);
        strv_free(s->sources, s->nsources);
        strv_free(s->sinks, s->nsinks);
        infos_free(s->repartitions, s->nrepartitions);
        infos_free(s->changelogs, s->nchangelogs);
        for (int j = 0; j < s->ncoparts; j++) {
            ls_free((void *)s->coparts[j].sources);
            ls_free((void *)s->coparts[j].repartitions);
        }
        ls_free((void *)s->coparts);
    }
    ls_free((void *)t->subs);
    ls_free(t);
}

bool ls_stgroup_kv_equal(const ls_stgroup_kv_t *a, int na, const ls_stgroup_kv_t *b, int nb)
{
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (strcmp(a[i].key, b[i].key) || strcmp(a[i].value, b[i].value)) return false;
    return true;
}

static bool strv_equal(const char *const *a, int na, const char *const *b, int nb)
{
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (strcmp(a[i], b[i])) return false;
    return true;
}

static bool infos_equal(const ls_stgroup_topic_info_t *a, int na, const ls_stgroup_topic_info_t *b,
                        int nb)
{
    if (na != nb) return false;
    for (int i = 0; i < na; i++)
        if (strcmp(a[i].name, b[i].name) || a[i].partitions != b[i].partitions ||
            a[i].replication_factor != b[i].replication_factor ||
            !ls_stgroup_kv_equal(a[i].configs, a[i].nconfigs, b[i].configs, b[i].nconfigs))
            return false;
    return true;
}

bool ls_stgroup_topology_equal(const ls_stgroup_topology_t *a, const ls_stgroup_topology_t *b)
{
    if (a->epoch != b->epoch || a->nsubs != b->nsubs) return false;
    for (int i = 0; i < a->nsubs; i++) {
        const ls_stgroup_subtopology_t *x = &a->subs[i], *y = &b->subs[i];
        if (strcmp(x->id, y->id) || !strv_equal(x->sources, x->nsources, y->sources, y->nsources) ||
            !strv_equal(x->sinks, x->nsinks, y->sinks, y->nsinks) ||
            !infos_equal(x->repartitions, x->nrepartitions, y->repartitions, y->nrepartitions) ||
            !infos_equal(x->changelogs, x->nchangelogs, y->changelogs, y->nchangelogs) ||
            x->ncoparts != y->ncoparts)
            return false;
        for (int j = 0; j < x->ncoparts; j++) {
            const ls_stgroup_copart_t *p = &x->coparts[j], *q = &y->coparts[j];
            if (p->nsources != q->nsources || p->nrepartitions != q->nrepartitions ||
                (p->nsources && memcmp(p->sources, q->sources, (size_t)p->nsources * 2)) ||
                (p->nrepartitions &&
                 memcmp(p->repartitions, q->repartitions, (size_t)p->nrepartitions * 2)))
                return false;
        }
    }
    return true;
}

int ls_stgroup_find_sub(const ls_stgroup_topology_t *t, const char *id)
{
    for (int i = 0; i < t->nsubs; i++)
        if (!strcmp(t->subs[i].id, id)) return i;
    return -1;
}

static rep_t *find_rep(cfgctx_t *c, const char *name)
{
    for (int i = 0; i < c->nreps; i++)
        if (!strcmp(c->reps[i].info->name, name)) return &c->reps[i];
    return NULL;
}

/* A topic's count: decided (repartition topics) or existing; -1 unknown. */
static int32_t count_of(cfgctx_t *c, const char *name)
{
    rep_t *r = find_rep(c, name);
    if (r) return r->count > 0 ? r->count : -1;
    return c->fn(c->arg, name);
}

static void set_status(cfgctx_t *c, int8_t code, const char *detail)
{
    if (c->code >= 0) return; /* the first one found */
    c->code = code;
    ls_buf_append(&c->detail, detail, strlen(detail));
}

/* Kafka's order: missing sources, repartition counts, copartitioning,
 * changelogs and the internal topics' existence. NULL on success (conf
 * filled, maybe with a status), else why the topology is invalid. */
static const char *missing_sources(cfgctx_t *c)
{
    ls_buf_t names;
    ls_buf_init(&names);
    const char **seen = NULL;
    int nseen = 0;
    for (int i = 0; i < c->t->nsubs; i++) {
        const ls_stgroup_subtopology_t *s = &c->t->subs[i];
        for (int j = 0; j < s->nsources; j++) {
            if (find_rep(c, s->sources[j]) || c->fn(c->arg, s->sources[j]) >= 0) continue;
            bool dup = false;
            for (int k = 0; k < nseen && !dup; k++)
                dup = !strcmp(seen[k], s->sources[j]);
            if (dup) continue;
            seen = ls_realloc(seen, (size_t)(nseen + 1) * sizeof *seen);
            seen[nseen++] = s->sources[j];
            ls_buf_append(&names, nseen > 1 ? ", " : "Source topics ", nseen > 1 ? 2 : 14);
            ls_buf_append(&names, s->sources[j], strlen(s->sources[j]));
        }
    }
    if (nseen) {
        ls_buf_append(&names, " are missing.", 14);
        set_status(c, LS_STGROUP_MISSING_SOURCE_TOPICS, (const char *)names.data);
    }
    ls_free(seen);
    ls_buf_free(&names);
    return NULL;
}

static const char *repartition_counts(cfgctx_t *c)
{
    for (;;) {
        bool progress = false, needed = false;
        for (int r = 0; r < c->nreps; r++) {
            if (c->reps[r].count > 0) continue;
            int32_t best = -1;
            for (int i = 0; i < c->t->nsubs; i++) {
                const ls_stgroup_subtopology_t *s = &c->t->subs[i];
                bool writes = false;
                for (int j = 0; j < s->nsinks && !writes; j++)
                    writes = !strcmp(s->sinks[j], c->reps[r].info->name);
                if (!writes) continue;
                for (int j = 0; j < s->nsources; j++) {
                    int32_t n = count_of(c, s->sources[j]);
                    if (n > best) best = n;
                }
                for (int j = 0; j < s->nrepartitions; j++) {
                    int32_t n = count_of(c, s->repartitions[j].name);
                    if (n > best) best = n;
                }
            }
            if (best > 0) {
                c->reps[r].count = best;
                progress = true;
            } else {
                needed = true;
            }
        }
        if (!needed) return NULL;
        if (!progress)
            return "Failed to compute the number of partitions of every repartition topic: a "
                   "repartition topic is read but no sub-topology with known source topics "
                   "writes to it.";
    }
}

static const char *copartition(cfgctx_t *c)
{
    for (int i = 0; i < c->t->nsubs; i++) {
        const ls_stgroup_subtopology_t *s = &c->t->subs[i];
        for (int g = 0; g < s->ncoparts; g++) {
            const ls_stgroup_copart_t *cp = &s->coparts[g];
            int32_t ext = -1, fixed = -1, maxrep = -1;
            const char *ext_name = NULL;
            for (int j = 0; j < cp->nsources; j++) {
                const char *name = s->sources[cp->sources[j]];
                rep_t *r = find_rep(c, name);
                int32_t n = r ? r->count : c->fn(c->arg, name);
                if (r) {
                    if (r->info->partitions > 0) fixed = n;
                    if (n > maxrep) maxrep = n;
                    continue;
                }
                if (ext >= 0 && n != ext) {
                    char d[600];
                    snprintf(d, sizeof d,
                             "Topics %s and %s are not co-partitioned: they have %d and %d "
                             "partitions.",
                             ext_name, name, (int)ext, (int)n);
                    set_status(c, LS_STGROUP_INCORRECTLY_PARTITIONED_TOPICS, d);
                    return NULL;
                }
                ext = n;
                ext_name = name;
            }
            for (int j = 0; j < cp->nrepartitions; j++) {
                rep_t *r = find_rep(c, s->repartitions[cp->repartitions[j]].name);
                if (!r) continue;
                if (r->info->partitions > 0) {
                    if (fixed > 0 && fixed != r->count)
                        return "Repartition topics of a copartition group have different fixed "
                               "partition counts.";
                    fixed = r->count;
                }
                if (r->count > maxrep) maxrep = r->count;
            }
            int32_t want = ext > 0 ? ext : fixed > 0 ? fixed : maxrep;
            if (want <= 0) continue;
            for (int j = 0; j < cp->nrepartitions; j++) {
                rep_t *r = find_rep(c, s->repartitions[cp->repartitions[j]].name);
                if (!r) continue;
                if (r->info->partitions > 0 && r->count != want) {
                    char d[600];
                    snprintf(d, sizeof d,
                             "Repartition topic %s has %d partitions, but the topics it is "
                             "co-partitioned with have %d.",
                             r->info->name, (int)r->count, (int)want);
                    set_status(c, LS_STGROUP_INCORRECTLY_PARTITIONED_TOPICS, d);
                    return NULL;
                }
                r->count = want;
            }
        }
    }
    return NULL;
}

static void add_create(ls_stgroup_conf_t *conf, const ls_stgroup_topic_info_t *info, int32_t n)
{
    conf->create = ls_realloc(conf->create, (size_t)(conf->ncreate + 1) * sizeof *conf->create);
    conf->create[conf->ncreate++] = (ls_stgroup_create_t){info->name, n, info->replication_factor,
                                                          info->configs, info->nconfigs};
}

/* An internal topic's existing partition count against the decided one. */
static void internal_topic(cfgctx_t *c, ls_stgroup_conf_t *conf,
                           const ls_stgroup_topic_info_t *info, int32_t want)
{
    for (int i = 0; i < conf->ncreate; i++)
        if (!strcmp(conf->create[i].name, info->name)) return; /* listed already */
    int32_t have = c->fn(c->arg, info->name);
    if (have < 0) {
        add_create(conf, info, want);
        return;
    }
    if (have != want) {
        char d[600];
        snprintf(d, sizeof d,
                 "Existing topic %s has another number of partitions: expected %d, found %d.",
                 info->name, (int)want, (int)have);
        set_status(c, LS_STGROUP_INCORRECTLY_PARTITIONED_TOPICS, d);
    }
}

const char *ls_stgroup_configure(const ls_stgroup_topology_t *t, ls_stgroup_partitions_fn fn,
                                 void *arg, ls_stgroup_conf_t *conf)
{
    *conf = (ls_stgroup_conf_t){.code = -1};
    cfgctx_t c = {.t = t, .fn = fn, .arg = arg, .code = -1};
    ls_buf_init(&c.detail);
    for (int i = 0; i < t->nsubs; i++)
        for (int j = 0; j < t->subs[i].nrepartitions; j++) {
            c.reps = ls_realloc(c.reps, (size_t)(c.nreps + 1) * sizeof *c.reps);
            c.reps[c.nreps++] =
                (rep_t){&t->subs[i].repartitions[j], t->subs[i].repartitions[j].partitions};
        }
    const char *bad = missing_sources(&c);
    if (!bad && c.code < 0) bad = repartition_counts(&c);
    if (!bad && c.code < 0) bad = copartition(&c);
    if (!bad && c.code < 0) {
        conf->nsubs = t->nsubs;
        conf->ntasks = LS_NEWN(int32_t, t->nsubs + 1);
        for (int i = 0; i < t->nsubs; i++) {
            const ls_stgroup_subtopology_t *s = &t->subs[i];
            int32_t n = 0;
            for (int j = 0; j < s->nsources; j++)
                if (count_of(&c, s->sources[j]) > n) n = count_of(&c, s->sources[j]);
            for (int j = 0; j < s->nrepartitions; j++)
                if (count_of(&c, s->repartitions[j].name) > n)
                    n = count_of(&c, s->repartitions[j].name);
            conf->ntasks[i] = n;
        }
        for (int i = 0; i < c.nreps && c.code < 0; i++)
            internal_topic(&c, conf, c.reps[i].info, c.reps[i].count);
        for (int i = 0; i < t->nsubs && c.code < 0; i++)
            for (int j = 0; j < t->subs[i].nchangelogs; j++)
                internal_topic(&c, conf, &t->subs[i].changelogs[j], conf->ntasks[i]);
        if (c.code < 0 && conf->ncreate) {
            ls_buf_t names;
            ls_buf_init(&names);
            ls_buf_append(&names, "Internal topics are missing: ", 29);
            for (int i = 0; i < conf->ncreate; i++) {
                if (i) ls_buf_append(&names, ", ", 2);
                ls_buf_append(&names, conf->create[i].name, strlen(conf->create[i].name));
            }
            ls_buf_append_u8(&names, 0);
            set_status(&c, LS_STGROUP_MISSING_INTERNAL_TOPICS, (const char *)names.data);
            ls_buf_free(&names);
        }
    }
    ls_free(c.reps);
    if (bad) {
        ls_buf_free(&c.detail);
        ls_stgroup_conf_clear(conf);
        return bad;
    }
    conf->code = c.code;
    conf->ready = c.code < 0;
    if (c.code >= 0) {
        ls_buf_append_u8(&c.detail, 0);
        conf->detail = ls_strdup((const char *)c.detail.data);
        if (c.code != LS_STGROUP_MISSING_INTERNAL_TOPICS) conf->ncreate = 0;
    }
    ls_buf_free(&c.detail);
    return NULL;
}

/* What the target depends on from the configured topology. */
uint64_t ls_stgroup_conf_sig(const ls_stgroup_conf_t *c)
{
    uint64_t h = ls_hash_bytes(LS_HASH_INIT, &c->ready, sizeof c->ready);
    if (c->ready && c->nsubs) h = ls_hash_bytes(h, c->ntasks, (size_t)c->nsubs * sizeof(int32_t));
    return h;
}

void ls_stgroup_conf_clear(ls_stgroup_conf_t *c)
{
    ls_free(c->detail);
    ls_free(c->ntasks);
    ls_free(c->create);
    *c = (ls_stgroup_conf_t){.code = -1};
}

void ls_stgroup_kv_encode(ls_buf_t *b, const ls_stgroup_kv_t *v, int n)
{
    ls_bw_u32(b, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        ls_bw_str(b, v[i].key);
        ls_bw_str(b, v[i].value);
    }
}

static void put_strv(ls_buf_t *b, const char *const *v, int n)
{
    ls_bw_u32(b, (uint32_t)n);
    for (int i = 0; i < n; i++)
        ls_bw_str(b, v[i]);
}

static void put_infos(ls_buf_t *b, const ls_stgroup_topic_info_t *v, int n)
{
    ls_bw_u32(b, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        ls_bw_str(b, v[i].name);
        ls_bw_u32(b, (uint32_t)v[i].partitions);
        ls_bw_u16(b, (uint16_t)v[i].replication_factor);
        ls_stgroup_kv_encode(b, v[i].configs, v[i].nconfigs);
    }
}

static void put_i16v(ls_buf_t *b, const int16_t *v, int n)
{
    ls_bw_u32(b, (uint32_t)n);
    for (int i = 0; i < n; i++)
        ls_bw_u16(b, (uint16_t)v[i]);
}

void ls_stgroup_topology_encode(ls_buf_t *b, const ls_stgroup_topology_t *t)
{
    ls_buf_append_u8(b, t ? 1 : 0);
    if (!t) return;
    ls_bw_u32(b, (uint32_t)t->epoch);
    ls_bw_u32(b, (uint32_t)t->nsubs);
    for (int i = 0; i < t->nsubs; i++) {
        const ls_stgroup_subtopology_t *s = &t->subs[i];
        ls_bw_str(b, s->id);
        put_strv(b, s->sources, s->nsources);
        put_strv(b, s->sinks, s->nsinks);
        put_infos(b, s->repartitions, s->nrepartitions);
        put_infos(b, s->changelogs, s->nchangelogs);
        ls_bw_u32(b, (uint32_t)s->ncoparts);
        for (int j = 0; j < s->ncoparts; j++) {
            put_i16v(b, s->coparts[j].sources, s->coparts[j].nsources);
            put_i16v(b, s->coparts[j].repartitions, s->coparts[j].nrepartitions);
        }
    }
}

ls_stgroup_kv_t *ls_stgroup_kv_decode(ls_br_t *r, int *n)
{
    *n = ls_br_count(r, 4);
    ls_stgroup_kv_t *v = LS_NEWN(ls_stgroup_kv_t, *n + 1);
    for (int i = 0; i < *n; i++) {
        v[i].key = ls_br_str(r);
        v[i].value = ls_br_str(r);
        if (!v[i].key || !v[i].value) {
            r->err = true;
            ls_free((char *)v[i].key);
            ls_free((char *)v[i].value);
            *n = i;
            break;
        }
    }
    return v;
}

static const char **get_strv(ls_br_t *r, int *n)
{
    *n = ls_br_count(r, 2);
    const char **v = LS_NEWN(const char *, *n + 1);
    for (int i = 0; i < *n; i++)
        if (!(v[i] = ls_br_str(r))) {
            r->err = true;
            *n = i;
            break;
        }
    return v;
}

static ls_stgroup_topic_info_t *get_infos(ls_br_t *r, int *n)
{
    *n = ls_br_count(r, 12);
    ls_stgroup_topic_info_t *v = LS_NEWN(ls_stgroup_topic_info_t, *n + 1);
    for (int i = 0; i < *n; i++) {
        v[i].name = ls_br_str(r);
        v[i].partitions = (int32_t)ls_br_u32(r);
        v[i].replication_factor = (int16_t)ls_br_u16(r);
        v[i].configs = ls_stgroup_kv_decode(r, &v[i].nconfigs);
        if (!v[i].name) v[i].name = ls_strdup(""), r->err = true;
        if (r->err) {
            *n = i + 1;
            break;
        }
    }
    return v;
}

static int16_t *get_i16v(ls_br_t *r, int *n)
{
    *n = ls_br_count(r, 2);
    int16_t *v = LS_NEWN(int16_t, *n + 1);
    for (int i = 0; i < *n; i++)
        v[i] = (int16_t)ls_br_u16(r);
    return v;
}

ls_stgroup_topology_t *ls_stgroup_topology_decode(ls_br_t *r)
{
    if (!ls_br_u8(r)) return NULL;
    ls_stgroup_topology_t *t = LS_NEW(ls_stgroup_topology_t);
    t->epoch = (int32_t)ls_br_u32(r);
    int n = ls_br_count(r, 20);
    ls_stgroup_subtopology_t *subs = LS_NEWN(ls_stgroup_subtopology_t, n + 1);
    t->subs = subs;
    for (int i = 0; i < n && !r->err; i++) {
        ls_stgroup_subtopology_t *s = &subs[i];
        t->nsubs = i + 1;
        s->id = ls_br_str(r);
        if (!s->id) s->id = ls_strdup(""), r->err = true;
        s->sources = get_strv(r, &s->nsources);
        s->sinks = get_strv(r, &s->nsinks);
        s->repartitions = get_infos(r, &s->nrepartitions);
        s->changelogs = get_infos(r, &s->nchangelogs);
        int nc = ls_br_count(r, 8);
        ls_stgroup_copart_t *cp = LS_NEWN(ls_stgroup_copart_t, nc + 1);
        s->coparts = cp;
        for (int j = 0; j < nc && !r->err; j++) {
            cp[j].sources = get_i16v(r, &cp[j].nsources);
            cp[j].repartitions = get_i16v(r, &cp[j].nrepartitions);
            s->ncoparts = j + 1;
        }
    }
    return t;
}
