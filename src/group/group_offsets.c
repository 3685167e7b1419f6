/* Committed offsets of a group, the commit and fetch checks of every group
 * type, deletion and offset retention (design note: group.h; the group
 * object: group_int.h). */
#include "group/group_int.h"

static otopic_t *find_topic(ls_group_t *g, const char *topic, bool create)
{
    for (int i = 0; i < g->ntopics; i++)
        if (strcmp(g->topics[i].name, topic) == 0) return &g->topics[i];
    if (!create) return NULL;
    if (g->ntopics == g->captopics) {
        g->captopics = g->captopics ? g->captopics * 2 : 4;
        g->topics = ls_realloc(g->topics, (size_t)g->captopics * sizeof *g->topics);
    }
    otopic_t *t = &g->topics[g->ntopics++];
    t->name = ls_strdup(topic);
    ls_i64map_init(&t->parts);
    return t;
}

static void offset_free(ls_group_offset_t *o)
{
    if (!o) return;
    ls_free(o->metadata);
    ls_free(o);
}

static int count_offsets(const ls_group_t *g)
{
    int n = 0;
    for (int i = 0; i < g->ntopics; i++)
        n += (int)g->topics[i].parts.count;
    return n;
}

void ls_grp_clear_offsets(ls_group_t *g)
{
    for (int i = 0; i < g->ntopics; i++) {
        size_t it = 0;
        int64_t k;
        void *v;
        while (ls_i64map_next(&g->topics[i].parts, &it, &k, &v))
            offset_free(v);
        ls_i64map_free(&g->topics[i].parts);
        ls_free(g->topics[i].name);
    }
    ls_free(g->topics);
    g->topics = NULL;
    g->ntopics = g->captopics = 0;
}

/* OffsetCommit's and TxnOffsetCommit's membership rules (group.h). */
/* A consumer or streams group member's epoch against a commit's. */
static ls_cgroup_err member_epoch_check(const ls_group_t *g, const char *member_id, int32_t epoch)
{
    if (!member_id) member_id = "";
    return g->cg ? ls_cgroup_commit_check(g->cg, member_id, epoch)
                 : ls_stgroup_commit_check(g->st, member_id, epoch);
}

/* A consumer (or streams) group's rules (Kafka's): without membership
 * (epoch < 0) only while it has no members; else the member must exist with
 * this epoch. A transactional commit without membership is accepted as for
 * classic groups; with it, a different epoch is ILLEGAL_GENERATION. */
static ls_group_err consumer_commit_check(ls_group_t *g, int32_t epoch, const char *member_id,
                                          bool txn)
{
    bool anonymous = epoch < 0 && (!member_id || !*member_id);
    if (anonymous && (txn || ls_grp_typed_members(g) == 0)) return LS_GERR_NONE;
    switch (member_epoch_check(g, member_id, epoch)) {
    case LS_CGERR_NONE: return LS_GERR_NONE;
    case LS_CGERR_STALE_MEMBER_EPOCH:
        return txn ? LS_GERR_ILLEGAL_GENERATION : LS_GERR_STALE_MEMBER_EPOCH;
    case LS_CGERR_FENCED_MEMBER_EPOCH:
        return txn ? LS_GERR_ILLEGAL_GENERATION : LS_GERR_FENCED_MEMBER_EPOCH;
    default: return LS_GERR_UNKNOWN_MEMBER_ID;
    }
}

static ls_group_err commit_check(ls_group_t *g, int32_t generation, const char *member_id,
                                 const char *instance_id, bool txn)
{
    if (g->c->shut) return LS_GERR_COORDINATOR_NOT_AVAILABLE;
    if (g->sg) return LS_GERR_GROUP_ID_NOT_FOUND; /* share groups commit no offsets */
    if (g->cg || g->st) return consumer_commit_check(g, generation, member_id, txn);
    if (g->state == LS_GROUP_DEAD)
        return generation < 0 ? LS_GERR_NONE : LS_GERR_ILLEGAL_GENERATION;
    if (ls_grp_instance_fenced(g, member_id ? member_id : "", instance_id))
        return LS_GERR_FENCED_INSTANCE_ID;
    if (generation < 0 && g->state == LS_GROUP_EMPTY)
        return LS_GERR_NONE; /* the group only stores offsets */
    if (txn) {
        /* versions before 3 carry no membership: accepted whatever the state */
        if (generation < 0 && (!member_id || !*member_id) && !instance_id) return LS_GERR_NONE;
    } else if (g->state == LS_GROUP_COMPLETING_REBALANCE) {
        return LS_GERR_REBALANCE_IN_PROGRESS;
    }
    member_t *m = ls_grp_find_member(g, member_id);
    if (!m) return LS_GERR_UNKNOWN_MEMBER_ID;
    if (generation != g->generation) return LS_GERR_ILLEGAL_GENERATION;
    if (!txn) ls_grp_heartbeat_reset(g, m);
    return LS_GERR_NONE;
}

ls_group_err ls_group_commit_check(ls_group_t *g, int32_t generation, const char *member_id,
                                   const char *instance_id)
{
    return commit_check(g, generation, member_id, instance_id, false);
}

ls_group_err ls_group_fetch_check(ls_group_t *g, const char *member_id, int32_t member_epoch)
{
    if (g->sg) return LS_GERR_GROUP_ID_NOT_FOUND;
    if ((!g->cg && !g->st) || (member_epoch < 0 && (!member_id || !*member_id)))
        return LS_GERR_NONE;
    switch (member_epoch_check(g, member_id, member_epoch)) {
    case LS_CGERR_NONE: return LS_GERR_NONE;
    case LS_CGERR_UNKNOWN_MEMBER_ID: return LS_GERR_UNKNOWN_MEMBER_ID;
    default: return LS_GERR_STALE_MEMBER_EPOCH;
    }
}

ls_group_err ls_group_txn_commit_check(ls_group_t *g, int32_t generation, const char *member_id,
                                       const char *instance_id)
{
    return commit_check(g, generation, member_id, instance_id, true);
}

void ls_group_txn_offsets_added(ls_group_t *g)
{
    if (g->state == LS_GROUP_DEAD) {
        ls_grp_revive(g);
        ls_grp_persist(g);
    }
    g->txn_pending = true;
    g->txn_adds++;
}

bool ls_group_txn_pending(const ls_group_t *g) { return g->txn_pending; }
uint64_t ls_group_txn_adds(const ls_group_t *g) { return g->txn_adds; }

void ls_group_offsets_reload(ls_group_t *g, ls_group_loaded_t *l, uint64_t txn_adds)
{
    if (g->state == LS_GROUP_DEAD) return;
    ls_grp_clear_offsets(g);
    for (int i = 0; i < l->noffsets; i++)
        ls_group_offset_put(g, l->offsets[i].topic, l->offsets[i].partition, &l->offsets[i].o);
    /* a TxnOffsetCommit after the read began may have written pending keys
     * the read did not see: the flag stays until a later reread */
    g->txn_pending = l->ntxn_pending > 0 || g->txn_adds != txn_adds;
}

void ls_group_offset_put(ls_group_t *g, const char *topic, int32_t partition,
                         const ls_group_offset_t *o)
{
    if (g->state == LS_GROUP_DEAD) {
        ls_grp_revive(g);
        ls_grp_persist(g);
    }
    otopic_t *t = find_topic(g, topic, true);
    ls_group_offset_t *n = LS_NEW(ls_group_offset_t);
    *n = *o;
    n->metadata = NULL;
    if (o->metadata) {
        n->metadata = ls_malloc((size_t)o->metadata_len + 1);
        memcpy(n->metadata, o->metadata, (size_t)o->metadata_len);
        n->metadata[o->metadata_len] = 0;
    }
    offset_free(ls_i64map_del(&t->parts, partition));
    ls_i64map_put(&t->parts, partition, n);
}

static bool offset_stale(ls_group_t *g, const char *topic, const ls_group_offset_t *o)
{
    if (!g->c->h.topic_stream_no) return false;
    int64_t sn = g->c->h.topic_stream_no(g->c->h.arg, topic);
    return sn < 0 || (o->stream_no >= 0 && o->stream_no != sn);
}

const ls_group_offset_t *ls_group_offset_get(ls_group_t *g, const char *topic, int32_t partition)
{
    otopic_t *t = find_topic(g, topic, false);
    ls_group_offset_t *o = t ? ls_i64map_get(&t->parts, partition) : NULL;
    if (o && offset_stale(g, topic, o)) return NULL;
    return o;
}

bool ls_group_offset_next(ls_group_t *g, int64_t *iter, const char **topic, int32_t *partition,
                          const ls_group_offset_t **o)
{
    /* iter = topic index << 32 | slot position inside that topic's map */
    int ti = (int)(*iter >> 32);
    size_t slot = (size_t)(*iter & 0xffffffff);
    for (; ti < g->ntopics; ti++, slot = 0) {
        int64_t k;
        void *v;
        while (ls_i64map_next(&g->topics[ti].parts, &slot, &k, &v)) {
            if (offset_stale(g, g->topics[ti].name, v)) continue;
            *iter = ((int64_t)ti << 32) | (int64_t)slot;
            *topic = g->topics[ti].name;
            *partition = (int32_t)k;
            *o = v;
            return true;
        }
    }
    *iter = (int64_t)g->ntopics << 32;
    return false;
}

void ls_group_offset_del(ls_group_t *g, const char *topic, int32_t partition)
{
    otopic_t *t = find_topic(g, topic, false);
    if (t) offset_free(ls_i64map_del(&t->parts, partition));
}

/* Topics named in the members' consumer-protocol subscriptions
 * (ConsumerProtocolSubscription: int16 version, [string] topics, ...). */
static bool subscribed(const member_t *m, const char *protocol, const char *topic)
{
    int pi = ls_grp_member_protocol_index(m, protocol);
    if (pi < 0) return false;
    const uint8_t *p = m->pmeta[pi], *end = p + m->plen[pi];
    if (end - p < 6) return false;
    p += 2;
    int32_t n = (int32_t)ls_be32_get(p);
    p += 4;
    size_t tl = strlen(topic);
    for (int32_t i = 0; i < n && end - p >= 2; i++) {
        int16_t l = (int16_t)ls_be16_get(p);
        p += 2;
        if (l < 0 || end - p < l) return false;
        if ((size_t)l == tl && memcmp(p, topic, tl) == 0) return true;
        p += l;
    }
    return false;
}

ls_group_err ls_group_offset_delete_check(ls_group_t *g, const char *topic)
{
    if (g->state == LS_GROUP_DEAD || g->sg) return LS_GERR_GROUP_ID_NOT_FOUND;
    if (g->cg || g->st)
        return (g->cg ? ls_cgroup_subscribed(g->cg, topic) : ls_stgroup_subscribed(g->st, topic))
                   ? LS_GERR_GROUP_SUBSCRIBED_TO_TOPIC
                   : LS_GERR_NONE;
    if (g->state == LS_GROUP_EMPTY) return LS_GERR_NONE;
    if (!ls_grp_str_eq(g->protocol_type, "consumer")) return LS_GERR_NON_EMPTY_GROUP;
    for (int i = 0; i < g->nmembers; i++)
        if (subscribed(g->members[i], g->protocol_name, topic))
            return LS_GERR_GROUP_SUBSCRIBED_TO_TOPIC;
    return LS_GERR_NONE;
}

ls_group_err ls_group_delete(ls_group_t *g)
{
    if (g->state == LS_GROUP_DEAD) return LS_GERR_GROUP_ID_NOT_FOUND;
    if (g->state != LS_GROUP_EMPTY || ls_grp_typed_members(g) > 0) return LS_GERR_NON_EMPTY_GROUP;
    ls_grp_drop_typed(g);
    for (int i = g->npending - 1; i >= 0; i--)
        ls_grp_remove_pending(g, i);
    ls_grp_clear_offsets(g);
    g->txn_pending = false; /* the store deletes them with the group */
    g->state = LS_GROUP_DEAD;
    ls_grp_persist(g);
    return LS_GERR_NONE;
}

int ls_group_expire(ls_group_t *g, void (*drop_cb)(void *arg, const char *topic, int32_t partition),
                    void *arg)
{
    ls_group_coord_t *c = g->c;
    if (g->state == LS_GROUP_DEAD || g->loading) return 0;
    int64_t now = ls_grp_wall_ms(c), ret = c->cfg.offsets_retention_ms;
    bool empty = g->state == LS_GROUP_EMPTY && ls_grp_typed_members(g) == 0;
    int dropped = 0;
    for (int i = 0; i < g->ntopics; i++) {
        otopic_t *t = &g->topics[i];
        size_t it = 0;
        int64_t k;
        void *v;
        int64_t *drop = NULL;
        size_t ndrop = 0;
        while (ls_i64map_next(&t->parts, &it, &k, &v)) {
            ls_group_offset_t *o = v;
            bool expire = offset_stale(g, t->name, o);
            if (!expire && empty && ret >= 0) {
                /* KIP-211: offsets of an Empty consumer group expire together,
                 * counting from when it became Empty; those of a group without
                 * membership each from its commit */
                int64_t base = o->commit_ms;
                if (g->protocol_type && g->state_wall_ms > base) base = g->state_wall_ms;
                expire = now - base >= ret;
            }
            if (expire) {
                drop = ls_realloc(drop, (ndrop + 1) * sizeof *drop);
                drop[ndrop++] = k;
            }
        }
        for (size_t j = 0; j < ndrop; j++) {
            if (drop_cb) drop_cb(arg, t->name, (int32_t)drop[j]);
            offset_free(ls_i64map_del(&t->parts, drop[j]));
            dropped++;
        }
        ls_free(drop);
    }
    if (empty && count_offsets(g) == 0 && g->npending == 0 && !g->txn_pending &&
        (ret >= 0 && now - g->state_wall_ms >= ret)) {
        ls_grp_clear_offsets(g);
        ls_grp_drop_typed(g);
        g->state = LS_GROUP_DEAD;
        ls_grp_persist(g);
    }
    return dropped;
}
