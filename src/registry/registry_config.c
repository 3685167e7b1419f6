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

/* ---- names ------------------------------------------------------------------ */

static const char *const COMPAT_NAMES[] = {
    "NONE", "BACKWARD",       "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
    "FULL", "FULL_TRANSITIVE"};
static const char *const MODE_NAMES[] = {"READWRITE", "READONLY"};

const char *ls_sr_compat_name(ls_sr_compat c) { return COMPAT_NAMES[c]; }
const char *ls_sr_mode_name(ls_sr_mode m) { return MODE_NAMES[m]; }

int ls_sr_compat_parse(const char *s, ls_sr_compat *out)
{
    for (int i = 0; i < 7; i++)
        if (!strcmp(s, COMPAT_NAMES[i])) {
            *out = (ls_sr_compat)i;
            return 0;
        }
    return -1;
}

static int mode_parse(const char *s, ls_sr_mode *out)
{
    for (int i = 0; i < 2; i++)
        if (!strcmp(s, MODE_NAMES[i])) {
            *out = (ls_sr_mode)i;
            return 0;
        }
    return -1;
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

static const char *setting_key(key_t_ *k, const char *global, const char *per, const char *sub)
{
    return sub ? ls_sr_ksub(k, per, sub, "") : ls_sr_kfmt(k, SR_ROOT "%s", global);
}

ls_sr_code ls_registry_get_compat(ls_registry_t *r, const char *subject, ls_sr_compat *level,
                                  bool *set, ls_sr_err_t *e)
{
    key_t_ k;
    char v[64];
    bool found;
    *set = false;
    if (subject) {
        if (read_setting(r, setting_key(&k, "config", "config-subjects/", subject),
                         "compatibilityLevel", v, sizeof v, &found, e))
            return e->code;
        if (found && ls_sr_compat_parse(v, level) == 0) {
            *set = true;
            return LS_SR_OK;
        }
    }
    if (read_setting(r, setting_key(&k, "config", NULL, NULL), "compatibilityLevel", v, sizeof v,
                     &found, e))
        return e->code;
    if (!found || ls_sr_compat_parse(v, level)) *level = LS_SR_COMPAT_DEFAULT;
    if (!subject) *set = found;
    return LS_SR_OK;
}

ls_sr_code ls_registry_set_compat(ls_registry_t *r, const char *subject, ls_sr_compat level,
                                  ls_sr_err_t *e)
{
    key_t_ k;
    return write_setting(r, setting_key(&k, "config", "config-subjects/", subject),
                         "compatibilityLevel", COMPAT_NAMES[level], e);
}

ls_sr_code ls_registry_delete_compat(ls_registry_t *r, const char *subject, ls_sr_compat *old,
                                     ls_sr_err_t *e)
{
    bool set;
    if (ls_registry_get_compat(r, subject, old, &set, e)) return e->code;
    if (subject && !set)
        return ls_sr_seterr(e, LS_SR_SUBJECT_COMPAT_NOT_CONFIGURED,
                            "Subject '%s' does not have subject-level compatibility configured",
                            subject);
    key_t_ k;
    ls_status st = ls_meta_del(r->meta, setting_key(&k, "config", "config-subjects/", subject));
    if (st != LS_OK) return ls_sr_store_err(r, e, "deleting a compatibility level", st);
    return LS_SR_OK;
}

ls_sr_code ls_registry_get_mode(ls_registry_t *r, const char *subject, ls_sr_mode *mode, bool *set,
                                ls_sr_err_t *e)
{
    key_t_ k;
    char v[64];
    bool found;
    *set = false;
    if (subject) {
        if (read_setting(r, setting_key(&k, "mode", "mode-subjects/", subject), "mode", v, sizeof v,
                         &found, e))
            return e->code;
        if (found && mode_parse(v, mode) == 0) {
            *set = true;
            return LS_SR_OK;
        }
    }
    if (read_setting(r, setting_key(&k, "mode", NULL, NULL), "mode", v, sizeof v, &found, e))
        return e->code;
    if (!found || mode_parse(v, mode)) *mode = LS_SR_MODE_READWRITE;
    if (!subject) *set = found;
    return LS_SR_OK;
}

ls_sr_code ls_registry_set_mode(ls_registry_t *r, const char *subject, ls_sr_mode mode,
                                ls_sr_err_t *e)
{
    key_t_ k;
    return write_setting(r, setting_key(&k, "mode", "mode-subjects/", subject), "mode",
                         MODE_NAMES[mode], e);
}

ls_sr_code ls_registry_delete_mode(ls_registry_t *r, const char *subject, ls_sr_mode *old,
                                   ls_sr_err_t *e)
{
    bool set;
    if (ls_registry_get_mode(r, subject, old, &set, e)) return e->code;
    if (subject && !set)
        return ls_sr_seterr(e, LS_SR_SUBJECT_MODE_NOT_CONFIGURED,
                            "Subject '%s' does not have subject-level mode configured", subject);
    key_t_ k;
    ls_status st = ls_meta_del(r->meta, setting_key(&k, "mode", "mode-subjects/", subject));
    if (st != LS_OK) return ls_sr_store_err(r, e, "deleting a mode", st);
    return LS_SR_OK;
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
