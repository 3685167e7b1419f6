/* One record of the metadata store, followed: its owner keeps a parsed copy
 * in memory that every change of the record reaches, and changes the record
 * by compare-and-set. The cluster-wide ACLs and client quotas are such
 * records (security/authz.c, security/quotas.c).
 *
 * Following: ls_meta_follow_open reads the record and hands its value to the
 * owner's load hook, then watches the key from the revision that read
 * observed, so no change falls between the read and the watch. Each change
 * then reaches the hook: a put with its value, a deletion with none (val
 * NULL). When the watch falls behind the store's history, a thread (named
 * cfg.thread) cancels it, rereads the record and watches again from there,
 * retrying every second until it can.
 *
 * The hook parses the value and installs it: it returns false when the value
 * does not parse (and installs nothing). Hooks are handed values in revision
 * order but from three threads (the opener's, the store's watch thread, the
 * rewatch thread), so the owner's copy sits under the owner's lock and an
 * install keeps only a copy newer than the one it holds (mod_rev).
 *
 * Changing: ls_meta_follow_change makes one compare-and-set change at a time
 * per follower: it reads the record, asks the owner's step for the next
 * value, and puts it if the record still has the revision it read, retrying
 * from a fresh read when another writer got there first. */
#ifndef LS_META_FOLLOW_H
#define LS_META_FOLLOW_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "meta/meta.h"

/* Parses val (NULL, vlen 0: the record is absent) written at mod_rev and
 * installs it; false when val does not parse. */
typedef bool (*ls_meta_follow_load_fn)(void *arg, const uint8_t *val, size_t vlen, int64_t mod_rev);

typedef struct ls_meta_follow_cfg {
    const char *key;    /* the record's key */
    const char *tag;    /* log tag ("quotas") */
    const char *what;   /* log noun ("quota": "quota watch resynchronized ...") */
    const char *thread; /* the rewatch thread's name (at most 15 characters) */
    ls_meta_follow_load_fn load;
    void *arg;
} ls_meta_follow_cfg_t;

typedef struct ls_meta_follow ls_meta_follow_t;

/* Reads and watches the record (above). LS_ECORRUPT when the stored value
 * does not parse; a store status when the read or the watch fails. */
ls_status ls_meta_follow_open(ls_meta_t *meta, const ls_meta_follow_cfg_t *cfg,
                              ls_meta_follow_t **out);
/* Stops following: joins the rewatch thread, cancels the watch. The hook
 * does not run after it returns. NULL is a no-op. */
void ls_meta_follow_close(ls_meta_follow_t *f);

/* Records of named settings (group configs by group, client-metrics
 * subscriptions by name) are a JSON object of objects of strings. Parses
 * such a value (val NULL: the record is absent, an empty object) with every
 * setting accepted by check (LS_OK); NULL when anything does not parse or
 * check. json_decref the result. */
typedef ls_status (*ls_meta_setting_check_fn)(const char *key, const char *value, char *err,
                                              size_t errlen);
json_t *ls_meta_follow_settings_parse(const uint8_t *val, size_t vlen,
                                      ls_meta_setting_check_fn check);

/* Turns the record's current value (val NULL: absent) into the next one:
 * *next a new string (malloc'd, as json_dumps makes them; the follower
 * frees it), or NULL to leave the record as it is. */
typedef ls_status (*ls_meta_follow_step_fn)(void *ctx, const uint8_t *val, size_t vlen,
                                            char **next);

/* One compare-and-set change (above), at most `attempts` tries while another
 * writer wins the compare (then LS_ECONFLICT). *rev: the revision the put
 * created, 0 when the step left the record as it was. A step's error is
 * returned as it is; the step's context holds what it made last. */
ls_status ls_meta_follow_change(ls_meta_follow_t *f, int attempts, ls_meta_follow_step_fn step,
                                void *ctx, int64_t *rev);
#endif
