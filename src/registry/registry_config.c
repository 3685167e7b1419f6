/* The registry's settings: compatibility levels and modes, global and per
 * subject, with their names. A subject's own setting wins over the global
 * one; an absent global one, or one holding an unknown name, means the
 * default (LS_SR_COMPAT_DEFAULT, READWRITE). Settings are single puts, not
 * compared txns: the last writer wins. */
#include "registry/registry_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "meta/meta_keys.h"

/* ---- names ------------------------------------------------------------------ */

static const char *const COMPAT_NAMES[] = {
    "NONE", "BACKWARD",       "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
    "FULL", "FULL_TRANSITIVE"};
static const char *const MODE_NAMES[] = {"READWRITE", "READONLY"};

const char *ls_sr_compat_name(ls_sr_compat c) { return COMPAT_NAMES[c]; }
const char *ls_sr_mode_name(ls_sr_mode m) { return MODE_NAMES[m]; }

/* One kind of setting: its global key, the prefix of its per-subject keys,
 * its record's field, and its value names (a value is an index of names). */
typedef struct setting {
    const char *global, *per, *field;
    const char *const *names;
    int nnames;
    int dflt;
    const char *noun; /* in the answer when a subject has none to delete */
} setting_t;

static const setting_t COMPAT = {.global = "config",
                                 .per = "config-subjects/",
                                 .field = "compatibilityLevel",
                                 .names = COMPAT_NAMES,
                                 .nnames = 7,
                                 .dflt = LS_SR_COMPAT_DEFAULT,
                                 .noun = "compatibility"};
static const setting_t MODE = {.global = "mode",
                               .per = "mode-subjects/",
                               .field = "mode",
                               .names = MODE_NAMES,
                               .nnames = 2,
                               .dflt = LS_SR_MODE_READWRITE,
                               .noun = "mode"};

/* The value name v names; -1 when none. */
static int name_index(const setting_t *s, const char *v)
{
    for (int i = 0; i < s->nnames; i++)
        if (!strcmp(v, s->names[i])) return i;
    return -1;
}

int ls_sr_compat_parse(const char *s, ls_sr_compat *out)
{
    int i = name_index(&COMPAT, s);
    if (i >= 0) *out = (ls_sr_compat)i;
    return i >= 0 ? 0 : -1;
}

/* ---- configuration ---------------------------------------------------------------- */

/* Reads a {"<field>": "<value>"} record; *found 0 when absent. */
static ls_sr_code read_setting(ls_registry_t *r, const char *key, const char *field, char *val,
                               size_t cap, bool *found, ls_sr_err_t *e)
{
    ls_kv_t kv;
    ls_status st = ls_meta_get(r->meta, key, &kv);
    *found = false;
    if (st == LS_ENOTFOUND) return LS_SR_OK;
    if (st != LS_OK) return ls_sr_store_err(r, e, "reading a registry setting", st);
    json_t *j = json_loadb((const char *)kv.val, kv.vlen, 0, NULL);
    ls_kv_free(&kv);
    const char *v = json_string_value(json_object_get(j, field));
    if (v) {
        snprintf(val, cap, "%s", v);
        *found = true;
    }
    json_decref(j);
    if (!v) {
        LS_ERROR("registry", "corrupt setting at %s", key);
        return ls_sr_seterr(e, LS_SR_STORE_ERROR,
                            "Error in the backend data store: a corrupt "
                            "setting");
    }
    return LS_SR_OK;
}

static ls_sr_code write_setting(ls_registry_t *r, const char *key, const char *field,
                                const char *val, ls_sr_err_t *e)
{
    json_t *j = json_pack("{s:s}", field, val);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    ls_status st = ls_meta_put(r->meta, key, text, strlen(text));
    free(text);
    if (st != LS_OK) return ls_sr_store_err(r, e, "writing a registry setting", st);
    __atomic_add_fetch(&r->gen, 1, __ATOMIC_ACQ_REL);
    return LS_SR_OK;
}

static const char *setting_key(key_t_ *k, const setting_t *s, const char *subject)
{
    return subject ? ls_sr_ksub(k, s->per, subject, "")
                   : ls_sr_kfmt(k, LS_KEY_REGISTRY "%s", s->global);
}

/* The value of setting s for subject (NULL: the registry's): the subject's
 * own when it holds a known name, else the global one, else the default.
 * *set: whether the level asked for holds one (the subject's own, or the
 * global record when subject is NULL). *val is the default on an error. */
static ls_sr_code get_setting(ls_registry_t *r, const setting_t *s, const char *subject, int *val,
                              bool *set, ls_sr_err_t *e)
{
    key_t_ k;
    char v[64];
    bool found;
    *set = false;
    *val = s->dflt;
    if (subject) {
        if (read_setting(r, setting_key(&k, s, subject), s->field, v, sizeof v, &found, e))
            return e->code;
        if (found && (*val = name_index(s, v)) >= 0) {
            *set = true;
            return LS_SR_OK;
        }
    }
    if (read_setting(r, setting_key(&k, s, NULL), s->field, v, sizeof v, &found, e)) return e->code;
    *val = found ? name_index(s, v) : -1;
    if (*val < 0) *val = s->dflt;
    if (!subject) *set = found;
    return LS_SR_OK;
}

/* Deletes the subject's own setting (subject NULL: the global one); *old
 * the value in force before. */
static ls_sr_code delete_setting(ls_registry_t *r, const setting_t *s, const char *subject,
                                 int *old, ls_sr_code not_configured, const char *deleting,
                                 ls_sr_err_t *e)
{
    bool set;
    if (get_setting(r, s, subject, old, &set, e)) return e->code;
    if (subject && !set)
        return ls_sr_seterr(e, not_configured,
                            "Subject '%s' does not have subject-level %s configured", subject,
                            s->noun);
    key_t_ k;
    ls_status st = ls_meta_del(r->meta, setting_key(&k, s, subject));
    if (st != LS_OK) return ls_sr_store_err(r, e, deleting, st);
    return LS_SR_OK;
}

ls_sr_code ls_registry_get_compat(ls_registry_t *r, const char *subject, ls_sr_compat *level,
                                  bool *set, ls_sr_err_t *e)
{
    int v;
    ls_sr_code c = get_setting(r, &COMPAT, subject, &v, set, e);
    *level = (ls_sr_compat)v;
    return c;
}

ls_sr_code ls_registry_set_compat(ls_registry_t *r, const char *subject, ls_sr_compat level,
                                  ls_sr_err_t *e)
{
    key_t_ k;
    return write_setting(r, setting_key(&k, &COMPAT, subject), COMPAT.field, COMPAT_NAMES[level],
                         e);
}

ls_sr_code ls_registry_delete_compat(ls_registry_t *r, const char *subject, ls_sr_compat *old,
                                     ls_sr_err_t *e)
{
    int v;
    ls_sr_code c = delete_setting(r, &COMPAT, subject, &v, LS_SR_SUBJECT_COMPAT_NOT_CONFIGURED,
                                  "deleting a compatibility level", e);
    *old = (ls_sr_compat)v;
    return c;
}

ls_sr_code ls_registry_get_mode(ls_registry_t *r, const char *subject, ls_sr_mode *mode, bool *set,
                                ls_sr_err_t *e)
{
    int v;
    ls_sr_code c = get_setting(r, &MODE, subject, &v, set, e);
    *mode = (ls_sr_mode)v;
    return c;
}

ls_sr_code ls_registry_set_mode(ls_registry_t *r, const char *subject, ls_sr_mode mode,
                                ls_sr_err_t *e)
{
    key_t_ k;
    return write_setting(r, setting_key(&k, &MODE, subject), MODE.field, MODE_NAMES[mode], e);
}

ls_sr_code ls_registry_delete_mode(ls_registry_t *r, const char *subject, ls_sr_mode *old,
                                   ls_sr_err_t *e)
{
    int v;
    ls_sr_code c = delete_setting(r, &MODE, subject, &v, LS_SR_SUBJECT_MODE_NOT_CONFIGURED,
                                  "deleting a mode", e);
    *old = (ls_sr_mode)v;
    return c;
}

ls_sr_code ls_sr_check_writable(ls_registry_t *r, const char *subject, ls_sr_err_t *e)
{
    ls_sr_mode m;
    bool set;
    if (ls_registry_get_mode(r, subject, &m, &set, e)) return e->code;
    if (m == LS_SR_MODE_READONLY)
        return ls_sr_seterr(e, LS_SR_NOT_PERMITTED, "Subject %s is in read-only mode", subject);
    return LS_SR_OK;
}
