/* Group coordinator: the classic protocol's state machine, the group object
 * and the coordinator's table of groups (design note: group.h). Offsets and
 * commit checks are group_offsets.c, the consumer, share and streams
 * memberships group_typed.c; what the three share is group_int.h.
 *
 * Ownership: the coordinator owns every group (a chained hash by id); a group
 * owns its members, pending members (ids handed out with
 * MEMBER_ID_REQUIRED, not yet joined), committed offsets and the queue of
 * requests waiting for it to load. Strings are heap copies. */
#include "group/group_int.h"

/* ------------------------------------------------------------- names */

const char *ls_group_state_name(ls_group_state s)
{
    switch (s) {
    case LS_GROUP_EMPTY: return "Empty";
    case LS_GROUP_PREPARING_REBALANCE: return "PreparingRebalance";
    case LS_GROUP_COMPLETING_REBALANCE: return "CompletingRebalance";
    case LS_GROUP_STABLE: return "Stable";
    case LS_GROUP_DEAD: return "Dead";
    }
    return "Unknown";
}

const char *ls_group_err_name(ls_group_err e)
{
    static const char *const n[] = {
        "NONE",
        "INVALID_GROUP_ID",
        "INVALID_SESSION_TIMEOUT",
        "INCONSISTENT_GROUP_PROTOCOL",
        "UNKNOWN_MEMBER_ID",
        "MEMBER_ID_REQUIRED",
        "ILLEGAL_GENERATION",
        "REBALANCE_IN_PROGRESS",
        "FENCED_INSTANCE_ID",
        "GROUP_MAX_SIZE_REACHED",
        "COORDINATOR_NOT_AVAILABLE",
        "NON_EMPTY_GROUP",
        "GROUP_ID_NOT_FOUND",
        "OFFSET_METADATA_TOO_LARGE",
        "GROUP_SUBSCRIBED_TO_TOPIC",
        "STALE_MEMBER_EPOCH",
        "FENCED_MEMBER_EPOCH",
    };
    return (size_t)e < sizeof n / sizeof n[0] ? n[e] : "?";
}

void ls_group_config_defaults(ls_group_config_t *cfg)
{
    cfg->min_session_timeout_ms = 6000;
    cfg->max_session_timeout_ms = 1800000;
    cfg->initial_rebalance_delay_ms = 0;
    cfg->max_size = INT32_MAX;
    cfg->offset_metadata_max_bytes = 4096;
    cfg->offsets_retention_ms = 7LL * 24 * 3600 * 1000;
    ls_cgroup_config_defaults(&cfg->consumer);
    ls_sgroup_config_defaults(&cfg->share);
    ls_stgroup_config_defaults(&cfg->streams);
}

/* ------------------------------------------------------------- helpers */

int64_t ls_grp_now_ms(ls_group_coord_t *c) { return c->h.now_ms(c->h.arg); }
int64_t ls_grp_wall_ms(ls_group_coord_t *c)
{
    return c->h.wall_ms ? c->h.wall_ms(c->h.arg) : c->h.now_ms(c->h.arg);
}
void ls_grp_wakeup(ls_group_coord_t *c, int64_t at)
{
    if (c->h.wakeup) c->h.wakeup(c->h.arg, at);
}

static char *dup_or_null(const char *s) { return s ? ls_strdup(s) : NULL; }

bool ls_grp_str_eq(const char *a, const char *b)
{
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

void ls_grp_set_str(char **dst, const char *s)
{
    char *n = dup_or_null(s);
    ls_free(*dst);
    *dst = n;
}

static uint64_t hash_str(const char *s) { return ls_hash_str(LS_HASH_INIT, s); }

/* "<prefix>-<uuid>", as Kafka names members. */
static char *make_member_id(const char *prefix)
{
    ls_uuid_t u;
    char s[37];
    ls_uuid_random(&u);
    ls_uuid_format(&u, s);
    return ls_asprintf("%s-%s", prefix && *prefix ? prefix : "member", s);
}

/* ------------------------------------------------------------- members */

static void member_set_protocols(member_t *m, const ls_group_protocol_t *p, int n)
{
    for (int i = 0; i < m->nprotocols; i++) {
        ls_free(m->pnames[i]);
        ls_free(m->pmeta[i]);
    }
    ls_free(m->pnames);
    ls_free(m->pmeta);
    ls_free(m->plen);
    m->nprotocols = n;
    m->pnames = LS_NEWN(char *, n > 0 ? n : 1);
    m->pmeta = LS_NEWN(uint8_t *, n > 0 ? n : 1);
    m->plen = LS_NEWN(size_t, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) {
        m->pnames[i] = ls_strdup(p[i].name);
        m->pmeta[i] =
            ls_memdup(p[i].len ? p[i].metadata : (const uint8_t *)"", p[i].len ? p[i].len : 1);
        m->plen[i] = p[i].len;
    }
}

static bool member_protocols_match(const member_t *m, const ls_group_protocol_t *p, int n)
{
    if (m->nprotocols != n) return false;
    for (int i = 0; i < n; i++)
        if (strcmp(m->pnames[i], p[i].name) != 0 || m->plen[i] != p[i].len ||
            (p[i].len && memcmp(m->pmeta[i], p[i].metadata, p[i].len) != 0))
            return false;
    return true;
}

int ls_grp_member_protocol_index(const member_t *m, const char *name)
{
    for (int i = 0; name && i < m->nprotocols; i++)
        if (strcmp(m->pnames[i], name) == 0) return i;
    return -1;
}

static void member_free(member_t *m)
{
    member_set_protocols(m, NULL, 0);
    ls_free(m->pnames);
    ls_free(m->pmeta);
    ls_free(m->plen);
    ls_free(m->id);
    ls_free(m->instance_id);
    ls_free(m->client_id);
    ls_free(m->client_host);
    ls_free(m->assignment);
    ls_free(m);
}

member_t *ls_grp_find_member(ls_group_t *g, const char *id)
{
    for (int i = 0; id && i < g->nmembers; i++)
        if (strcmp(g->members[i]->id, id) == 0) return g->members[i];
    return NULL;
}

static member_t *find_instance(ls_group_t *g, const char *instance_id)
{
    for (int i = 0; instance_id && i < g->nmembers; i++)
        if (ls_grp_str_eq(g->members[i]->instance_id, instance_id)) return g->members[i];
    return NULL;
}

static int find_pending(ls_group_t *g, const char *id)
{
    for (int i = 0; i < g->npending; i++)
        if (strcmp(g->pending[i].id, id) == 0) return i;
    return -1;
}

void ls_grp_remove_pending(ls_group_t *g, int i)
{
    ls_free(g->pending[i].id);
    g->pending[i] = g->pending[--g->npending];
}

/* KIP-345: a request naming an instance id that maps to another member id. */
bool ls_grp_instance_fenced(ls_group_t *g, const char *member_id, const char *instance_id)
{
    member_t *m = find_instance(g, instance_id);
    return m && strcmp(m->id, member_id) != 0;
}

static bool is_leader(const ls_group_t *g, const member_t *m)
{
    return g->leader && strcmp(g->leader, m->id) == 0;
}

static int32_t max_rebalance_ms(const ls_group_t *g)
{
    int32_t t = 0;
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i]->rebalance_ms > t) t = g->members[i]->rebalance_ms;
    return t;
}

void ls_grp_heartbeat_reset(ls_group_t *g, member_t *m)
{
    m->deadline = ls_grp_now_ms(g->c) + m->session_ms;
    ls_grp_wakeup(g->c, m->deadline);
}

void ls_grp_persist(ls_group_t *g)
{
    if (!g->c->h.persist) return;
    if (g->state == LS_GROUP_DEAD) {
        g->c->h.persist(g->c->h.arg, g->id, NULL);
        return;
    }
    ls_group_record_t r;
    ls_group_snapshot(g, &r);
    g->c->h.persist(g->c->h.arg, g->id, &r);
    ls_group_record_free(&r);
}

/* ------------------------------------------------------------- answers */

static void join_error(ls_group_join_cb cb, void *arg, ls_group_err err, const char *member_id)
{
    ls_group_join_result_t r;
    memset(&r, 0, sizeof r);
    r.err = err;
    r.generation = -1;
    r.leader = "";
    r.member_id = member_id ? member_id : "";
    cb(arg, &r);
}

static void sync_answer(ls_group_sync_cb cb, void *arg, ls_group_err err, const ls_group_t *g,
                        const uint8_t *a, size_t len)
{
    ls_group_sync_result_t r;
    memset(&r, 0, sizeof r);
    r.err = err;
    if (err == LS_GERR_NONE && g) {
        r.protocol_type = g->protocol_type;
        r.protocol_name = g->protocol_name;
        r.assignment = a;
        r.len = len;
    }
    cb(arg, &r);
}

/* Answers a member's join with the group's current generation (members
 * listed for the leader only); leader_override for static replacement. */
static void join_answer(ls_group_t *g, member_t *m, ls_group_join_cb cb, void *arg,
                        const char *leader_override)
{
    ls_group_join_result_t r;
    memset(&r, 0, sizeof r);
    r.err = LS_GERR_NONE;
    r.generation = g->generation;
    r.protocol_type = g->protocol_type;
    r.protocol_name = g->protocol_name;
    r.leader = leader_override ? leader_override : (g->leader ? g->leader : "");
    r.member_id = m->id;
    ls_group_join_member_t *mv = NULL;
    if (!leader_override && is_leader(g, m)) {
        mv = LS_NEWN(ls_group_join_member_t, g->nmembers > 0 ? g->nmembers : 1);
        for (int i = 0; i < g->nmembers; i++) {
            member_t *x = g->members[i];
            int pi = ls_grp_member_protocol_index(x, g->protocol_name);
            mv[i].member_id = x->id;
            mv[i].instance_id = x->instance_id;
            mv[i].metadata = pi >= 0 ? x->pmeta[pi] : (const uint8_t *)"";
            mv[i].len = pi >= 0 ? x->plen[pi] : 0;
        }
        r.members = mv;
        r.nmembers = g->nmembers;
    }
    cb(arg, &r);
    ls_free(mv);
}

static void answer_join_waiter(member_t *m, ls_group_err err)
{
    if (!m->join_cb) return;
    ls_group_join_cb cb = m->join_cb;
    void *arg = m->join_arg;
    m->join_cb = NULL;
    join_error(cb, arg, err, m->id);
}

static void answer_sync_waiter(member_t *m, ls_group_err err)
{
    if (!m->sync_cb) return;
    ls_group_sync_cb cb = m->sync_cb;
    void *arg = m->sync_arg;
    m->sync_cb = NULL;
    sync_answer(cb, arg, err, NULL, NULL, 0);
}

/* ------------------------------------------------------------- state machine */

static void check_join_complete(ls_group_t *g);

static void prepare_rebalance(ls_group_t *g)
{
    ls_group_coord_t *c = g->c;
    if (g->state == LS_GROUP_COMPLETING_REBALANCE) {
        /* Kafka resetAndPropagateAssignmentError: waiting followers rejoin */
        for (int i = 0; i < g->nmembers; i++) {
            member_t *m = g->members[i];
            ls_free(m->assignment);
            m->assignment = NULL;
            m->assignment_len = 0;
            answer_sync_waiter(m, LS_GERR_REBALANCE_IN_PROGRESS);
        }
    }
    bool was_empty = g->state == LS_GROUP_EMPTY;
    int64_t now = ls_grp_now_ms(c);
    g->state = LS_GROUP_PREPARING_REBALANCE;
    g->join_started = now;
    int32_t rt = max_rebalance_ms(g);
    if (was_empty && c->cfg.initial_rebalance_delay_ms > 0) {
        g->initial_delay = true;
        int32_t d = c->cfg.initial_rebalance_delay_ms < rt ? c->cfg.initial_rebalance_delay_ms : rt;
        g->join_deadline = now + d;
    } else {
        g->initial_delay = false;
        g->join_deadline = now + rt;
    }
    ls_grp_wakeup(c, g->join_deadline);
}

static void maybe_prepare_rebalance(ls_group_t *g)
{
    if (g->state == LS_GROUP_STABLE || g->state == LS_GROUP_COMPLETING_REBALANCE ||
        g->state == LS_GROUP_EMPTY)
        prepare_rebalance(g);
}

/* Unlinks m (answering its waiters with UNKNOWN_MEMBER_ID) and frees it. */
static void remove_member(ls_group_t *g, member_t *m)
{
    answer_join_waiter(m, LS_GERR_UNKNOWN_MEMBER_ID);
    answer_sync_waiter(m, LS_GERR_UNKNOWN_MEMBER_ID);
    for (int i = 0; i < g->nmembers; i++) {
        if (g->members[i] == m) {
            memmove(&g->members[i], &g->members[i + 1],
                    (size_t)(g->nmembers - i - 1) * sizeof *g->members);
            g->nmembers--;
            break;
        }
    }
    if (g->leader && strcmp(g->leader, m->id) == 0)
        ls_grp_set_str(&g->leader, g->nmembers > 0 ? g->members[0]->id : NULL);
    member_free(m);
}

static void remove_member_and_update(ls_group_t *g, member_t *m)
{
    remove_member(g, m);
    switch (g->state) {
    case LS_GROUP_STABLE:
    case LS_GROUP_COMPLETING_REBALANCE:
        prepare_rebalance(g);
        check_join_complete(g);
        break;
    case LS_GROUP_PREPARING_REBALANCE: check_join_complete(g); break;
    default: break;
    }
}

/* Candidate protocols are those every member supports; each member votes for
 * its most preferred candidate; most votes wins (ties: the first member's
 * preference order). */
static const char *select_protocol(ls_group_t *g)
{
    if (g->nmembers == 0) return NULL;
    member_t *first = g->members[0];
    int n = first->nprotocols;
    int *votes = LS_NEWN(int, n > 0 ? n : 1);
    bool *cand = LS_NEWN(bool, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) {
        cand[i] = true;
        for (int j = 1; j < g->nmembers && cand[i]; j++)
            cand[i] = ls_grp_member_protocol_index(g->members[j], first->pnames[i]) >= 0;
    }
    for (int j = 0; j < g->nmembers; j++) {
        member_t *m = g->members[j];
        for (int k = 0; k < m->nprotocols; k++) {
            int fi = ls_grp_member_protocol_index(first, m->pnames[k]);
            if (fi >= 0 && cand[fi]) {
                votes[fi]++;
                break;
            }
        }
    }
    int best = -1;
    for (int i = 0; i < n; i++)
        if (cand[i] && (best < 0 || votes[i] > votes[best])) best = i;
    const char *r = best >= 0 ? first->pnames[best] : NULL;
    ls_free(votes);
    ls_free(cand);
    return r;
}

static bool supports_protocols(ls_group_t *g, const char *ptype, const ls_group_protocol_t *p,
                               int n)
{
    if (g->nmembers == 0) return ptype && *ptype && n > 0;
    if (!ls_grp_str_eq(g->protocol_type, ptype)) return false;
    for (int i = 0; i < n; i++) {
        bool all = true;
        for (int j = 0; j < g->nmembers && all; j++)
            all = ls_grp_member_protocol_index(g->members[j], p[i].name) >= 0;
        if (all) return true;
    }
    return false;
}

static void complete_join(ls_group_t *g)
{
    ls_group_coord_t *c = g->c;
    /* dynamic members that did not rejoin in time are gone */
    for (int i = 0; i < g->nmembers;) {
        member_t *m = g->members[i];
        if (!m->join_cb && !m->instance_id)
            remove_member(g, m);
        else
            i++;
    }
    if (g->nmembers > 0) {
        member_t *ldr = ls_grp_find_member(g, g->leader);
        if (!ldr || !ldr->join_cb) {
            member_t *nl = NULL;
            for (int i = 0; i < g->nmembers && !nl; i++)
                if (g->members[i]->join_cb) nl = g->members[i];
            if (!nl) {
                /* only static members that have not rejoined: wait for their
                 * sessions to expire them (Kafka reschedules the same way) */
                g->join_deadline = ls_grp_now_ms(c) + max_rebalance_ms(g);
                ls_grp_wakeup(c, g->join_deadline);
                return;
            }
            ls_grp_set_str(&g->leader, nl->id);
        }
    }
    g->generation++;
    g->initial_delay = false;
    if (g->nmembers == 0) {
        ls_grp_set_str(&g->protocol_name, NULL);
        ls_grp_set_str(&g->leader, NULL);
        g->state = LS_GROUP_EMPTY;
        g->state_wall_ms = ls_grp_wall_ms(c);
        ls_grp_persist(g);
        return;
    }
    ls_grp_set_str(&g->protocol_name, select_protocol(g));
    g->state = LS_GROUP_COMPLETING_REBALANCE;
    for (int i = 0; i < g->nmembers; i++) {
        member_t *m = g->members[i];
        if (!m->join_cb) continue;
        ls_group_join_cb cb = m->join_cb;
        void *arg = m->join_arg;
        m->join_cb = NULL;
        ls_grp_heartbeat_reset(g, m);
        join_answer(g, m, cb, arg, NULL);
    }
}

static void check_join_complete(ls_group_t *g)
{
    if (g->state != LS_GROUP_PREPARING_REBALANCE) return;
    if (g->initial_delay && ls_grp_now_ms(g->c) < g->join_deadline) return;
    if (g->npending > 0) return;
    for (int i = 0; i < g->nmembers; i++)
        if (!g->members[i]->join_cb) return;
    complete_join(g);
}

static member_t *add_member(ls_group_t *g, char *id /* taken */, const ls_group_join_req_t *req)
{
    member_t *m = LS_NEW(member_t);
    m->id = id;
    m->instance_id = dup_or_null(req->instance_id);
    m->client_id = ls_strdup(req->client_id ? req->client_id : "");
    m->client_host = ls_strdup(req->client_host ? req->client_host : "");
    m->session_ms = req->session_timeout_ms;
    m->rebalance_ms =
        req->rebalance_timeout_ms >= 0 ? req->rebalance_timeout_ms : req->session_timeout_ms;
    member_set_protocols(m, req->protocols, req->nprotocols);
    if (g->nmembers == 0) ls_grp_set_str(&g->protocol_type, req->protocol_type);
    if (g->nmembers == g->capmembers) {
        g->capmembers = g->capmembers ? g->capmembers * 2 : 4;
        g->members = ls_realloc(g->members, (size_t)g->capmembers * sizeof *g->members);
    }
    g->members[g->nmembers++] = m;
    if (!g->leader) g->leader = ls_strdup(m->id);
    ls_grp_heartbeat_reset(g, m);
    return m;
}

static void add_member_and_rebalance(ls_group_t *g, char *id, const ls_group_join_req_t *req,
                                     ls_group_join_cb cb, void *arg)
{
    member_t *m = add_member(g, id, req);
    m->join_cb = cb;
    m->join_arg = arg;
    if (g->state == LS_GROUP_PREPARING_REBALANCE && g->initial_delay) {
        /* a new member during the initial delay extends it, up to the rebalance timeout */
        int64_t now = ls_grp_now_ms(g->c);
        int64_t cap = g->join_started + max_rebalance_ms(g);
        int64_t d = now + g->c->cfg.initial_rebalance_delay_ms;
        g->join_deadline = d < cap ? d : cap;
        ls_grp_wakeup(g->c, g->join_deadline);
    }
    maybe_prepare_rebalance(g);
    check_join_complete(g);
}

static void update_member_and_rebalance(ls_group_t *g, member_t *m, const ls_group_join_req_t *req,
                                        ls_group_join_cb cb, void *arg)
{
    member_set_protocols(m, req->protocols, req->nprotocols);
    m->session_ms = req->session_timeout_ms;
    m->rebalance_ms =
        req->rebalance_timeout_ms >= 0 ? req->rebalance_timeout_ms : req->session_timeout_ms;
    answer_join_waiter(m, LS_GERR_REBALANCE_IN_PROGRESS); /* a duplicate join supersedes */
    m->join_cb = cb;
    m->join_arg = arg;
    maybe_prepare_rebalance(g);
    check_join_complete(g);
}

void ls_grp_revive(ls_group_t *g)
{
    if (g->state != LS_GROUP_DEAD) return;
    g->state = LS_GROUP_EMPTY;
    g->generation = 0;
    ls_grp_set_str(&g->protocol_type, NULL);
    ls_grp_set_str(&g->protocol_name, NULL);
    ls_grp_set_str(&g->leader, NULL);
    g->state_wall_ms = ls_grp_wall_ms(g->c);
}

static void join_unknown(ls_group_t *g, const ls_group_join_req_t *req, ls_group_join_cb cb,
                         void *arg)
{
    ls_group_coord_t *c = g->c;
    if (req->instance_id) {
        member_t *old = find_instance(g, req->instance_id);
        if (old) {
            /* KIP-345: a known static member restarting. The old id is fenced. */
            char *new_id = make_member_id(req->instance_id);
            char *prev_leader = dup_or_null(g->leader);
            answer_join_waiter(old, LS_GERR_FENCED_INSTANCE_ID);
            answer_sync_waiter(old, LS_GERR_FENCED_INSTANCE_ID);
            if (g->leader && strcmp(g->leader, old->id) == 0) ls_grp_set_str(&g->leader, new_id);
            ls_free(old->id);
            old->id = new_id;
            const char *selected_before = g->protocol_name;
            bool same = member_protocols_match(old, req->protocols, req->nprotocols);
            member_set_protocols(old, req->protocols, req->nprotocols);
            old->session_ms = req->session_timeout_ms;
            old->rebalance_ms = req->rebalance_timeout_ms >= 0 ? req->rebalance_timeout_ms
                                                               : req->session_timeout_ms;
            ls_grp_set_str(&old->client_id, req->client_id ? req->client_id : "");
            ls_grp_set_str(&old->client_host, req->client_host ? req->client_host : "");
            ls_grp_heartbeat_reset(g, old);
            switch (g->state) {
            case LS_GROUP_STABLE: {
                const char *next = select_protocol(g);
                if (same || ls_grp_str_eq(next, selected_before)) {
                    /* no rebalance: it gets its assignment back through SyncGroup.
                     * The previous leader id is returned so that a restarted
                     * leader does not run a (discarded) assignment. */
                    ls_grp_persist(g);
                    join_answer(g, old, cb, arg, prev_leader ? prev_leader : "");
                } else {
                    old->join_cb = cb;
                    old->join_arg = arg;
                    prepare_rebalance(g);
                    check_join_complete(g);
                }
                break;
            }
            case LS_GROUP_COMPLETING_REBALANCE:
                old->join_cb = cb;
                old->join_arg = arg;
                prepare_rebalance(g);
                check_join_complete(g);
                break;
            default: /* PreparingRebalance */
                old->join_cb = cb;
                old->join_arg = arg;
                check_join_complete(g);
                break;
            }
            ls_free(prev_leader);
            return;
        }
    }
    if (g->nmembers + g->npending >= c->cfg.max_size) {
        join_error(cb, arg, LS_GERR_GROUP_MAX_SIZE_REACHED, "");
        return;
    }
    char *id = make_member_id(req->instance_id ? req->instance_id : req->client_id);
    if (!req->instance_id && req->require_known_member_id) {
        /* KIP-394: hand out the id; the member joins for real with it */
        if (g->npending == g->cappending) {
            g->cappending = g->cappending ? g->cappending * 2 : 4;
            g->pending = ls_realloc(g->pending, (size_t)g->cappending * sizeof *g->pending);
        }
        g->pending[g->npending].id = id;
        g->pending[g->npending].deadline = ls_grp_now_ms(c) + req->session_timeout_ms;
        ls_grp_wakeup(c, g->pending[g->npending].deadline);
        g->npending++;
        join_error(cb, arg, LS_GERR_MEMBER_ID_REQUIRED, id);
        return;
    }
    add_member_and_rebalance(g, id, req, cb, arg);
}

static void join_known(ls_group_t *g, const ls_group_join_req_t *req, ls_group_join_cb cb,
                       void *arg)
{
    int pi = find_pending(g, req->member_id);
    if (pi >= 0) {
        char *id = g->pending[pi].id;
        g->pending[pi].id = NULL;
        g->pending[pi] = g->pending[--g->npending];
        add_member_and_rebalance(g, id, req, cb, arg);
        return;
    }
    if (ls_grp_instance_fenced(g, req->member_id, req->instance_id)) {
        join_error(cb, arg, LS_GERR_FENCED_INSTANCE_ID, req->member_id);
        return;
    }
    member_t *m = ls_grp_find_member(g, req->member_id);
    if (!m) {
        join_error(cb, arg, LS_GERR_UNKNOWN_MEMBER_ID, req->member_id);
        return;
    }
    switch (g->state) {
    case LS_GROUP_PREPARING_REBALANCE: update_member_and_rebalance(g, m, req, cb, arg); break;
    case LS_GROUP_COMPLETING_REBALANCE:
        if (member_protocols_match(m, req->protocols, req->nprotocols)) {
            ls_grp_heartbeat_reset(g, m);
            join_answer(g, m, cb, arg, NULL);
        } else {
            update_member_and_rebalance(g, m, req, cb, arg);
        }
        break;
    case LS_GROUP_STABLE:
        if (is_leader(g, m) || !member_protocols_match(m, req->protocols, req->nprotocols)) {
            update_member_and_rebalance(g, m, req, cb, arg);
        } else {
            ls_grp_heartbeat_reset(g, m);
            join_answer(g, m, cb, arg, NULL);
        }
        break;
    default: join_error(cb, arg, LS_GERR_UNKNOWN_MEMBER_ID, req->member_id); break;
    }
}

void ls_group_join(ls_group_t *g, const ls_group_join_req_t *req, ls_group_join_cb cb, void *arg)
{
    ls_group_coord_t *c = g->c;
    const char *mid = req->member_id ? req->member_id : "";
    if (c->shut) {
        join_error(cb, arg, LS_GERR_COORDINATOR_NOT_AVAILABLE, mid);
        return;
    }
    if (!*g->id) {
        join_error(cb, arg, LS_GERR_INVALID_GROUP_ID, mid);
        return;
    }
    if (req->session_timeout_ms < c->cfg.min_session_timeout_ms ||
        req->session_timeout_ms > c->cfg.max_session_timeout_ms) {
        join_error(cb, arg, LS_GERR_INVALID_SESSION_TIMEOUT, mid);
        return;
    }
    if (g->state == LS_GROUP_DEAD) {
        if (*mid) {
            join_error(cb, arg, LS_GERR_UNKNOWN_MEMBER_ID, mid);
            return;
        }
        ls_grp_revive(g);
    }
    if (g->sg) { /* a share group never takes classic members */
        join_error(cb, arg, LS_GERR_INCONSISTENT_GROUP_PROTOCOL, mid);
        return;
    }
    if (g->cg || g->st) {
        /* a consumer or streams group takes classic members only while it
         * has none (group.consumer.migration.policy=disabled): it becomes
         * classic */
        if (ls_grp_typed_members(g) > 0 || *mid) {
            join_error(cb, arg,
                       *mid ? LS_GERR_UNKNOWN_MEMBER_ID : LS_GERR_INCONSISTENT_GROUP_PROTOCOL, mid);
            return;
        }
        ls_grp_drop_typed(g);
        ls_grp_set_str(&g->protocol_type, NULL);
    }
    if (!supports_protocols(g, req->protocol_type, req->protocols, req->nprotocols)) {
        join_error(cb, arg, LS_GERR_INCONSISTENT_GROUP_PROTOCOL, mid);
        return;
    }
    ls_group_join_req_t r = *req;
    r.member_id = mid;
    if (!*mid)
        join_unknown(g, &r, cb, arg);
    else
        join_known(g, &r, cb, arg);
}

void ls_group_sync(ls_group_t *g, int32_t generation, const char *member_id,
                   const char *instance_id, const char *protocol_type, const char *protocol_name,
                   const ls_group_assignment_t *assignments, int nassignments, ls_group_sync_cb cb,
                   void *arg)
{
    ls_group_coord_t *c = g->c;
    if (c->shut) {
        sync_answer(cb, arg, LS_GERR_COORDINATOR_NOT_AVAILABLE, NULL, NULL, 0);
        return;
    }
    if (g->state == LS_GROUP_DEAD) {
        sync_answer(cb, arg, LS_GERR_UNKNOWN_MEMBER_ID, NULL, NULL, 0);
        return;
    }
    if (ls_grp_instance_fenced(g, member_id, instance_id)) {
        sync_answer(cb, arg, LS_GERR_FENCED_INSTANCE_ID, NULL, NULL, 0);
        return;
    }
    member_t *m = ls_grp_find_member(g, member_id);
    if (!m) {
        sync_answer(cb, arg, LS_GERR_UNKNOWN_MEMBER_ID, NULL, NULL, 0);
        return;
    }
    if (generation != g->generation) {
        sync_answer(cb, arg, LS_GERR_ILLEGAL_GENERATION, NULL, NULL, 0);
        return;
    }
    if ((protocol_type && !ls_grp_str_eq(protocol_type, g->protocol_type)) ||
        (protocol_name && !ls_grp_str_eq(protocol_name, g->protocol_name))) {
        sync_answer(cb, arg, LS_GERR_INCONSISTENT_GROUP_PROTOCOL, NULL, NULL, 0);
        return;
    }
    switch (g->state) {
    case LS_GROUP_EMPTY: sync_answer(cb, arg, LS_GERR_UNKNOWN_MEMBER_ID, NULL, NULL, 0); return;
    case LS_GROUP_PREPARING_REBALANCE:
        sync_answer(cb, arg, LS_GERR_REBALANCE_IN_PROGRESS, NULL, NULL, 0);
        return;
    case LS_GROUP_STABLE:
        ls_grp_heartbeat_reset(g, m);
        sync_answer(cb, arg, LS_GERR_NONE, g, m->assignment, m->assignment_len);
        return;
    default: break;
    }
    /* CompletingRebalance */
    answer_sync_waiter(m, LS_GERR_REBALANCE_IN_PROGRESS);
    m->sync_cb = cb;
    m->sync_arg = arg;
    ls_grp_heartbeat_reset(g, m);
    if (!is_leader(g, m)) return;
    for (int i = 0; i < g->nmembers; i++) {
        member_t *x = g->members[i];
        ls_free(x->assignment);
        x->assignment = NULL;
        x->assignment_len = 0;
        for (int j = 0; j < nassignments; j++) {
            if (strcmp(assignments[j].member_id, x->id) == 0) {
                x->assignment_len = assignments[j].len;
                x->assignment =
                    ls_memdup(assignments[j].len ? assignments[j].assignment : (const uint8_t *)"",
                              assignments[j].len ? assignments[j].len : 1);
                break;
            }
        }
    }
    g->state = LS_GROUP_STABLE;
    g->state_wall_ms = ls_grp_wall_ms(c);
    ls_grp_persist(g);
    for (int i = 0; i < g->nmembers; i++) {
        member_t *x = g->members[i];
        if (!x->sync_cb) continue;
        ls_group_sync_cb xcb = x->sync_cb;
        void *xarg = x->sync_arg;
        x->sync_cb = NULL;
        ls_grp_heartbeat_reset(g, x);
        sync_answer(xcb, xarg, LS_GERR_NONE, g, x->assignment, x->assignment_len);
    }
}

ls_group_err ls_group_heartbeat(ls_group_t *g, int32_t generation, const char *member_id,
                                const char *instance_id)
{
    if (g->c->shut) return LS_GERR_COORDINATOR_NOT_AVAILABLE;
    if (g->state == LS_GROUP_DEAD || g->state == LS_GROUP_EMPTY) return LS_GERR_UNKNOWN_MEMBER_ID;
    if (ls_grp_instance_fenced(g, member_id, instance_id)) return LS_GERR_FENCED_INSTANCE_ID;
    member_t *m = ls_grp_find_member(g, member_id);
    if (!m) return LS_GERR_UNKNOWN_MEMBER_ID;
    if (generation != g->generation) return LS_GERR_ILLEGAL_GENERATION;
    ls_grp_heartbeat_reset(g, m);
    if (g->state == LS_GROUP_PREPARING_REBALANCE) return LS_GERR_REBALANCE_IN_PROGRESS;
    return LS_GERR_NONE;
}

ls_group_err ls_group_leave(ls_group_t *g, const char *member_id, const char *instance_id)
{
    if (g->c->shut) return LS_GERR_COORDINATOR_NOT_AVAILABLE;
    if (g->state == LS_GROUP_DEAD) return LS_GERR_UNKNOWN_MEMBER_ID;
    member_t *m;
    if ((!member_id || !*member_id) && instance_id) {
        m = find_instance(g, instance_id);
    } else {
        if (ls_grp_instance_fenced(g, member_id, instance_id)) return LS_GERR_FENCED_INSTANCE_ID;
        int pi = member_id ? find_pending(g, member_id) : -1;
        if (pi >= 0) {
            ls_grp_remove_pending(g, pi);
            check_join_complete(g);
            return LS_GERR_NONE;
        }
        m = ls_grp_find_member(g, member_id);
    }
    if (!m) return LS_GERR_UNKNOWN_MEMBER_ID;
    remove_member_and_update(g, m);
    return LS_GERR_NONE;
}

/* ------------------------------------------------------------- group object */

const char *ls_group_id(const ls_group_t *g) { return g->id; }
ls_group_state ls_group_get_state(const ls_group_t *g) { return g->state; }
int32_t ls_group_generation(const ls_group_t *g) { return g->generation; }
const char *ls_group_protocol_type(const ls_group_t *g) { return g->protocol_type; }
const char *ls_group_protocol_name(const ls_group_t *g) { return g->protocol_name; }
const char *ls_group_leader(const ls_group_t *g) { return g->leader; }
int ls_group_member_count(const ls_group_t *g) { return g->nmembers; }

void ls_group_snapshot(const ls_group_t *g, ls_group_record_t *r)
{
    memset(r, 0, sizeof *r);
    r->type = ls_grp_type(g);
    if (g->cg || g->sg || g->st) {
        ls_buf_t b;
        ls_buf_init(&b);
        if (g->cg)
            ls_cgroup_encode(g->cg, &b);
        else if (g->sg)
            ls_sgroup_encode(g->sg, &b);
        else
            ls_stgroup_encode(g->st, &b);
        r->type_state = ls_buf_steal(&b, &r->type_state_len);
    }
    r->state = g->state == LS_GROUP_EMPTY ? LS_GROUP_EMPTY : g->state;
    r->generation = g->generation;
    r->protocol_type = dup_or_null(g->protocol_type);
    r->protocol_name = dup_or_null(g->protocol_name);
    r->leader = dup_or_null(g->leader);
    r->state_ms = g->state_wall_ms;
    r->nmembers = g->nmembers;
    r->members = LS_NEWN(ls_group_record_member_t, g->nmembers > 0 ? g->nmembers : 1);
    for (int i = 0; i < g->nmembers; i++) {
        const member_t *m = g->members[i];
        ls_group_record_member_t *x = &r->members[i];
        x->member_id = ls_strdup(m->id);
        x->instance_id = dup_or_null(m->instance_id);
        x->client_id = ls_strdup(m->client_id);
        x->client_host = ls_strdup(m->client_host);
        x->session_timeout_ms = m->session_ms;
        x->rebalance_timeout_ms = m->rebalance_ms;
        int pi = ls_grp_member_protocol_index(m, g->protocol_name);
        if (pi < 0 && m->nprotocols > 0 && !g->protocol_name) pi = -1;
        x->metadata_len = pi >= 0 ? m->plen[pi] : 0;
        x->metadata = ls_memdup(pi >= 0 && m->plen[pi] ? m->pmeta[pi] : (const uint8_t *)"",
                                x->metadata_len ? x->metadata_len : 1);
        x->assignment_len = m->assignment ? m->assignment_len : 0;
        x->assignment =
            ls_memdup(m->assignment && m->assignment_len ? m->assignment : (const uint8_t *)"",
                      x->assignment_len ? x->assignment_len : 1);
    }
}

static void group_install(ls_group_t *g, ls_group_loaded_t *l)
{
    ls_group_coord_t *c = g->c;
    if (!l || !l->exists) {
        g->state = LS_GROUP_DEAD;
    } else {
        ls_group_record_t *r = &l->rec;
        g->generation = r->generation;
        g->protocol_type = r->protocol_type;
        r->protocol_type = NULL;
        g->protocol_name = r->protocol_name;
        r->protocol_name = NULL;
        g->state_wall_ms = r->state_ms;
        g->state =
            r->nmembers > 0 && r->state == LS_GROUP_STABLE && r->type == LS_GROUP_TYPE_CLASSIC
                ? LS_GROUP_STABLE
                : LS_GROUP_EMPTY;
        /* a consumer group resumes with its members and epochs (a fresh
         * session each); a state that does not decode keeps the epoch as
         * the floor and its members rejoin */
        if (r->type == LS_GROUP_TYPE_SHARE) {
            g->sg = r->type_state_len
                        ? ls_sgroup_decode(r->type_state, r->type_state_len, g->id, &c->cfg.share,
                                           ls_grp_share_member_left, g, ls_grp_now_ms(c))
                        : NULL;
            if (!g->sg) {
                if (r->type_state_len)
                    LS_WARN("group",
                            "share group %s: its stored members do not decode; it goes on "
                            "empty above epoch %d (the members rejoin)",
                            g->id, (int)r->generation);
                g->sg = ls_grp_share_new(g, r->generation);
            }
            g->sg_stored = ls_sgroup_version(g->sg);
        }
        if (r->type == LS_GROUP_TYPE_STREAMS) {
            g->st = r->type_state_len ? ls_stgroup_decode(r->type_state, r->type_state_len, g->id,
                                                          &c->cfg.streams, ls_grp_now_ms(c))
                                      : NULL;
            if (!g->st) {
                if (r->type_state_len)
                    LS_WARN("group",
                            "streams group %s: its stored members do not decode; it goes on "
                            "empty above epoch %d (the members rejoin)",
                            g->id, (int)r->generation);
                g->st = ls_stgroup_new(g->id, &c->cfg.streams, r->generation);
            }
            g->st_stored = ls_stgroup_version(g->st);
        }
        if (r->type == LS_GROUP_TYPE_CONSUMER) {
            g->cg = r->type_state_len ? ls_cgroup_decode(r->type_state, r->type_state_len, g->id,
                                                         &c->cfg.consumer, ls_grp_now_ms(c))
                                      : NULL;
            if (!g->cg) {
                if (r->type_state_len)
                    LS_WARN("group",
                            "group %s: its stored members do not decode; it goes on empty "
                            "above epoch %d (the members rejoin)",
                            g->id, (int)r->generation);
                g->cg = ls_cgroup_new(g->id, &c->cfg.consumer, r->generation);
            }
            g->cg_stored = ls_cgroup_version(g->cg);
        }
        if (g->state == LS_GROUP_STABLE) {
            /* Members come back with a fresh session: live clients keep
             * heartbeating, dead ones expire and trigger a rebalance. */
            for (int i = 0; i < r->nmembers; i++) {
                ls_group_record_member_t *x = &r->members[i];
                ls_group_protocol_t p = {g->protocol_name ? g->protocol_name : "", x->metadata,
                                         x->metadata_len};
                ls_group_join_req_t jr = {
                    .member_id = x->member_id,
                    .instance_id = x->instance_id,
                    .client_id = x->client_id,
                    .client_host = x->client_host,
                    .session_timeout_ms = x->session_timeout_ms,
                    .rebalance_timeout_ms = x->rebalance_timeout_ms,
                    .protocol_type = g->protocol_type,
                    .protocols = &p,
                    .nprotocols = 1,
                };
                member_t *m = add_member(g, ls_strdup(x->member_id), &jr);
                m->assignment = x->assignment;
                m->assignment_len = x->assignment_len;
                x->assignment = NULL;
            }
            if (r->leader && ls_grp_find_member(g, r->leader))
                ls_grp_set_str(&g->leader, r->leader);
        } else {
            ls_grp_set_str(&g->protocol_name, NULL);
        }
        for (int i = 0; i < l->noffsets; i++)
            ls_group_offset_put(g, l->offsets[i].topic, l->offsets[i].partition, &l->offsets[i].o);
        g->txn_pending = l->ntxn_pending > 0;
    }
    (void)c;
}

static ls_group_t *lookup(ls_group_coord_t *c, const char *id)
{
    if (!c->nbuckets) return NULL;
    for (ls_group_t *g = c->buckets[hash_str(id) & (c->nbuckets - 1)]; g; g = g->hnext)
        if (strcmp(g->id, id) == 0) return g;
    return NULL;
}

static void insert(ls_group_coord_t *c, ls_group_t *g)
{
    if (c->ngroups + 1 > c->nbuckets) {
        size_t nb = c->nbuckets ? c->nbuckets * 2 : 64;
        ls_group_t **b = LS_NEWN(ls_group_t *, nb);
        for (size_t i = 0; i < c->nbuckets; i++) {
            for (ls_group_t *x = c->buckets[i], *next; x; x = next) {
                next = x->hnext;
                size_t h = hash_str(x->id) & (nb - 1);
                x->hnext = b[h];
                b[h] = x;
            }
        }
        ls_free(c->buckets);
        c->buckets = b;
        c->nbuckets = nb;
    }
    size_t h = hash_str(g->id) & (c->nbuckets - 1);
    g->hnext = c->buckets[h];
    c->buckets[h] = g;
    c->ngroups++;
}

static void group_free(ls_group_t *g)
{
    for (int i = 0; i < g->nmembers; i++)
        member_free(g->members[i]);
    ls_free(g->members);
    for (int i = 0; i < g->npending; i++)
        ls_free(g->pending[i].id);
    ls_free(g->pending);
    ls_grp_clear_offsets(g);
    ls_cgroup_free(g->cg);
    ls_sgroup_free(g->sg);
    ls_stgroup_free(g->st);
    ls_free(g->protocol_type);
    ls_free(g->protocol_name);
    ls_free(g->leader);
    ls_free(g->id);
    ls_free(g);
}

/* ------------------------------------------------------------- coordinator */

ls_group_coord_t *ls_group_coord_new(const ls_group_config_t *cfg, const ls_group_hooks_t *hooks)
{
    ls_group_coord_t *c = LS_NEW(ls_group_coord_t);
    c->cfg = *cfg;
    c->h = *hooks;
    return c;
}

const ls_group_config_t *ls_group_coord_config(const ls_group_coord_t *c) { return &c->cfg; }

ls_group_t *ls_group_find(ls_group_coord_t *c, const char *group_id)
{
    ls_group_t *g = lookup(c, group_id);
    return g && !g->loading ? g : NULL;
}

void ls_group_acquire(ls_group_coord_t *c, const char *group_id, ls_group_ready_cb cb, void *arg)
{
    ls_group_t *g = lookup(c, group_id);
    if (g && !g->loading) {
        cb(arg, g);
        return;
    }
    if (c->shut) {
        cb(arg, NULL);
        return;
    }
    bool start = !g;
    if (!g) {
        g = LS_NEW(ls_group_t);
        g->c = c;
        g->id = ls_strdup(group_id);
        g->loading = true;
        g->state = LS_GROUP_DEAD;
        insert(c, g);
    }
    waiter_t *w = LS_NEW(waiter_t);
    w->cb = cb;
    w->arg = arg;
    if (g->wtail)
        g->wtail->next = w;
    else
        g->whead = w;
    g->wtail = w;
    if (start) {
        if (c->h.load) {
            c->h.load(c->h.arg, group_id);
        } else {
            ls_group_coord_load_done(c, group_id, LS_OK, NULL);
        }
    }
}

static void unlink_group(ls_group_coord_t *c, ls_group_t *g)
{
    ls_group_t **pp = &c->buckets[hash_str(g->id) & (c->nbuckets - 1)];
    while (*pp != g)
        pp = &(*pp)->hnext;
    *pp = g->hnext;
    c->ngroups--;
}

void ls_group_coord_load_done(ls_group_coord_t *c, const char *group_id, ls_status st,
                              ls_group_loaded_t *l)
{
    ls_group_t *g = lookup(c, group_id);
    if (!g || !g->loading) {
        if (l) ls_group_loaded_free(l);
        return;
    }
    waiter_t *w = g->whead;
    g->whead = g->wtail = NULL;
    if (st == LS_OK) {
        g->loading = false;
        group_install(g, l);
    } else {
        unlink_group(c, g);
        group_free(g);
        g = NULL;
    }
    if (l) ls_group_loaded_free(l);
    while (w) {
        waiter_t *next = w->next;
        w->cb(w->arg, g);
        ls_free(w);
        w = next;
    }
}

/* The invariants of group.h, checked over one group (panics naming the
 * group and the broken rule). */
static void check_group(const ls_group_t *g)
{
    if (g->loading) return;
    if (g->st) ls_stgroup_check_invariants(g->st);
    LS_CHECKF(g->generation >= 0, "group '%s': generation %d", g->id, (int)g->generation);
    LS_CHECKF(g->state != LS_GROUP_DEAD || g->nmembers == 0, "group '%s': Dead with %d members",
              g->id, g->nmembers);
    LS_CHECKF(g->state != LS_GROUP_EMPTY || g->nmembers == 0, "group '%s': Empty with %d members",
              g->id, g->nmembers);
    bool leader_found = false;
    for (int i = 0; i < g->nmembers; i++) {
        const member_t *m = g->members[i];
        LS_CHECKF(!m->join_cb || g->state == LS_GROUP_PREPARING_REBALANCE,
                  "group '%s': member %s awaits join in state %s", g->id, m->id,
                  ls_group_state_name(g->state));
        LS_CHECKF(!m->sync_cb || g->state == LS_GROUP_COMPLETING_REBALANCE,
                  "group '%s': member %s awaits sync in state %s", g->id, m->id,
                  ls_group_state_name(g->state));
        leader_found |= ls_grp_str_eq(g->leader, m->id);
        for (int j = i + 1; j < g->nmembers; j++) {
            LS_CHECKF(!ls_grp_str_eq(m->id, g->members[j]->id), "group '%s': member id %s twice",
                      g->id, m->id);
            LS_CHECKF(!m->instance_id || !ls_grp_str_eq(m->instance_id, g->members[j]->instance_id),
                      "group '%s': instance id %s held by two members", g->id, m->instance_id);
        }
    }
    LS_CHECKF(!(g->state == LS_GROUP_STABLE || g->state == LS_GROUP_COMPLETING_REBALANCE) ||
                  leader_found,
              "group '%s': leader %s is not a member in state %s", g->id,
              g->leader ? g->leader : "(none)", ls_group_state_name(g->state));
}

void ls_group_coord_check_invariants(const ls_group_coord_t *c)
{
    for (size_t b = 0; b < c->nbuckets; b++)
        for (const ls_group_t *g = c->buckets[b]; g; g = g->hnext)
            check_group(g);
}

int64_t ls_group_coord_tick(ls_group_coord_t *c)
{
    int64_t now = ls_grp_now_ms(c), next = INT64_MAX;
    for (size_t b = 0; b < c->nbuckets; b++) {
        for (ls_group_t *g = c->buckets[b], *gn; g; g = gn) {
            gn = g->hnext;
            if (g->loading) continue;
            if (g->state == LS_GROUP_DEAD && !g->whead) {
                unlink_group(c, g);
                group_free(g);
                continue;
            }
            for (int i = g->npending - 1; i >= 0; i--) {
                if (now >= g->pending[i].deadline) {
                    ls_grp_remove_pending(g, i);
                    check_join_complete(g);
                }
            }
            if (g->state == LS_GROUP_PREPARING_REBALANCE && now >= g->join_deadline)
                complete_join(g);
            for (int i = 0; i < g->nmembers;) {
                member_t *m = g->members[i];
                if (!m->join_cb && !m->sync_cb && now >= m->deadline) {
                    remove_member_and_update(g, m);
                    i = 0; /* the array changed under us */
                    continue;
                }
                i++;
            }
            if (g->cg) {
                int64_t due = ls_cgroup_tick(g->cg, now);
                ls_grp_consumer_settle(g, false);
                if (due < next) next = due;
            }
            if (g->sg) {
                int64_t due = ls_sgroup_tick(g->sg, now);
                ls_grp_share_settle(g, false);
                if (due < next) next = due;
            }
            if (g->st) {
                int64_t due = ls_stgroup_tick(g->st, now);
                ls_grp_streams_settle(g, false);
                if (due < next) next = due;
            }
            for (int i = 0; i < g->npending; i++)
                if (g->pending[i].deadline < next) next = g->pending[i].deadline;
            if (g->state == LS_GROUP_PREPARING_REBALANCE && g->join_deadline < next)
                next = g->join_deadline;
            for (int i = 0; i < g->nmembers; i++) {
                member_t *m = g->members[i];
                if (!m->join_cb && !m->sync_cb && m->deadline < next) next = m->deadline;
            }
        }
    }
    if (ls_check_invariants_enabled()) ls_group_coord_check_invariants(c);
    return next;
}

void ls_group_coord_unload(ls_group_coord_t *c, const char *group_id)
{
    ls_group_t *g = lookup(c, group_id);
    if (!g || g->loading) return;
    for (int i = 0; i < g->nmembers; i++) {
        answer_join_waiter(g->members[i], LS_GERR_COORDINATOR_NOT_AVAILABLE);
        answer_sync_waiter(g->members[i], LS_GERR_COORDINATOR_NOT_AVAILABLE);
    }
    unlink_group(c, g);
    group_free(g);
}

char **ls_group_coord_ids(ls_group_coord_t *c, int *n)
{
    char **v = LS_NEWN(char *, c->ngroups + 1);
    int k = 0;
    for (size_t b = 0; b < c->nbuckets; b++)
        for (ls_group_t *g = c->buckets[b]; g; g = g->hnext)
            if (!g->loading && g->state != LS_GROUP_DEAD) v[k++] = ls_strdup(g->id);
    *n = k;
    return v;
}

void ls_group_coord_shutdown(ls_group_coord_t *c)
{
    c->shut = true;
    for (size_t b = 0; b < c->nbuckets; b++) {
        for (ls_group_t *g = c->buckets[b]; g; g = g->hnext) {
            for (int i = 0; i < g->nmembers; i++) {
                answer_join_waiter(g->members[i], LS_GERR_COORDINATOR_NOT_AVAILABLE);
                answer_sync_waiter(g->members[i], LS_GERR_COORDINATOR_NOT_AVAILABLE);
            }
        }
    }
}

void ls_group_coord_free(ls_group_coord_t *c)
{
    if (!c) return;
    for (size_t b = 0; b < c->nbuckets; b++) {
        for (ls_group_t *g = c->buckets[b], *next; g; g = next) {
            next = g->hnext;
            for (waiter_t *w = g->whead, *wn; w; w = wn) {
                wn = w->next;
                ls_free(w);
            }
            group_free(g);
        }
    }
    ls_free(c->buckets);
    ls_free(c);
}
