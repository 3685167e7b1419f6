/* The memberships a group holds when it is not classic: consumer (KIP-848,
 * cgroup.h), share (KIP-932, sgroup.h) and streams (KIP-1071, stgroup.h)
 * groups, each settled into the group object after a heartbeat or tick
 * (design note: group.h; the group object: group_int.h). */
#include "group/group_int.h"

/* ------------------------------------------------------------- consumer groups */

ls_group_type_t ls_grp_type(const ls_group_t *g)
{
    return g->cg   ? LS_GROUP_TYPE_CONSUMER
           : g->sg ? LS_GROUP_TYPE_SHARE
           : g->st ? LS_GROUP_TYPE_STREAMS
                   : LS_GROUP_TYPE_CLASSIC;
}

/* Members of the consumer, share or streams membership (0 for classic). */
int ls_grp_typed_members(const ls_group_t *g)
{
    return g->cg   ? ls_cgroup_member_count(g->cg)
           : g->sg ? ls_sgroup_member_count(g->sg)
           : g->st ? ls_stgroup_member_count(g->st)
                   : 0;
}
const char *ls_group_type(const ls_group_t *g) { return ls_group_type_name(ls_grp_type(g)); }
const ls_cgroup_t *ls_group_consumer(const ls_group_t *g) { return g->cg; }
const ls_sgroup_t *ls_group_share(const ls_group_t *g) { return g->sg; }
const ls_stgroup_t *ls_group_streams(const ls_group_t *g) { return g->st; }

const char *ls_group_state_label(const ls_group_t *g)
{
    if (g->state == LS_GROUP_DEAD) return ls_group_state_name(g->state);
    if (g->cg) return ls_cgroup_state_name(g->cg);
    if (g->sg) return ls_sgroup_state_name(g->sg);
    if (g->st) return ls_stgroup_state_name(g->st);
    return ls_group_state_name(g->state);
}

/* The group stops being of the consumer, share or streams type (deleted,
 * expired, back to classic). */
void ls_grp_drop_typed(ls_group_t *g)
{
    ls_cgroup_free(g->cg);
    g->cg = NULL;
    ls_sgroup_free(g->sg);
    g->sg = NULL;
    ls_stgroup_free(g->st);
    g->st = NULL;
}

/* After a heartbeat or a tick of a consumer group: the generation follows
 * the group epoch, the Empty clock restarts when the last member goes, and
 * the record is stored when anything it holds changed. True: stored. */
bool ls_grp_consumer_settle(ls_group_t *g, bool force)
{
    int32_t epoch = ls_cgroup_epoch(g->cg);
    bool members = ls_cgroup_member_count(g->cg) > 0;
    if (!members && g->generation != epoch) g->state_wall_ms = ls_grp_wall_ms(g->c);
    g->generation = epoch;
    if (!force && ls_cgroup_version(g->cg) == g->cg_stored) return false;
    g->cg_stored = ls_cgroup_version(g->cg);
    ls_grp_persist(g);
    return true;
}

ls_group_err ls_group_consumer_heartbeat(ls_group_t *g, ls_cgroup_hb_req_t *req,
                                         const ls_cgroup_topic_t *topics, int ntopics,
                                         ls_cgroup_hb_res_t *res, bool *stored)
{
    ls_group_coord_t *c = g->c;
    *stored = false;
    if (c->shut) return LS_GERR_COORDINATOR_NOT_AVAILABLE;
    if (!*g->id) return LS_GERR_INVALID_GROUP_ID;
    bool converted = false, was_dead = g->state == LS_GROUP_DEAD;
    if (g->sg || g->st) return LS_GERR_GROUP_ID_NOT_FOUND; /* a share or streams group */
    if (!g->cg) {
        if (g->state != LS_GROUP_DEAD && g->state != LS_GROUP_EMPTY)
            return LS_GERR_GROUP_ID_NOT_FOUND; /* a classic group with members */
        /* an Empty classic group (or none) becomes a consumer group; its
         * offsets stay, its epochs continue above its generation */
        g->cg = ls_cgroup_new(g->id, &c->cfg.consumer, g->generation);
        g->cg_stored = ls_cgroup_version(g->cg);
        converted = true;
    }
    req->now_ms = ls_grp_now_ms(c);
    /* what is due goes first (a member past its revocation deadline is
     * fenced before its heartbeat is heard); res then stays valid */
    ls_cgroup_tick(g->cg, req->now_ms);
    ls_cgroup_heartbeat(g->cg, req, topics, ntopics, res);
    if (converted && ls_cgroup_member_count(g->cg) == 0) {
        /* refused before anyone joined: the group stays what it was */
        ls_cgroup_free(g->cg);
        g->cg = NULL;
        return LS_GERR_NONE;
    }
    if (converted) {
        if (was_dead) ls_grp_revive(g);
        ls_grp_set_str(&g->protocol_type, "consumer");
        ls_grp_set_str(&g->protocol_name, NULL);
        ls_grp_set_str(&g->leader, NULL);
    }
    int64_t due = ls_cgroup_next_deadline(g->cg);
    *stored = ls_grp_consumer_settle(g, converted);
    if (due != INT64_MAX) ls_grp_wakeup(c, due);
    return LS_GERR_NONE;
}

/* ------------------------------------------------------------- share groups */

/* sgroup's on_leave: the embedder releases the member's acquired records */
void ls_grp_share_member_left(void *arg, const char *member_id, bool expired)
{
    ls_group_t *g = arg;
    if (expired)
        LS_INFO("group",
                "share group '%s': member %s sent no heartbeat within "
                "group.share.session.timeout.ms (%d ms); removed, its records released",
                g->id, member_id, g->c->cfg.share.session_timeout_ms);
    else
        LS_INFO("group", "share group '%s': member %s left", g->id, member_id);
    if (g->c->h.share_left) g->c->h.share_left(g->c->h.arg, g->id, member_id);
}

ls_sgroup_t *ls_grp_share_new(ls_group_t *g, int32_t epoch_floor)
{
    return ls_sgroup_new(g->id, &g->c->cfg.share, epoch_floor, ls_grp_share_member_left, g);
}

/* As ls_grp_consumer_settle, for a share group. */
bool ls_grp_share_settle(ls_group_t *g, bool force)
{
    int32_t epoch = ls_sgroup_epoch(g->sg);
    if (ls_sgroup_member_count(g->sg) == 0 && g->generation != epoch)
        g->state_wall_ms = ls_grp_wall_ms(g->c);
    g->generation = epoch;
    if (!force && ls_sgroup_version(g->sg) == g->sg_stored) return false;
    g->sg_stored = ls_sgroup_version(g->sg);
    ls_grp_persist(g);
    return true;
}

ls_group_err ls_group_share_heartbeat(ls_group_t *g, ls_sgroup_hb_req_t *req,
                                      const ls_cgroup_topic_t *topics, int ntopics,
                                      ls_sgroup_hb_res_t *res, bool *stored)
{
    ls_group_coord_t *c = g->c;
    *stored = false;
    if (c->shut) return LS_GERR_COORDINATOR_NOT_AVAILABLE;
    if (!*g->id) return LS_GERR_INVALID_GROUP_ID;
    bool converted = false;
    if (!g->sg) {
        /* only a group id nobody uses becomes a share group (Kafka's rule:
         * a classic or consumer group, even empty, stays what it is) */
        if (g->state != LS_GROUP_DEAD || g->cg || g->st) return LS_GERR_GROUP_ID_NOT_FOUND;
        g->sg = ls_grp_share_new(g, g->generation);
        g->sg_stored = ls_sgroup_version(g->sg);
        converted = true;
    }
    req->now_ms = ls_grp_now_ms(c);
    ls_sgroup_tick(g->sg, req->now_ms); /* due expiries first: res stays valid */
    ls_sgroup_heartbeat(g->sg, req, topics, ntopics, res);
    if (converted && ls_sgroup_member_count(g->sg) == 0) {
        ls_sgroup_free(g->sg);
        g->sg = NULL;
        return LS_GERR_NONE;
    }
    if (converted) {
        ls_grp_revive(g);
        ls_grp_set_str(&g->protocol_type, "share");
        ls_grp_set_str(&g->protocol_name, NULL);
        ls_grp_set_str(&g->leader, NULL);
    }
    int64_t due = ls_sgroup_tick(g->sg, req->now_ms);
    *stored = ls_grp_share_settle(g, converted);
    if (due != INT64_MAX) ls_grp_wakeup(c, due);
    return LS_GERR_NONE;
}

/* ------------------------------------------------------------- streams groups */

/* As ls_grp_consumer_settle, for a streams group. */
bool ls_grp_streams_settle(ls_group_t *g, bool force)
{
    int32_t epoch = ls_stgroup_epoch(g->st);
    if (ls_stgroup_member_count(g->st) == 0 && g->generation != epoch)
        g->state_wall_ms = ls_grp_wall_ms(g->c);
    g->generation = epoch;
    if (!force && ls_stgroup_version(g->st) == g->st_stored) return false;
    g->st_stored = ls_stgroup_version(g->st);
    ls_grp_persist(g);
    return true;
}

ls_group_err ls_group_streams_heartbeat(ls_group_t *g, ls_stgroup_hb_req_t *req,
                                        ls_stgroup_hb_res_t *res, bool *stored)
{
    ls_group_coord_t *c = g->c;
    *stored = false;
    if (c->shut) return LS_GERR_COORDINATOR_NOT_AVAILABLE;
    if (!*g->id) return LS_GERR_INVALID_GROUP_ID;
    bool converted = false, was_dead = g->state == LS_GROUP_DEAD;
    if (!g->st) {
        /* a group id nobody uses, or an Empty classic group (its offsets
         * stay, its epochs continue above its generation) */
        if (g->cg || g->sg || (g->state != LS_GROUP_DEAD && g->state != LS_GROUP_EMPTY))
            return LS_GERR_GROUP_ID_NOT_FOUND;
        g->st = ls_stgroup_new(g->id, &c->cfg.streams, g->generation);
        g->st_stored = ls_stgroup_version(g->st);
        converted = true;
    }
    req->now_ms = ls_grp_now_ms(c);
    ls_stgroup_tick(g->st, req->now_ms); /* due expiries first: res stays valid */
    ls_stgroup_heartbeat(g->st, req, res);
    if (converted && ls_stgroup_member_count(g->st) == 0) {
        ls_stgroup_free(g->st);
        g->st = NULL;
        return LS_GERR_NONE;
    }
    if (converted) {
        if (was_dead) ls_grp_revive(g);
        ls_grp_set_str(&g->protocol_type, "streams");
        ls_grp_set_str(&g->protocol_name, NULL);
        ls_grp_set_str(&g->leader, NULL);
    }
    int64_t due = ls_stgroup_next_deadline(g->st);
    *stored = ls_grp_streams_settle(g, converted);
    if (due != INT64_MAX) ls_grp_wakeup(c, due);
    return LS_GERR_NONE;
}
