/* Share-partition state (KIP-932): see share_partition.h for the design note. */
#include "group/share_partition.h"
#include <string.h>
#include "base/alloc.h"
#include "base/binrec.h"

/* One in-flight offset. Owners are slots of the member table, so a record
 * costs 16 bytes whatever the member id's length. */
typedef struct rec {
    int64_t lock_until; /* ACQUIRED only */
    int32_t owner;      /* member slot; -1 unless ACQUIRED */
    uint16_t delivery_count;
    uint8_t state;
} rec_t;

struct ls_sharep {
    ls_sharep_config_t cfg;
    int64_t spso;
    /* the window [spso, spso + n) lives in r[head, head + n) */
    rec_t *r;
    int head, n, cap;
    char **members; /* slot -> member id; NULL: free */
    int nmembers;
    int nacquired;          /* records in ACQUIRED (lets tick skip the scan) */
    int64_t next_lock;      /* no lock ends before this (lets tick skip the scan) */
    ls_sharep_range_t *out; /* the last acquire's ranges */
    int nout, out_cap;
    uint64_t version;
};

void ls_sharep_config_defaults(ls_sharep_config_t *cfg)
{
    *cfg = (ls_sharep_config_t){
        .delivery_count_limit = 5, .record_lock_duration_ms = 30000, .max_record_locks = 2000};
}

const char *ls_sharep_config_check(const ls_sharep_config_t *cfg)
{
    if (cfg->delivery_count_limit < 2 || cfg->delivery_count_limit > 10)
        return "group.share.delivery.count.limit must be between 2 and 10";
    if (cfg->record_lock_duration_ms < 1000 || cfg->record_lock_duration_ms > 3600000)
        return "group.share.record.lock.duration.ms must be between 1000 and 3600000";
    if (cfg->max_record_locks < 100 || cfg->max_record_locks > LS_SHAREP_MAX_RECORD_LOCKS_MAX)
        return "group.share.partition.max.record.locks must be between 100 and 10000";
    return NULL;
}

const char *ls_sharep_err_name(ls_sharep_err e)
{
    switch (e) {
    case LS_SPERR_NONE: return "NONE";
    case LS_SPERR_INVALID_REQUEST: return "INVALID_REQUEST";
    case LS_SPERR_INVALID_RECORD_STATE: return "INVALID_RECORD_STATE";
    }
    return "?";
}

ls_sharep_t *ls_sharep_new(const ls_sharep_config_t *cfg, int64_t start_offset)
{
    ls_sharep_t *sp = LS_NEW(ls_sharep_t);
    sp->cfg = *cfg;
    sp->spso = start_offset < 0 ? 0 : start_offset;
    return sp;
}

static void advance(ls_sharep_t *sp);

void ls_sharep_set_config(ls_sharep_t *sp, const ls_sharep_config_t *cfg)
{
    bool lower = cfg->delivery_count_limit < sp->cfg.delivery_count_limit;
    sp->cfg = *cfg;
    if (!lower) return;
    bool changed = false;
    for (int i = 0; i < sp->n; i++) {
        rec_t *r = &sp->r[sp->head + i];
        if (r->state == LS_SHAREP_AVAILABLE && r->delivery_count >= cfg->delivery_count_limit) {
            r->state = LS_SHAREP_ARCHIVED;
            changed = true;
        }
    }
    if (!changed) return;
    advance(sp);
    sp->version++;
}

void ls_sharep_free(ls_sharep_t *sp)
{
    if (!sp) return;
    for (int i = 0; i < sp->nmembers; i++)
        ls_free(sp->members[i]);
    ls_free(sp->members);
    ls_free(sp->r);
    ls_free(sp->out);
    ls_free(sp);
}

int64_t ls_sharep_spso(const ls_sharep_t *sp) { return sp->spso; }
int64_t ls_sharep_speo(const ls_sharep_t *sp) { return sp->spso + sp->n; }
uint64_t ls_sharep_version(const ls_sharep_t *sp) { return sp->version; }

static rec_t *at(const ls_sharep_t *sp, int64_t offset)
{
    return &sp->r[sp->head + (int)(offset - sp->spso)];
}

bool ls_sharep_record(const ls_sharep_t *sp, int64_t offset, ls_sharep_state *state,
                      int32_t *delivery_count, const char **member_id)
{
    if (offset < sp->spso || offset >= sp->spso + sp->n) return false;
    const rec_t *r = at(sp, offset);
    *state = (ls_sharep_state)r->state;
    *delivery_count = r->delivery_count;
    *member_id = r->state == LS_SHAREP_ACQUIRED ? sp->members[r->owner] : NULL;
    return true;
}

static void push(ls_sharep_t *sp, rec_t rec)
{
    if (sp->head + sp->n == sp->cap) {
        if (sp->head > 0) { /* slide the window back to the front */
            memmove(sp->r, sp->r + sp->head, (size_t)sp->n * sizeof *sp->r);
            sp->head = 0;
        }
        if (sp->n == sp->cap) {
            sp->cap = sp->cap ? sp->cap * 2 : 64;
            sp->r = ls_realloc(sp->r, (size_t)sp->cap * sizeof *sp->r);
        }
    }
    sp->r[sp->head + sp->n++] = rec;
}

/* Moves the SPSO over the finished prefix. */
static void advance(ls_sharep_t *sp)
{
    while (sp->n > 0 && (sp->r[sp->head].state == LS_SHAREP_ACKNOWLEDGED ||
                         sp->r[sp->head].state == LS_SHAREP_ARCHIVED)) {
        sp->head++;
        sp->n--;
        sp->spso++;
    }
    if (sp->n == 0) sp->head = 0;
}

/* A record leaves ACQUIRED without an acknowledgement (RELEASE, lock expiry,
 * its member left): available again unless it was delivered as often as the
 * limit allows. Kafka counts a delivery at acquisition, so the count is not
 * taken back. */
static void unlock(ls_sharep_t *sp, rec_t *r)
{
    r->state = r->delivery_count >= sp->cfg.delivery_count_limit ? LS_SHAREP_ARCHIVED
                                                                 : LS_SHAREP_AVAILABLE;
    r->owner = -1;
    sp->nacquired--;
}

int64_t ls_sharep_tick(ls_sharep_t *sp, int64_t now_ms)
{
    int64_t next = INT64_MAX;
    if (sp->nacquired == 0) return next;
    if (now_ms < sp->next_lock) return sp->next_lock;
    bool archived = false;
    for (int i = 0; i < sp->n; i++) {
        rec_t *r = &sp->r[sp->head + i];
        if (r->state != LS_SHAREP_ACQUIRED) continue;
        if (r->lock_until <= now_ms) {
            unlock(sp, r);
            archived |= r->state == LS_SHAREP_ARCHIVED;
        } else if (r->lock_until < next) {
            next = r->lock_until;
        }
    }
    /* back to AVAILABLE does not show in the stored form (ACQUIRED is stored
     * as AVAILABLE); archiving does */
    if (archived) sp->version++;
    advance(sp);
    sp->next_lock = next;
    return next;
}

static int find_member(const ls_sharep_t *sp, const char *member_id)
{
    for (int i = 0; i < sp->nmembers; i++)
        if (sp->members[i] && !strcmp(sp->members[i], member_id)) return i;
    return -1;
}

/* The member's slot, made if needed; slots no ACQUIRED record refers to are
 * freed first, so the table stays as small as the set of lock holders. */
static int member_slot(ls_sharep_t *sp, const char *member_id)
{
    int s = find_member(sp, member_id);
    if (s >= 0) return s;
    bool *used = LS_NEWN(bool, sp->nmembers + 1);
    for (int i = 0; i < sp->n; i++)
        if (sp->r[sp->head + i].state == LS_SHAREP_ACQUIRED) used[sp->r[sp->head + i].owner] = true;
    for (int i = 0; i < sp->nmembers; i++)
        if (!used[i]) {
            ls_free(sp->members[i]);
            sp->members[i] = NULL;
            if (s < 0) s = i;
        }
    ls_free(used);
    if (s < 0) {
        sp->members = ls_realloc(sp->members, (size_t)(sp->nmembers + 1) * sizeof *sp->members);
        s = sp->nmembers++;
    }
    sp->members[s] = ls_strdup(member_id);
    return s;
}

static void out_add(ls_sharep_t *sp, int64_t offset, int32_t count)
{
    ls_sharep_range_t *last = sp->nout ? &sp->out[sp->nout - 1] : NULL;
    if (last && last->last + 1 == offset && last->delivery_count == count) {
        last->last = offset;
        return;
    }
    if (sp->nout == sp->out_cap) {
        sp->out_cap = sp->out_cap ? sp->out_cap * 2 : 8;
        sp->out = ls_realloc(sp->out, (size_t)sp->out_cap * sizeof *sp->out);
    }
    sp->out[sp->nout++] = (ls_sharep_range_t){offset, offset, count};
}

static void take(ls_sharep_t *sp, rec_t *r, int64_t offset, int slot, int64_t now_ms)
{
    r->state = LS_SHAREP_ACQUIRED;
    r->owner = slot;
    r->delivery_count++;
    r->lock_until = now_ms + sp->cfg.record_lock_duration_ms;
    if (r->lock_until < sp->next_lock || sp->nacquired == 0) sp->next_lock = r->lock_until;
    sp->nacquired++;
    out_add(sp, offset, r->delivery_count);
}

int ls_sharep_acquire(ls_sharep_t *sp, const char *member_id, int64_t log_end, int max_records,
                      int64_t now_ms, const ls_sharep_range_t **ranges)
{
    ls_sharep_tick(sp, now_ms);
    sp->nout = 0;
    *ranges = sp->out;
    if (max_records <= 0 || !member_id) return 0;
    int got = 0, slot = -1;
    for (int i = 0; i < sp->n && got < max_records && sp->spso + i < log_end; i++) {
        rec_t *r = &sp->r[sp->head + i];
        if (r->state != LS_SHAREP_AVAILABLE) continue;
        if (slot < 0) slot = member_slot(sp, member_id);
        take(sp, r, sp->spso + i, slot, now_ms);
        got++;
    }
    while (got < max_records && sp->spso + sp->n < log_end && sp->n < sp->cfg.max_record_locks) {
        if (slot < 0) slot = member_slot(sp, member_id);
        push(sp, (rec_t){.owner = -1, .state = LS_SHAREP_AVAILABLE});
        take(sp, &sp->r[sp->head + sp->n - 1], sp->spso + sp->n - 1, slot, now_ms);
        got++;
    }
    if (got) sp->version++; /* delivery counts moved */
    *ranges = sp->out;
    return sp->nout;
}

int64_t ls_sharep_next_offset(ls_sharep_t *sp, int64_t now_ms)
{
    ls_sharep_tick(sp, now_ms);
    for (int i = 0; i < sp->n; i++)
        if (sp->r[sp->head + i].state == LS_SHAREP_AVAILABLE) return sp->spso + i;
    return sp->n < sp->cfg.max_record_locks ? sp->spso + sp->n : -1;
}

static bool valid_type(uint8_t t) { return t <= LS_SHAREP_RENEW; }

ls_sharep_err ls_sharep_acknowledge(ls_sharep_t *sp, const char *member_id, int64_t first,
                                    int64_t last, const uint8_t *types, int ntypes, int64_t now_ms)
{
    ls_sharep_tick(sp, now_ms);
    if (!member_id || first < 0 || last < first || !types) return LS_SPERR_INVALID_REQUEST;
    /* never handed out: the client cannot have fetched it (checked first, so
     * the range is at most the window below) */
    if (last >= sp->spso + sp->n) return LS_SPERR_INVALID_REQUEST;
    if (ntypes != 1 && (int64_t)ntypes != last - first + 1) return LS_SPERR_INVALID_REQUEST;
    for (int i = 0; i < ntypes; i++)
        if (!valid_type(types[i])) return LS_SPERR_INVALID_REQUEST;
    /* below the SPSO every record is finished, so none is acquired */
    if (first < sp->spso) return LS_SPERR_INVALID_RECORD_STATE;
    int slot = find_member(sp, member_id);
    for (int64_t o = first; o <= last; o++) {
        const rec_t *r = at(sp, o);
        if (slot < 0 || r->state != LS_SHAREP_ACQUIRED || r->owner != slot)
            return LS_SPERR_INVALID_RECORD_STATE;
    }
    bool stored_change = false;
    for (int64_t o = first; o <= last; o++) {
        rec_t *r = at(sp, o);
        uint8_t t = types[ntypes == 1 ? 0 : (int)(o - first)];
        switch ((ls_sharep_ack)t) {
        case LS_SHAREP_RENEW: r->lock_until = now_ms + sp->cfg.record_lock_duration_ms; continue;
        case LS_SHAREP_RELEASE: unlock(sp, r); break;
        case LS_SHAREP_ACCEPT:
            r->state = LS_SHAREP_ACKNOWLEDGED;
            r->owner = -1;
            sp->nacquired--;
            break;
        case LS_SHAREP_GAP:
        case LS_SHAREP_REJECT:
            r->state = LS_SHAREP_ARCHIVED;
            r->owner = -1;
            sp->nacquired--;
            break;
        }
        /* RELEASE back to AVAILABLE looks the same stored; harmless to count */
        stored_change = true;
    }
    if (stored_change) sp->version++;
    advance(sp);
    return LS_SPERR_NONE;
}

void ls_sharep_release_member(ls_sharep_t *sp, const char *member_id, int64_t now_ms)
{
    ls_sharep_tick(sp, now_ms);
    int slot = find_member(sp, member_id);
    if (slot < 0) return;
    bool archived = false;
    for (int i = 0; i < sp->n; i++) {
        rec_t *r = &sp->r[sp->head + i];
        if (r->state == LS_SHAREP_ACQUIRED && r->owner == slot) {
            unlock(sp, r);
            archived |= r->state == LS_SHAREP_ARCHIVED;
        }
    }
    ls_free(sp->members[slot]);
    sp->members[slot] = NULL;
    if (archived) sp->version++;
    advance(sp);
}

void ls_sharep_log_start(ls_sharep_t *sp, int64_t log_start)
{
    if (log_start <= sp->spso) return;
    while (sp->n > 0 && sp->spso < log_start) {
        if (sp->r[sp->head].state == LS_SHAREP_ACQUIRED) sp->nacquired--;
        sp->head++;
        sp->n--;
        sp->spso++;
    }
    if (sp->n == 0) {
        sp->head = 0;
        sp->spso = log_start;
    }
    sp->version++;
    advance(sp);
}

/* ---- stored form (docs/FORMATS.md "Share partition state") ---- */

#define STATE_VERSION 1

/* ACQUIRED is stored as AVAILABLE: a lock dies with its broker. */
static uint8_t stored_state(const rec_t *r)
{
    return r->state == LS_SHAREP_ACQUIRED ? LS_SHAREP_AVAILABLE : r->state;
}

void ls_sharep_encode(const ls_sharep_t *sp, ls_buf_t *b)
{
    ls_buf_append_u8(b, STATE_VERSION);
    ls_bw_u64(b, (uint64_t)sp->spso);
    ls_bw_u32(b, (uint32_t)sp->n);
    /* runs of equal (state, delivery count) */
    size_t count_at = b->len;
    ls_bw_u32(b, 0);
    uint32_t runs = 0;
    for (int i = 0; i < sp->n;) {
        const rec_t *r = &sp->r[sp->head + i];
        int j = i + 1;
        while (j < sp->n && stored_state(&sp->r[sp->head + j]) == stored_state(r) &&
               sp->r[sp->head + j].delivery_count == r->delivery_count)
            j++;
        ls_bw_u32(b, (uint32_t)(j - i));
        ls_buf_append_u8(b, stored_state(r));
        ls_bw_u16(b, r->delivery_count);
        runs++;
        i = j;
    }
    b->data[count_at] = (uint8_t)(runs >> 24);
    b->data[count_at + 1] = (uint8_t)(runs >> 16);
    b->data[count_at + 2] = (uint8_t)(runs >> 8);
    b->data[count_at + 3] = (uint8_t)runs;
}

ls_status ls_sharep_decode(const uint8_t *p, size_t len, const ls_sharep_config_t *cfg,
                           ls_sharep_t **out)
{
    *out = NULL;
    ls_br_t r = ls_br_init(p, len);
    if (ls_br_u8(&r) != STATE_VERSION) return LS_ECORRUPT;
    uint64_t spso = ls_br_u64(&r);
    uint32_t n = ls_br_u32(&r);
    uint32_t runs = ls_br_u32(&r);
    /* each run takes 7 bytes: garbage never makes a big allocation */
    if (r.err || spso > (uint64_t)INT64_MAX - LS_SHAREP_MAX_RECORD_LOCKS_MAX ||
        n > LS_SHAREP_MAX_RECORD_LOCKS_MAX || runs > n || (size_t)(r.end - r.p) != (size_t)runs * 7)
        return LS_ECORRUPT;
    ls_sharep_t *sp = ls_sharep_new(cfg, (int64_t)spso);
    uint32_t total = 0;
    for (uint32_t k = 0; k < runs; k++) {
        uint32_t len_run = ls_br_u32(&r);
        uint8_t st = ls_br_u8(&r);
        uint16_t count = ls_br_u16(&r);
        bool terminal = st == LS_SHAREP_ACKNOWLEDGED || st == LS_SHAREP_ARCHIVED;
        /* no empty runs, no locks, no finished record at the SPSO */
        if (len_run == 0 || len_run > n - total || st == LS_SHAREP_ACQUIRED ||
            st > LS_SHAREP_ARCHIVED || (k == 0 && terminal)) {
            ls_sharep_free(sp);
            return LS_ECORRUPT;
        }
        for (uint32_t i = 0; i < len_run; i++) {
            rec_t rec = {.owner = -1, .state = st, .delivery_count = count};
            /* a limit lowered since the store archives what it now forbids */
            if (st == LS_SHAREP_AVAILABLE && count >= cfg->delivery_count_limit)
                rec.state = LS_SHAREP_ARCHIVED;
            push(sp, rec);
        }
        total += len_run;
    }
    if (r.err || total != n) {
        ls_sharep_free(sp);
        return LS_ECORRUPT;
    }
    advance(sp);
    *out = sp;
    return LS_OK;
}
