/* Streams groups (KIP-1071): see stgroup.h for the design note. */
#include "group/stgroup.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "base/binrec.h"
#include "base/hash.h"
#include "base/check.h"

/* ------------------------------------------------------------ task sets */

/* Tasks with owned sub-topology ids; a member's share, so linear lookups. */
typedef struct tkset {
    ls_stgroup_task_t *v;
    int n, cap;
} tkset_t;

static bool tks_has(const tkset_t *s, const char *sub, int32_t p)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i].partition == p && !strcmp(s->v[i].sub, sub)) return true;
    return false;
}

static void tks_add(tkset_t *s, const char *sub, int32_t p)
{
    if (tks_has(s, sub, p)) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = ls_realloc(s->v, (size_t)s->cap * sizeof *s->v);
    }
    s->v[s->n++] = (ls_stgroup_task_t){ls_strdup(sub), p};
}

static void tks_free(tkset_t *s)
{
    for (int i = 0; i < s->n; i++)
        ls_free((char *)s->v[i].sub);
    ls_free(s->v);
    *s = (tkset_t){0};
}

enum { K_ACTIVE, K_STANDBY, K_WARMUP, K_N };

typedef struct tasks3 {
    tkset_t k[K_N];
} tasks3_t;

static void t3_free(tasks3_t *t)
{
    for (int i = 0; i < K_N; i++)
        tks_free(&t->k[i]);
}

static int t3_count(const tasks3_t *t) { return t->k[0].n + t->k[1].n + t->k[2].n; }

static ls_stgroup_tasks_t t3_view(const tasks3_t *t)
{
    return (ls_stgroup_tasks_t){t->k[K_ACTIVE].v, t->k[K_STANDBY].v, t->k[K_WARMUP].v,
                                t->k[K_ACTIVE].n, t->k[K_STANDBY].n, t->k[K_WARMUP].n};
}

/* The owned tasks of a request, by kind. */
static void owned_kind(const ls_stgroup_tasks_t *o, int k, const ls_stgroup_task_t **v, int *n)
{
    *v = k == K_ACTIVE ? o->active : k == K_STANDBY ? o->standby : o->warmup;
    *n = k == K_ACTIVE ? o->nactive : k == K_STANDBY ? o->nstandby : o->nwarmup;
}

static uint64_t t3_hash(const tasks3_t *t)
{
    uint64_t h = LS_HASH_INIT;
    for (int k = 0; k < K_N; k++)
        for (int i = 0; i < t->k[k].n; i++) {
            h = ls_hash_str(h, t->k[k].v[i].sub);
            h = ls_hash_bytes(h, &t->k[k].v[i].partition, sizeof(int32_t)) + (uint64_t)k;
        }
    return h ^ (uint64_t)t3_count(t);
}

/* ------------------------------------------------------------ topology copies */

static char *dup_or_null(const char *s) { return s ? ls_strdup(s) : NULL; }

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

static ls_stgroup_kv_t *kv_dup(const ls_stgroup_kv_t *v, int n)
{
    ls_stgroup_kv_t *o = LS_NEWN(ls_stgroup_kv_t, n + 1);
    for (int i = 0; i < n; i++)
        o[i] = (ls_stgroup_kv_t){ls_strdup(v[i].key), ls_strdup(v[i].value)};
    return o;
}

static void kv_free(const ls_stgroup_kv_t *v, int n)
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
        o[i].configs = kv_dup(v[i].configs, v[i].nconfigs);
    }
    return o;
}

static void infos_free(const ls_stgroup_topic_info_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        ls_free((char *)v[i].name);
        kv_free(v[i].configs, v[i].nconfigs);
    }
    ls_free((void *)v);
}

static int16_t *i16_dup(const int16_t *v, int n)
{
    int16_t *o = LS_NEWN(int16_t, n + 1);
    if (n) memcpy(o, v, (size_t)n * sizeof *v);
    return o;
}

static ls_stgroup_topology_t *topo_dup(const ls_stgroup_topology_t *t)
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

static void topo_free(ls_stgroup_topology_t *t)
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

static bool kv_equal(const ls_stgroup_kv_t *a, int na, const ls_stgroup_kv_t *b, int nb)
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
            !kv_equal(a[i].configs, a[i].nconfigs, b[i].configs, b[i].nconfigs))
            return false;
    return true;
}

static bool topo_equal(const ls_stgroup_topology_t *a, const ls_stgroup_topology_t *b)
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

/* ------------------------------------------------------------ model */

typedef enum mstate { M_STABLE, M_UNREVOKED, M_UNRELEASED } mstate;

typedef struct member {
    char *id;
    char *rack_id, *client_id, *client_host, *process_id;
    char *ep_host; /* NULL: no endpoint */
    uint16_t ep_port;
    ls_stgroup_kv_t *tags;
    int ntags;
    ls_stgroup_task_offset_t *offsets, *end_offsets; /* reported, not stored */
    int noffsets, nend_offsets;
    int32_t epoch, prev_epoch, topology_epoch;
    mstate state;
    int32_t rebalance_timeout_ms;
    int64_t deadline_ms;  /* session expiry */
    int64_t revoke_by_ms; /* UnrevokedTasks: removed unless revoked by then */
    tasks3_t assigned, pending, target;
} member_t;

/* The topology as configured against the topics that exist. */
typedef struct configured {
    bool ready;
    int8_t code; /* -1 ready, else the status */
    char *detail;
    int32_t *ntasks; /* per sub-topology */
    int nsubs;
    ls_stgroup_create_t *create;
    int ncreate;
} configured_t;

struct ls_stgroup {
    char *id;
    ls_stgroup_config_t cfg;
    int32_t epoch, target_epoch, endpoint_epoch;
    ls_stgroup_topology_t *topo;
    configured_t conf;
    uint64_t conf_sig; /* of conf when the target was last computed */
    int32_t standbys;  /* num.standby.replicas of the current target */
    char *shutdown_by; /* a member asked the whole application to stop */
    member_t **members;
    int nmembers;
    uint64_t version;
    ls_stgroup_status_t status[3]; /* the last answer's */
    char msg[512];
};

void ls_stgroup_config_defaults(ls_stgroup_config_t *cfg)
{
    *cfg = (ls_stgroup_config_t){.session_timeout_ms = 45000,
                                 .heartbeat_interval_ms = 5000,
                                 .max_size = INT32_MAX,
                                 .num_standby_replicas = 0};
}

ls_stgroup_t *ls_stgroup_new(const char *group_id, const ls_stgroup_config_t *cfg,
                             int32_t epoch_floor)
{
    ls_stgroup_t *g = LS_NEW(ls_stgroup_t);
    g->id = ls_strdup(group_id);
    g->cfg = *cfg;
    g->epoch = g->target_epoch = epoch_floor > 0 ? epoch_floor : 0;
    g->standbys = cfg->num_standby_replicas;
    g->conf.code = -1;
    return g;
}

static void conf_clear(configured_t *c)
{
    ls_free(c->detail);
    ls_free(c->ntasks);
    ls_free(c->create);
    *c = (configured_t){.code = -1};
}

static void member_free(member_t *m)
{
    ls_free(m->id);
    ls_free(m->rack_id);
    ls_free(m->client_id);
    ls_free(m->client_host);
    ls_free(m->process_id);
    ls_free(m->ep_host);
    kv_free(m->tags, m->ntags);
    for (int i = 0; i < m->noffsets; i++)
        ls_free((char *)m->offsets[i].sub);
    ls_free(m->offsets);
    for (int i = 0; i < m->nend_offsets; i++)
        ls_free((char *)m->end_offsets[i].sub);
    ls_free(m->end_offsets);
    t3_free(&m->assigned);
    t3_free(&m->pending);
    t3_free(&m->target);
    ls_free(m);
}

void ls_stgroup_free(ls_stgroup_t *g)
{
    if (!g) return;
    for (int i = 0; i < g->nmembers; i++)
        member_free(g->members[i]);
    ls_free(g->members);
    topo_free(g->topo);
    conf_clear(&g->conf);
    ls_free(g->shutdown_by);
    ls_free(g->id);
    ls_free(g);
}

int32_t ls_stgroup_epoch(const ls_stgroup_t *g) { return g->epoch; }
int32_t ls_stgroup_target_epoch(const ls_stgroup_t *g) { return g->target_epoch; }
int ls_stgroup_member_count(const ls_stgroup_t *g) { return g->nmembers; }
uint64_t ls_stgroup_version(const ls_stgroup_t *g) { return g->version; }
const ls_stgroup_topology_t *ls_stgroup_topology(const ls_stgroup_t *g) { return g->topo; }

static member_t *find_member(const ls_stgroup_t *g, const char *id)
{
    for (int i = 0; i < g->nmembers; i++)
        if (!strcmp(g->members[i]->id, id)) return g->members[i];
    return NULL;
}

static void remove_member(ls_stgroup_t *g, member_t *m)
{
    for (int i = 0; i < g->nmembers; i++) {
        if (g->members[i] != m) continue;
        g->members[i] = g->members[--g->nmembers];
        break;
    }
    member_free(m);
    g->epoch++;
    if (g->nmembers == 0) {
        ls_free(g->shutdown_by);
        g->shutdown_by = NULL;
    }
}

/* A member's process: its ProcessId, or itself when it sent none. */
static const char *process_of(const member_t *m) { return m->process_id ? m->process_id : m->id; }

/* ------------------------------------------------------------ configuring */

static int find_sub(const ls_stgroup_topology_t *t, const char *id)
{
    for (int i = 0; i < t->nsubs; i++)
        if (!strcmp(t->subs[i].id, id)) return i;
    return -1;
}

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

static void add_create(configured_t *conf, const ls_stgroup_topic_info_t *info, int32_t n)
{
    conf->create = ls_realloc(conf->create, (size_t)(conf->ncreate + 1) * sizeof *conf->create);
    conf->create[conf->ncreate++] = (ls_stgroup_create_t){info->name, n, info->replication_factor,
                                                          info->configs, info->nconfigs};
}

/* An internal topic's existing partition count against the decided one. */
static void internal_topic(cfgctx_t *c, configured_t *conf, const ls_stgroup_topic_info_t *info,
                           int32_t want)
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

static const char *configure(ls_stgroup_t *g, const ls_stgroup_topology_t *t,
                             ls_stgroup_partitions_fn fn, void *arg, configured_t *conf)
{
    *conf = (configured_t){.code = -1};
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
    (void)g;
    if (bad) {
        ls_buf_free(&c.detail);
        conf_clear(conf);
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
static uint64_t conf_sig(const configured_t *c)
{
    uint64_t h = ls_hash_bytes(LS_HASH_INIT, &c->ready, sizeof c->ready);
    if (c->ready && c->nsubs) h = ls_hash_bytes(h, c->ntasks, (size_t)c->nsubs * sizeof(int32_t));
    return h;
}

/* ------------------------------------------------------------ target assignment */

static int cmp_member(const void *a, const void *b)
{
    return strcmp((*(member_t *const *)a)->id, (*(member_t *const *)b)->id);
}

/* The member that held task as kind in the previous target, else now. */
static int prev_holder(member_t **ms, int n, int kind, const char *sub, int32_t p)
{
    for (int i = 0; i < n; i++)
        if (tks_has(&ms[i]->target.k[kind], sub, p)) return i;
    for (int i = 0; i < n; i++)
        if (tks_has(&ms[i]->assigned.k[kind], sub, p)) return i;
    return -1;
}

typedef struct task_ref {
    const char *sub;
    int32_t p;
    int owner; /* active owner's index, -1 none yet */
} task_ref_t;

static void assign_active(member_t **ms, int n, task_ref_t *tasks, int nt, tasks3_t *next,
                          int *load)
{
    int base = nt / n, extra = nt % n, at_ceil = 0;
    /* sticky within the fair share: floor first, then the few at ceil */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nt; i++) {
            if (tasks[i].owner >= 0) continue;
            int h = prev_holder(ms, n, K_ACTIVE, tasks[i].sub, tasks[i].p);
            if (h < 0) continue;
            if (load[h] < base || (pass == 1 && load[h] == base && at_ceil < extra)) {
                if (load[h] == base) at_ceil++;
                load[h]++;
                tasks[i].owner = h;
            }
        }
    for (int i = 0; i < nt; i++) {
        if (tasks[i].owner >= 0) continue;
        int best = 0;
        for (int j = 1; j < n; j++)
            if (load[j] < load[best]) best = j;
        load[best]++;
        tasks[i].owner = best;
    }
    for (int i = 0; i < nt; i++)
        tks_add(&next[tasks[i].owner].k[K_ACTIVE], tasks[i].sub, tasks[i].p);
}

static bool next_holds(const tasks3_t *next, int who, const char *sub, int32_t p)
{
    return tks_has(&next[who].k[K_ACTIVE], sub, p) || tks_has(&next[who].k[K_STANDBY], sub, p);
}

static void assign_standby(member_t **ms, int n, const task_ref_t *tasks, int nt, int standbys,
                           tasks3_t *next)
{
    int *load = LS_NEWN(int, n + 1);
    for (int i = 0; i < nt; i++) {
        for (int r = 0; r < standbys; r++) {
            int pick = -1;
            for (int j = 0; j < n; j++) {
                /* no member of j's process holds the task in the new target */
                bool taken = false;
                for (int k = 0; k < n && !taken; k++)
                    taken = !strcmp(process_of(ms[k]), process_of(ms[j])) &&
                            next_holds(next, k, tasks[i].sub, tasks[i].p);
                if (taken) continue;
                bool was = tks_has(&ms[j]->target.k[K_STANDBY], tasks[i].sub, tasks[i].p);
                if (pick < 0 ||
                    (was && !tks_has(&ms[pick]->target.k[K_STANDBY], tasks[i].sub, tasks[i].p)) ||
                    (was == tks_has(&ms[pick]->target.k[K_STANDBY], tasks[i].sub, tasks[i].p) &&
                     load[j] < load[pick]))
                    pick = j;
            }
            if (pick < 0) break; /* not enough processes */
            load[pick]++;
            tks_add(&next[pick].k[K_STANDBY], tasks[i].sub, tasks[i].p);
        }
    }
    ls_free(load);
}

static void compute_target(ls_stgroup_t *g)
{
    int n = g->nmembers;
    g->target_epoch = g->epoch;
    g->conf_sig = conf_sig(&g->conf);
    if (n == 0) return;
    member_t **ms = LS_NEWN(member_t *, n);
    memcpy(ms, g->members, (size_t)n * sizeof *ms);
    qsort(ms, (size_t)n, sizeof *ms, cmp_member);
    int nt = 0;
    if (g->conf.ready && g->topo)
        for (int i = 0; i < g->conf.nsubs; i++)
            nt += g->conf.ntasks[i];
    task_ref_t *tasks = LS_NEWN(task_ref_t, nt + 1);
    /* partition by partition across the sub-topologies, so that the
     * least-loaded fill spreads every sub-topology over the members */
    int k = 0;
    for (int32_t p = 0; k < nt; p++)
        for (int i = 0; i < g->conf.nsubs; i++)
            if (p < g->conf.ntasks[i]) tasks[k++] = (task_ref_t){g->topo->subs[i].id, p, -1};
    tasks3_t *next = LS_NEWN(tasks3_t, n);
    int *load = LS_NEWN(int, n);
    if (nt) {
        assign_active(ms, n, tasks, nt, next, load);
        assign_standby(ms, n, tasks, nt, g->standbys, next);
    }
    for (int i = 0; i < n; i++) {
        t3_free(&ms[i]->target);
        ms[i]->target = next[i];
    }
    ls_free(next);
    ls_free(load);
    ls_free(tasks);
    ls_free(ms);
}

/* ------------------------------------------------------------ reconciliation */

static bool kind_held(const member_t *o, int kind, const char *sub, int32_t p)
{
    return tks_has(&o->assigned.k[kind], sub, p) || tks_has(&o->pending.k[kind], sub, p);
}

static bool same_process(const member_t *a, const member_t *b)
{
    return !strcmp(process_of(a), process_of(b));
}

/* Is task (of kind, for m, whose new assigned sets are keep) still held? */
static bool unreleased(const ls_stgroup_t *g, const member_t *m, const tasks3_t *keep, int kind,
                       const char *sub, int32_t p)
{
    if (kind == K_ACTIVE) {
        if (tks_has(&keep->k[K_STANDBY], sub, p) || tks_has(&keep->k[K_WARMUP], sub, p))
            return true;
        for (int i = 0; i < g->nmembers; i++) {
            const member_t *o = g->members[i];
            if (o == m) continue;
            if (kind_held(o, K_ACTIVE, sub, p)) return true;
            if (same_process(o, m) &&
                (kind_held(o, K_STANDBY, sub, p) || kind_held(o, K_WARMUP, sub, p)))
                return true;
        }
        return false;
    }
    if (tks_has(&keep->k[K_ACTIVE], sub, p)) return true;
    for (int i = 0; i < g->nmembers; i++) {
        const member_t *o = g->members[i];
        if (o != m && same_process(o, m) &&
            (kind_held(o, K_ACTIVE, sub, p) || kind_held(o, K_STANDBY, sub, p) ||
             kind_held(o, K_WARMUP, sub, p)))
            return true;
    }
    return false;
}

static bool owned_any(const ls_stgroup_hb_req_t *req, const tasks3_t *t)
{
    for (int k = 0; k < K_N; k++) {
        const ls_stgroup_task_t *v;
        int n;
        owned_kind(&req->owned, k, &v, &n);
        for (int i = 0; i < n; i++)
            if (tks_has(&t->k[k], v[i].sub, v[i].partition)) return true;
    }
    return false;
}

/* Moves m one step towards its target (stgroup.h). */
static void reconcile(ls_stgroup_t *g, member_t *m, const ls_stgroup_hb_req_t *req)
{
    if (m->state == M_UNREVOKED) {
        if (!req->has_owned || owned_any(req, &m->pending)) return;
        t3_free(&m->pending);
    }
    if (m->state == M_STABLE && m->epoch == g->target_epoch) return;
    tasks3_t keep = {0}, revoke = {0};
    for (int k = 0; k < K_N; k++)
        for (int i = 0; i < m->assigned.k[k].n; i++) {
            const ls_stgroup_task_t *t = &m->assigned.k[k].v[i];
            tks_add(tks_has(&m->target.k[k], t->sub, t->partition) ? &keep.k[k] : &revoke.k[k],
                    t->sub, t->partition);
        }
    /* revocations the member has done already need no waiting */
    if (t3_count(&revoke) && (!req->has_owned || owned_any(req, &revoke))) {
        t3_free(&m->assigned);
        m->assigned = keep;
        t3_free(&m->pending);
        m->pending = revoke;
        m->state = M_UNREVOKED;
        m->revoke_by_ms = req->now_ms + m->rebalance_timeout_ms;
        return;
    }
    t3_free(&revoke);
    bool all = true;
    for (int k = 0; k < K_N; k++)
        for (int i = 0; i < m->target.k[k].n; i++) {
            const ls_stgroup_task_t *t = &m->target.k[k].v[i];
            if (tks_has(&keep.k[k], t->sub, t->partition)) continue;
            if (unreleased(g, m, &keep, k, t->sub, t->partition))
                all = false;
            else
                tks_add(&keep.k[k], t->sub, t->partition);
        }
    t3_free(&m->assigned);
    m->assigned = keep;
    if (m->epoch != g->target_epoch) {
        m->prev_epoch = m->epoch;
        m->epoch = g->target_epoch;
    }
    m->state = all ? M_STABLE : M_UNRELEASED;
}

/* ------------------------------------------------------------ heartbeat */

static bool str_eq(const char *a, const char *b) { return a && b ? !strcmp(a, b) : a == b; }

/* Sets *dst to src; true when it changed. */
static bool replace_str(char **dst, const char *src)
{
    if (str_eq(*dst, src)) return false;
    ls_free(*dst);
    *dst = dup_or_null(src);
    return true;
}

static void fail(ls_stgroup_hb_res_t *res, ls_cgroup_err e, const char *msg)
{
    res->err = e;
    res->message = msg;
}

static bool tasks_empty(const ls_stgroup_tasks_t *t)
{
    return t->nactive == 0 && t->nstandby == 0 && t->nwarmup == 0;
}

/* Kafka's request checks, in its order, each naming the field. */
static const char *invalid(ls_stgroup_t *g, const ls_stgroup_hb_req_t *req, ls_cgroup_err *e)
{
    *e = LS_CGERR_INVALID_REQUEST;
    if (!req->member_id || !*req->member_id) return "MemberId can't be empty.";
    if (req->instance_id && !*req->instance_id) return "InstanceId can't be empty.";
    if (req->rack_id && !*req->rack_id) return "RackId can't be empty.";
    if (req->member_epoch == LS_CGROUP_EPOCH_JOIN) {
        if (req->rebalance_timeout_ms == -1)
            return "RebalanceTimeoutMs must be provided in first request.";
        if (req->has_owned && !tasks_empty(&req->owned))
            return "ActiveTasks, StandbyTasks and WarmupTasks must be empty when (re-)joining.";
        if (!req->topology) return "Topology must be non-null when (re-)joining.";
    } else if (req->member_epoch == LS_CGROUP_EPOCH_STATIC_LEAVE) {
        if (!req->instance_id) return "InstanceId can't be null.";
    } else if (req->member_epoch < LS_CGROUP_EPOCH_STATIC_LEAVE) {
        snprintf(g->msg, sizeof g->msg,
                 "MemberEpoch is %d, but must be greater than or equal to -2.",
                 (int)req->member_epoch);
        return g->msg;
    }
    if (req->member_epoch != LS_CGROUP_EPOCH_JOIN && req->topology)
        return "Topology can only be provided when (re-)joining.";
    if (req->instance_id)
        return "InstanceId: static membership is not supported for streams groups (Kafka's "
               "streams protocol does not support it either).";
    const ls_stgroup_topology_t *t = req->topology;
    for (int i = 0; t && i < t->nsubs; i++) {
        const ls_stgroup_subtopology_t *s = &t->subs[i];
        *e = LS_CGERR_STREAMS_INVALID_TOPOLOGY;
        for (int j = 0; j < s->nchangelogs; j++)
            if (s->changelogs[j].partitions != 0) {
                snprintf(g->msg, sizeof g->msg,
                         "Changelog topic %s must have an undefined partition count, but it is "
                         "set to %d.",
                         s->changelogs[j].name, (int)s->changelogs[j].partitions);
                return g->msg;
            }
        if (!*s->id || find_sub(t, s->id) != i) return "Sub-topology ids must be unique and set.";
        if (s->nsources + s->nrepartitions == 0) {
            snprintf(g->msg, sizeof g->msg, "Sub-topology %s reads no topic.", s->id);
            return g->msg;
        }
        for (int j = 0; j < s->ncoparts; j++) {
            const ls_stgroup_copart_t *cp = &s->coparts[j];
            for (int k = 0; k < cp->nsources; k++)
                if (cp->sources[k] < 0 || cp->sources[k] >= s->nsources)
                    return "A copartition group indexes past SourceTopics.";
            for (int k = 0; k < cp->nrepartitions; k++)
                if (cp->repartitions[k] < 0 || cp->repartitions[k] >= s->nrepartitions)
                    return "A copartition group indexes past RepartitionSourceTopics.";
        }
    }
    *e = LS_CGERR_INVALID_REQUEST;
    return NULL;
}

/* Owned tasks must name sub-topologies of the topology (Kafka's check). */
static const char *invalid_owned(ls_stgroup_t *g, const ls_stgroup_hb_req_t *req)
{
    if (!req->has_owned || !g->topo) return NULL;
    for (int k = 0; k < K_N; k++) {
        const ls_stgroup_task_t *v;
        int n;
        owned_kind(&req->owned, k, &v, &n);
        for (int i = 0; i < n; i++) {
            int s = find_sub(g->topo, v[i].sub);
            if (s < 0 || (g->conf.ready && v[i].partition >= g->conf.ntasks[s]) ||
                v[i].partition < 0) {
                snprintf(g->msg, sizeof g->msg, "Task %s_%d is not a task of the group's topology.",
                         v[i].sub, (int)v[i].partition);
                return g->msg;
            }
        }
    }
    return NULL;
}

static void set_offsets(ls_stgroup_task_offset_t **dst, int *ndst,
                        const ls_stgroup_task_offset_t *src, int n)
{
    if (n < 0) return;
    for (int i = 0; i < *ndst; i++)
        ls_free((char *)(*dst)[i].sub);
    ls_free(*dst);
    *dst = LS_NEWN(ls_stgroup_task_offset_t, n + 1);
    for (int i = 0; i < n; i++)
        (*dst)[i] =
            (ls_stgroup_task_offset_t){ls_strdup(src[i].sub), src[i].partition, src[i].offset};
    *ndst = n;
}

/* The member's described fields; true when one the assignment reads moved. */
static bool update_member(member_t *m, const ls_stgroup_hb_req_t *req)
{
    bool moved = false;
    if (req->rack_id) moved |= replace_str(&m->rack_id, req->rack_id);
    if (req->process_id) moved |= replace_str(&m->process_id, req->process_id);
    if (req->client_id) replace_str(&m->client_id, req->client_id);
    if (req->client_host) replace_str(&m->client_host, req->client_host);
    if (req->rebalance_timeout_ms >= 0) m->rebalance_timeout_ms = req->rebalance_timeout_ms;
    if (req->has_endpoint) {
        moved |= replace_str(&m->ep_host, req->endpoint_host);
        moved |= m->ep_port != req->endpoint_port;
        m->ep_port = req->endpoint_port;
    }
    if (req->ntags >= 0 && !kv_equal(m->tags, m->ntags, req->tags, req->ntags)) {
        kv_free(m->tags, m->ntags);
        m->tags = kv_dup(req->tags, req->ntags);
        m->ntags = req->ntags;
        moved = true;
    }
    if (req->topology && req->topology->epoch != m->topology_epoch) {
        m->topology_epoch = req->topology->epoch;
        moved = true;
    }
    set_offsets(&m->offsets, &m->noffsets, req->offsets, req->noffsets);
    set_offsets(&m->end_offsets, &m->nend_offsets, req->end_offsets, req->nend_offsets);
    return moved;
}

static void heartbeat(ls_stgroup_t *g, const ls_stgroup_hb_req_t *req, ls_stgroup_hb_res_t *res);

/* What a heartbeat may change that is stored (the consumer groups' rule,
 * cgroup.c, plus the topology and the endpoint epoch). */
static uint64_t fingerprint(const ls_stgroup_t *g, const char *member_id)
{
    int64_t v[14] = {g->epoch,
                     g->target_epoch,
                     g->endpoint_epoch,
                     g->nmembers,
                     g->topo ? g->topo->epoch : -1,
                     g->shutdown_by != NULL,
                     (int64_t)g->conf_sig,
                     g->standbys,
                     -1};
    const member_t *m = member_id ? find_member(g, member_id) : NULL;
    if (m) {
        int64_t mv[] = {m->epoch, m->prev_epoch, m->state, t3_count(&m->assigned),
                        t3_count(&m->pending)};
        memcpy(v + 8, mv, sizeof mv);
    }
    return ls_hash_bytes(LS_HASH_INIT, v, sizeof v);
}

void ls_stgroup_heartbeat(ls_stgroup_t *g, const ls_stgroup_hb_req_t *req, ls_stgroup_hb_res_t *res)
{
    uint64_t before = fingerprint(g, req->member_id);
    heartbeat(g, req, res);
    if (fingerprint(g, req->member_id) != before) g->version++;
}

/* Picks the topology the group goes on with; NULL or why not. */
static const char *take_topology(ls_stgroup_t *g, const ls_stgroup_hb_req_t *req, const member_t *m)
{
    const ls_stgroup_topology_t *t = req->topology;
    if (!t) return NULL;
    if (g->topo && t->epoch < g->topo->epoch) return NULL; /* stale: STALE_TOPOLOGY */
    if (g->topo && topo_equal(g->topo, t)) return NULL;
    /* A group nobody else is in takes the new topology (an application
     * redeployed with a changed topology); Kafka refuses any change. */
    bool alone = g->nmembers == 0 || (g->nmembers == 1 && m);
    if (g->topo && !alone) return "Topology updates are not supported yet.";
    topo_free(g->topo);
    g->topo = topo_dup(t);
    g->epoch++;
    return NULL;
}

static void respond_status(ls_stgroup_t *g, const member_t *m, ls_stgroup_hb_res_t *res)
{
    int n = 0;
    if (g->topo && m->topology_epoch < g->topo->epoch) {
        snprintf(g->msg, sizeof g->msg,
                 "The member's topology epoch %d is behind the group's topology epoch %d.",
                 (int)m->topology_epoch, (int)g->topo->epoch);
        g->status[n++] = (ls_stgroup_status_t){LS_STGROUP_STALE_TOPOLOGY, g->msg};
    }
    if (g->conf.code >= 0) {
        g->status[n++] = (ls_stgroup_status_t){g->conf.code, g->conf.detail};
        if (g->conf.code == LS_STGROUP_MISSING_INTERNAL_TOPICS) {
            res->create = g->conf.create;
            res->ncreate = g->conf.ncreate;
        }
    }
    if (g->shutdown_by)
        g->status[n++] = (ls_stgroup_status_t){
            LS_STGROUP_SHUTDOWN_APPLICATION,
            "A member of the group encountered a fatal error and requested a shutdown of the "
            "whole application."};
    res->status = g->status;
    res->nstatus = n;
}

static void heartbeat(ls_stgroup_t *g, const ls_stgroup_hb_req_t *req, ls_stgroup_hb_res_t *res)
{
    if (req->session_timeout_ms > 0) g->cfg.session_timeout_ms = req->session_timeout_ms;
    if (req->heartbeat_interval_ms > 0) g->cfg.heartbeat_interval_ms = req->heartbeat_interval_ms;
    if (req->num_standby_replicas >= 0) g->cfg.num_standby_replicas = req->num_standby_replicas;
    *res = (ls_stgroup_hb_res_t){.member_epoch = req->member_epoch,
                                 .heartbeat_interval_ms = g->cfg.heartbeat_interval_ms,
                                 .endpoint_epoch = g->endpoint_epoch};
    ls_cgroup_err e;
    const char *bad = invalid(g, req, &e);
    if (bad) return fail(res, e, bad);
    member_t *m = find_member(g, req->member_id);
    if (req->member_epoch < 0) { /* leave */
        if (!m) return fail(res, LS_CGERR_UNKNOWN_MEMBER_ID, NULL);
        remove_member(g, m);
        if (g->epoch > g->target_epoch) compute_target(g);
        return;
    }
    if (req->member_epoch != LS_CGROUP_EPOCH_JOIN) {
        if (!m) return fail(res, LS_CGERR_UNKNOWN_MEMBER_ID, NULL);
        if (req->member_epoch != m->epoch) {
            /* a lost answer: the previous epoch is fine while the member
             * owns no more than it is assigned now */
            bool ok = req->member_epoch == m->prev_epoch && req->has_owned;
            for (int k = 0; ok && k < K_N; k++) {
                const ls_stgroup_task_t *v;
                int n;
                owned_kind(&req->owned, k, &v, &n);
                for (int i = 0; ok && i < n; i++)
                    ok = tks_has(&m->assigned.k[k], v[i].sub, v[i].partition);
            }
            if (!ok) return fail(res, LS_CGERR_FENCED_MEMBER_EPOCH, NULL);
        }
    } else if (!m && g->nmembers >= g->cfg.max_size) {
        return fail(res, LS_CGERR_GROUP_MAX_SIZE_REACHED, NULL);
    }
    const char *why = take_topology(g, req, m);
    if (why) return fail(res, LS_CGERR_INVALID_REQUEST, why);
    if (!g->topo) return fail(res, LS_CGERR_UNKNOWN_MEMBER_ID, NULL); /* never joined */
    configured_t conf;
    why = configure(g, g->topo, req->partitions, req->partitions_arg, &conf);
    if (why) return fail(res, LS_CGERR_STREAMS_INVALID_TOPOLOGY, why);
    conf_clear(&g->conf);
    g->conf = conf;
    why = invalid_owned(g, req);
    if (why) return fail(res, LS_CGERR_INVALID_REQUEST, why);
    if (!m) {
        m = LS_NEW(member_t);
        m->id = ls_strdup(req->member_id);
        m->topology_epoch = req->topology->epoch;
        g->members = ls_realloc(g->members, (size_t)(g->nmembers + 1) * sizeof *g->members);
        g->members[g->nmembers++] = m;
        g->epoch++;
    }
    m->deadline_ms = req->now_ms + g->cfg.session_timeout_ms;
    if (update_member(m, req)) g->epoch++;
    if (conf_sig(&g->conf) != g->conf_sig) g->epoch++;
    if (g->cfg.num_standby_replicas != g->standbys) {
        g->standbys = g->cfg.num_standby_replicas;
        g->epoch++;
    }
    if (req->shutdown_application && !g->shutdown_by) g->shutdown_by = ls_strdup(m->id);
    if (g->epoch > g->target_epoch) compute_target(g);
    uint64_t had = t3_hash(&m->assigned);
    reconcile(g, m, req);
    res->member_epoch = m->epoch;
    res->send_tasks = req->member_epoch == LS_CGROUP_EPOCH_JOIN || t3_hash(&m->assigned) != had;
    res->tasks = t3_view(&m->assigned);
    if (res->send_tasks && m->ep_host) g->endpoint_epoch++;
    res->endpoint_epoch = g->endpoint_epoch;
    res->send_endpoints = req->endpoint_epoch != g->endpoint_epoch;
    respond_status(g, m, res);
}

/* ------------------------------------------------------------ time */

static int64_t member_due(const member_t *m)
{
    return m->state == M_UNREVOKED && m->revoke_by_ms < m->deadline_ms ? m->revoke_by_ms
                                                                       : m->deadline_ms;
}

int64_t ls_stgroup_next_deadline(const ls_stgroup_t *g)
{
    int64_t next = INT64_MAX;
    for (int i = 0; i < g->nmembers; i++)
        if (member_due(g->members[i]) < next) next = member_due(g->members[i]);
    return next;
}

int64_t ls_stgroup_tick(ls_stgroup_t *g, int64_t now_ms)
{
    int64_t next = INT64_MAX;
    int32_t epoch = g->epoch;
    for (int i = 0; i < g->nmembers;) {
        member_t *m = g->members[i];
        int64_t due = member_due(m);
        if (due <= now_ms) {
            remove_member(g, m); /* moves the last member into slot i */
            continue;
        }
        if (due < next) next = due;
        i++;
    }
    if (g->epoch > g->target_epoch) compute_target(g);
    if (g->epoch != epoch) g->version++;
    return next;
}

/* ------------------------------------------------------------ describe */

void ls_stgroup_member(const ls_stgroup_t *g, int i, ls_stgroup_member_info_t *out)
{
    const member_t *m = g->members[i];
    *out = (ls_stgroup_member_info_t){
        .member_id = m->id,
        .rack_id = m->rack_id,
        .client_id = m->client_id ? m->client_id : "",
        .client_host = m->client_host ? m->client_host : "",
        .process_id = process_of(m),
        .endpoint_host = m->ep_host,
        .endpoint_port = m->ep_port,
        .tags = m->tags,
        .ntags = m->ntags,
        .offsets = m->offsets,
        .noffsets = m->noffsets,
        .end_offsets = m->end_offsets,
        .nend_offsets = m->nend_offsets,
        .member_epoch = m->epoch,
        .topology_epoch = m->topology_epoch,
        .assigned = t3_view(&m->assigned),
        .target = t3_view(&m->target),
    };
}

const char *ls_stgroup_state_name(const ls_stgroup_t *g)
{
    if (g->nmembers == 0) return "Empty";
    if (!g->topo || !g->conf.ready) return "NotReady";
    if (g->target_epoch < g->epoch) return "Assigning";
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i]->epoch != g->target_epoch || g->members[i]->state != M_STABLE)
            return "Reconciling";
    return "Stable";
}

bool ls_stgroup_subscribed(const ls_stgroup_t *g, const char *topic)
{
    for (int i = 0; g->topo && i < g->topo->nsubs; i++) {
        const ls_stgroup_subtopology_t *s = &g->topo->subs[i];
        for (int j = 0; j < s->nsources; j++)
            if (!strcmp(s->sources[j], topic)) return true;
        for (int j = 0; j < s->nrepartitions; j++)
            if (!strcmp(s->repartitions[j].name, topic)) return true;
    }
    return false;
}

ls_cgroup_err ls_stgroup_commit_check(const ls_stgroup_t *g, const char *member_id,
                                      int32_t member_epoch)
{
    const member_t *m = find_member(g, member_id);
    if (!m) return LS_CGERR_UNKNOWN_MEMBER_ID;
    if (member_epoch > m->epoch) return LS_CGERR_FENCED_MEMBER_EPOCH;
    if (member_epoch < m->epoch) return LS_CGERR_STALE_MEMBER_EPOCH;
    return LS_CGERR_NONE;
}

void ls_stgroup_check_invariants(const ls_stgroup_t *g)
{
    if (g->target_epoch > g->epoch)
        LS_PANIC("streams group %s: target epoch past group epoch", g->id);
    for (int i = 0; i < g->nmembers; i++) {
        const member_t *m = g->members[i];
        if (m->epoch > g->target_epoch)
            LS_PANIC("streams group %s: member %s epoch past the target", g->id, m->id);
        for (int k = 0; k < 2; k++) {
            const tkset_t *s = k ? &m->pending.k[K_ACTIVE] : &m->assigned.k[K_ACTIVE];
            for (int t = 0; t < s->n; t++)
                for (int j = 0; j < g->nmembers; j++) {
                    const member_t *o = g->members[j];
                    if (o != m && kind_held(o, K_ACTIVE, s->v[t].sub, s->v[t].partition))
                        LS_PANIC("streams group %s: active task %s_%d held by %s and %s", g->id,
                                 s->v[t].sub, (int)s->v[t].partition, m->id, o->id);
                }
        }
    }
}

/* ------------------------------------------------------------ stored form */

#define STATE_VERSION 1

static void put_tks(ls_buf_t *b, const tkset_t *s)
{
    ls_bw_u32(b, (uint32_t)s->n);
    for (int i = 0; i < s->n; i++) {
        ls_bw_str(b, s->v[i].sub);
        ls_bw_u32(b, (uint32_t)s->v[i].partition);
    }
}

static void put_t3(ls_buf_t *b, const tasks3_t *t)
{
    for (int k = 0; k < K_N; k++)
        put_tks(b, &t->k[k]);
}

static void put_kv(ls_buf_t *b, const ls_stgroup_kv_t *v, int n)
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
        put_kv(b, v[i].configs, v[i].nconfigs);
    }
}

static void put_i16v(ls_buf_t *b, const int16_t *v, int n)
{
    ls_bw_u32(b, (uint32_t)n);
    for (int i = 0; i < n; i++)
        ls_bw_u16(b, (uint16_t)v[i]);
}

static void put_topo(ls_buf_t *b, const ls_stgroup_topology_t *t)
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

void ls_stgroup_encode(const ls_stgroup_t *g, ls_buf_t *b)
{
    ls_buf_append_u8(b, STATE_VERSION);
    ls_bw_u32(b, (uint32_t)g->epoch);
    ls_bw_u32(b, (uint32_t)g->target_epoch);
    ls_bw_u32(b, (uint32_t)g->endpoint_epoch);
    ls_bw_u32(b, (uint32_t)g->standbys);
    ls_bw_str(b, g->shutdown_by);
    put_topo(b, g->topo);
    /* the configured task counts the target was computed with */
    ls_buf_append_u8(b, g->conf.ready ? 1 : 0);
    ls_bw_u32(b, (uint32_t)(g->conf.ready ? g->conf.nsubs : 0));
    for (int i = 0; g->conf.ready && i < g->conf.nsubs; i++)
        ls_bw_u32(b, (uint32_t)g->conf.ntasks[i]);
    ls_bw_u32(b, (uint32_t)g->nmembers);
    for (int i = 0; i < g->nmembers; i++) {
        const member_t *m = g->members[i];
        ls_bw_str(b, m->id);
        ls_bw_str(b, m->rack_id);
        ls_bw_str(b, m->client_id);
        ls_bw_str(b, m->client_host);
        ls_bw_str(b, m->process_id);
        ls_bw_str(b, m->ep_host);
        ls_bw_u16(b, m->ep_port);
        put_kv(b, m->tags, m->ntags);
        ls_bw_u32(b, (uint32_t)m->epoch);
        ls_bw_u32(b, (uint32_t)m->prev_epoch);
        ls_bw_u32(b, (uint32_t)m->topology_epoch);
        ls_buf_append_u8(b, (uint8_t)m->state);
        ls_bw_u32(b, (uint32_t)m->rebalance_timeout_ms);
        put_t3(b, &m->assigned);
        put_t3(b, &m->pending);
        put_t3(b, &m->target);
    }
}

static void get_tks(ls_br_t *r, tkset_t *s)
{
    int n = ls_br_count(r, 6);
    for (int i = 0; i < n && !r->err; i++) {
        char *sub = ls_br_str(r);
        int32_t p = (int32_t)ls_br_u32(r);
        if (!sub) {
            r->err = true;
            break;
        }
        tks_add(s, sub, p);
        ls_free(sub);
    }
}

static void get_t3(ls_br_t *r, tasks3_t *t)
{
    for (int k = 0; k < K_N; k++)
        get_tks(r, &t->k[k]);
}

static ls_stgroup_kv_t *get_kv(ls_br_t *r, int *n)
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
        v[i].configs = get_kv(r, &v[i].nconfigs);
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

static ls_stgroup_topology_t *get_topo(ls_br_t *r)
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

ls_stgroup_t *ls_stgroup_decode(const uint8_t *p, size_t len, const char *group_id,
                                const ls_stgroup_config_t *cfg, int64_t now_ms)
{
    ls_br_t r = ls_br_init(p, len);
    if (ls_br_u8(&r) != STATE_VERSION) return NULL;
    ls_stgroup_t *g = ls_stgroup_new(group_id, cfg, 0);
    g->epoch = (int32_t)ls_br_u32(&r);
    g->target_epoch = (int32_t)ls_br_u32(&r);
    g->endpoint_epoch = (int32_t)ls_br_u32(&r);
    g->standbys = (int32_t)ls_br_u32(&r);
    g->shutdown_by = ls_br_str(&r);
    g->topo = get_topo(&r);
    g->conf.ready = ls_br_u8(&r) != 0;
    int ns = ls_br_count(&r, 4);
    g->conf.ntasks = LS_NEWN(int32_t, ns + 1);
    g->conf.nsubs = ns;
    for (int i = 0; i < ns; i++)
        g->conf.ntasks[i] = (int32_t)ls_br_u32(&r);
    if (g->conf.ready && (!g->topo || ns != g->topo->nsubs)) r.err = true;
    g->conf_sig = conf_sig(&g->conf);
    int n = ls_br_count(&r, 40);
    g->members = LS_NEWN(member_t *, n + 1);
    for (int i = 0; i < n && !r.err; i++) {
        member_t *m = LS_NEW(member_t);
        g->members[g->nmembers++] = m;
        m->id = ls_br_str(&r);
        m->rack_id = ls_br_str(&r);
        m->client_id = ls_br_str(&r);
        m->client_host = ls_br_str(&r);
        m->process_id = ls_br_str(&r);
        m->ep_host = ls_br_str(&r);
        m->ep_port = ls_br_u16(&r);
        m->tags = get_kv(&r, &m->ntags);
        m->epoch = (int32_t)ls_br_u32(&r);
        m->prev_epoch = (int32_t)ls_br_u32(&r);
        m->topology_epoch = (int32_t)ls_br_u32(&r);
        uint8_t st = ls_br_u8(&r);
        m->rebalance_timeout_ms = (int32_t)ls_br_u32(&r);
        get_t3(&r, &m->assigned);
        get_t3(&r, &m->pending);
        get_t3(&r, &m->target);
        if (r.err || !m->id || st > M_UNRELEASED || m->epoch > g->target_epoch) {
            r.err = true;
            if (!m->id) m->id = ls_strdup("");
            break;
        }
        m->state = (mstate)st;
        /* a fresh session and revocation deadline on the new coordinator */
        m->deadline_ms = now_ms + cfg->session_timeout_ms;
        m->revoke_by_ms = now_ms + m->rebalance_timeout_ms;
    }
    if (r.err || r.p != r.end || g->target_epoch > g->epoch || (g->nmembers && !g->topo)) {
        ls_stgroup_free(g);
        return NULL;
    }
    return g;
}
