/* Streams groups (KIP-1071): see stgroup.h for the design note. */
#include "group/stgroup.h"
#include "group/stgroup_topology.h"
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

static char *dup_or_null(const char *s) { return s ? ls_strdup(s) : NULL; }

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

struct ls_stgroup {
    char *id;
    ls_stgroup_config_t cfg;
    int32_t epoch, target_epoch, endpoint_epoch;
    ls_stgroup_topology_t *topo;
    ls_stgroup_conf_t conf;
    uint64_t ls_stgroup_conf_sig; /* of conf when the target was last computed */
    int32_t standbys;             /* num.standby.replicas of the current target */
    char *shutdown_by;            /* a member asked the whole application to stop */
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

static void member_free(member_t *m)
{
    ls_free(m->id);
    ls_free(m->rack_id);
    ls_free(m->client_id);
    ls_free(m->client_host);
    ls_free(m->process_id);
    ls_free(m->ep_host);
    ls_stgroup_kv_free(m->tags, m->ntags);
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
    ls_stgroup_topology_free(g->topo);
    ls_stgroup_conf_clear(&g->conf);
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
    g->ls_stgroup_conf_sig = ls_stgroup_conf_sig(&g->conf);
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
static const char *invalid(const ls_stgroup_hb_req_t *req, ls_stgroup_hb_res_t *res,
                           ls_cgroup_err *e)
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
        snprintf(res->text, sizeof res->text,
                 "MemberEpoch is %d, but must be greater than or equal to -2.",
                 (int)req->member_epoch);
        return res->text;
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
                snprintf(res->text, sizeof res->text,
                         "Changelog topic %s must have an undefined partition count, but it is "
                         "set to %d.",
                         s->changelogs[j].name, (int)s->changelogs[j].partitions);
                return res->text;
            }
        if (!*s->id || ls_stgroup_find_sub(t, s->id) != i)
            return "Sub-topology ids must be unique and set.";
        if (s->nsources + s->nrepartitions == 0) {
            snprintf(res->text, sizeof res->text, "Sub-topology %s reads no topic.", s->id);
            return res->text;
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
static const char *invalid_owned(const ls_stgroup_t *g, const ls_stgroup_hb_req_t *req,
                                 ls_stgroup_hb_res_t *res)
{
    if (!req->has_owned || !g->topo) return NULL;
    for (int k = 0; k < K_N; k++) {
        const ls_stgroup_task_t *v;
        int n;
        owned_kind(&req->owned, k, &v, &n);
        for (int i = 0; i < n; i++) {
            int s = ls_stgroup_find_sub(g->topo, v[i].sub);
            if (s < 0 || (g->conf.ready && v[i].partition >= g->conf.ntasks[s]) ||
                v[i].partition < 0) {
                snprintf(res->text, sizeof res->text,
                         "Task %s_%d is not a task of the group's topology.", v[i].sub,
                         (int)v[i].partition);
                return res->text;
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
    if (req->ntags >= 0 && !ls_stgroup_kv_equal(m->tags, m->ntags, req->tags, req->ntags)) {
        ls_stgroup_kv_free(m->tags, m->ntags);
        m->tags = ls_stgroup_kv_dup(req->tags, req->ntags);
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
                     (int64_t)g->ls_stgroup_conf_sig,
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
    if (g->topo && ls_stgroup_topology_equal(g->topo, t)) return NULL;
    /* A group nobody else is in takes the new topology (an application
     * redeployed with a changed topology); Kafka refuses any change. */
    bool alone = g->nmembers == 0 || (g->nmembers == 1 && m);
    if (g->topo && !alone) return "Topology updates are not supported yet.";
    ls_stgroup_topology_free(g->topo);
    g->topo = ls_stgroup_topology_dup(t);
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
    const char *bad = invalid(req, res, &e);
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
    ls_stgroup_conf_t conf;
    why = ls_stgroup_configure(g->topo, req->partitions, req->partitions_arg, &conf);
    if (why) return fail(res, LS_CGERR_STREAMS_INVALID_TOPOLOGY, why);
    ls_stgroup_conf_clear(&g->conf);
    g->conf = conf;
    why = invalid_owned(g, req, res);
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
    if (ls_stgroup_conf_sig(&g->conf) != g->ls_stgroup_conf_sig) g->epoch++;
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

void ls_stgroup_encode(const ls_stgroup_t *g, ls_buf_t *b)
{
    ls_buf_append_u8(b, STATE_VERSION);
    ls_bw_u32(b, (uint32_t)g->epoch);
    ls_bw_u32(b, (uint32_t)g->target_epoch);
    ls_bw_u32(b, (uint32_t)g->endpoint_epoch);
    ls_bw_u32(b, (uint32_t)g->standbys);
    ls_bw_str(b, g->shutdown_by);
    ls_stgroup_topology_encode(b, g->topo);
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
        ls_stgroup_kv_encode(b, m->tags, m->ntags);
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
    g->topo = ls_stgroup_topology_decode(&r);
    g->conf.ready = ls_br_u8(&r) != 0;
    int ns = ls_br_count(&r, 4);
    g->conf.ntasks = LS_NEWN(int32_t, ns + 1);
    g->conf.nsubs = ns;
    for (int i = 0; i < ns; i++)
        g->conf.ntasks[i] = (int32_t)ls_br_u32(&r);
    if (g->conf.ready && (!g->topo || ns != g->topo->nsubs)) r.err = true;
    g->ls_stgroup_conf_sig = ls_stgroup_conf_sig(&g->conf);
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
        m->tags = ls_stgroup_kv_decode(&r, &m->ntags);
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
