/* Share groups (KIP-932) membership: see sgroup.h for the design note. */
#include "group/sgroup.h"
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "base/binrec.h"

typedef struct member {
    char *id;
    char **topics; /* subscribed names */
    int ntopics;
    char *rack_id, *client_id, *client_host; /* described only */
    int32_t epoch, prev_epoch;
    int64_t deadline_ms;
    ls_cgroup_tp_t *assigned; /* topics owned */
    int nassigned;
} member_t;

struct ls_sgroup {
    char *id;
    ls_sgroup_config_t cfg;
    int32_t epoch, assignment_epoch;
    member_t **members;
    int nmembers;
    ls_cgroup_topic_t *meta; /* subscribed topics that exist, by name; names owned */
    int nmeta;
    ls_sgroup_leave_fn on_leave;
    void *arg;
    uint64_t version; /* bumped by every change ls_sgroup_encode would show */
};

const char *ls_sgroup_err_name(ls_sgroup_err e)
{
    switch (e) {
    case LS_SGERR_NONE: return "NONE";
    case LS_SGERR_INVALID_REQUEST: return "INVALID_REQUEST";
    case LS_SGERR_UNKNOWN_MEMBER_ID: return "UNKNOWN_MEMBER_ID";
    case LS_SGERR_FENCED_MEMBER_EPOCH: return "FENCED_MEMBER_EPOCH";
    case LS_SGERR_GROUP_MAX_SIZE_REACHED: return "GROUP_MAX_SIZE_REACHED";
    }
    return "?";
}

void ls_sgroup_config_defaults(ls_sgroup_config_t *cfg)
{
    *cfg = (ls_sgroup_config_t){
        .session_timeout_ms = 45000, .heartbeat_interval_ms = 5000, .max_size = 200};
}

ls_sgroup_t *ls_sgroup_new(const char *group_id, const ls_sgroup_config_t *cfg, int32_t epoch_floor,
                           ls_sgroup_leave_fn on_leave, void *arg)
{
    ls_sgroup_t *g = LS_NEW(ls_sgroup_t);
    g->id = ls_strdup(group_id);
    g->cfg = *cfg;
    g->epoch = g->assignment_epoch = epoch_floor;
    g->on_leave = on_leave;
    g->arg = arg;
    return g;
}

static void assigned_free(member_t *m)
{
    for (int i = 0; i < m->nassigned; i++)
        ls_free((char *)m->assigned[i].topic);
    ls_free(m->assigned);
    m->assigned = NULL;
    m->nassigned = 0;
}

static void set_topics(member_t *m, const char *const *topics, int n)
{
    for (int i = 0; i < m->ntopics; i++)
        ls_free(m->topics[i]);
    ls_free(m->topics);
    m->topics = n > 0 ? LS_NEWN(char *, n) : NULL;
    for (int i = 0; i < n; i++)
        m->topics[i] = ls_strdup(topics[i]);
    m->ntopics = n > 0 ? n : 0;
}

static void member_free(member_t *m)
{
    set_topics(m, NULL, 0);
    assigned_free(m);
    ls_free(m->id);
    ls_free(m->rack_id);
    ls_free(m->client_id);
    ls_free(m->client_host);
    ls_free(m);
}

static void meta_free(ls_sgroup_t *g)
{
    for (int i = 0; i < g->nmeta; i++)
        ls_free((char *)g->meta[i].name);
    ls_free(g->meta);
    g->meta = NULL;
    g->nmeta = 0;
}

void ls_sgroup_free(ls_sgroup_t *g)
{
    if (!g) return;
    for (int i = 0; i < g->nmembers; i++)
        member_free(g->members[i]);
    ls_free(g->members);
    meta_free(g);
    ls_free(g->id);
    ls_free(g);
}

int32_t ls_sgroup_epoch(const ls_sgroup_t *g) { return g->epoch; }
int32_t ls_sgroup_assignment_epoch(const ls_sgroup_t *g) { return g->assignment_epoch; }
int ls_sgroup_member_count(const ls_sgroup_t *g) { return g->nmembers; }
uint64_t ls_sgroup_version(const ls_sgroup_t *g) { return g->version; }
const char *ls_sgroup_state_name(const ls_sgroup_t *g) { return g->nmembers ? "Stable" : "Empty"; }

static member_t *find_member(const ls_sgroup_t *g, const char *id)
{
    for (int i = 0; i < g->nmembers; i++)
        if (!strcmp(g->members[i]->id, id)) return g->members[i];
    return NULL;
}

static void remove_member(ls_sgroup_t *g, member_t *m, bool expired)
{
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i] == m) {
            g->members[i] = g->members[--g->nmembers];
            break;
        }
    if (g->on_leave) g->on_leave(g->arg, m->id, expired);
    member_free(m);
}

static bool subscribes(const member_t *m, const char *topic)
{
    for (int i = 0; i < m->ntopics; i++)
        if (!strcmp(m->topics[i], topic)) return true;
    return false;
}

static int cmp_topic(const void *a, const void *b)
{
    return strcmp(((const ls_cgroup_topic_t *)a)->name, ((const ls_cgroup_topic_t *)b)->name);
}

/* The subscribed topics that exist, sorted by name; true when that differs
 * from what the last assignment used. */
static bool refresh_meta(ls_sgroup_t *g, const ls_cgroup_topic_t *topics, int ntopics)
{
    ls_cgroup_topic_t *meta = LS_NEWN(ls_cgroup_topic_t, ntopics + 1);
    int n = 0;
    for (int t = 0; t < ntopics; t++) {
        bool sub = false;
        for (int i = 0; i < g->nmembers && !sub; i++)
            sub = subscribes(g->members[i], topics[t].name);
        if (sub && topics[t].partitions > 0) meta[n++] = topics[t];
    }
    qsort(meta, (size_t)n, sizeof *meta, cmp_topic);
    bool same = n == g->nmeta;
    for (int i = 0; same && i < n; i++)
        same =
            !strcmp(meta[i].name, g->meta[i].name) && meta[i].partitions == g->meta[i].partitions;
    if (!same) {
        meta_free(g);
        for (int i = 0; i < n; i++)
            meta[i].name = ls_strdup(meta[i].name);
        g->meta = meta;
        g->nmeta = n;
    } else {
        ls_free(meta);
    }
    return !same;
}

static int cmp_member(const void *a, const void *b)
{
    return strcmp((*(member_t *const *)a)->id, (*(member_t *const *)b)->id);
}

/* One class of partitions (topics with the same subscribers) spread over
 * its members: see the design note. held[q * m + i]: partition q goes to
 * member i. */
static void spread(const ls_cgroup_tp_t *parts, int k, member_t **mem, int m, bool *held)
{
    int sharing = (m + k - 1) / k;
    int64_t total = (int64_t)sharing * k;
    int *want = LS_NEWN(int, m), *cnt = LS_NEWN(int, m), *holders = LS_NEWN(int, k);
    for (int i = 0; i < m; i++) /* ceil(total*(i+1)/m) - ceil(total*i/m) */
        want[i] = (int)((total * (i + 1) + m - 1) / m - (total * i + m - 1) / m);
    /* sticky: keep what each member had while the balance allows */
    for (int i = 0; i < m; i++)
        for (int a = 0; a < mem[i]->nassigned && cnt[i] < want[i]; a++)
            for (int q = 0; q < k; q++)
                if (parts[q].partition == mem[i]->assigned[a].partition &&
                    !strcmp(parts[q].topic, mem[i]->assigned[a].topic)) {
                    if (holders[q] < sharing && !held[q * m + i]) {
                        held[q * m + i] = true;
                        holders[q]++;
                        cnt[i]++;
                    }
                    break;
                }
    /* the rest to the least loaded members that still want some */
    for (int q = 0; q < k; q++)
        while (holders[q] < sharing) {
            int best = -1;
            for (int i = 0; i < m; i++)
                if (cnt[i] < want[i] && !held[q * m + i] && (best < 0 || cnt[i] < cnt[best]))
                    best = i;
            if (best < 0) break; /* every member short of places holds it already */
            held[q * m + best] = true;
            holders[q]++;
            cnt[best]++;
        }
    ls_free(want);
    ls_free(cnt);
    ls_free(holders);
}

static void compute_assignment(ls_sgroup_t *g)
{
    int m = g->nmembers;
    member_t **sorted = LS_NEWN(member_t *, m + 1);
    memcpy(sorted, g->members, (size_t)m * sizeof *sorted);
    qsort(sorted, (size_t)m, sizeof *sorted, cmp_member);
    ls_cgroup_tp_t **next = LS_NEWN(ls_cgroup_tp_t *, m + 1);
    int *nnext = LS_NEWN(int, m + 1), *capnext = LS_NEWN(int, m + 1);
    bool *done = LS_NEWN(bool, g->nmeta + 1);
    for (int t = 0; t < g->nmeta; t++) {
        if (done[t]) continue;
        /* the class of t: topics with exactly t's subscribers */
        member_t **mem = LS_NEWN(member_t *, m + 1);
        int *slot = LS_NEWN(int, m + 1), nm = 0;
        for (int i = 0; i < m; i++)
            if (subscribes(sorted[i], g->meta[t].name)) {
                slot[nm] = i;
                mem[nm++] = sorted[i];
            }
        int k = 0;
        for (int u = t; u < g->nmeta; u++) {
            bool same = !done[u];
            for (int i = 0; same && i < m; i++)
                same = subscribes(sorted[i], g->meta[u].name) ==
                       subscribes(sorted[i], g->meta[t].name);
            if (same) k += g->meta[u].partitions;
        }
        ls_cgroup_tp_t *parts = LS_NEWN(ls_cgroup_tp_t, k);
        k = 0;
        for (int u = t; u < g->nmeta; u++) {
            bool same = !done[u];
            for (int i = 0; same && i < m; i++)
                same = subscribes(sorted[i], g->meta[u].name) ==
                       subscribes(sorted[i], g->meta[t].name);
            if (!same) continue;
            done[u] = true;
            for (int p = 0; p < g->meta[u].partitions; p++)
                parts[k++] = (ls_cgroup_tp_t){g->meta[u].name, p};
        }
        bool *held = LS_NEWN(bool, (size_t)k *(size_t)nm + 1);
        if (nm > 0) spread(parts, k, mem, nm, held);
        for (int q = 0; q < k; q++)
            for (int i = 0; i < nm; i++) {
                if (!held[q * nm + i]) continue;
                int s = slot[i];
                if (nnext[s] == capnext[s]) {
                    capnext[s] = capnext[s] ? capnext[s] * 2 : 8;
                    next[s] = ls_realloc(next[s], (size_t)capnext[s] * sizeof **next);
                }
                next[s][nnext[s]++] =
                    (ls_cgroup_tp_t){ls_strdup(parts[q].topic), parts[q].partition};
            }
        ls_free(held);
        ls_free(parts);
        ls_free(slot);
        ls_free(mem);
    }
    for (int i = 0; i < m; i++) {
        assigned_free(sorted[i]);
        sorted[i]->assigned = next[i];
        sorted[i]->nassigned = nnext[i];
    }
    g->assignment_epoch = g->epoch;
    ls_free(done);
    ls_free(capnext);
    ls_free(nnext);
    ls_free(next);
    ls_free(sorted);
}

static bool topics_equal(const member_t *m, const ls_sgroup_hb_req_t *req)
{
    if (m->ntopics != req->ntopics) return false;
    for (int i = 0; i < req->ntopics; i++)
        if (!subscribes(m, req->topics[i])) return false;
    return true;
}

/* true when it changed */
static bool replace_str(char **dst, const char *src)
{
    if (!src || (*dst && !strcmp(*dst, src))) return false;
    ls_free(*dst);
    *dst = ls_strdup(src);
    return true;
}

/* Kafka's request checks, each naming the field. */
static const char *invalid(const ls_sgroup_hb_req_t *req)
{
    if (!req->member_id || !req->member_id[0]) return "MemberId can't be empty.";
    if (req->rack_id && !req->rack_id[0]) return "RackId can't be empty.";
    if (req->member_epoch < LS_SGROUP_EPOCH_LEAVE) return "MemberEpoch is invalid.";
    if (req->member_epoch == LS_SGROUP_EPOCH_JOIN && (!req->topics || req->ntopics <= 0))
        return "SubscribedTopicNames must be set in first request.";
    return NULL;
}

void ls_sgroup_heartbeat(ls_sgroup_t *g, const ls_sgroup_hb_req_t *req,
                         const ls_cgroup_topic_t *topics, int ntopics, ls_sgroup_hb_res_t *res)
{
    if (req->session_timeout_ms > 0) g->cfg.session_timeout_ms = req->session_timeout_ms;
    if (req->heartbeat_interval_ms > 0) g->cfg.heartbeat_interval_ms = req->heartbeat_interval_ms;
    *res = (ls_sgroup_hb_res_t){.member_epoch = req->member_epoch,
                                .heartbeat_interval_ms = g->cfg.heartbeat_interval_ms};
    const char *bad = invalid(req);
    if (bad) {
        res->err = LS_SGERR_INVALID_REQUEST;
        res->message = bad;
        return;
    }
    member_t *m = find_member(g, req->member_id);
    if (req->member_epoch == LS_SGROUP_EPOCH_LEAVE) {
        if (!m) {
            res->err = LS_SGERR_UNKNOWN_MEMBER_ID;
            return;
        }
        remove_member(g, m, false);
        refresh_meta(g, topics, ntopics);
        g->epoch++;
        compute_assignment(g);
        g->version++;
        return;
    }
    /* Kafka's order: a full group refuses anyone it does not know yet */
    if (!m && g->nmembers >= g->cfg.max_size) {
        res->err = LS_SGERR_GROUP_MAX_SIZE_REACHED;
        return;
    }
    if (!m && req->member_epoch != LS_SGROUP_EPOCH_JOIN) {
        res->err = LS_SGERR_UNKNOWN_MEMBER_ID;
        return;
    }
    /* The epoch last answered, or the one before it (that answer may have
     * been lost); a known member is checked even when it sends 0. */
    if (m && req->member_epoch != m->epoch && req->member_epoch != m->prev_epoch) {
        res->err = LS_SGERR_FENCED_MEMBER_EPOCH;
        return;
    }
    /* one heartbeat moves the group epoch at most once */
    bool changed = false;
    if (!m) {
        m = LS_NEW(member_t);
        m->id = ls_strdup(req->member_id);
        g->members = ls_realloc(g->members, (size_t)(g->nmembers + 1) * sizeof *g->members);
        g->members[g->nmembers++] = m;
        changed = true;
    }
    m->deadline_ms = req->now_ms + g->cfg.session_timeout_ms;
    /* described only: stored, but no epoch moves */
    bool described = replace_str(&m->rack_id, req->rack_id);
    described |= replace_str(&m->client_id, req->client_id);
    described |= replace_str(&m->client_host, req->client_host);
    if (described) g->version++;
    if (req->topics && req->ntopics >= 0 && !topics_equal(m, req)) {
        set_topics(m, req->topics, req->ntopics);
        changed = true;
    }
    changed |= refresh_meta(g, topics, ntopics);
    if (changed) g->epoch++;
    if (g->epoch > g->assignment_epoch) compute_assignment(g);
    if (m->epoch != g->assignment_epoch) {
        m->prev_epoch = m->epoch;
        m->epoch = g->assignment_epoch;
        changed = true;
    }
    if (changed) g->version++;
    res->member_epoch = m->epoch;
    res->assigned = m->assigned;
    res->nassigned = m->nassigned;
}

int64_t ls_sgroup_tick(ls_sgroup_t *g, int64_t now_ms)
{
    int64_t next = INT64_MAX;
    bool removed = false;
    for (int i = 0; i < g->nmembers;) {
        member_t *m = g->members[i];
        if (m->deadline_ms <= now_ms) {
            remove_member(g, m, true); /* moves the last member into slot i */
            removed = true;
            continue;
        }
        if (m->deadline_ms < next) next = m->deadline_ms;
        i++;
    }
    if (removed) {
        g->epoch++;
        compute_assignment(g);
        g->version++;
    }
    return next;
}

void ls_sgroup_member(const ls_sgroup_t *g, int i, ls_sgroup_member_info_t *out)
{
    const member_t *m = g->members[i];
    *out = (ls_sgroup_member_info_t){.member_id = m->id,
                                     .rack_id = m->rack_id,
                                     .client_id = m->client_id ? m->client_id : "",
                                     .client_host = m->client_host ? m->client_host : "",
                                     .topics = (const char *const *)m->topics,
                                     .ntopics = m->ntopics,
                                     .member_epoch = m->epoch,
                                     .assigned = m->assigned,
                                     .nassigned = m->nassigned};
}

/* ---- stored form (docs/FORMATS.md "Share group state") ---- */

#define STATE_VERSION 1

void ls_sgroup_encode(const ls_sgroup_t *g, ls_buf_t *b)
{
    ls_buf_append_u8(b, STATE_VERSION);
    ls_bw_u32(b, (uint32_t)g->epoch);
    ls_bw_u32(b, (uint32_t)g->assignment_epoch);
    ls_bw_u32(b, (uint32_t)g->nmeta);
    for (int i = 0; i < g->nmeta; i++) {
        ls_bw_str(b, g->meta[i].name);
        ls_bw_u32(b, (uint32_t)g->meta[i].partitions);
    }
    ls_bw_u32(b, (uint32_t)g->nmembers);
    for (int i = 0; i < g->nmembers; i++) {
        const member_t *m = g->members[i];
        ls_bw_str(b, m->id);
        ls_bw_str(b, m->rack_id);
        ls_bw_str(b, m->client_id);
        ls_bw_str(b, m->client_host);
        ls_bw_u32(b, (uint32_t)m->epoch);
        ls_bw_u32(b, (uint32_t)m->prev_epoch);
        ls_bw_u32(b, (uint32_t)m->ntopics);
        for (int k = 0; k < m->ntopics; k++)
            ls_bw_str(b, m->topics[k]);
        ls_bw_u32(b, (uint32_t)m->nassigned);
        for (int k = 0; k < m->nassigned; k++) {
            ls_bw_str(b, m->assigned[k].topic);
            ls_bw_u32(b, (uint32_t)m->assigned[k].partition);
        }
    }
}

/* A non-null string, else the error flag. */
static char *get_name(ls_br_t *r)
{
    char *s = ls_br_str(r);
    if (!s) r->err = true;
    return s;
}

ls_sgroup_t *ls_sgroup_decode(const uint8_t *p, size_t len, const char *group_id,
                              const ls_sgroup_config_t *cfg, ls_sgroup_leave_fn on_leave, void *arg,
                              int64_t now_ms)
{
    ls_br_t r = ls_br_init(p, len);
    if (ls_br_u8(&r) != STATE_VERSION) return NULL;
    ls_sgroup_t *g = ls_sgroup_new(group_id, cfg, 0, on_leave, arg);
    g->epoch = (int32_t)ls_br_u32(&r);
    g->assignment_epoch = (int32_t)ls_br_u32(&r);
    int nmeta = ls_br_count(&r, 6);
    g->meta = LS_NEWN(ls_cgroup_topic_t, nmeta + 1);
    for (int i = 0; i < nmeta && !r.err; i++) {
        g->meta[i].name = get_name(&r);
        g->meta[i].partitions = (int32_t)ls_br_u32(&r);
        g->nmeta = i + 1;
    }
    int n = ls_br_count(&r, 24);
    g->members = LS_NEWN(member_t *, n + 1);
    for (int i = 0; i < n && !r.err; i++) {
        member_t *m = LS_NEW(member_t);
        g->members[g->nmembers++] = m;
        m->id = get_name(&r);
        m->rack_id = ls_br_str(&r);
        m->client_id = ls_br_str(&r);
        m->client_host = ls_br_str(&r);
        m->epoch = (int32_t)ls_br_u32(&r);
        m->prev_epoch = (int32_t)ls_br_u32(&r);
        int nt = ls_br_count(&r, 2);
        m->topics = LS_NEWN(char *, nt + 1);
        for (int k = 0; k < nt && !r.err; k++) {
            m->topics[k] = get_name(&r);
            m->ntopics = k + 1;
        }
        int na = ls_br_count(&r, 6);
        m->assigned = LS_NEWN(ls_cgroup_tp_t, na + 1);
        for (int k = 0; k < na && !r.err; k++) {
            m->assigned[k].topic = get_name(&r);
            m->assigned[k].partition = (int32_t)ls_br_u32(&r);
            m->nassigned = k + 1;
        }
        if (r.err || m->epoch > g->assignment_epoch || m->prev_epoch > m->epoch ||
            (i > 0 && find_member(g, m->id) != m)) {
            r.err = true;
            break;
        }
        m->deadline_ms = now_ms + cfg->session_timeout_ms; /* a fresh session */
    }
    if (r.err || r.p != r.end || g->assignment_epoch > g->epoch) {
        ls_sgroup_free(g);
        return NULL;
    }
    return g;
}
