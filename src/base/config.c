/* Broker configuration.
 *
 * Every key is declared once, in a settings table (the broker's is
 * server/settings.c, given to ls_config_init): name, type, the struct
 * field it fills, default (as text), bounds and help. Everything else is
 * derived from that row — defaults are applied by parsing the default text
 * with the same code as user input (so a default can never be invalid),
 * environment names are the key upper-cased with dots turned to underscores,
 * flags are "--" + key, and --help prints the table.
 *
 * Sources are applied in order file, environment, flags; a later source
 * overrides an earlier one because each simply calls ls_config_set() again.
 * ls_config_finish() runs once after all sources to fill defaults that depend
 * on other keys (store URLs under data.dir, advertised address from the
 * listener) and to check limits that involve two keys.
 *
 * Ownership: every char * field is heap-owned by the config and freed by
 * ls_config_free(); setting a key frees the previous value. Not thread-safe;
 * configuration is loaded on the main thread before anything starts. */
#include "base/config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/check.h"
#include "base/config_schema.h"
#include "base/diag.h"

extern char **environ;

#define CONFIG_FILE_MAX (1 << 20) /* a properties file larger than this is a mistake */
#define ENV_PREFIX "LAKESTREAM_"
#define ENV_CONFIG_FILE "LAKESTREAM_CONFIG"

static bool refused_match(const char *pat, const char *key)
{
    if (*pat != '*') return strcmp(key, pat) == 0;
    size_t pl = strlen(pat + 1), kl = strlen(key);
    return kl >= pl && strcmp(key + kl - pl, pat + 1) == 0;
}

_Static_assert(sizeof(int) == 4, "listen_port/advertised_port are stored as 32-bit ints");

/* ---- small helpers ------------------------------------------------------ */

static void errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static char **str_field(ls_config_t *c, size_t off) { return (char **)((char *)c + off); }

static void str_set(ls_config_t *c, size_t off, char *v)
{
    char **f = str_field(c, off);
    ls_free(*f);
    *f = v;
}

static void int_set(ls_config_t *c, size_t off, size_t size, int64_t v)
{
    if (size == sizeof(int32_t)) {
        int32_t x = (int32_t)v;
        memcpy((char *)c + off, &x, sizeof x);
    } else {
        memcpy((char *)c + off, &v, sizeof v);
    }
}

static bool str_ieq(const char *a, const char *b) { return strcasecmp(a, b) == 0; }

/* Trimmed copy of s. */
static char *trim_dup(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    return ls_strndup(s, n);
}

/* Renders a byte count the way a user would write it, for range messages. */
static void fmt_size(int64_t v, char *out, size_t n)
{
    static const struct {
        int64_t unit;
        const char *name;
    } units[] = {{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (v != 0 && v % units[i].unit == 0) {
            snprintf(out, n, "%" PRId64 "%s", v / units[i].unit, units[i].name);
            return;
        }
    snprintf(out, n, "%" PRId64, v);
}

static const cfg_key_t *key_find(const ls_config_schema_t *t, const char *name)
{
    for (size_t i = 0; i < t->nkeys; i++)
        if (strcmp(t->keys[i].name, name) == 0 ||
            (t->keys[i].alias && strcmp(t->keys[i].alias, name) == 0))
            return &t->keys[i];
    return NULL;
}

bool ls_config_key_known(const ls_config_t *c, const char *name)
{
    return key_find(c->schema, name) != NULL;
}

/* Edit distance, for "did you mean" on a misspelt key. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void unknown_key(const ls_config_schema_t *t, const char *name, char *err, size_t errlen)
{
    const char *best = NULL;
    size_t bestd = SIZE_MAX;
    for (size_t i = 0; i < t->nkeys; i++) {
        size_t d = edit_distance(name, t->keys[i].name);
        if (d < bestd) bestd = d, best = t->keys[i].name;
    }
    size_t len = strlen(name);
    if (best && bestd <= (len / 4 > 2 ? len / 4 : 2))
        errf(err, errlen, "%s: unknown key (did you mean '%s'?)", name, best);
    else
        errf(err, errlen, "%s: unknown key (see --help for the list)", name);
}

/* ---- value parsers ------------------------------------------------------ */

/* Whole-string decimal integer; -1 when not a number, -2 when out of int64. */
static int parse_i64(const char *s, int64_t *out)
{
    if (!*s || isspace((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end) return -1;
    if (errno == ERANGE) return -2;
    *out = v;
    return 0;
}

/* Sizes: digits, optional blank, optional suffix k/m/g/t or KiB/MiB/GiB/TiB
 * (any case). All suffixes are powers of 1024; "kb"/"mb" are refused rather
 * than guessed, since people mean both 1000 and 1024 by them. */
int ls_config_parse_size(const char *s, int64_t *out)
{
    const char *p = s;
    if (!isdigit((unsigned char)*p)) return -1;
    uint64_t v = 0;
    for (; isdigit((unsigned char)*p); p++) {
        if (v > (UINT64_MAX - 9) / 10) return -2;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    while (*p == ' ' || *p == '\t')
        p++;
    static const struct {
        const char *sfx;
        int64_t mult;
    } sfx[] = {{"", 1},      {"b", 1},   {"k", KiB},   {"kib", KiB}, {"m", MiB},
               {"mib", MiB}, {"g", GiB}, {"gib", GiB}, {"t", TiB},   {"tib", TiB}};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++)
        if (str_ieq(p, sfx[i].sfx)) {
            if (v > (uint64_t)INT64_MAX / (uint64_t)sfx[i].mult) return -2;
            *out = (int64_t)(v * (uint64_t)sfx[i].mult);
            return 0;
        }
    return -1;
}

static int parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (str_ieq(s, yes[i])) {
            *out = true;
            return 0;
        }
        if (str_ieq(s, no[i])) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

/* overflow: the text did not even fit in int64 (x is then meaningless). */
static ls_status range_check(const cfg_key_t *k, const char *name, const char *v, bool overflow,
                             int64_t x, char *err, size_t errlen)
{
    if (!overflow && x >= k->min && x <= k->max) return LS_OK;
    if (k->type == CT_SIZE) {
        char lo[32], hi[32];
        fmt_size(k->min, lo, sizeof lo);
        fmt_size(k->max, hi, sizeof hi);
        errf(err, errlen, "%s: '%s' is out of range (must be %s..%s)", name, v, lo, hi);
    } else {
        errf(err, errlen, "%s: '%s' is out of range (must be %" PRId64 "..%" PRId64 ")", name, v,
             k->min, k->max);
    }
    return LS_EINVAL;
}

static bool host_ok(const char *h)
{
    for (; *h; h++)
        if (!(isalnum((unsigned char)*h) || *h == '.' || *h == '-' || *h == '_' || *h == ':' ||
              *h == '%'))
            return false;
    return true;
}

/* One address: [NAME://]host:port, host may be [v6]. Empty host only for
 * the Kafka listeners (bind every interface, as Kafka). A key that takes one
 * address (http.listen) takes no name but PLAINTEXT; the Kafka lists take
 * any listener name (letters, digits, '_'; upper-cased as Kafka does). */
static ls_status parse_listener(ls_listener_cfg_t *out, const cfg_key_t *k, const char *name,
                                const char *v, char *err, size_t errlen)
{
    static const char expect[] = "expected NAME://host:port or host:port";
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "PLAINTEXT");
    const char *hp = v;
    const char *sep = strstr(v, "://");
    if (sep) {
        size_t nl = (size_t)(sep - v);
        bool ok = nl > 0 && nl < sizeof out->name;
        for (size_t i = 0; ok && i < nl; i++)
            ok = isalnum((unsigned char)v[i]) || v[i] == '_';
        if (!ok) {
            errf(err, errlen, "%s: '%s': '%.*s' is not a listener name (letters, digits, _)", name,
                 v, (int)nl, v);
            return LS_EINVAL;
        }
        for (size_t i = 0; i < nl; i++)
            out->name[i] = (char)toupper((unsigned char)v[i]);
        out->name[nl] = 0;
        if (!k->multi && strcmp(out->name, "PLAINTEXT") != 0) {
            errf(err, errlen, "%s: '%s': only PLAINTEXT is supported here", name, v);
            return LS_EINVAL;
        }
        hp = sep + 3;
    }
    const char *hs = hp, *he, *colon;
    if (*hp == '[') {
        hs = hp + 1;
        he = strchr(hs, ']');
        if (!he || he[1] != ':') {
            errf(err, errlen, "%s: '%s' is not a listener (%s)", name, v, expect);
            return LS_EINVAL;
        }
        colon = he + 1;
    } else {
        colon = strrchr(hp, ':');
        if (!colon) {
            errf(err, errlen, "%s: '%s' is not a listener (%s)", name, v, expect);
            return LS_EINVAL;
        }
        he = colon;
        if (memchr(hs, ':', (size_t)(he - hs))) {
            errf(err, errlen, "%s: '%s': write IPv6 hosts in brackets, e.g. [::1]:9092", name, v);
            return LS_EINVAL;
        }
    }
    int64_t port;
    if (parse_i64(colon + 1, &port) != 0 || port < k->min || port > k->max) {
        errf(err, errlen, "%s: '%s': '%s' is not a port (expected %" PRId64 "..%" PRId64 ")", name,
             v, colon + 1, k->min, k->max);
        return LS_EINVAL;
    }
    if ((size_t)(he - hs) >= sizeof out->host) {
        errf(err, errlen, "%s: '%s': the host is too long", name, v);
        return LS_EINVAL;
    }
    memcpy(out->host, hs, (size_t)(he - hs));
    if (!host_ok(out->host)) {
        errf(err, errlen, "%s: '%s': '%s' is not a host name or address", name, v, out->host);
        return LS_EINVAL;
    }
    if (!*out->host) {
        if (k->off != offsetof(ls_config_t, listen_host)) {
            errf(err, errlen, "%s: '%s': the host must not be empty", name, v);
            return LS_EINVAL;
        }
        snprintf(out->host, sizeof out->host, "0.0.0.0");
    }
    out->port = (int)port;
    return LS_OK;
}

/* A listener key. The Kafka ones (listeners, advertised.listeners) take a
 * comma-separated list with distinct names; their first entry also fills
 * the single host and port fields (listen_host, advertised_host) that the
 * older single-address keys share. */
static ls_status set_listener(ls_config_t *c, const cfg_key_t *k, const char *name, const char *v,
                              char *err, size_t errlen)
{
    ls_listener_cfg_t list[LS_MAX_LISTENERS];
    int n = 0;
    if (!k->multi && strchr(v, ',')) {
        errf(err, errlen, "%s: '%s' names several addresses; only one is supported", name, v);
        return LS_EINVAL;
    }
    for (const char *p = v;;) {
        size_t len = strcspn(p, ",");
        if (n == LS_MAX_LISTENERS) {
            errf(err, errlen, "%s: more than %d listeners", name, LS_MAX_LISTENERS);
            return LS_EINVAL;
        }
        char *entry = ls_strndup(p, len);
        char *t = trim_dup(entry);
        ls_free(entry);
        ls_status st = parse_listener(&list[n], k, name, t, err, errlen);
        ls_free(t);
        if (st != LS_OK) return st;
        for (int i = 0; i < n; i++)
            if (strcmp(list[i].name, list[n].name) == 0) {
                errf(err, errlen, "%s: '%s' names listener %s twice", name, v, list[n].name);
                return LS_EINVAL;
            }
        n++;
        if (!p[len]) break;
        p += len + 1;
    }
    str_set(c, k->off, ls_strdup(list[0].host));
    int_set(c, k->port_off, sizeof(int), list[0].port);
    if (k->multi) {
        bool adv = k->off == offsetof(ls_config_t, advertised_host);
        memcpy(adv ? c->advertised : c->listeners, list, (size_t)n * sizeof list[0]);
        *(adv ? &c->nadvertised : &c->nlisteners) = n;
    }
    return LS_OK;
}

/* Applies an already-trimmed value; name is the spelling the user wrote. */
static ls_status key_apply(ls_config_t *c, const cfg_key_t *k, const char *name, const char *v,
                           char *err, size_t errlen)
{
    if (!*v) {
        /* An empty value resets a key that has no default ("object.store.url="
         * in a file generated by --help means "derive it"). */
        if (!k->def && (k->type == CT_STRING || k->type == CT_URL)) {
            str_set(c, k->off, NULL);
            return LS_OK;
        }
        if (!k->def && k->type == CT_PORT) {
            int_set(c, k->off, k->size, 0);
            return LS_OK;
        }
        if ((!k->def || k->empty_disables) && k->type == CT_LISTENER) {
            str_set(c, k->off, NULL);
            int_set(c, k->port_off, sizeof(int), 0);
            if (k->off == offsetof(ls_config_t, advertised_host)) c->nadvertised = 0;
            return LS_OK;
        }
        errf(err, errlen, "%s: empty value (default %s)", name, k->def ? k->def : "none");
        return LS_EINVAL;
    }
    int64_t x = 0;
    bool b;
    int rc;
    switch (k->type) {
    case CT_STRING: str_set(c, k->off, ls_strdup(v)); return LS_OK;
    case CT_URL: {
        const char *s = strstr(v, "://");
        bool ok = s && s > v && isalpha((unsigned char)v[0]);
        for (const char *q = v; ok && q < s; q++)
            ok = isalnum((unsigned char)*q) || *q == '+' || *q == '-' || *q == '.';
        if (!ok) {
            errf(err, errlen,
                 "%s: '%s' is not a URL (expected scheme://..., e.g. file:///var/lib/lakestream"
                 " or s3://bucket/prefix)",
                 name, v);
            return LS_EINVAL;
        }
        str_set(c, k->off, ls_strdup(v));
        return LS_OK;
    }
    case CT_INT:
        rc = parse_i64(v, &x);
        if (rc == -1) {
            errf(err, errlen, "%s: '%s' is not an integer", name, v);
            return LS_EINVAL;
        }
        if (range_check(k, name, v, rc == -2, x, err, errlen)) return LS_EINVAL;
        int_set(c, k->off, k->size, x);
        return LS_OK;
    case CT_SIZE:
        rc = ls_config_parse_size(v, &x);
        if (rc == -1) {
            errf(err, errlen, "%s: '%s' is not a size (expected bytes, e.g. 4194304 or 4MiB)", name,
                 v);
            return LS_EINVAL;
        }
        if (range_check(k, name, v, rc == -2, x, err, errlen)) return LS_EINVAL;
        int_set(c, k->off, k->size, x);
        return LS_OK;
    case CT_BOOL:
        if (parse_bool(v, &b)) {
            errf(err, errlen,
                 "%s: '%s' is not a boolean (expected true/false, yes/no, on/off or 1/0)", name, v);
            return LS_EINVAL;
        }
        *(bool *)((char *)c + k->off) = b;
        return LS_OK;
    case CT_PORT:
        if (parse_i64(v, &x) != 0 || x < k->min || x > k->max) {
            errf(err, errlen, "%s: '%s' is not a port (expected %" PRId64 "..%" PRId64 ")", name, v,
                 k->min, k->max);
            return LS_EINVAL;
        }
        int_set(c, k->off, k->size, x);
        return LS_OK;
    case CT_LISTENER: return set_listener(c, k, name, v, err, errlen);
    case CT_LEVEL: {
        char low[16];
        size_t n = strlen(v);
        ls_diag_level lvl;
        if (n >= sizeof low) n = sizeof low - 1;
        for (size_t i = 0; i < n; i++)
            low[i] = (char)tolower((unsigned char)v[i]);
        low[n] = 0;
        if (strlen(v) >= sizeof low || ls_diag_parse_level(low, &lvl) != 0) {
            errf(err, errlen, "%s: '%s' is not a level (expected debug, info, warn or error)", name,
                 v);
            return LS_EINVAL;
        }
        str_set(c, k->off, ls_strdup(low));
        return LS_OK;
    }
    }
    errf(err, errlen, "%s: internal error: bad key type", name);
    return LS_EINVAL;
}

/* ---- public API ---------------------------------------------------------- */

void ls_config_init(ls_config_t *c, const ls_config_schema_t *schema)
{
    memset(c, 0, sizeof *c);
    c->schema = schema;
    char err[256];
    for (size_t i = 0; i < schema->nkeys; i++) {
        const cfg_key_t *k = &schema->keys[i];
        if (!k->def) continue;
        if (key_apply(c, k, k->name, k->def, err, sizeof err) != 0) {
            /* A default that fails its own parser is a bug in the table above. */
            LS_PANIC("bad built-in default: %s", err);
        }
    }
}

void ls_config_free(ls_config_t *c)
{
    const ls_config_schema_t *schema = c->schema;
    for (size_t i = 0; schema && i < schema->nkeys; i++) {
        cfg_type t = schema->keys[i].type;
        if (t == CT_STRING || t == CT_URL || t == CT_LISTENER || t == CT_LEVEL)
            str_set(c, schema->keys[i].off, NULL); /* shared fields become NULL once */
    }
    ls_catalog_confs_free(&c->catalogs);
    memset(c, 0, sizeof *c);
}

ls_status ls_config_set(ls_config_t *c, const char *key, const char *value, char *err,
                        size_t errlen)
{
    const cfg_key_t *k = key_find(c->schema, key);
    if (!k && ls_catalog_conf_key(key)) {
        char *v = trim_dup(value ? value : "");
        ls_status rc = ls_catalog_conf_set(&c->catalogs, key, v, err, errlen);
        ls_free(v);
        return rc;
    }
    if (!k) {
        for (size_t i = 0; i < c->schema->nrefused; i++)
            if (refused_match(c->schema->refused[i].name, key)) {
                errf(err, errlen, "%s: %s", key, c->schema->refused[i].why);
                return LS_EINVAL;
            }
        unknown_key(c->schema, key, err, errlen);
        return LS_EINVAL;
    }
    char *v = trim_dup(value ? value : "");
    ls_status rc = key_apply(c, k, key, v, err, errlen);
    ls_free(v);
    return rc;
}

/* Java properties escapes (java.util.Properties#load): \t \n \r \f, \uXXXX,
 * and a backslash before any other character stands for that character. */
static int unescape(const char *s, size_t n, ls_buf_t *out)
{
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch != '\\' || i + 1 == n) {
            ls_buf_append_u8(out, (uint8_t)ch);
            continue;
        }
        ch = s[++i];
        switch (ch) {
        case 't': ls_buf_append_u8(out, '\t'); break;
        case 'n': ls_buf_append_u8(out, '\n'); break;
        case 'r': ls_buf_append_u8(out, '\r'); break;
        case 'f': ls_buf_append_u8(out, '\f'); break;
        case 'u': {
            unsigned cp = 0;
            if (i + 4 >= n) return -1;
            for (int d = 1; d <= 4; d++) {
                char h = s[i + d];
                cp <<= 4;
                if (h >= '0' && h <= '9')
                    cp |= (unsigned)(h - '0');
                else if (h >= 'a' && h <= 'f')
                    cp |= (unsigned)(h - 'a' + 10);
                else if (h >= 'A' && h <= 'F')
                    cp |= (unsigned)(h - 'A' + 10);
                else
                    return -1;
            }
            i += 4;
            if (cp < 0x80) {
                ls_buf_append_u8(out, (uint8_t)cp);
            } else if (cp < 0x800) {
                ls_buf_append_u8(out, (uint8_t)(0xc0 | cp >> 6));
                ls_buf_append_u8(out, (uint8_t)(0x80 | (cp & 0x3f)));
            } else {
                ls_buf_append_u8(out, (uint8_t)(0xe0 | cp >> 12));
                ls_buf_append_u8(out, (uint8_t)(0x80 | ((cp >> 6) & 0x3f)));
                ls_buf_append_u8(out, (uint8_t)(0x80 | (cp & 0x3f)));
            }
            break;
        }
        default: ls_buf_append_u8(out, (uint8_t)ch); break;
        }
    }
    ls_buf_append_u8(out, 0);
    return 0;
}

/* One logical line: split key from value at the first unescaped '=', ':' or
 * blank, then apply. */
static ls_status apply_line(ls_config_t *c, const char *path, int lineno, const char *s, size_t n,
                            bool others_can_read, char *err, size_t errlen)
{
    size_t i = 0;
    while (i < n && s[i] != '=' && s[i] != ':' && s[i] != ' ' && s[i] != '\t' && s[i] != '\f') {
        if (s[i] == '\\' && i + 1 < n) i++;
        i++;
    }
    size_t klen = i;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f'))
        i++;
    if (i < n && (s[i] == '=' || s[i] == ':')) i++;
    ls_status rc = LS_EINVAL;
    ls_buf_t key, val;
    ls_buf_init(&key);
    ls_buf_init(&val);
    if (unescape(s, klen, &key) || unescape(s + i, n - i, &val)) {
        errf(err, errlen, "%s:%d: bad \\u escape", path, lineno);
        goto free_bufs;
    }
    if (klen == 0) {
        errf(err, errlen, "%s:%d: missing key before '%.*s'", path, lineno, (int)(n > 40 ? 40 : n),
             s);
        goto free_bufs;
    }
    char msg[512];
    const cfg_key_t *k = key_find(c->schema, (char *)key.data);
    if (((k && k->secret) || ls_catalog_conf_secret((char *)key.data)) && others_can_read) {
        errf(err, errlen,
             "%s:%d: %s is a secret, but other users can read this file: chmod 600 %s (or pass "
             "it in the environment)",
             path, lineno, (char *)key.data, path);
        goto free_bufs;
    }
    rc = ls_config_set(c, (char *)key.data, (char *)val.data, msg, sizeof msg);
    if (rc != LS_OK) errf(err, errlen, "%s:%d: %s", path, lineno, msg);
free_bufs:
    ls_buf_free(&key);
    ls_buf_free(&val);
    return rc;
}

ls_status ls_config_load_file(ls_config_t *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        errf(err, errlen, "%s: cannot open config file: %s", path, strerror(errno));
        return LS_EIO;
    }
    ls_status rc = LS_EINVAL;
    struct stat st;
    bool others_can_read = fstat(fileno(f), &st) != 0 || (st.st_mode & (S_IRWXG | S_IRWXO));
    ls_buf_t text, logical;
    ls_buf_init(&text);
    ls_buf_init(&logical);
    char chunk[4096];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (text.len + got > CONFIG_FILE_MAX) {
            errf(err, errlen, "%s: config file larger than %d bytes", path, CONFIG_FILE_MAX);
            goto free_text;
        }
        ls_buf_append(&text, chunk, got);
    }
    if (ferror(f)) {
        errf(err, errlen, "%s: read error: %s", path, strerror(errno));
        rc = LS_EIO;
        goto free_text;
    }

    static const char nothing[1];
    const char *p = text.len ? (const char *)text.data : nothing; /* empty file: no NULL + 0 */
    const char *end = p + text.len;
    if (text.len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3; /* UTF-8 byte order mark left by some editors */
    int lineno = 0;
    while (p < end) {
        /* Gather one logical line: natural lines joined while they end in an
         * odd number of backslashes. Leading blanks of every natural line are
         * dropped; comments are recognised only at a logical line's start. */
        int first = lineno + 1;
        bool cont = true, comment = false;
        logical.len = 0;
        while (cont && p < end) {
            const char *eol = p;
            while (eol < end && *eol != '\n' && *eol != '\r')
                eol++;
            lineno++;
            const char *s = p;
            while (s < eol && (*s == ' ' || *s == '\t' || *s == '\f'))
                s++;
            if (logical.len == 0 && first == lineno && s < eol && (*s == '#' || *s == '!'))
                comment = true;
            size_t bs = 0;
            for (const char *q = eol; q > s && q[-1] == '\\'; q--)
                bs++;
            cont = !comment && (bs & 1);
            ls_buf_append(&logical, s, (size_t)(eol - s) - (cont ? 1 : 0));
            p = eol; /* step over one line ending: \n, \r\n or a lone \r */
            if (p < end && *p == '\r') p++;
            if (p < end && *p == '\n' && (p == eol || p[-1] == '\r')) p++;
        }
        if (comment || logical.len == 0) continue;
        rc = apply_line(c, path, first, (const char *)logical.data, logical.len, others_can_read,
                        err, errlen);
        if (rc != LS_OK) goto free_text;
    }
    rc = LS_OK;
free_text:
    ls_buf_free(&logical);
    ls_buf_free(&text);
    fclose(f);
    return rc;
}

ls_status ls_config_load_env(ls_config_t *c, char *err, size_t errlen)
{
    size_t plen = strlen(ENV_PREFIX);
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, ENV_PREFIX, plen) != 0) continue;
        const char *eq = strchr(*e, '=');
        if (!eq) continue;
        size_t nlen = (size_t)(eq - *e);
        if (nlen == strlen(ENV_CONFIG_FILE) && strncmp(*e, ENV_CONFIG_FILE, nlen) == 0)
            continue; /* names a config file; read by ls_config_load */
        char var[128], key[128];
        if (nlen >= sizeof var) {
            errf(err, errlen, "%.40s...: unknown variable", *e);
            return LS_EINVAL;
        }
        memcpy(var, *e, nlen);
        var[nlen] = 0;
        size_t klen = nlen - plen;
        for (size_t i = 0; i < klen; i++) {
            char ch = var[plen + i];
            key[i] = ch == '_' ? '.' : (char)tolower((unsigned char)ch);
        }
        key[klen] = 0;
        const cfg_key_t *k = key_find(c->schema, key);
        if (!k && !ls_catalog_conf_key(key)) {
            errf(err, errlen,
                 "%s: unknown variable (no config key '%s'; " ENV_CONFIG_FILE
                 " names a config file)",
                 var, key);
            return LS_EINVAL;
        }
        char msg[512];
        if (ls_config_set(c, key, eq + 1, msg, sizeof msg) != 0) {
            errf(err, errlen, "%s: %s", var, msg);
            return LS_EINVAL;
        }
    }
    return LS_OK;
}

/* "s3.secret.key" -> "S3_SECRET_KEY": the LAKESTREAM_* variable of a key. */
static const char *env_suffix(const char *name, char *out, size_t cap)
{
    size_t i = 0;
    for (; name[i] && i + 1 < cap; i++)
        out[i] = name[i] == '.' ? '_' : (char)toupper((unsigned char)name[i]);
    out[i] = 0;
    return out;
}

ls_status ls_config_load_args(ls_config_t *c, int argc, char **argv, char *err, size_t errlen)
{
    char msg[512];
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            errf(err, errlen, "unexpected argument '%s' (flags are --key=value or --key value)", a);
            return LS_EINVAL;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        char key[128];
        size_t klen = eq ? (size_t)(eq - name) : strlen(name);
        if (klen >= sizeof key) {
            errf(err, errlen, "--%.40s...: unknown key", name);
            return LS_EINVAL;
        }
        memcpy(key, name, klen);
        key[klen] = 0;
        if (strcmp(key, "config") == 0) {
            errf(err, errlen, "--config: config files are read before flags (ls_config_load)");
            return LS_EINVAL;
        }
        const cfg_key_t *k = key_find(c->schema, key);
        if (!k && ls_catalog_conf_key(key)) {
            if (ls_catalog_conf_secret(key)) {
                errf(err, errlen,
                     "--%s: secrets are not accepted as command-line flags (any local user can "
                     "read them); put it in a config file of mode 0600",
                     key);
                return LS_EINVAL;
            }
            if (!eq && i + 1 >= argc) {
                errf(err, errlen, "--%s: missing value", key);
                return LS_EINVAL;
            }
            const char *cv = eq ? eq + 1 : argv[++i];
            if (ls_config_set(c, key, cv, msg, sizeof msg) != 0) {
                errf(err, errlen, "--%s", msg);
                return LS_EINVAL;
            }
            continue;
        }
        if (!k) {
            unknown_key(c->schema, key, msg, sizeof msg);
            errf(err, errlen, "--%s", msg);
            return LS_EINVAL;
        }
        if (k->secret) {
            /* every local user can read a process's flags (/proc/PID/cmdline) */
            errf(err, errlen,
                 "--%s: secrets are not accepted as command-line flags (any local user can "
                 "read them); set LAKESTREAM_%s or the AWS_* variable, or put it in a config "
                 "file of mode 0600",
                 k->name, env_suffix(k->name, msg, sizeof msg));
            return LS_EINVAL;
        }
        const char *val;
        if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc && !(k->type == CT_BOOL && strncmp(argv[i + 1], "--", 2) == 0)) {
            val = argv[++i];
        } else if (k->type == CT_BOOL) {
            val = "true"; /* bare --flag switches a boolean on */
        } else {
            errf(err, errlen, "--%s: missing value", key);
            return LS_EINVAL;
        }
        if (ls_config_set(c, key, val, msg, sizeof msg) != 0) {
            errf(err, errlen, "--%s", msg);
            return LS_EINVAL;
        }
    }
    return LS_OK;
}

/* data.dir as an absolute path without trailing slashes, so derived URLs are
 * well-formed (file:///abs/...) and survive a later chdir. */
static char *data_dir_abs(const char *dir, char *err, size_t errlen)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (dir[0] == '/') return ls_strndup(dir, n);
    while (n >= 2 && dir[0] == '.' && dir[1] == '/') {
        dir += 2, n -= 2;
        while (n && *dir == '/')
            dir++, n--;
    }
    if (n == 1 && dir[0] == '.') n = 0;
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
        errf(err, errlen, "data.dir: cannot resolve '%s': %s", dir, strerror(errno));
        return NULL;
    }
    if (n == 0) return ls_strdup(cwd);
    return ls_asprintf("%s%s%.*s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", (int)n, dir);
}

static bool host_is_wildcard(const char *h)
{
    return !h || !*h || strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0;
}

static const char *const secproto_names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"};

const char *ls_secproto_name(ls_secproto p) { return secproto_names[p]; }

/* The protocol listener name maps to in listener.security.protocol.map
 * (Kafka's default map when unset): LS_OK, or LS_EINVAL with err set. */
static ls_status listener_protocol(const ls_config_t *c, const char *lname, ls_secproto *out,
                                   char *err, size_t errlen)
{
    const char *map = c->listener_protocol_map
                          ? c->listener_protocol_map
                          : "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                            "SASL_SSL:SASL_SSL";
    for (const char *p = map; *p;) {
        size_t len = strcspn(p, ",");
        char *entry = ls_strndup(p, len);
        char *e = trim_dup(entry);
        ls_free(entry);
        char *colon = strchr(e, ':');
        int found = -1;
        if (colon) {
            *colon = 0;
            char *proto = trim_dup(colon + 1);
            for (int i = 0; i < 4; i++)
                if (str_ieq(proto, secproto_names[i])) found = i;
            ls_free(proto);
        }
        if (!colon || found < 0 || !*e) {
            errf(err, errlen,
                 "listener.security.protocol.map: '%.*s' is not NAME:PROTOCOL (PROTOCOL one of "
                 "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)",
                 (int)len, p);
            ls_free(e);
            return LS_EINVAL;
        }
        bool match = str_ieq(e, lname);
        ls_free(e);
        if (match) {
            *out = (ls_secproto)found;
            return LS_OK;
        }
        p += len;
        if (*p) p++;
    }
    errf(err, errlen,
         "listeners: listener %s has no security protocol in listener.security.protocol.map "
         "(%s)",
         lname, map);
    return LS_EINVAL;
}

/* Resolves every Kafka listener: its protocol, and its advertised address
 * (its advertised.listeners entry, else its own address; a listener binding
 * every interface advertises this machine's name, as Kafka does). The first
 * listener's advertised address is advertised.host/advertised.port, which
 * advertised.listeners' first entry also sets. */
static ls_status listeners_finish(ls_config_t *c, char *err, size_t errlen)
{
    for (int i = 0; i < c->nadvertised; i++) {
        int j = 0;
        while (j < c->nlisteners && strcmp(c->listeners[j].name, c->advertised[i].name) != 0)
            j++;
        if (j == c->nlisteners) {
            errf(err, errlen, "advertised.listeners: %s is not a listener name in listeners",
                 c->advertised[i].name);
            return LS_EINVAL;
        }
    }
    char hn[256];
    const char *own_name =
        gethostname(hn, sizeof hn) == 0 && hn[0] && memchr(hn, 0, sizeof hn) ? hn : "127.0.0.1";
    for (int i = 0; i < c->nlisteners; i++) {
        ls_listener_cfg_t *l = &c->listeners[i];
        if (listener_protocol(c, l->name, &l->protocol, err, errlen) != 0) return LS_EINVAL;
        for (int j = 0; j < i; j++)
            if (l->port != 0 && c->listeners[j].port == l->port) {
                errf(err, errlen, "listeners: %s and %s both use port %d", c->listeners[j].name,
                     l->name, l->port);
                return LS_EINVAL;
            }
        const ls_listener_cfg_t *a = NULL;
        for (int j = 0; j < c->nadvertised; j++)
            if (strcmp(c->advertised[j].name, l->name) == 0) a = &c->advertised[j];
        /* the first listener's address may come from the single-part keys */
        if (i == 0 && (!c->nadvertised || a == &c->advertised[0])) {
            snprintf(l->adv_host, sizeof l->adv_host, "%s",
                     c->advertised_host ? c->advertised_host : "");
            l->adv_port = c->advertised_port;
        } else if (a) {
            snprintf(l->adv_host, sizeof l->adv_host, "%s", a->host);
            l->adv_port = a->port;
        }
        if (!*l->adv_host)
            snprintf(l->adv_host, sizeof l->adv_host, "%s",
                     host_is_wildcard(l->host) ? own_name : l->host);
        if (host_is_wildcard(l->adv_host)) {
            errf(err, errlen, "%s: '%s' is a wildcard address clients cannot reach",
                 i == 0 && !a ? "advertised.host" : "advertised.listeners", l->adv_host);
            return LS_EINVAL;
        }
        if (l->adv_port == 0) l->adv_port = l->port; /* 0 still when picking a free port */
    }
    str_set(c, offsetof(ls_config_t, advertised_host), ls_strdup(c->listeners[0].adv_host));
    c->advertised_port = c->listeners[0].adv_port;
    return LS_OK;
}

ls_status ls_config_http_auth(const char *s, unsigned *schemes, char *bad, size_t bcap)
{
    *schemes = 0;
    if (!s || !strcmp(s, "none")) return LS_OK;
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ", ");
        if (!n) break;
        if (n == 5 && !strncmp(p, "basic", 5))
            *schemes |= LS_HTTP_AUTH_BASIC;
        else if (n == 6 && !strncmp(p, "bearer", 6))
            *schemes |= LS_HTTP_AUTH_BEARER;
        else {
            snprintf(bad, bcap, "%.*s", (int)n, p);
            return LS_EINVAL;
        }
        p += n;
    }
    if (!*schemes) {
        snprintf(bad, bcap, "%s", s);
        return LS_EINVAL;
    }
    return LS_OK;
}

/* The http.* / schema.registry.* TLS and authentication settings that
 * involve each other: refused unless they can be applied as written. */
static ls_status http_sec_finish(ls_config_t *c, char *err, size_t errlen)
{
    static const char *const pfx[2] = {"http", "schema.registry"};
    for (int i = 0; i < 2; i++) {
        const char *p = pfx[i];
        const struct ls_http_sec_cfg *h = &c->http_sec[i];
        const char *ca = h->client_auth ? h->client_auth : "none";
        const char *au = h->authentication ? h->authentication : "none";
        bool tls = h->keystore_location || h->keystore_certificate_chain;
        if (strcmp(ca, "none") && strcmp(ca, "requested") && strcmp(ca, "required")) {
            errf(err, errlen, "%s.ssl.client.auth: '%s' is not none, requested or required", p, ca);
            return LS_EINVAL;
        }
        unsigned schemes;
        char bad[64];
        if (ls_config_http_auth(au, &schemes, bad, sizeof bad) != 0) {
            errf(err, errlen, "%s.authentication: '%s' is not none, basic, bearer or basic,bearer",
                 p, bad);
            return LS_EINVAL;
        }
        if (h->keystore_location && (h->keystore_certificate_chain || h->keystore_key)) {
            errf(err, errlen,
                 "%s.ssl.keystore.location: set with %s.ssl.keystore.certificate.chain/key; "
                 "choose one",
                 p, p);
            return LS_EINVAL;
        }
        if (!h->keystore_certificate_chain != !h->keystore_key) {
            errf(err, errlen, "%s.ssl.keystore.%s: needs %s.ssl.keystore.%s", p,
                 h->keystore_key ? "key" : "certificate.chain", p,
                 h->keystore_key ? "certificate.chain" : "key");
            return LS_EINVAL;
        }
        if (!tls && (h->truststore_location || strcmp(ca, "none"))) {
            errf(err, errlen, "%s.ssl.%s: applies to HTTPS only; set %s.ssl.keystore.location", p,
                 h->truststore_location ? "truststore.location" : "client.auth", p);
            return LS_EINVAL;
        }
        if (strcmp(ca, "none") && !h->truststore_location) {
            errf(err, errlen, "%s.ssl.client.auth=%s: needs %s.ssl.truststore.location", p, ca, p);
            return LS_EINVAL;
        }
    }
    return LS_OK;
}

/* group.consumer.assignors: a comma list of uniform / range (or Kafka's class
 * names of the two), rewritten as the short names, each once. */
static ls_status consumer_assignors_finish(ls_config_t *c, char *err, size_t errlen)
{
    static const char *const known[][2] = {
        {"uniform", "org.apache.kafka.coordinator.group.assignor.UniformAssignor"},
        {"range", "org.apache.kafka.coordinator.group.assignor.RangeAssignor"},
    };
    const char *s = c->group_consumer_assignors ? c->group_consumer_assignors : "";
    ls_buf_t out;
    ls_buf_init(&out);
    bool seen[2] = {false, false};
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, ",");
        const char *q = p;
        size_t m = n;
        while (m && (*q == ' ' || *q == '\t'))
            q++, m--;
        while (m && (q[m - 1] == ' ' || q[m - 1] == '\t'))
            m--;
        int k = -1;
        for (int i = 0; i < 2 && k < 0; i++)
            for (int j = 0; j < 2; j++)
                if (strlen(known[i][j]) == m && !strncmp(q, known[i][j], m)) k = i;
        if (k < 0) {
            errf(err, errlen,
                 "group.consumer.assignors: '%.*s' is not an assignor (uniform, range)", (int)m, q);
            ls_buf_free(&out);
            return LS_EINVAL;
        }
        if (!seen[k]) {
            if (out.len) ls_buf_append(&out, ",", 1);
            ls_buf_append(&out, known[k][0], strlen(known[k][0]));
            seen[k] = true;
        }
        p += n;
        if (*p) p++;
    }
    if (!out.len) {
        errf(err, errlen, "group.consumer.assignors: empty; name uniform and/or range");
        ls_buf_free(&out);
        return LS_EINVAL;
    }
    ls_free(c->group_consumer_assignors);
    c->group_consumer_assignors = ls_strndup((const char *)out.data, out.len);
    ls_buf_free(&out);
    const char *mp = c->group_consumer_migration_policy ? c->group_consumer_migration_policy : "";
    if (strcmp(mp, "disabled") != 0) {
        errf(err, errlen,
             "group.consumer.migration.policy: '%s' is not supported; only disabled (a group "
             "changes protocol only while it is empty)",
             mp);
        return LS_EINVAL;
    }
    return LS_OK;
}

/* One group kind's session timeout and heartbeat interval against their
 * bounds, as Kafka's GroupCoordinatorConfig requires them (its messages). */
static ls_status group_bounds_finish(const char *kind, int32_t session, int32_t smin, int32_t smax,
                                     int32_t heartbeat, int32_t hmin, int32_t hmax, char *err,
                                     size_t errlen)
{
    const struct {
        bool bad;
        const char *a, *rel, *b;
    } rules[] = {
        {smax < smin, "max.session.timeout.ms", "greater than or equal to",
         "min.session.timeout.ms"},
        {hmax < hmin, "max.heartbeat.interval.ms", "greater than or equal to",
         "min.heartbeat.interval.ms"},
        {session < smin, "session.timeout.ms", "greater than or equal to",
         "min.session.timeout.ms"},
        {session > smax, "session.timeout.ms", "less than or equal to", "max.session.timeout.ms"},
        {heartbeat < hmin, "heartbeat.interval.ms", "greater than or equal to",
         "min.heartbeat.interval.ms"},
        {heartbeat > hmax, "heartbeat.interval.ms", "less than or equal to",
         "max.heartbeat.interval.ms"},
        {heartbeat >= session, "heartbeat.interval.ms", "less than", "session.timeout.ms"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (rules[i].bad) {
            errf(err, errlen, "group.%s.%s must be %s group.%s.%s", kind, rules[i].a, rules[i].rel,
                 kind, rules[i].b);
            return LS_EINVAL;
        }
    return LS_OK;
}

static ls_status groups_finish(const ls_config_t *c, char *err, size_t errlen)
{
    if (group_bounds_finish(
            "consumer", c->group_consumer_session_timeout_ms,
            c->group_consumer_min_session_timeout_ms, c->group_consumer_max_session_timeout_ms,
            c->group_consumer_heartbeat_interval_ms, c->group_consumer_min_heartbeat_interval_ms,
            c->group_consumer_max_heartbeat_interval_ms, err, errlen) != 0)
        return LS_EINVAL;
    if (group_bounds_finish(
            "share", c->group_share_session_timeout_ms, c->group_share_min_session_timeout_ms,
            c->group_share_max_session_timeout_ms, c->group_share_heartbeat_interval_ms,
            c->group_share_min_heartbeat_interval_ms, c->group_share_max_heartbeat_interval_ms, err,
            errlen) != 0)
        return LS_EINVAL;
    if (group_bounds_finish(
            "streams", c->group_streams_session_timeout_ms, c->group_streams_min_session_timeout_ms,
            c->group_streams_max_session_timeout_ms, c->group_streams_heartbeat_interval_ms,
            c->group_streams_min_heartbeat_interval_ms, c->group_streams_max_heartbeat_interval_ms,
            err, errlen) != 0)
        return LS_EINVAL;
    /* the share group's record lock and delivery limit: Kafka's ShareGroupConfig rules */
    const struct {
        int32_t v, min, max;
        const char *key;
    } share[] = {
        {c->group_share_record_lock_duration_ms, c->group_share_min_record_lock_duration_ms,
         c->group_share_max_record_lock_duration_ms, "record.lock.duration.ms"},
        {c->group_share_delivery_count_limit, c->group_share_min_delivery_count_limit,
         c->group_share_max_delivery_count_limit, "delivery.count.limit"},
        {c->group_share_partition_max_record_locks, c->group_share_min_partition_max_record_locks,
         c->group_share_max_partition_max_record_locks, "partition.max.record.locks"},
    };
    for (size_t i = 0; i < sizeof share / sizeof share[0]; i++) {
        if (share[i].v < share[i].min) {
            errf(err, errlen, "group.share.%s must be greater than or equal to group.share.min.%s",
                 share[i].key, share[i].key);
            return LS_EINVAL;
        }
        if (share[i].v > share[i].max) {
            errf(err, errlen, "group.share.max.%s must be greater than or equal to group.share.%s",
                 share[i].key, share[i].key);
            return LS_EINVAL;
        }
    }
    return LS_OK;
}

ls_status ls_config_finish(ls_config_t *c, char *err, size_t errlen)
{
    if (!c->object_store_url || !c->metadata_url) {
        char *dir = data_dir_abs(c->data_dir, err, errlen);
        if (!dir) return LS_EINVAL;
        if (!c->object_store_url) c->object_store_url = ls_asprintf("file://%s/objects", dir);
        if (!c->metadata_url) c->metadata_url = ls_asprintf("sqlite://%s/meta.db", dir);
        ls_free(dir);
    }
    ls_status st;
    if ((st = listeners_finish(c, err, errlen)) != LS_OK ||
        (st = http_sec_finish(c, err, errlen)) != LS_OK ||
        (st = consumer_assignors_finish(c, err, errlen)) != LS_OK ||
        (st = groups_finish(c, err, errlen)) != LS_OK ||
        (st = ls_catalog_conf_finish(&c->catalogs, err, errlen)) != LS_OK)
        return st;
    if (c->wal_flush_min_interval_ms < 0) {
        /* per store: a local directory has no per-request price, so flush as
         * soon as data arrives; S3 bills every PUT and every GET/DELETE that
         * follows an object, so batch (the value is the one DescribeConfigs
         * reports from here on) */
        const char *u = c->object_store_url;
        if (strncmp(u, "faulty+", 7) == 0) u += 7;
        c->wal_flush_min_interval_ms =
            strncmp(u, "s3://", 5) == 0 ? LS_WAL_FLUSH_MIN_INTERVAL_S3_MS : 0;
    }

    /* Limits that involve two keys: a batch or a flush larger than the whole
     * produce buffer could never be admitted, and the broker would stall. */
    char a[32], b[32];
    if (c->wal_flush_max_bytes > c->wal_buffer_max_bytes) {
        fmt_size(c->wal_buffer_max_bytes, a, sizeof a);
        fmt_size(c->wal_flush_max_bytes, b, sizeof b);
        errf(err, errlen, "wal.buffer.max.bytes: %s is smaller than wal.flush.max.bytes (%s)", a,
             b);
        return LS_EINVAL;
    }
    const char *tcr = c->table_cold_reads ? c->table_cold_reads : "";
    if (strcmp(tcr, "table") != 0 && strcmp(tcr, "compacted-object") != 0) {
        errf(err, errlen, "table.cold.reads: '%s' is neither table nor compacted-object", tcr);
        return LS_EINVAL;
    }
    const char *tst = c->log_message_timestamp_type ? c->log_message_timestamp_type : "";
    if (strcmp(tst, "CreateTime") != 0 && strcmp(tst, "LogAppendTime") != 0) {
        errf(err, errlen,
             "log.message.timestamp.type: '%s' is neither CreateTime nor "
             "LogAppendTime",
             tst);
        return LS_EINVAL;
    }
    /* authorization: the built-in authorizer answers to Kafka's class
     * names; another class (a plugin) cannot be loaded, so it is refused
     * rather than silently serving without the checks it would make */
    const char *acn = c->authorizer_class_name;
    if (acn && strcmp(acn, "org.apache.kafka.metadata.authorizer.StandardAuthorizer") != 0 &&
        strcmp(acn, "kafka.security.authorizer.AclAuthorizer") != 0) {
        errf(err, errlen,
             "authorizer.class.name: '%s' is not supported; use "
             "org.apache.kafka.metadata.authorizer.StandardAuthorizer (the built-in ACL "
             "authorizer) or leave it empty (authorization off)",
             acn);
        return LS_EINVAL;
    }
    if (c->message_max_bytes > c->wal_buffer_max_bytes) {
        fmt_size(c->wal_buffer_max_bytes, a, sizeof a);
        fmt_size(c->message_max_bytes, b, sizeof b);
        errf(err, errlen, "wal.buffer.max.bytes: %s is smaller than message.max.bytes (%s)", a, b);
        return LS_EINVAL;
    }
    return LS_OK;
}

ls_status ls_config_load(ls_config_t *c, int argc, char **argv, char *err, size_t errlen)
{
    const char *file = NULL;
    char **rest = LS_NEWN(char *, (size_t)argc + 1);
    int nrest = 0;
    ls_status rc = LS_EINVAL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--config") == 0) {
            if (i + 1 >= argc) {
                errf(err, errlen, "--config: missing file name");
                goto free_rest;
            }
            file = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            file = a + 9;
        } else {
            rest[nrest++] = argv[i];
        }
    }
    if (!file) {
        const char *env = getenv(ENV_CONFIG_FILE);
        if (env && *env) file = env;
    }
    if (file && (rc = ls_config_load_file(c, file, err, errlen)) != LS_OK) goto free_rest;
    if ((rc = ls_config_load_env(c, err, errlen)) != LS_OK ||
        (rc = ls_config_load_args(c, nrest, rest, err, errlen)) != LS_OK ||
        (rc = ls_config_finish(c, err, errlen)) != LS_OK)
        goto free_rest;
    rc = LS_OK;
free_rest:
    ls_free(rest);
    return rc;
}

static const char *type_name(const cfg_key_t *k)
{
    switch (k->type) {
    case CT_STRING: return "string";
    case CT_URL: return "url";
    case CT_INT: return "integer";
    case CT_SIZE: return "size";
    case CT_BOOL: return "boolean";
    case CT_PORT: return "port";
    case CT_LISTENER: return "listener";
    case CT_LEVEL: return "level";
    }
    return "?";
}

void ls_config_print_help(const ls_config_schema_t *schema)
{
    /* The output is itself a valid properties file holding every default. */
    printf("# Lakestream configuration. Sources, later overriding earlier:\n"
           "#   1. a properties file: --config FILE, or the file named by %s\n"
           "#   2. environment: %s<KEY> with the key upper-cased and dots as underscores,\n"
           "#      e.g. LAKESTREAM_WAL_FLUSH_MAX_BYTES=8MiB (unknown %s* variables are errors)\n"
           "#   3. flags: --key=value or --key value\n"
           "# Sizes take k/m/g/t or KiB/MiB/GiB/TiB suffixes (powers of 1024).\n",
           ENV_CONFIG_FILE, ENV_PREFIX, ENV_PREFIX);
    for (size_t i = 0; i < schema->nkeys; i++) {
        const cfg_key_t *k = &schema->keys[i];
        if (k->section) printf("\n# ---- %s ----\n", k->section);
        char range[96] = "";
        if (k->type == CT_INT || k->type == CT_PORT) {
            snprintf(range, sizeof range, ", %" PRId64 "..%" PRId64, k->min, k->max);
        } else if (k->type == CT_SIZE) {
            char lo[32], hi[32];
            fmt_size(k->min, lo, sizeof lo);
            fmt_size(k->max, hi, sizeof hi);
            snprintf(range, sizeof range, ", %s..%s", lo, hi);
        }
        char env[128];
        size_t n = 0;
        for (const char *s = k->name; *s && n + 1 < sizeof env; s++)
            env[n++] = *s == '.' ? '_' : (char)toupper((unsigned char)*s);
        env[n] = 0;
        printf("# %s (%s%s; env %s%s%s%s)\n#   %s\n%s=%s\n", k->name, type_name(k), range,
               ENV_PREFIX, env, k->alias ? "; alias " : "", k->alias ? k->alias : "", k->help,
               k->name, k->def ? k->def : "");
    }
    printf("\n# ---- external table catalogs ----\n"
           "# catalog.<name>.type=rest, .uri, .warehouse, .token, .credential (ID:SECRET, OAuth2\n"
           "#   client credentials), .oauth2-server-uri, .scope, .prefix, .header.<H>: an\n"
           "#   Iceberg REST catalog that lakestream.table.catalog=<name> mirrors tables into\n"
           "#   (docs/OPERATIONS.md). None by default.\n");
}
