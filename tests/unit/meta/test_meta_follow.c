/* A followed record (meta/meta_follow.h) over the in-memory store: the
 * owner's copy follows puts and deletions from other writers, survives its
 * watch falling behind the store's history, and changes go by compare-and-
 * set, retrying when another writer wins the compare. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "meta/meta.h"
#include "meta/meta_follow.h"
#include "unit.h"

#define KEY "/ls/test/followed"

/* The owner: the last value its hook installed, and a gate that can hold
 * the hook on the store's watch thread. */
typedef struct owner {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char value[64]; /* "" while absent */
    int64_t rev;
    int loads;
    bool hold, held; /* hold: the hook waits; held: it is waiting */
} owner_t;

static void owner_init(owner_t *o)
{
    memset(o, 0, sizeof *o);
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
}

static void owner_destroy(owner_t *o)
{
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
}

static bool load(void *arg, const uint8_t *val, size_t vlen, int64_t mod_rev)
{
    owner_t *o = arg;
    if (val && !strncmp((const char *)val, "bad", 3)) return false; /* does not parse */
    pthread_mutex_lock(&o->mu);
    while (o->hold) {
        o->held = true;
        pthread_cond_broadcast(&o->cv);
        pthread_cond_wait(&o->cv, &o->mu);
    }
    if (mod_rev > o->rev) { /* newer only, as an owner installs */
        snprintf(o->value, sizeof o->value, "%.*s", (int)vlen, val ? (const char *)val : "");
        o->rev = mod_rev;
    }
    o->loads++;
    pthread_cond_broadcast(&o->cv);
    pthread_mutex_unlock(&o->mu);
    return true;
}

/* Waits (30 s at most: a hang, not a timing assertion) until the owner
 * holds want. */
static bool await_value(owner_t *o, const char *want)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 30;
    pthread_mutex_lock(&o->mu);
    while (strcmp(o->value, want) != 0)
        if (pthread_cond_timedwait(&o->cv, &o->mu, &ts) != 0) break;
    bool ok = strcmp(o->value, want) == 0;
    pthread_mutex_unlock(&o->mu);
    return ok;
}

static ls_status follow(ls_meta_t *m, owner_t *o, ls_meta_follow_t **f)
{
    owner_init(o);
    ls_meta_follow_cfg_t cfg = {.key = KEY,
                                .tag = "test",
                                .what = "test record",
                                .thread = "ls-test-rewatch",
                                .load = load,
                                .arg = o};
    return ls_meta_follow_open(m, &cfg, f);
}

static void put(ls_meta_t *m, const char *v) { CHECK(ls_meta_put(m, KEY, v, strlen(v)) == LS_OK); }

TEST(follows_puts_and_deletions)
{
    ls_meta_t *m = ls_meta_mem_open();
    put(m, "one");
    owner_t o;
    ls_meta_follow_t *f;
    CHECK(follow(m, &o, &f) == LS_OK);
    CHECK(strcmp(o.value, "one") == 0); /* loaded before open returns */
    put(m, "two");
    CHECK(await_value(&o, "two"));
    CHECK(ls_meta_del(m, KEY) == LS_OK);
    CHECK(await_value(&o, ""));
    put(m, "bad value"); /* does not parse: the owner keeps what it had */
    put(m, "three");
    CHECK(await_value(&o, "three"));
    ls_meta_follow_close(f);
    owner_destroy(&o);
    ls_meta_close(m);
}

TEST(open_refuses_a_corrupt_record)
{
    ls_meta_t *m = ls_meta_mem_open();
    put(m, "bad");
    owner_t o;
    ls_meta_follow_t *f = (ls_meta_follow_t *)1;
    CHECK(follow(m, &o, &f) == LS_ECORRUPT);
    CHECK(f == NULL);
    owner_destroy(&o);
    ls_meta_close(m);
}

/* The hook is held on the watch thread while more than the store's watch
 * history is written: the watch is told it fell behind, and the follower
 * rereads the record and watches again, so the owner ends on the last
 * value and goes on following. */
TEST(rewatches_after_falling_behind)
{
    ls_meta_t *m = ls_meta_mem_open();
    owner_t o;
    ls_meta_follow_t *f;
    CHECK(follow(m, &o, &f) == LS_OK);
    pthread_mutex_lock(&o.mu);
    o.hold = true;
    pthread_mutex_unlock(&o.mu);
    put(m, "first");
    pthread_mutex_lock(&o.mu);
    while (!o.held)
        pthread_cond_wait(&o.cv, &o.mu);
    pthread_mutex_unlock(&o.mu);
    size_t big = 1u << 20;
    char *filler = ls_malloc(big + 1);
    memset(filler, 'x', big);
    filler[big] = 0;
    for (int i = 0; i < 12; i++) /* 12 MiB: past the 8 MiB history */
        put(m, filler);
    ls_free(filler);
    put(m, "last");
    pthread_mutex_lock(&o.mu);
    o.hold = false;
    pthread_cond_broadcast(&o.cv);
    pthread_mutex_unlock(&o.mu);
    CHECK(await_value(&o, "last"));
    put(m, "after"); /* followed again */
    CHECK(await_value(&o, "after"));
    ls_meta_follow_close(f);
    owner_destroy(&o);
    ls_meta_close(m);
}

typedef struct appender {
    ls_meta_t *m;
    int steps;
    bool interfere; /* the first step writes the record itself */
} appender_t;

/* Appends "+" to the record; on its first call with interfere, another
 * writer changes the record between the read and the put. */
static ls_status append_step(void *ctx, const uint8_t *val, size_t vlen, char **next)
{
    appender_t *a = ctx;
    if (a->steps++ == 0 && a->interfere) put(a->m, "other");
    *next = malloc(vlen + 2);
    memcpy(*next, val ? (const char *)val : "", vlen);
    strcpy(*next + vlen, "+");
    return LS_OK;
}

static ls_status no_change_step(void *ctx, const uint8_t *val, size_t vlen, char **next)
{
    return LS_OK;
}

TEST(changes_compare_and_set)
{
    ls_meta_t *m = ls_meta_mem_open();
    owner_t o;
    ls_meta_follow_t *f;
    CHECK(follow(m, &o, &f) == LS_OK);
    appender_t a = {.m = m};
    int64_t rev = 0;
    CHECK(ls_meta_follow_change(f, 4, append_step, &a, &rev) == LS_OK);
    CHECK(rev > 0 && a.steps == 1);
    CHECK(await_value(&o, "+"));
    /* another writer wins the first compare: the change is made again on
     * what that writer wrote, not over it */
    a = (appender_t){.m = m, .interfere = true};
    CHECK(ls_meta_follow_change(f, 4, append_step, &a, &rev) == LS_OK);
    CHECK_EQ_INT(a.steps, 2);
    CHECK(await_value(&o, "other+"));
    /* a step that leaves the record: nothing written, rev 0 */
    int64_t before = 0;
    ls_kv_t kv;
    CHECK(ls_meta_get(m, KEY, &kv) == LS_OK);
    before = kv.mod_rev;
    ls_kv_free(&kv);
    CHECK(ls_meta_follow_change(f, 4, no_change_step, NULL, &rev) == LS_OK);
    CHECK(rev == 0);
    CHECK(ls_meta_get(m, KEY, &kv) == LS_OK);
    CHECK(kv.mod_rev == before);
    ls_kv_free(&kv);
    /* out of attempts while others keep winning: LS_ECONFLICT */
    a = (appender_t){.m = m, .interfere = true};
    CHECK(ls_meta_follow_change(f, 1, append_step, &a, &rev) == LS_ECONFLICT);
    CHECK(rev == 0);
    ls_meta_follow_close(f);
    owner_destroy(&o);
    ls_meta_close(m);
}

int main(void)
{
    RUN(follows_puts_and_deletions);
    RUN(open_refuses_a_corrupt_record);
    RUN(rewatches_after_falling_behind);
    RUN(changes_compare_and_set);
    UNIT_DONE();
}
