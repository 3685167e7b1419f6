/* Consumer groups of the KIP-848 protocol: see cgroup.h for the design note. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "group/cgroup.h"
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "base/binrec.h"
#include "base/hash.h"

/* A set of partitions; topics are owned copies. Small (a member's share), so
 * linear lookups. */
typedef struct tpset {
    ls_cgroup_tp_t *v;
    int n, cap;
} tpset_t;

static bool tps_has(const tpset_t *s, const char *topic, int32_t p)
{
    for (int i = 0; i < s->n; i++)
        if (s->v[i].partition == p && !strcmp(s->v[i].topic, topic)) return true;
    return false;
}

static void tps_add(tpset_t *s, const char *topic, int32_t p)
{
    if (tps_has(s, topic, p)) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = ls_realloc(s->v, (size_t)s->cap * sizeof *s->v);
    }
    s->v[s->n++] = (ls_cgroup_tp_t){ls_strdup(topic), p};
}

static void tps_clear(tpset_t *s)
{
    for (int i = 0; i < s->n; i++)
        ls_free((char *)s->v[i].topic);
    s->n = 0;
}

static void tps_free(tpset_t *s)
{
    tps_clear(s);
    ls_free(s->v);
    *s = (tpset_t){0};
}

static void tps_move(tpset_t *dst, tpset_t *src)
{
    tps_free(dst);
    *dst = *src;
    *src = (tpset_t){0};
}

typedef enum mstate { M_STABLE, M_UNREVOKED, M_UNRELEASED } mstate;

typedef struct member {
    char *id;
    char *instance_id;
    int32_t epoch, prev_epoch;
    mstate state;
    char **topics; /* subscribed names */
    int ntopics;
    char *regex;
    pcre2_code *re;
    char *rack_id, *client_id, *client_host; /* described, never used for assignment */
    int assignor;                            /* -1: no preference */
    int32_t rebalance_timeout_ms;
    int64_t deadline_ms;  /* session expiry */
    int64_t revoke_by_ms; /* UnrevokedPartitions: fenced unless acknowledged by then */
    bool left_static;     /* epoch -2: keeps its assignment until the deadline */
    tpset_t assigned, pending, target;
} member_t;

struct ls_cgroup {
    char *id;
    ls_cgroup_config_t cfg;
    int32_t epoch, target_epoch;
    member_t **members;
    int nmembers;
    /* subscribed topics and partition counts when the target was computed */
    ls_cgroup_topic_t *meta;
    int nmeta;
    uint64_t version; /* bumped by every change ls_cgroup_encode would show */
};

const char *ls_cgroup_err_name(ls_cgroup_err e)
{
    switch (e) {
    case LS_CGERR_NONE: return "NONE";
    case LS_CGERR_INVALID_REQUEST: return "INVALID_REQUEST";
    case LS_CGERR_UNKNOWN_MEMBER_ID: return "UNKNOWN_MEMBER_ID";
    case LS_CGERR_FENCED_MEMBER_EPOCH: return "FENCED_MEMBER_EPOCH";
    case LS_CGERR_UNRELEASED_INSTANCE_ID: return "UNRELEASED_INSTANCE_ID";
    case LS_CGERR_GROUP_MAX_SIZE_REACHED: return "GROUP_MAX_SIZE_REACHED";
    case LS_CGERR_UNSUPPORTED_ASSIGNOR: return "UNSUPPORTED_ASSIGNOR";
    case LS_CGERR_INVALID_REGULAR_EXPRESSION: return "INVALID_REGULAR_EXPRESSION";
    case LS_CGERR_STALE_MEMBER_EPOCH: return "STALE_MEMBER_EPOCH";
    case LS_CGERR_STREAMS_INVALID_TOPOLOGY: return "STREAMS_INVALID_TOPOLOGY";
    }
    return "?";
}

bool ls_cgroup_assignor_parse(const char *name, ls_cgroup_assignor *out)
{
    if (!strcmp(name, "uniform"))
        *out = LS_CGROUP_UNIFORM;
    else if (!strcmp(name, "range"))
        *out = LS_CGROUP_RANGE;
    else
        return false;
    return true;
}

const char *ls_cgroup_assignor_name(ls_cgroup_assignor a)
{
    return a == LS_CGROUP_RANGE ? "range" : "uniform";
}

void ls_cgroup_config_defaults(ls_cgroup_config_t *cfg)
{
    *cfg = (ls_cgroup_config_t){.session_timeout_ms = 45000,
                                .heartbeat_interval_ms = 5000,
                                .max_size = INT32_MAX,
                                .assignors = {LS_CGROUP_UNIFORM, LS_CGROUP_RANGE},
                                .nassignors = 2};
}

ls_cgroup_t *ls_cgroup_new(const char *group_id, const ls_cgroup_config_t *cfg, int32_t epoch_floor)
{
    ls_cgroup_t *g = LS_NEW(ls_cgroup_t);
    g->id = ls_strdup(group_id);
    g->cfg = *cfg;
    g->epoch = g->target_epoch = epoch_floor;
    return g;
}

static void meta_free(ls_cgroup_t *g)
{
    for (int i = 0; i < g->nmeta; i++)
        ls_free((char *)g->meta[i].name);
    ls_free(g->meta);
    g->meta = NULL;
    g->nmeta = 0;
}

static void member_set_topics(member_t *m, const char *const *topics, int n)
{
    for (int i = 0; i < m->ntopics; i++)
        ls_free(m->topics[i]);
    ls_free(m->topics);
    m->topics = n ? LS_NEWN(char *, n) : NULL;
    for (int i = 0; i < n; i++)
        m->topics[i] = ls_strdup(topics[i]);
    m->ntopics = n;
}

static void member_free(member_t *m)
{
    member_set_topics(m, NULL, 0);
    ls_free(m->id);
    ls_free(m->instance_id);
    ls_free(m->regex);
    if (m->re) pcre2_code_free(m->re);
    ls_free(m->rack_id);
    ls_free(m->client_id);
    ls_free(m->client_host);
    tps_free(&m->assigned);
    tps_free(&m->pending);
    tps_free(&m->target);
    ls_free(m);
}

void ls_cgroup_free(ls_cgroup_t *g)
{
    if (!g) return;
    for (int i = 0; i < g->nmembers; i++)
        member_free(g->members[i]);
    ls_free(g->members);
    meta_free(g);
    ls_free(g->id);
    ls_free(g);
}

int32_t ls_cgroup_epoch(const ls_cgroup_t *g) { return g->epoch; }
int32_t ls_cgroup_target_epoch(const ls_cgroup_t *g) { return g->target_epoch; }
int ls_cgroup_member_count(const ls_cgroup_t *g) { return g->nmembers; }

static member_t *find_member(const ls_cgroup_t *g, const char *id)
{
    for (int i = 0; i < g->nmembers; i++)
        if (!strcmp(g->members[i]->id, id)) return g->members[i];
    return NULL;
}

static member_t *find_instance(const ls_cgroup_t *g, const char *instance_id)
{
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i]->instance_id && !strcmp(g->members[i]->instance_id, instance_id))
            return g->members[i];
    return NULL;
}

static void remove_member(ls_cgroup_t *g, member_t *m)
{
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i] == m) {
            g->members[i] = g->members[--g->nmembers];
            break;
        }
    member_free(m);
    g->epoch++;
}

/* Java's Matcher.matches(): the whole name must match. */
static bool regex_matches(const pcre2_code *re, const char *s)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int rc =
        pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

static bool subscribed(const member_t *m, const char *topic)
{
    for (int i = 0; i < m->ntopics; i++)
        if (!strcmp(m->topics[i], topic)) return true;
    return m->re && regex_matches(m->re, topic);
}

bool ls_cgroup_has_regex(const ls_cgroup_t *g)
{
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i]->re) return true;
    return false;
}

void ls_cgroup_each_topic_name(const ls_cgroup_t *g, void (*fn)(void *arg, const char *name),
                               void *arg)
{
    for (int i = 0; i < g->nmembers; i++)
        for (int k = 0; k < g->members[i]->ntopics; k++)
            fn(arg, g->members[i]->topics[k]);
}

bool ls_cgroup_subscribed(const ls_cgroup_t *g, const char *topic)
{
    for (int i = 0; i < g->nmembers; i++)
        if (subscribed(g->members[i], topic)) return true;
    return false;
}

static int cmp_member(const void *a, const void *b)
{
    return strcmp((*(member_t *const *)a)->id, (*(member_t *const *)b)->id);
}

static int cmp_topic(const void *a, const void *b)
{
    return strcmp(((const ls_cgroup_topic_t *)a)->name, ((const ls_cgroup_topic_t *)b)->name);
}

/* The subscribed topics that exist, sorted by name: the assignor's input and
 * what a metadata change is detected against. */
static void subscribed_meta(const ls_cgroup_t *g, const ls_cgroup_topic_t *topics, int ntopics,
                            ls_cgroup_topic_t **out, int *nout)
{
    ls_cgroup_topic_t *v = ntopics ? LS_NEWN(ls_cgroup_topic_t, ntopics) : NULL;
    int n = 0;
    for (int t = 0; t < ntopics; t++)
        for (int i = 0; i < g->nmembers; i++)
            if (subscribed(g->members[i], topics[t].name)) {
                v[n++] = (ls_cgroup_topic_t){ls_strdup(topics[t].name), topics[t].partitions};
                break;
            }
    if (n) qsort(v, (size_t)n, sizeof *v, cmp_topic);
    *out = v;
    *nout = n;
}

/* The assignor the members prefer most (ties: the configured order); the
 * default when nobody names one. */
ls_cgroup_assignor ls_cgroup_assignor_in_use(const ls_cgroup_t *g)
{
    int votes[2] = {0, 0};
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i]->assignor >= 0) votes[g->members[i]->assignor]++;
    ls_cgroup_assignor best = g->cfg.assignors[0];
    for (int i = 1; i < g->cfg.nassignors; i++)
        if (votes[g->cfg.assignors[i]] > votes[best]) best = g->cfg.assignors[i];
    return best;
}

/* range: per topic, its subscribers in member-id order take contiguous
 * ranges, the first (partitions % subscribers) one more. */
static void assign_range(member_t **ms, int nm, const ls_cgroup_topic_t *meta, int nmeta)
{
    member_t **subs = nm ? LS_NEWN(member_t *, nm) : NULL;
    for (int t = 0; t < nmeta; t++) {
        int k = 0;
        for (int i = 0; i < nm; i++)
            if (subscribed(ms[i], meta[t].name)) subs[k++] = ms[i];
        if (!k) continue;
        int32_t per = meta[t].partitions / k, extra = meta[t].partitions % k, p = 0;
        for (int i = 0; i < k; i++)
            for (int32_t j = 0; j < per + (i < extra); j++)
                tps_add(&subs[i]->target, meta[t].name, p++);
    }
    ls_free(subs);
}

/* uniform: balanced counts (floor(P/M), P%M members one more) keeping as
 * much of the previous target as the quotas allow, then the rest to the
 * eligible member holding fewest. Balanced when subscriptions are equal; with
 * different subscriptions, each partition still goes to a subscriber. */
static void assign_uniform(member_t **ms, int nm, const ls_cgroup_topic_t *meta, int nmeta,
                           tpset_t *prev)
{
    tpset_t all = {0}, taken = {0};
    for (int t = 0; t < nmeta; t++)
        for (int32_t p = 0; p < meta[t].partitions; p++)
            tps_add(&all, meta[t].name, p);
    int floor_q = nm ? all.n / nm : 0, extras = nm ? all.n % nm : 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nm; i++)
            for (int j = 0; j < prev[i].n; j++) {
                const ls_cgroup_tp_t *tp = &prev[i].v[j];
                if (!tps_has(&all, tp->topic, tp->partition) ||
                    tps_has(&taken, tp->topic, tp->partition) || !subscribed(ms[i], tp->topic))
                    continue;
                int have = ms[i]->target.n;
                if (pass == 0 ? have >= floor_q : (have != floor_q || extras == 0)) continue;
                if (pass == 1) extras--;
                tps_add(&ms[i]->target, tp->topic, tp->partition);
                tps_add(&taken, tp->topic, tp->partition);
            }
    for (int j = 0; j < all.n; j++) {
        const ls_cgroup_tp_t *tp = &all.v[j];
        if (tps_has(&taken, tp->topic, tp->partition)) continue;
        member_t *best = NULL;
        for (int i = 0; i < nm; i++)
            if (subscribed(ms[i], tp->topic) && (!best || ms[i]->target.n < best->target.n))
                best = ms[i];
        if (best) tps_add(&best->target, tp->topic, tp->partition);
    }
    tps_free(&all);
    tps_free(&taken);
}

static void compute_target(ls_cgroup_t *g)
{
    int nm = g->nmembers;
    member_t **ms = nm ? LS_NEWN(member_t *, nm) : NULL;
    if (nm) memcpy(ms, g->members, (size_t)nm * sizeof *ms);
    if (nm) qsort(ms, (size_t)nm, sizeof *ms, cmp_member);
    tpset_t *prev = nm ? LS_NEWN(tpset_t, nm) : NULL;
    for (int i = 0; i < nm; i++)
        tps_move(&prev[i], &ms[i]->target);
    if (ls_cgroup_assignor_in_use(g) == LS_CGROUP_RANGE)
        assign_range(ms, nm, g->meta, g->nmeta);
    else
        assign_uniform(ms, nm, g->meta, g->nmeta, prev);
    for (int i = 0; i < nm; i++)
        tps_free(&prev[i]);
    ls_free(prev);
    ls_free(ms);
    g->target_epoch = g->epoch;
}

/* Held by a member other than m (assigned or still revoking). */
static bool held_by_other(const ls_cgroup_t *g, const member_t *m, const ls_cgroup_tp_t *tp)
{
    for (int i = 0; i < g->nmembers; i++) {
        const member_t *o = g->members[i];
        if (o != m && (tps_has(&o->assigned, tp->topic, tp->partition) ||
                       tps_has(&o->pending, tp->topic, tp->partition)))
            return true;
    }
    return false;
}

static bool owned_has(const ls_cgroup_hb_req_t *req, const ls_cgroup_tp_t *tp)
{
    for (int i = 0; i < req->nowned; i++)
        if (req->owned[i].partition == tp->partition && !strcmp(req->owned[i].topic, tp->topic))
            return true;
    return false;
}

/* Moves m one step towards its target (the state machine in cgroup.h). */
static void reconcile(ls_cgroup_t *g, member_t *m, const ls_cgroup_hb_req_t *req)
{
    if (m->state == M_UNREVOKED) {
        if (!req->owned) return;
        for (int i = 0; i < m->pending.n; i++)
            if (owned_has(req, &m->pending.v[i])) return;
        tps_clear(&m->pending);
    }
    if (m->state == M_STABLE && m->epoch == g->target_epoch) return;
    tpset_t keep = {0}, revoke = {0};
    for (int i = 0; i < m->assigned.n; i++) {
        const ls_cgroup_tp_t *tp = &m->assigned.v[i];
        tps_add(tps_has(&m->target, tp->topic, tp->partition) ? &keep : &revoke, tp->topic,
                tp->partition);
    }
    if (revoke.n) {
        tps_move(&m->assigned, &keep);
        tps_move(&m->pending, &revoke);
        m->state = M_UNREVOKED;
        m->revoke_by_ms = req->now_ms + m->rebalance_timeout_ms;
        return;
    }
    bool all = true;
    for (int i = 0; i < m->target.n; i++) {
        const ls_cgroup_tp_t *tp = &m->target.v[i];
        if (tps_has(&keep, tp->topic, tp->partition)) continue;
        if (held_by_other(g, m, tp))
            all = false;
        else
            tps_add(&keep, tp->topic, tp->partition);
    }
    tps_move(&m->assigned, &keep);
    tps_free(&revoke);
    if (m->epoch != g->target_epoch) {
        m->prev_epoch = m->epoch;
        m->epoch = g->target_epoch;
    }
    m->state = all ? M_STABLE : M_UNRELEASED;
}

static bool topics_equal(const member_t *m, const ls_cgroup_hb_req_t *req)
{
    if (m->ntopics != req->ntopics) return false;
    for (int i = 0; i < req->ntopics; i++) {
        bool found = false;
        for (int j = 0; j < m->ntopics && !found; j++)
            found = !strcmp(m->topics[j], req->topics[i]);
        if (!found) return false;
    }
    return true;
}

static bool str_eq(const char *a, const char *b) { return a && b ? !strcmp(a, b) : a == b; }

static void replace_str(char **dst, const char *src)
{
    if (*dst && !strcmp(*dst, src)) return;
    ls_free(*dst);
    *dst = ls_strdup(src);
}

static void fail(ls_cgroup_hb_res_t *res, ls_cgroup_err e, const char *msg)
{
    res->err = e;
    res->message = msg;
}

/* Kafka's request checks, each naming the field. */
static const char *invalid(const ls_cgroup_hb_req_t *req)
{
    if (!req->member_id || !req->member_id[0]) return "MemberId can't be empty.";
    if (req->member_epoch < LS_CGROUP_EPOCH_STATIC_LEAVE) return "MemberEpoch is invalid.";
    if (req->member_epoch == LS_CGROUP_EPOCH_STATIC_LEAVE && !req->instance_id)
        return "InstanceId can't be null when MemberEpoch is -2.";
    if (req->member_epoch == LS_CGROUP_EPOCH_JOIN) {
        if (req->rebalance_timeout_ms == -1)
            return "RebalanceTimeoutMs must be provided in first request.";
        if (req->owned && req->nowned > 0)
            return "TopicPartitions must be empty when (re-)joining.";
        if (!req->topics && !req->regex)
            return "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.";
    }
    return NULL;
}

static void heartbeat(ls_cgroup_t *g, const ls_cgroup_hb_req_t *req,
                      const ls_cgroup_topic_t *topics, int ntopics, ls_cgroup_hb_res_t *res);

/* What a heartbeat may change that is stored: the group's epochs and size,
 * and the asking member's id, epochs, state and partition counts (a target
 * changes only with the target epoch; a member's sets change only with its
 * epoch, its state or their sizes). */
static uint64_t fingerprint(const ls_cgroup_t *g, const char *member_id)
{
    int64_t v[10] = {g->epoch, g->target_epoch, g->nmembers, -1};
    const member_t *m = find_member(g, member_id);
    if (m) {
        int64_t mv[] = {
            m->epoch,       m->prev_epoch,          m->state, m->assigned.n, m->pending.n,
            m->left_static, m->rebalance_timeout_ms};
        memcpy(v + 3, mv, sizeof mv);
    }
    uint64_t h = ls_hash_bytes(LS_HASH_INIT, v, sizeof v);
    return m && m->instance_id ? ls_hash_str(h, m->instance_id) : h;
}

uint64_t ls_cgroup_version(const ls_cgroup_t *g) { return g->version; }

void ls_cgroup_heartbeat(ls_cgroup_t *g, const ls_cgroup_hb_req_t *req,
                         const ls_cgroup_topic_t *topics, int ntopics, ls_cgroup_hb_res_t *res)
{
    uint64_t before = fingerprint(g, req->member_id);
    heartbeat(g, req, topics, ntopics, res);
    if (fingerprint(g, req->member_id) != before) g->version++;
}

static void heartbeat(ls_cgroup_t *g, const ls_cgroup_hb_req_t *req,
                      const ls_cgroup_topic_t *topics, int ntopics, ls_cgroup_hb_res_t *res)
{
    if (req->session_timeout_ms > 0) g->cfg.session_timeout_ms = req->session_timeout_ms;
    if (req->heartbeat_interval_ms > 0) g->cfg.heartbeat_interval_ms = req->heartbeat_interval_ms;
    *res = (ls_cgroup_hb_res_t){.member_epoch = req->member_epoch,
                                .heartbeat_interval_ms = g->cfg.heartbeat_interval_ms};
    const char *bad = invalid(req);
    if (bad) return fail(res, LS_CGERR_INVALID_REQUEST, bad);
    ls_cgroup_assignor assignor = LS_CGROUP_UNIFORM;
    if (req->assignor) {
        bool ok = ls_cgroup_assignor_parse(req->assignor, &assignor);
        for (int i = 0; ok && i < g->cfg.nassignors && g->cfg.assignors[i] != assignor; i++)
            ok = i + 1 < g->cfg.nassignors;
        if (!ok)
            return fail(res, LS_CGERR_UNSUPPORTED_ASSIGNOR, "ServerAssignor is not supported.");
    }
    pcre2_code *re = NULL;
    if (req->regex && req->regex[0]) {
        int ec;
        PCRE2_SIZE off;
        re = pcre2_compile((PCRE2_SPTR)req->regex, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &off,
                           NULL);
        if (!re)
            return fail(res, LS_CGERR_INVALID_REGULAR_EXPRESSION,
                        "SubscribedTopicRegex is not a valid regular expression.");
    }
    member_t *m = find_member(g, req->member_id);
    if (req->member_epoch < 0) { /* leave */
        if (re) pcre2_code_free(re);
        if (!m) return fail(res, LS_CGERR_UNKNOWN_MEMBER_ID, NULL);
        if (req->member_epoch == LS_CGROUP_EPOCH_STATIC_LEAVE && m->instance_id) {
            /* keeps its partitions: the same instance may come back */
            m->left_static = true;
            m->deadline_ms = req->now_ms + g->cfg.session_timeout_ms;
        } else {
            remove_member(g, m);
        }
        return;
    }
    if (req->member_epoch == LS_CGROUP_EPOCH_JOIN && !m) {
        member_t *old = req->instance_id ? find_instance(g, req->instance_id) : NULL;
        if (old && !old->left_static) {
            if (re) pcre2_code_free(re);
            return fail(res, LS_CGERR_UNRELEASED_INSTANCE_ID, NULL);
        }
        if (!old && g->nmembers >= g->cfg.max_size) {
            if (re) pcre2_code_free(re);
            return fail(res, LS_CGERR_GROUP_MAX_SIZE_REACHED, NULL);
        }
        if (old) { /* the static member is back under a new member id */
            ls_free(old->id);
            old->id = ls_strdup(req->member_id);
            old->left_static = false;
            m = old;
        } else {
            m = LS_NEW(member_t);
            m->id = ls_strdup(req->member_id);
            m->instance_id = req->instance_id ? ls_strdup(req->instance_id) : NULL;
            m->assignor = -1;
            g->members = ls_realloc(g->members, (size_t)(g->nmembers + 1) * sizeof *g->members);
            g->members[g->nmembers++] = m;
            g->epoch++;
        }
    } else if (!m) {
        if (re) pcre2_code_free(re);
        return fail(res, LS_CGERR_UNKNOWN_MEMBER_ID, NULL);
    } else if (req->member_epoch != LS_CGROUP_EPOCH_JOIN && req->member_epoch != m->epoch) {
        /* A lost response: the previous epoch is accepted while the member
         * owns no more than it is assigned now. */
        bool ok = req->member_epoch == m->prev_epoch && req->owned;
        for (int i = 0; ok && i < req->nowned; i++)
            ok = tps_has(&m->assigned, req->owned[i].topic, req->owned[i].partition);
        if (!ok) {
            if (re) pcre2_code_free(re);
            return fail(res, LS_CGERR_FENCED_MEMBER_EPOCH, NULL);
        }
    }
    m->deadline_ms = req->now_ms + g->cfg.session_timeout_ms;
    if (req->rack_id) replace_str(&m->rack_id, req->rack_id);
    if (req->client_id) replace_str(&m->client_id, req->client_id);
    if (req->client_host) replace_str(&m->client_host, req->client_host);
    if (req->rebalance_timeout_ms >= 0) m->rebalance_timeout_ms = req->rebalance_timeout_ms;
    if (req->topics && !topics_equal(m, req)) {
        member_set_topics(m, req->topics, req->ntopics);
        g->epoch++;
    }
    if (req->regex && !str_eq(m->regex, req->regex[0] ? req->regex : NULL)) {
        ls_free(m->regex);
        if (m->re) pcre2_code_free(m->re);
        m->regex = re ? ls_strdup(req->regex) : NULL;
        m->re = re;
        re = NULL;
        g->epoch++;
    }
    if (re) pcre2_code_free(re);
    if (req->assignor && m->assignor != (int)assignor) {
        m->assignor = (int)assignor;
        g->epoch++;
    }
    /* new topics or partitions of subscribed topics bump the epoch */
    ls_cgroup_topic_t *meta;
    int nmeta;
    subscribed_meta(g, topics, ntopics, &meta, &nmeta);
    bool same = nmeta == g->nmeta;
    for (int i = 0; same && i < nmeta; i++)
        same =
            !strcmp(meta[i].name, g->meta[i].name) && meta[i].partitions == g->meta[i].partitions;
    meta_free(g);
    g->meta = meta;
    g->nmeta = nmeta;
    if (!same) g->epoch++;
    if (g->epoch > g->target_epoch) compute_target(g);
    reconcile(g, m, req);
    res->member_epoch = m->epoch;
    res->assigned = m->assigned.v;
    res->nassigned = m->assigned.n;
}

/* When m is removed unless it heartbeats: its session, or sooner a
 * revocation it has not acknowledged within its rebalance timeout (so the
 * new owners of those partitions are not blocked). */
static int64_t member_due(const member_t *m)
{
    return m->state == M_UNREVOKED && m->revoke_by_ms < m->deadline_ms ? m->revoke_by_ms
                                                                       : m->deadline_ms;
}

int64_t ls_cgroup_next_deadline(const ls_cgroup_t *g)
{
    int64_t next = INT64_MAX;
    for (int i = 0; i < g->nmembers; i++)
        if (member_due(g->members[i]) < next) next = member_due(g->members[i]);
    return next;
}

int64_t ls_cgroup_tick(ls_cgroup_t *g, int64_t now_ms)
{
    int64_t next = INT64_MAX;
    int32_t epoch = g->epoch; /* every removal bumps it */
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

/* ---- stored form (docs/FORMATS.md, group record version 2) ---- */

#define STATE_VERSION 1

static void put_tps(ls_buf_t *b, const tpset_t *s)
{
    ls_bw_u32(b, (uint32_t)s->n);
    for (int i = 0; i < s->n; i++) {
        ls_bw_str(b, s->v[i].topic);
        ls_bw_u32(b, (uint32_t)s->v[i].partition);
    }
}

void ls_cgroup_encode(const ls_cgroup_t *g, ls_buf_t *b)
{
    ls_buf_append_u8(b, STATE_VERSION);
    ls_bw_u32(b, (uint32_t)g->epoch);
    ls_bw_u32(b, (uint32_t)g->target_epoch);
    ls_bw_u32(b, (uint32_t)g->nmeta);
    for (int i = 0; i < g->nmeta; i++) {
        ls_bw_str(b, g->meta[i].name);
        ls_bw_u32(b, (uint32_t)g->meta[i].partitions);
    }
    ls_bw_u32(b, (uint32_t)g->nmembers);
    for (int i = 0; i < g->nmembers; i++) {
        const member_t *m = g->members[i];
        ls_bw_str(b, m->id);
        ls_bw_str(b, m->instance_id);
        ls_bw_str(b, m->rack_id);
        ls_bw_str(b, m->client_id);
        ls_bw_str(b, m->client_host);
        ls_bw_u32(b, (uint32_t)m->epoch);
        ls_bw_u32(b, (uint32_t)m->prev_epoch);
        ls_buf_append_u8(b, (uint8_t)m->state);
        ls_buf_append_u8(b, m->left_static ? 1 : 0);
        ls_buf_append_u8(b, m->assignor < 0 ? 0xff : (uint8_t)m->assignor);
        ls_bw_u32(b, (uint32_t)m->rebalance_timeout_ms);
        ls_bw_str(b, m->regex);
        ls_bw_u32(b, (uint32_t)m->ntopics);
        for (int k = 0; k < m->ntopics; k++)
            ls_bw_str(b, m->topics[k]);
        put_tps(b, &m->assigned);
        put_tps(b, &m->pending);
        put_tps(b, &m->target);
    }
}

static void get_tps(ls_br_t *r, tpset_t *s)
{
    int n = ls_br_count(r, 6);
    for (int i = 0; i < n && !r->err; i++) {
        char *t = ls_br_str(r);
        int32_t p = (int32_t)ls_br_u32(r);
        if (!t) {
            r->err = true;
            break;
        }
        tps_add(s, t, p);
        ls_free(t);
    }
}

ls_cgroup_t *ls_cgroup_decode(const uint8_t *p, size_t len, const char *group_id,
                              const ls_cgroup_config_t *cfg, int64_t now_ms)
{
    ls_br_t r = ls_br_init(p, len);
    if (ls_br_u8(&r) != STATE_VERSION) return NULL;
    ls_cgroup_t *g = ls_cgroup_new(group_id, cfg, 0);
    g->epoch = (int32_t)ls_br_u32(&r);
    g->target_epoch = (int32_t)ls_br_u32(&r);
    int nmeta = ls_br_count(&r, 6);
    g->meta = LS_NEWN(ls_cgroup_topic_t, nmeta + 1);
    for (int i = 0; i < nmeta && !r.err; i++) {
        g->meta[i].name = ls_br_str(&r);
        g->meta[i].partitions = (int32_t)ls_br_u32(&r);
        g->nmeta = i + 1;
        if (!g->meta[i].name) r.err = true;
    }
    int n = ls_br_count(&r, 40);
    g->members = LS_NEWN(member_t *, n + 1);
    for (int i = 0; i < n && !r.err; i++) {
        member_t *m = LS_NEW(member_t);
        g->members[g->nmembers++] = m;
        m->id = ls_br_str(&r);
        m->instance_id = ls_br_str(&r);
        m->rack_id = ls_br_str(&r);
        m->client_id = ls_br_str(&r);
        m->client_host = ls_br_str(&r);
        m->epoch = (int32_t)ls_br_u32(&r);
        m->prev_epoch = (int32_t)ls_br_u32(&r);
        uint8_t st = ls_br_u8(&r);
        m->left_static = ls_br_u8(&r) != 0;
        uint8_t as = ls_br_u8(&r);
        m->rebalance_timeout_ms = (int32_t)ls_br_u32(&r);
        m->regex = ls_br_str(&r);
        int nt = ls_br_count(&r, 2);
        m->topics = LS_NEWN(char *, nt + 1);
        for (int k = 0; k < nt && !r.err; k++) {
            m->topics[k] = ls_br_str(&r);
            m->ntopics = k + 1;
            if (!m->topics[k]) r.err = true;
        }
        get_tps(&r, &m->assigned);
        get_tps(&r, &m->pending);
        get_tps(&r, &m->target);
        if (r.err) break;
        if (!m->id || st > M_UNRELEASED || (as != 0xff && as > LS_CGROUP_RANGE) ||
            m->epoch > g->target_epoch) {
            r.err = true;
            break;
        }
        m->state = (mstate)st;
        m->assignor = as == 0xff ? -1 : as;
        if (m->regex) {
            int ec;
            PCRE2_SIZE off;
            m->re = pcre2_compile((PCRE2_SPTR)m->regex, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &off,
                                  NULL);
            if (!m->re) r.err = true;
        }
        /* a fresh session and revocation deadline on the new coordinator */
        m->deadline_ms = now_ms + cfg->session_timeout_ms;
        m->revoke_by_ms = now_ms + m->rebalance_timeout_ms;
    }
    if (r.err || r.p != r.end || g->target_epoch > g->epoch) {
        ls_cgroup_free(g);
        return NULL;
    }
    return g;
}

void ls_cgroup_member(const ls_cgroup_t *g, int i, ls_cgroup_member_info_t *out)
{
    const member_t *m = g->members[i];
    *out = (ls_cgroup_member_info_t){.member_id = m->id,
                                     .instance_id = m->instance_id,
                                     .rack_id = m->rack_id,
                                     .client_id = m->client_id ? m->client_id : "",
                                     .client_host = m->client_host ? m->client_host : "",
                                     .topics = (const char *const *)m->topics,
                                     .ntopics = m->ntopics,
                                     .regex = m->regex,
                                     .member_epoch = m->epoch,
                                     .assigned = m->assigned.v,
                                     .nassigned = m->assigned.n,
                                     .target = m->target.v,
                                     .ntarget = m->target.n};
}

const char *ls_cgroup_state_name(const ls_cgroup_t *g)
{
    if (g->nmembers == 0) return "Empty";
    if (g->target_epoch < g->epoch) return "Assigning";
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i]->epoch != g->target_epoch || g->members[i]->state != M_STABLE)
            return "Reconciling";
    return "Stable";
}

ls_cgroup_err ls_cgroup_commit_check(const ls_cgroup_t *g, const char *member_id,
                                     int32_t member_epoch)
{
    const member_t *m = find_member(g, member_id);
    if (!m) return LS_CGERR_UNKNOWN_MEMBER_ID;
    if (member_epoch > m->epoch) return LS_CGERR_FENCED_MEMBER_EPOCH;
    if (member_epoch < m->epoch) return LS_CGERR_STALE_MEMBER_EPOCH;
    return LS_CGERR_NONE;
}
