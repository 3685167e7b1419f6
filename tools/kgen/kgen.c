/* kgen: generates the Kafka message codecs (src/kafka/msg_gen.{h,c}) and the
 * dispatch rows with the handlers' declarations (src/kafka/api_gen.h, written
 * by serve.c) from the message descriptions in src/kafka/messages/ (one
 * NAME.msg per api).
 *
 *   kgen DIR OUT_H OUT_C OUT_API_H
 *                             write them
 *   kgen --check DIR OUT_H OUT_C OUT_API_H
 *                             exit 1 (naming the file) unless the committed
 *                             files are byte for byte what DIR describes
 *
 * The description language is documented in docs/ARCHITECTURE.md ("Kafka
 * messages"); in short, one file per API:
 *
 *   api Produce key 0 versions 3-11 flexible 9
 *   handler ls_kafka_handle_produce    (served: its handler, `serial` after
 *   row 0                               it if so; its row in ApiVersions)
 *   request
 *     TransactionalId string v3+ nullable
 *     TopicData []TopicProduceData
 *       Name string
 *   response
 *     ...
 *
 * plus common.msg, which holds the structs several messages share
 * (`struct LeaderIdAndEpoch` with indented fields), and errors.txt, Kafka's
 * error codes ("CODE NAME yes|no" a line: LS_KERR_<NAME>,
 * ls_kafka_error_name(), ls_kafka_error_retriable()). Output is deterministic:
 * files are read in name order (common.msg first) and nothing depends on the
 * environment, so regenerating reproduces the committed sources exactly.
 *
 * The generated code leans on the codec primitives (kafka/codec.h) and the
 * few helpers of kafka/msg_rt.c; everything version-dependent (which fields
 * exist, which are nullable, compact or classic encodings, tagged fields) is
 * decided here, once, from the descriptions. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kgen.h"

#define VMAX 32767

/* ------------------------------------------------------------ model */

enum kind {
    K_INT8,
    K_INT16,
    K_UINT16,
    K_INT32,
    K_UINT32,
    K_INT64,
    K_VARINT,
    K_FLOAT64,
    K_BOOL,
    K_UUID,
    K_STRING,
    K_BYTES,
    K_RECORDS,
    K_STRUCT,
};

static const struct {
    const char *name, *ctype, *rd, *wr;
    int size; /* fixed wire size; 0 = variable */
} kinds[] = {
    [K_INT8] = {"int8", "int8_t", "ls_kr_i8", "ls_kw_i8", 1},
    [K_INT16] = {"int16", "int16_t", "ls_kr_i16", "ls_kw_i16", 2},
    [K_UINT16] = {"uint16", "uint16_t", "(uint16_t)ls_kr_i16", "ls_kw_i16", 2},
    [K_INT32] = {"int32", "int32_t", "ls_kr_i32", "ls_kw_i32", 4},
    [K_UINT32] = {"uint32", "uint32_t", "ls_kr_u32", "ls_kw_u32", 4},
    [K_INT64] = {"int64", "int64_t", "ls_kr_i64", "ls_kw_i64", 8},
    [K_VARINT] = {"varint", "int32_t", "ls_kr_varint", "ls_kw_varint", 1},
    [K_FLOAT64] = {"float64", "double", "ls_kr_f64", "ls_kw_f64", 8},
    [K_BOOL] = {"bool", "bool", "ls_kr_bool", "ls_kw_bool", 1},
    [K_UUID] = {"uuid", "ls_uuid_t", NULL, NULL, 16},
    [K_STRING] = {"string", "ls_kstr_t", NULL, NULL, 0},
    [K_BYTES] = {"bytes", "ls_kbytes_t", NULL, NULL, 0},
    [K_RECORDS] = {"records", "ls_kbytes_t", NULL, NULL, 0},
    [K_STRUCT] = {"struct", NULL, NULL, NULL, 0},
};

typedef struct {
    int lo, hi;
} vr_t; /* lo > hi: never */

static bool vr_empty(vr_t v) { return v.lo > v.hi; }

typedef struct field {
    char name[64];
    enum kind kind;
    bool array;
    strct_t *st;     /* K_STRUCT */
    char stname[64]; /* K_STRUCT: type name as written */
    vr_t ver;
    vr_t nullable;
    int tag;       /* -1: not tagged */
    char dflt[64]; /* "" = none */
    int line;
} field_t;

/* A single struct that may be null (Has<Name> false). */
static bool nullable_struct(const field_t *f)
{
    return f->kind == K_STRUCT && !f->array && !vr_empty(f->nullable);
}

struct strct {
    char name[64]; /* short name (as written) */
    char id[192];  /* C name without the ls_kafka_ prefix */
    field_t *f;
    int nf;
    bool shared;       /* common.msg */
    strct_t *alias_of; /* response = OtherApi */
    int order;         /* emission order */
    bool needz;        /* minimum size needed (array element or inside one) */
};

static api_t apis[128];
static int napis;

/* Kafka's error codes (errors.txt beside the descriptions). */
typedef struct kerr {
    int code;
    char name[64];
    bool retriable;
} kerr_t;
static kerr_t kerrs[512];
static int nkerrs;
static strct_t *structs[1024];
static int nstructs;
const char *cur_file;

void die(int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kgen: %s:%d: ", cur_file ? cur_file : "?", line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s);
    if (!p) {
        fprintf(stderr, "kgen: out of memory\n");
        exit(2);
    }
    return p;
}

static strct_t *new_struct(const char *name, const char *id, int line)
{
    for (int i = 0; i < nstructs; i++)
        if (!strcmp(structs[i]->id, id)) die(line, "struct %s defined twice", id);
    if (nstructs == (int)(sizeof structs / sizeof structs[0])) die(line, "too many structs");
    strct_t *s = xcalloc(1, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->id, sizeof s->id, "%s", id);
    s->f = xcalloc(64, sizeof *s->f);
    structs[nstructs++] = s;
    return s;
}

static strct_t *find_shared(const char *name)
{
    for (int i = 0; i < nstructs; i++)
        if (structs[i]->shared && !strcmp(structs[i]->name, name)) return structs[i];
    return NULL;
}

/* ------------------------------------------------------------ parsing */

static bool parse_vr(const char *s, vr_t *v)
{
    char *end;
    long lo = strtol(s, &end, 10);
    if (end == s || lo < 0 || lo > VMAX) return false;
    if (*end == '+' && !end[1]) {
        v->lo = (int)lo;
        v->hi = VMAX;
        return true;
    }
    if (!*end) {
        v->lo = v->hi = (int)lo;
        return true;
    }
    if (*end != '-') return false;
    const char *h = end + 1;
    long hi = strtol(h, &end, 10);
    if (end == h || *end || hi < lo || hi > VMAX) return false;
    v->lo = (int)lo;
    v->hi = (int)hi;
    return true;
}

/* The next line of a description file into buf, its newline and any
 * '#' comment cut off; *line counts lines. False at the end. */
static bool read_line(FILE *fp, char *buf, size_t cap, int *line)
{
    if (!fgets(buf, (int)cap, fp)) return false;
    ++*line;
    size_t len = strlen(buf);
    if (len && buf[len - 1] == '\n')
        buf[--len] = 0;
    else if (!feof(fp))
        die(*line, "line too long");
    char *hash = strchr(buf, '#');
    if (hash) *hash = 0;
    return true;
}

static int split(char *line, char **tok, int max)
{
    int n = 0;
    for (char *p = strtok(line, " \t"); p && n < max; p = strtok(NULL, " \t"))
        tok[n++] = p;
    return n;
}

static bool is_ident(const char *s)
{
    if (!isupper((unsigned char)*s)) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s)) return false;
    return true;
}

static void parse_field(strct_t *s, char **tok, int n, int line)
{
    if (n < 2) die(line, "a field needs a name and a type");
    if (!is_ident(tok[0]))
        die(line, "field name '%s' must be CamelCase letters and digits", tok[0]);
    if (s->nf == 64) die(line, "too many fields in %s", s->name);
    for (int i = 0; i < s->nf; i++)
        if (!strcmp(s->f[i].name, tok[0])) die(line, "field %s twice in %s", tok[0], s->name);
    field_t *f = &s->f[s->nf++];
    snprintf(f->name, sizeof f->name, "%s", tok[0]);
    f->line = line;
    f->ver = (vr_t){0, VMAX};
    f->nullable = (vr_t){1, 0};
    f->tag = -1;
    const char *t = tok[1];
    if (!strncmp(t, "[]", 2)) {
        f->array = true;
        t += 2;
    }
    f->kind = K_STRUCT;
    for (int k = 0; k < K_STRUCT; k++)
        if (!strcmp(t, kinds[k].name)) f->kind = (enum kind)k;
    if (f->kind == K_STRUCT) {
        if (!is_ident(t)) die(line, "unknown type '%s'", t);
        snprintf(f->stname, sizeof f->stname, "%s", t);
    }
    if (f->kind == K_RECORDS && f->array) die(line, "records cannot be an array");
    for (int i = 2; i < n; i++) {
        const char *a = tok[i];
        if (a[0] == 'v' && isdigit((unsigned char)a[1])) {
            if (!parse_vr(a + 1, &f->ver)) die(line, "bad version range '%s'", a);
        } else if (!strcmp(a, "nullable")) {
            f->nullable = (vr_t){0, VMAX};
        } else if (!strncmp(a, "nullable=v", 10)) {
            if (!parse_vr(a + 10, &f->nullable)) die(line, "bad nullable range '%s'", a);
        } else if (!strncmp(a, "tag=", 4)) {
            char *end;
            long tg = strtol(a + 4, &end, 10);
            if (end == a + 4 || *end || tg < 0 || tg > 1000000) die(line, "bad tag '%s'", a);
            f->tag = (int)tg;
        } else if (!strncmp(a, "default=", 8)) {
            snprintf(f->dflt, sizeof f->dflt, "%s", a + 8);
        } else {
            die(line, "unknown attribute '%s'", a);
        }
    }
    if (f->nullable.lo <= f->nullable.hi &&
        !(f->kind == K_STRING || f->kind == K_BYTES || f->kind == K_RECORDS || f->array ||
          f->kind == K_STRUCT))
        die(line, "only strings, bytes, records, structs and arrays can be nullable");
    /* A nullable struct is an int8 (-1 null, 1 present) before its fields. */
    if (nullable_struct(f) && (f->tag >= 0 || f->nullable.lo != 0 || f->nullable.hi != VMAX))
        die(line, "a nullable struct is nullable at every version and not tagged");
    if (f->array && !strcmp(f->dflt, "null")) {
        if (vr_empty(f->nullable)) die(line, "default=null needs a nullable array");
    } else if (f->dflt[0]) {
        if (f->array || f->kind == K_STRUCT || f->kind == K_UUID || f->kind == K_BYTES ||
            f->kind == K_RECORDS)
            die(line, "default= applies to numbers, bools and strings only");
        if (f->kind == K_STRING && strcmp(f->dflt, "null"))
            die(line, "a string default can only be null (the empty string is implied)");
        if (f->kind == K_BOOL && strcmp(f->dflt, "true") && strcmp(f->dflt, "false"))
            die(line, "a bool default is true or false");
    }
}

static int indent_of(const char *l)
{
    int n = 0;
    while (l[n] == ' ')
        n++;
    if (l[n] == '\t') return -1;
    return n;
}

static void upper_snake(const char *camel, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; camel[i] && o + 2 < cap; i++) {
        if (i > 0 && isupper((unsigned char)camel[i]) && islower((unsigned char)camel[i - 1]))
            out[o++] = '_';
        out[o++] = (char)toupper((unsigned char)camel[i]);
    }
    out[o] = 0;
}

static api_t *find_api(const char *name)
{
    for (int i = 0; i < napis; i++)
        if (!strcmp(apis[i].name, name)) return &apis[i];
    return NULL;
}

/* Parses errors.txt: "CODE NAME yes|no" per line, codes strictly
 * increasing (so each code and each name appears once), names in Kafka's
 * upper snake case. */
static void parse_errors(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "kgen: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    cur_file = path;
    char buf[1024];
    int line = 0;
    while (read_line(fp, buf, sizeof buf, &line)) {
        char *tok[8];
        int n = split(buf, tok, 8);
        if (n == 0) continue;
        if (n != 3) die(line, "expected CODE NAME yes|no");
        char *end;
        long code = strtol(tok[0], &end, 10);
        if (*end || end == tok[0] || code < -32768 || code > 32767)
            die(line, "bad error code '%s'", tok[0]);
        if (nkerrs && code <= kerrs[nkerrs - 1].code)
            die(line, "error code %ld not above %d (codes in increasing order, each once)", code,
                kerrs[nkerrs - 1].code);
        if (strlen(tok[1]) >= sizeof kerrs[0].name) die(line, "error name too long");
        for (const char *c = tok[1]; *c; c++)
            if (!(isupper((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '_') ||
                (c == tok[1] && !isupper((unsigned char)*c)))
                die(line, "error name '%s' is not upper snake case", tok[1]);
        for (int i = 0; i < nkerrs; i++)
            if (!strcmp(kerrs[i].name, tok[1])) die(line, "error name %s twice", tok[1]);
        bool yes = !strcmp(tok[2], "yes");
        if (!yes && strcmp(tok[2], "no"))
            die(line, "retriable must be yes or no, not '%s'", tok[2]);
        if (nkerrs == (int)(sizeof kerrs / sizeof kerrs[0])) die(line, "too many error codes");
        kerrs[nkerrs].code = (int)code;
        snprintf(kerrs[nkerrs].name, sizeof kerrs[0].name, "%s", tok[1]);
        kerrs[nkerrs].retriable = yes;
        nkerrs++;
    }
    fclose(fp);
    if (nkerrs == 0) die(line, "no error codes");
}

/* Parses one file. Levels: indent 0 = directive; fields indented by 2 per
 * nesting level below the struct that holds them. */
static void parse_file(const char *path, bool common)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "kgen: %s: %s\n", path, strerror(errno));
        exit(2);
    }
    cur_file = path;
    char buf[1024];
    int line = 0;
    api_t *api = NULL;
    strct_t *stack[16]; /* stack[d]: struct receiving fields at indent 2*(d+1) */
    int depth = -1;     /* top of stack */
    char msg[64] = "";  /* ProduceRequest / ProduceResponse: prefix of nested ids */
    while (read_line(fp, buf, sizeof buf, &line)) {
        size_t len = strlen(buf);
        while (len && (buf[len - 1] == ' '))
            buf[--len] = 0;
        if (!len) continue;
        int ind = indent_of(buf);
        if (ind < 0 || ind % 2) die(line, "indent with an even number of spaces, no tabs");
        char *tok[16] = {0};
        int n = split(buf, tok, 16);
        if (ind == 0) {
            depth = -1;
            if (!strcmp(tok[0], "struct")) {
                if (!common || n != 2 || !is_ident(tok[1]))
                    die(line, "'struct Name' belongs in common.msg");
                strct_t *s = new_struct(tok[1], tok[1], line);
                s->shared = true;
                stack[depth = 0] = s;
            } else if (!strcmp(tok[0], "api")) {
                /* api NAME key K versions A-B flexible F|none */
                if (common || api || n != 8 || strcmp(tok[2], "key") ||
                    strcmp(tok[4], "versions") || strcmp(tok[6], "flexible"))
                    die(line, "expected 'api Name key N versions A-B flexible F|none' (once)");
                if (napis == (int)(sizeof apis / sizeof apis[0])) die(line, "too many apis");
                if (!is_ident(tok[1]) || find_api(tok[1]))
                    die(line, "bad or duplicate api name %s", tok[1]);
                api = &apis[napis++];
                snprintf(api->name, sizeof api->name, "%s", tok[1]);
                snprintf(api->file, sizeof api->file, "%s",
                         strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
                upper_snake(api->name, api->upper, sizeof api->upper);
                api->key = atoi(tok[3]);
                vr_t v;
                if (!parse_vr(tok[5], &v) || v.hi == VMAX) die(line, "versions must be A-B");
                api->min = v.lo;
                api->max = v.hi;
                if (!strcmp(tok[7], "none"))
                    api->flex = VMAX + 1;
                else if (!parse_vr(tok[7], &v) || v.lo != v.hi)
                    die(line, "flexible takes the first flexible version or none");
                else
                    api->flex = v.lo;
                for (int i = 0; i < napis - 1; i++)
                    if (apis[i].key == api->key) die(line, "api key %d twice", api->key);
            } else if (!strcmp(tok[0], "request") || !strcmp(tok[0], "response")) {
                if (!api) die(line, "'%s' before 'api'", tok[0]);
                bool isreq = tok[0][2] == 'q';
                snprintf(msg, sizeof msg, "%.48s%s", api->name, isreq ? "Request" : "Response");
                if ((isreq ? api->req : api->resp)) die(line, "%s twice", tok[0]);
                strct_t *s = new_struct(msg, msg, line);
                if (n == 3 && !strcmp(tok[1], "=")) {
                    /* response = OtherApi: same struct type and wire shape */
                    api_t *o = find_api(tok[2]);
                    if (!o || !(isreq ? o->req : o->resp))
                        die(line, "unknown api %s (describe it in a file sorted earlier)", tok[2]);
                    s->alias_of = isreq ? o->req : o->resp;
                } else if (n != 1) {
                    die(line, "expected '%s' or '%s = OtherApi'", tok[0], tok[0]);
                }
                if (isreq)
                    api->req = s;
                else
                    api->resp = s;
                if (!s->alias_of) stack[depth = 0] = s;
            } else if (!kgen_serve_directive(api, common, tok, n, line)) {
                die(line, "unknown directive '%s'", tok[0]);
            }
            continue;
        }
        int d = ind / 2 - 1;
        if (d > depth) die(line, "indented too far");
        depth = d;
        strct_t *s = stack[d];
        parse_field(s, tok, n, line);
        field_t *f = &s->f[s->nf - 1];
        if (f->kind == K_STRUCT) {
            /* A name of common.msg is that shared struct; a name already
             * defined in this message reuses it; any other opens an inline
             * struct whose fields follow, indented (check_struct refuses
             * one left empty: most likely a misspelt shared name). */
            char id[192];
            if (common || find_shared(f->stname))
                snprintf(id, sizeof id, "%s", f->stname);
            else
                snprintf(id, sizeof id, "%s_%s", msg, f->stname);
            strct_t *ex = NULL;
            for (int i = 0; i < nstructs; i++)
                if (!strcmp(structs[i]->id, id)) ex = structs[i];
            if (ex) {
                f->st = ex;
            } else {
                if (d + 1 >= 15) die(line, "nested too deep");
                f->st = new_struct(f->stname, id, line);
                f->st->shared = common;
                stack[d + 1] = f->st;
                depth = d + 1;
            }
        }
    }
    fclose(fp);
    if (!common && (!api || !api->req || !api->resp))
        die(line, "a file describes one api with its request and response");
}

/* ------------------------------------------------------------ checks */

static void check_struct(strct_t *s)
{
    if (!s->nf && !s->alias_of)
        die(0, "struct %s has no fields (is a shared struct misspelt?)", s->id);
    for (int i = 0; i < s->nf; i++) {
        field_t *f = &s->f[i];
        for (int j = 0; j < s->nf; j++) {
            char nm[80];
            snprintf(nm, sizeof nm, "Num%s", s->f[j].name);
            if (s->f[j].array && !strcmp(nm, f->name))
                die(f->line, "%s.%s clashes with the count of array %s", s->id, f->name,
                    s->f[j].name);
            snprintf(nm, sizeof nm, "Has%s", s->f[j].name);
            if (s->f[j].kind == K_STRUCT && !s->f[j].array && s->f[j].tag >= 0 &&
                !strcmp(nm, f->name))
                die(f->line, "%s.%s clashes with the flag of tagged %s", s->id, f->name,
                    s->f[j].name);
        }
        for (int j = 0; j < i; j++)
            if (f->tag >= 0 && s->f[j].tag == f->tag)
                die(f->line, "tag %d twice in %s", f->tag, s->id);
    }
}

/* ------------------------------------------------------------ output */

void o_printf(out_t *o, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(o->p ? o->p + o->len : NULL, o->p ? o->cap - o->len : 0, fmt, ap);
        va_end(ap);
        if (o->p && o->len + (size_t)n < o->cap) {
            o->len += (size_t)n;
            return;
        }
        o->cap = (o->cap + (size_t)n + 1) * 2;
        o->p = realloc(o->p, o->cap);
        if (!o->p) {
            fprintf(stderr, "kgen: out of memory\n");
            exit(2);
        }
    }
}

static void ind(out_t *o, int n)
{
    for (int i = 0; i < n; i++)
        P("    ");
}

/* Version condition "v >= 3 && v <= 7" for range r within [min, max]; "" if always. */
static void vcond(char *buf, size_t cap, vr_t r, int min, int max)
{
    bool lo = r.lo > min, hi = r.hi < max;
    if (r.lo == r.hi && lo && hi)
        snprintf(buf, cap, "v == %d", r.lo);
    else if (lo && hi)
        snprintf(buf, cap, "v >= %d && v <= %d", r.lo, r.hi);
    else if (lo)
        snprintf(buf, cap, "v >= %d", r.lo);
    else if (hi)
        snprintf(buf, cap, "v <= %d", r.hi);
    else
        buf[0] = 0;
}

/* Range a field is considered over: the api's range for message structs,
 * everything for shared ones (their users' versions are not known here). */
typedef struct ctx {
    int min, max;
} ctx_t;

static bool vr_covers(vr_t r, ctx_t c) { return r.lo <= c.min && r.hi >= c.max; }
static bool vr_meets(vr_t r, ctx_t c) { return r.lo <= c.max && r.hi >= c.min; }

static const char *ctype(const field_t *f, char *buf, size_t cap)
{
    if (f->kind == K_STRUCT)
        snprintf(buf, cap, "ls_kafka_%s", f->st->id);
    else
        snprintf(buf, cap, "%s", kinds[f->kind].ctype);
    return buf;
}

static ctx_t ctx_of(const strct_t *s);
static bool struct_needs_init(const strct_t *s);

/* Strings absent at some version default to null when nullable at some
 * version (or default=null), else to "" (a non-NULL empty view). */
static bool field_needs_init(const field_t *f, ctx_t c)
{
    if (f->array) return !strcmp(f->dflt, "null");
    if (f->kind == K_STRUCT) return struct_needs_init(f->st);
    if (f->kind == K_STRING)
        return !strcmp(f->dflt, "null") || !vr_empty(f->nullable) || !vr_covers(f->ver, c);
    return f->dflt[0] && strcmp(f->dflt, "0") && strcmp(f->dflt, "false");
}

static bool struct_needs_init(const strct_t *s)
{
    ctx_t c = ctx_of(s);
    for (int i = 0; i < s->nf; i++)
        if (field_needs_init(&s->f[i], c)) return true;
    return false;
}

static void header_comment(out_t *o, const field_t *f)
{
    char b[256] = "";
    size_t n = 0;
#define ADD(...)                                                                                   \
    n += (size_t)snprintf(b + n, sizeof b - n, "%s", n ? ", " : ""),                               \
        n += (size_t)snprintf(b + n, sizeof b - n, __VA_ARGS__)
    if (f->ver.lo > 0 || f->ver.hi < VMAX) {
        if (f->ver.hi == VMAX)
            ADD("v%d+", f->ver.lo);
        else if (f->ver.lo == f->ver.hi)
            ADD("v%d", f->ver.lo);
        else
            ADD("v%d-%d", f->ver.lo, f->ver.hi);
    }
    if (!vr_empty(f->nullable)) {
        if (f->nullable.lo == 0 && f->nullable.hi == VMAX)
            ADD("nullable");
        else if (f->nullable.hi == VMAX)
            ADD("nullable v%d+", f->nullable.lo);
        else
            ADD("nullable v%d-%d", f->nullable.lo, f->nullable.hi);
    }
    if (f->tag >= 0) ADD("tag %d", f->tag);
    if (f->dflt[0]) ADD("default %s", f->dflt);
#undef ADD
    if (n) P(" /* %s */", b);
}

static void emit_struct_decl(out_t *o, const strct_t *s)
{
    char t[256];
    P("typedef struct ls_kafka_%s {\n", s->id);
    for (int i = 0; i < s->nf; i++) {
        const field_t *f = &s->f[i];
        if (f->kind == K_STRUCT && !f->array && f->tag >= 0)
            P("    bool Has%s; /* tag %d present */\n", f->name, f->tag);
        if (nullable_struct(f)) P("    bool Has%s; /* false = null */\n", f->name);
        if (f->kind == K_RECORDS) {
            P("    ls_kref_t *RecordRefs; /* encode: zero-copy %s (see top) */\n", f->name);
            P("    int NumRecordRefs;\n");
        }
        if (f->array && f->kind == K_STRUCT)
            P("    ls_kafka_%s *%s;", f->st->id, f->name);
        else if (f->array)
            P("    %s *%s;", kinds[f->kind].ctype, f->name);
        else
            P("    %s %s;", ctype(f, t, sizeof t), f->name);
        header_comment(o, f);
        P("\n");
        if (f->array)
            P("    int32_t Num%s;%s\n", f->name, vr_empty(f->nullable) ? "" : " /* -1 = null */");
    }
    P("} ls_kafka_%s;\n\n", s->id);
}

/* Minimum wire size of a struct at (v, f): bounds array counts. */
static void emit_minsize(out_t *o, const strct_t *s, ctx_t c)
{
    P("static size_t z_%s(int16_t v, bool f)\n{\n", s->id);
    P("    size_t n = 0;\n");
    bool usedv = false;
    for (int i = 0; i < s->nf; i++) {
        const field_t *f = &s->f[i];
        if (f->tag >= 0 || !vr_meets(f->ver, c)) continue;
        char cond[64], sz[256];
        vcond(cond, sizeof cond, f->ver, c.min, c.max);
        if (cond[0]) usedv = true;
        if (f->array || f->kind == K_STRING || f->kind == K_BYTES || f->kind == K_RECORDS)
            snprintf(sz, sizeof sz, "(f ? 1 : %d)", f->array || f->kind != K_STRING ? 4 : 2);
        else if (nullable_struct(f))
            snprintf(sz, sizeof sz, "1");
        else if (f->kind == K_STRUCT) {
            snprintf(sz, sizeof sz, "z_%s(v, f)", f->st->id);
            usedv = true;
        } else
            snprintf(sz, sizeof sz, "%d", kinds[f->kind].size);
        if (cond[0])
            P("    if (%s)\n        n += %s;\n", cond, sz);
        else
            P("    n += %s;\n", sz);
    }
    P("    if (f)\n        n += 1;\n");
    if (!usedv) P("    (void)v;\n");
    P("    return n;\n}\n\n");
}

static void emit_init(out_t *o, const strct_t *s)
{
    if (!struct_needs_init(s)) return;
    ctx_t c = ctx_of(s);
    P("static void i_%s(ls_kafka_%s *m)\n{\n", s->id, s->id);
    for (int i = 0; i < s->nf; i++) {
        const field_t *f = &s->f[i];
        if (!field_needs_init(f, c)) continue;
        if (f->array)
            P("    m->Num%s = -1;\n", f->name);
        else if (f->kind == K_STRUCT)
            P("    i_%s(&m->%s);\n", f->st->id, f->name);
        else if (f->kind == K_STRING && (!strcmp(f->dflt, "null") || !vr_empty(f->nullable)))
            P("    m->%s = ls_kstr_null();\n", f->name);
        else if (f->kind == K_STRING)
            P("    m->%s = ls_kstr_c(\"\");\n", f->name);
        else
            P("    m->%s = %s;\n", f->name, f->dflt);
    }
    P("}\n\n");
}

/* The "what" of a decode error: Struct.Field. */
static void what(char *b, size_t cap, const strct_t *s, const field_t *f)
{
    snprintf(b, cap, "%s.%s", s->name, f->name);
}

/* Whether the field's value may be null at version v, as a C expression; for
 * arrays this is the array itself (their elements are never null). */
static void nullable_expr(char *b, size_t cap, const field_t *f, ctx_t c)
{
    if (vr_empty(f->nullable) || !vr_meets(f->nullable, c))
        snprintf(b, cap, "false");
    else {
        vcond(b, cap, f->nullable, c.min, c.max);
        if (!b[0]) snprintf(b, cap, "true");
    }
}

/* Array count (bounded by the element's minimum wire size) and arena array. */
static void emit_arrlen(out_t *o, int in, const strct_t *s, const field_t *f, const char *R,
                        ctx_t c)
{
    char w[160], nul[64], elem[256];
    what(w, sizeof w, s, f);
    nullable_expr(nul, sizeof nul, f, c);
    if (f->kind == K_STRUCT)
        snprintf(elem, sizeof elem, "z_%s(v, f)", f->st->id);
    else if (f->kind == K_STRING)
        snprintf(elem, sizeof elem, "f ? 1 : 2");
    else if (f->kind == K_BYTES)
        snprintf(elem, sizeof elem, "f ? 1 : 4");
    else
        snprintf(elem, sizeof elem, "%d", kinds[f->kind].size);
    ind(o, in);
    P("m->Num%s = ls_kmsg_arrlen(%s, f, %s, %s, \"%s\");\n", f->name, R, elem, nul, w);
    ind(o, in);
    P("m->%s = ls_kmsg_alloc(a, m->Num%s, sizeof *m->%s);\n", f->name, f->name, f->name);
}

/* Reads a single (non-array) value of field f into LHS. */
static void emit_read_one(out_t *o, int in, const strct_t *s, const field_t *f, const char *R,
                          const char *lhs, ctx_t c)
{
    char w[160], nul[64];
    what(w, sizeof w, s, f);
    if (f->array)
        snprintf(nul, sizeof nul, "false");
    else
        nullable_expr(nul, sizeof nul, f, c);
    ind(o, in);
    switch (f->kind) {
    case K_UUID: P("ls_kr_uuid(%s, &%s);\n", R, lhs); break;
    case K_STRING:
        if (!strcmp(nul, "true"))
            P("%s = ls_kr_str(%s, f);\n", lhs, R);
        else if (!strcmp(nul, "false"))
            P("%s = ls_kmsg_str(%s, f, \"%s\");\n", lhs, R, w);
        else
            P("%s = %s ? ls_kr_str(%s, f) : ls_kmsg_str(%s, f, \"%s\");\n", lhs, nul, R, R, w);
        break;
    case K_BYTES:
    case K_RECORDS:
        if (!strcmp(nul, "true"))
            P("%s = ls_kr_bytes(%s, f);\n", lhs, R);
        else if (!strcmp(nul, "false"))
            P("%s = ls_kmsg_bytes(%s, f, \"%s\");\n", lhs, R, w);
        else
            P("%s = %s ? ls_kr_bytes(%s, f) : ls_kmsg_bytes(%s, f, \"%s\");\n", lhs, nul, R, R, w);
        break;
    case K_STRUCT: P("d_%s(%s, v, f, a, &%s);\n", f->st->id, R, lhs); break;
    default: P("%s = %s(%s);\n", lhs, kinds[f->kind].rd, R); break;
    }
}

static void emit_read_field(out_t *o, int in, const strct_t *s, const field_t *f, const char *R,
                            ctx_t c)
{
    char lhs[128];
    if (f->array) {
        emit_arrlen(o, in, s, f, R, c);
        ind(o, in);
        P("for (int32_t i = 0; i < m->Num%s && !%s; i++) {\n", f->name,
          !strcmp(R, "r") ? "r->err" : "sub.err");
        if (f->kind == K_STRUCT && struct_needs_init(f->st)) {
            ind(o, in + 1);
            P("i_%s(&m->%s[i]);\n", f->st->id, f->name);
        }
        snprintf(lhs, sizeof lhs, "m->%s[i]", f->name);
        emit_read_one(o, in + 1, s, f, R, lhs, c);
        ind(o, in);
        P("}\n");
        return;
    }
    snprintf(lhs, sizeof lhs, "m->%s", f->name);
    if (nullable_struct(f)) {
        ind(o, in);
        P("if ((m->Has%s = ls_kr_i8(%s) >= 0))\n", f->name, R);
        emit_read_one(o, in + 1, s, f, R, lhs, c);
        return;
    }
    if (f->kind == K_STRUCT && f->tag >= 0) {
        ind(o, in);
        P("m->Has%s = true;\n", f->name);
    }
    emit_read_one(o, in, s, f, R, lhs, c);
}

static int cmp_tag(const void *a, const void *b)
{
    return (*(const field_t *const *)a)->tag - (*(const field_t *const *)b)->tag;
}

static int sorted_tags(const strct_t *s, ctx_t c, const field_t **out)
{
    int n = 0;
    for (int i = 0; i < s->nf; i++)
        if (s->f[i].tag >= 0 && vr_meets(s->f[i].ver, c)) out[n++] = &s->f[i];
    qsort(out, (size_t)n, sizeof *out, cmp_tag);
    return n;
}

static bool struct_uses_a(const strct_t *s, ctx_t c);

static bool field_uses_a(const field_t *f, ctx_t c)
{
    if (!vr_meets(f->ver, c)) return false;
    return f->array || (f->kind == K_STRUCT && struct_uses_a(f->st, c));
}

static bool struct_uses_a(const strct_t *s, ctx_t c)
{
    for (int i = 0; i < s->nf; i++)
        if (field_uses_a(&s->f[i], c)) return true;
    return false;
}

static bool struct_uses_v(const strct_t *s, ctx_t c)
{
    for (int i = 0; i < s->nf; i++) {
        const field_t *f = &s->f[i];
        if (!vr_meets(f->ver, c)) continue;
        char b[64];
        vcond(b, sizeof b, f->ver, c.min, c.max);
        if (b[0] || f->kind == K_STRUCT) return true;
        nullable_expr(b, sizeof b, f, c);
        if (strcmp(b, "true") && strcmp(b, "false")) return true;
    }
    return false;
}

static void emit_decode(out_t *o, const strct_t *s, ctx_t c)
{
    P("static void d_%s(ls_kr_t *r, int16_t v, bool f, ls_arena_t *a, ls_kafka_%s *m)\n{\n", s->id,
      s->id);
    if (!struct_uses_a(s, c)) P("    (void)a;\n");
    if (!struct_uses_v(s, c)) P("    (void)v;\n");
    for (int i = 0; i < s->nf; i++) {
        const field_t *f = &s->f[i];
        if (f->tag >= 0 || !vr_meets(f->ver, c)) continue;
        char cond[64];
        vcond(cond, sizeof cond, f->ver, c.min, c.max);
        if (cond[0]) {
            P("    if (%s) {\n", cond);
            emit_read_field(o, 2, s, f, "r", c);
            P("    }\n");
        } else {
            emit_read_field(o, 1, s, f, "r", c);
        }
    }
    const field_t *tg[64];
    int nt = sorted_tags(s, c, tg);
    if (!nt) {
        P("    ls_kr_tags(r, f);\n}\n\n");
        return;
    }
    P("    uint32_t nt = ls_kmsg_tags_begin(r, f);\n");
    P("    for (uint32_t k = 0; k < nt && !r->err; k++) {\n");
    P("        ls_kr_t sub;\n");
    P("        switch (ls_kmsg_tag_next(r, &sub)) {\n");
    for (int i = 0; i < nt; i++) {
        const field_t *f = tg[i];
        char cond[64];
        vcond(cond, sizeof cond, f->ver, c.min, c.max);
        P("        case %d:\n", f->tag);
        if (cond[0]) {
            P("            if (%s) {\n", cond);
            emit_read_field(o, 4, s, f, "&sub", c);
            P("            }\n");
        } else {
            emit_read_field(o, 3, s, f, "&sub", c);
        }
        P("            break;\n");
    }
    P("        default:\n            break;\n");
    P("        }\n");
    P("        ls_kmsg_tag_end(r, &sub);\n");
    P("    }\n}\n\n");
}

/* Writes one value (not an array) of field f held in VAL to writer W. */
static void emit_write_one(out_t *o, int in, const field_t *f, const char *W, const char *val,
                           ctx_t c)
{
    char nul[64];
    if (f->array)
        snprintf(nul, sizeof nul, "false");
    else
        nullable_expr(nul, sizeof nul, f, c);
    ind(o, in);
    switch (f->kind) {
    case K_UUID: P("ls_kw_uuid(%s, &%s);\n", W, val); break;
    case K_STRING:
        if (!strcmp(nul, "true"))
            P("ls_kmsg_wstr(%s, f, %s);\n", W, val);
        else if (!strcmp(nul, "false"))
            P("ls_kmsg_wstr_nn(%s, f, %s);\n", W, val);
        else
            P("(%s ? ls_kmsg_wstr : ls_kmsg_wstr_nn)(%s, f, %s);\n", nul, W, val);
        break;
    case K_BYTES: P("ls_kmsg_wbytes(%s, f, %s, %s);\n", W, val, nul); break;
    case K_RECORDS:
        P("ls_kmsg_wrecords(%s, f, m->RecordRefs, m->NumRecordRefs, %s, %s);\n", W, val, nul);
        break;
    case K_STRUCT: P("e_%s(%s, v, f, &%s);\n", f->st->id, W, val); break;
    default: P("%s(%s, %s);\n", kinds[f->kind].wr, W, val); break;
    }
}

static void emit_write_field(out_t *o, int in, const field_t *f, const char *W, ctx_t c)
{
    char val[128];
    if (f->array) {
        char nul[64];
        nullable_expr(nul, sizeof nul, f, c);
        ind(o, in);
        P("ls_kmsg_warrlen(%s, f, m->Num%s, %s);\n", W, f->name, nul);
        ind(o, in);
        P("for (int32_t i = 0; i < m->Num%s; i++)\n", f->name);
        snprintf(val, sizeof val, "m->%s[i]", f->name);
        emit_write_one(o, in + 1, f, W, val, c);
        return;
    }
    snprintf(val, sizeof val, "m->%s", f->name);
    if (nullable_struct(f)) {
        ind(o, in);
        P("ls_kw_i8(%s, m->Has%s ? 1 : -1);\n", W, f->name);
        ind(o, in);
        P("if (m->Has%s)\n", f->name);
        emit_write_one(o, in + 1, f, W, val, c);
        return;
    }
    emit_write_one(o, in, f, W, val, c);
}

/* Condition under which a tagged field is written: it differs from its default. */
static void tag_present(char *b, size_t cap, const field_t *f)
{
    if (f->array)
        snprintf(b, cap, "m->Num%s > 0", f->name);
    else if (f->kind == K_STRUCT)
        snprintf(b, cap, "m->Has%s", f->name);
    else if (f->kind == K_UUID)
        snprintf(b, cap, "!ls_uuid_is_zero(&m->%s)", f->name);
    else if (f->kind == K_STRING || f->kind == K_BYTES)
        snprintf(b, cap, "m->%s.len %s 0", f->name, !strcmp(f->dflt, "null") ? ">=" : ">");
    else
        snprintf(b, cap, "m->%s != %s", f->name, f->dflt[0] ? f->dflt : "0");
}

static void emit_encode(out_t *o, const strct_t *s, ctx_t c)
{
    P("static void e_%s(ls_kw_t *w, int16_t v, bool f, const ls_kafka_%s *m)\n{\n", s->id, s->id);
    if (!struct_uses_v(s, c)) P("    (void)v;\n");
    for (int i = 0; i < s->nf; i++) {
        const field_t *f = &s->f[i];
        if (f->tag >= 0 || !vr_meets(f->ver, c)) continue;
        char cond[64];
        vcond(cond, sizeof cond, f->ver, c.min, c.max);
        if (cond[0]) {
            P("    if (%s) {\n", cond);
            emit_write_field(o, 2, f, "w", c);
            P("    }\n");
        } else {
            emit_write_field(o, 1, f, "w", c);
        }
    }
    const field_t *tg[64];
    int nt = sorted_tags(s, c, tg);
    if (!nt) {
        P("    ls_kw_tags(w, f);\n}\n\n");
        return;
    }
    P("    if (!f)\n        return;\n");
    for (int i = 0; i < nt; i++) {
        const field_t *f = tg[i];
        char cond[64], pres[160];
        vcond(cond, sizeof cond, f->ver, c.min, c.max);
        tag_present(pres, sizeof pres, f);
        if (cond[0])
            P("    bool t%d = %s && %s;\n", i, cond, pres);
        else
            P("    bool t%d = %s;\n", i, pres);
    }
    P("    ls_kw_uvarint(w, ");
    for (int i = 0; i < nt; i++)
        P("%s(uint32_t)t%d", i ? " + " : "", i);
    P(");\n");
    for (int i = 0; i < nt; i++) {
        const field_t *f = tg[i];
        P("    if (t%d) {\n", i);
        P("        ls_kw_t t;\n        ls_kw_init(&t);\n");
        emit_write_field(o, 2, f, "&t", c);
        P("        ls_kmsg_wtag(w, %d, &t);\n        ls_kw_free(&t);\n    }\n", f->tag);
    }
    P("}\n\n");
}

/* A nullable struct field counts one byte towards its parent's minimum
 * (emit_minsize), so only non-null nested structs need their own. */
static void mark_needz(strct_t *s)
{
    if (s->needz) return;
    s->needz = true;
    for (int i = 0; i < s->nf; i++)
        if (s->f[i].kind == K_STRUCT && !s->f[i].array && s->f[i].tag < 0 &&
            !nullable_struct(&s->f[i]))
            mark_needz(s->f[i].st);
}

/* Structs in dependency order (children before parents), each once. */
static strct_t *order[1024];
static int norder;

static void visit(strct_t *s)
{
    if (s->order) return;
    s->order = -1;
    if (s->alias_of) visit(s->alias_of);
    for (int i = 0; i < s->nf; i++)
        if (s->f[i].kind == K_STRUCT) {
            if (s->f[i].st->order == -1)
                die(s->f[i].line, "struct %s contains itself", s->f[i].st->id);
            visit(s->f[i].st);
        }
    s->order = ++norder;
    order[norder - 1] = s;
}

/* Context (version range) of a struct: its api's range; shared structs get
 * the widest range so every version check is emitted. */
static ctx_t ctx_of(const strct_t *s)
{
    if (s->shared) return (ctx_t){0, VMAX};
    for (int i = 0; i < napis; i++) {
        const char *n = apis[i].name;
        size_t l = strlen(n);
        if (!strncmp(s->id, n, l) &&
            (!strncmp(s->id + l, "Request", 7) || !strncmp(s->id + l, "Response", 8)))
            return (ctx_t){apis[i].min, apis[i].max};
    }
    return (ctx_t){0, VMAX};
}

const char *const kgen_banner =
    "/* GENERATED by tools/kgen from src/kafka/messages/ (NAME.msg, errors.txt): do not edit.\n"
    " * Change a description and run `make gen`; `make test` checks that these\n"
    " * files are what the descriptions say (docs/ARCHITECTURE.md, \"Kafka\n"
    " * messages\"). */\n"
    "/* clang-format off */\n";

static void gen_header(out_t *o)
{
    P("%s", kgen_banner);
    P("/* Kafka request/response messages: C structs in Kafka's own spelling and a\n"
      " * decode/encode pair for each, per version.\n"
      " *\n"
      " * Conventions\n"
      " *  - Strings are ls_kstr_t views (null: ptr NULL, len -1); bytes ls_kbytes_t.\n"
      " *    Decoded views point into the request buffer; arrays live in the arena.\n"
      " *  - An array field Foo comes with int32_t NumFoo. For arrays the description\n"
      " *    marks nullable, NumFoo == -1 means null; a non-nullable array, string or\n"
      " *    bytes sent as null is a decode error (as in Kafka's generated code).\n"
      " *  - Fields absent at a version are skipped by the encoder and set to their\n"
      " *    default by the decoder (the description's default=, else zero; strings\n"
      " *    that are nullable at some version default to null).\n"
      " *  - Tagged fields (KIP-482) are written only when they differ from their\n"
      " *    default (scalars, strings), are non-empty (arrays), or, for tagged\n"
      " *    structs, when their Has<Field> flag is set.\n"
      " *  - records fields: the encoder writes, when NumRecordRefs > 0, one length\n"
      " *    prefix for the sum of RecordRefs and then ls_kw_ref() for each (zero\n"
      " *    copy: the writer keeps its own chunk references); otherwise the bytes\n"
      " *    view. The decoder fills the view and leaves RecordRefs empty.\n"
      " *  - decode returns 0, or -1 with r->err/r->what set (sticky reader); it does\n"
      " *    not require the reader to be exhausted. A version outside the api's\n"
      " *    range fails with \"unsupported version\".\n"
      " *  - LS_KAFKA_<API>_{MIN,MAX,FLEX} are the supported versions and the first\n"
      " *    flexible one (INT16_MAX: never); ls_kmsg_<Api> describes each api for\n"
      " *    the dispatch table (kafka/api.c) and the fuzz harness. */\n");
    P("#ifndef LS_KAFKA_MSG_GEN_H\n#define LS_KAFKA_MSG_GEN_H\n");
    P("#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n\n");
    P("#include \"kafka/msg_rt.h\"\n\n");
    P("/* API keys (protocol guide \"Api Keys\"). */\nenum {\n");
    for (int i = 0; i < napis; i++)
        P("    LS_KAFKA_API_%s = %d,\n", apis[i].upper, apis[i].key);
    P("};\n\n");
    P("/* Kafka error codes (protocol guide \"Error Codes\"), every one of Kafka's\n"
      " * list, from src/kafka/messages/errors.txt. */\n");
    for (int i = 0; i < nkerrs; i++)
        if (kerrs[i].code < 0)
            P("#define LS_KERR_%s (%d)\n", kerrs[i].name, kerrs[i].code);
        else
            P("#define LS_KERR_%s %d\n", kerrs[i].name, kerrs[i].code);
    P("\n/* Kafka's name of an error code (\"NOT_COORDINATOR\"); NULL for a code\n"
      " * not in the list. */\n"
      "const char *ls_kafka_error_name(int code);\n"
      "/* True when Kafka's exception for the code is retriable (a client may\n"
      " * send the same request again); false for unknown codes. */\n"
      "bool ls_kafka_error_retriable(int code);\n\n");
    for (int i = 0; i < napis; i++) {
        P("#define LS_KAFKA_%s_MIN %d\n", apis[i].upper, apis[i].min);
        P("#define LS_KAFKA_%s_MAX %d\n", apis[i].upper, apis[i].max);
        if (apis[i].flex > VMAX)
            P("#define LS_KAFKA_%s_FLEX INT16_MAX\n", apis[i].upper);
        else
            P("#define LS_KAFKA_%s_FLEX %d\n", apis[i].upper, apis[i].flex);
    }
    P("\n");
    for (int i = 0; i < norder; i++) {
        strct_t *s = order[i];
        if (s->alias_of)
            P("typedef ls_kafka_%s ls_kafka_%s;\n\n", s->alias_of->id, s->id);
        else
            emit_struct_decl(o, s);
    }
    for (int i = 0; i < napis; i++) {
        const api_t *a = &apis[i];
        P("/* %s (key %d), %s */\n", a->name, a->key, a->file);
        const strct_t *ms[2] = {a->req, a->resp};
        for (int k = 0; k < 2; k++) {
            P("int ls_kafka_%s_decode(ls_kr_t *r, int16_t version, ls_arena_t *a,\n"
              "    ls_kafka_%s *m);\n",
              ms[k]->id, ms[k]->id);
            P("void ls_kafka_%s_encode(ls_kw_t *w, int16_t version, const ls_kafka_%s *m);\n",
              ms[k]->id, ms[k]->id);
        }
        P("extern const ls_kmsg_api_t ls_kmsg_%s;\n\n", a->name);
    }
    P("/* Every api above, in key order. */\n");
    P("extern const ls_kmsg_api_t *const ls_kmsg_all[];\nextern const int ls_kmsg_nall;\n");
    P("#endif\n");
}

static void gen_source(out_t *o)
{
    P("%s", kgen_banner);
    P("#include <string.h>\n\n#include \"kafka/msg_gen.h\"\n\n");
    for (int i = 0; i < norder; i++) {
        strct_t *s = order[i];
        if (s->alias_of) continue;
        ctx_t c = ctx_of(s);
        P("/* ---- %s */\n\n", s->id);
        if (s->needz) emit_minsize(o, s, c);
        emit_init(o, s);
        emit_decode(o, s, c);
        emit_encode(o, s, c);
    }
    for (int i = 0; i < napis; i++) {
        const api_t *a = &apis[i];
        const strct_t *ms[2] = {a->req, a->resp};
        P("/* ---- %s (key %d) */\n\n", a->name, a->key);
        for (int k = 0; k < 2; k++) {
            const strct_t *s = ms[k];
            const strct_t *b = s->alias_of ? s->alias_of : s;
            P("int ls_kafka_%s_decode(ls_kr_t *r, int16_t v, ls_arena_t *a, ls_kafka_%s *m)\n{\n",
              s->id, s->id);
            P("    memset(m, 0, sizeof *m);\n");
            if (struct_needs_init(b)) P("    i_%s(m);\n", b->id);
            P("    if (!ls_kmsg_version_ok(r, v, LS_KAFKA_%s_MIN, LS_KAFKA_%s_MAX))\n"
              "        return -1;\n",
              a->upper, a->upper);
            P("    d_%s(r, v, v >= LS_KAFKA_%s_FLEX, a, m);\n", b->id, a->upper);
            P("    return r->err ? -1 : 0;\n}\n\n");
            P("void ls_kafka_%s_encode(ls_kw_t *w, int16_t v, const ls_kafka_%s *m)\n{\n", s->id,
              s->id);
            P("    e_%s(w, v, v >= LS_KAFKA_%s_FLEX, m);\n}\n\n", b->id, a->upper);
            P("static int g_%s_decode(ls_kr_t *r, int16_t v, ls_arena_t *a, void *m)\n{\n"
              "    return ls_kafka_%s_decode(r, v, a, m);\n}\n\n",
              s->id, s->id);
            P("static void g_%s_encode(ls_kw_t *w, int16_t v, const void *m)\n{\n"
              "    ls_kafka_%s_encode(w, v, m);\n}\n\n",
              s->id, s->id);
        }
        P("const ls_kmsg_api_t ls_kmsg_%s = {\n", a->name);
        P("    .key = %d,\n    .name = \"%s\",\n", a->key, a->name);
        P("    .min_version = LS_KAFKA_%s_MIN,\n    .max_version = LS_KAFKA_%s_MAX,\n"
          "    .first_flexible = LS_KAFKA_%s_FLEX,\n",
          a->upper, a->upper, a->upper);
        P("    .request_size = sizeof(ls_kafka_%s),\n", a->req->id);
        P("    .decode_request = g_%s_decode,\n    .encode_request = g_%s_encode,\n", a->req->id,
          a->req->id);
        P("    .response_size = sizeof(ls_kafka_%s),\n", a->resp->id);
        P("    .decode_response = g_%s_decode,\n    .encode_response = g_%s_encode,\n", a->resp->id,
          a->resp->id);
        P("};\n\n");
    }
    P("const ls_kmsg_api_t *const ls_kmsg_all[] = {\n");
    for (int i = 0; i < napis; i++)
        P("    &ls_kmsg_%s,\n", apis[i].name);
    P("};\nconst int ls_kmsg_nall = %d;\n", napis);
    P("\nconst char *ls_kafka_error_name(int code)\n{\n    switch (code) {\n");
    for (int i = 0; i < nkerrs; i++)
        P("    case LS_KERR_%s: return \"%s\";\n", kerrs[i].name, kerrs[i].name);
    P("    }\n    return NULL;\n}\n");
    P("\nbool ls_kafka_error_retriable(int code)\n{\n    switch (code) {\n");
    for (int i = 0; i < nkerrs; i++)
        if (kerrs[i].retriable) P("    case LS_KERR_%s:\n", kerrs[i].name);
    P("        return true;\n    }\n    return false;\n}\n");
}

/* ------------------------------------------------------------ main */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_api(const void *a, const void *b)
{
    return ((const api_t *)a)->key - ((const api_t *)b)->key;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *p = xcalloc(cap, 1);
    size_t k;
    while ((k = fread(p + n, 1, cap - n, fp)) > 0) {
        n += k;
        if (n == cap) {
            cap *= 2;
            p = realloc(p, cap);
            if (!p) exit(2);
        }
    }
    fclose(fp);
    *len = n;
    return p;
}

/* Lines longer than 100 columns are wrapped at the top-level commas of
 * their first parenthesis, continuations aligned after it (the house
 * .clang-format's layout), so the committed output reads like the rest. */
#define COLS 100

static size_t close_paren(const char *l, size_t open, size_t len)
{
    int depth = 0;
    bool str = false;
    for (size_t i = open; i < len; i++) {
        if (str) {
            if (l[i] == '\\')
                i++;
            else if (l[i] == '"')
                str = false;
        } else if (l[i] == '"') {
            str = true;
        } else if (l[i] == '(') {
            depth++;
        } else if (l[i] == ')' && --depth == 0) {
            return i;
        }
    }
    return 0;
}

static void wrap_line(out_t *o, const char *l, size_t len, size_t from)
{
    const char *q = from < len ? memchr(l + from, '(', len - from) : NULL;
    size_t open = q ? (size_t)(q - l) : 0, close = q ? close_paren(l, open, len) : 0;
    if (len <= COLS || !q || !close) {
        P("%.*s\n", (int)len, l);
        return;
    }
    /* The arguments of the first parenthesis, split at its top-level commas. */
    size_t as[64], an[64], na = 0, a = open + 1, widest = 0;
    int depth = 0;
    bool str = false;
    for (size_t i = open + 1; i <= close && na < 64; i++) {
        char ch = l[i];
        if (str) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                str = false;
        } else if (ch == '"') {
            str = true;
        } else if (ch == '(') {
            depth++;
        } else if (ch == ')' && i != close) {
            depth--;
        } else if ((ch == ',' && depth == 0) || i == close) {
            as[na] = a;
            an[na] = i - a + (i == close ? len - close : 1); /* with its comma or the tail */
            widest = an[na] > widest ? an[na] : widest;
            na++;
            a = i + 1;
            while (a < close && l[a] == ' ')
                a++;
        }
    }
    if (na < 2 && memchr(l + open + 1, '(', close - open - 1)) {
        wrap_line(o, l, len, open + 1); /* one argument, e.g. if (...): wrap the call in it */
        return;
    }
    /* Continuations align after the parenthesis, or, when an argument would
     * not fit there, go on the next line indented by 4 more than the line. */
    size_t col = open + 1;
    P("%.*s", (int)col, l);
    if (col + widest > COLS) {
        size_t lead = 0;
        while (l[lead] == ' ')
            lead++;
        col = lead + 4;
        P("\n%*s", (int)col, "");
    }
    size_t cur = col;
    for (size_t k = 0; k < na; k++) {
        if (k && cur + 1 + an[k] > COLS) {
            P("\n%*s", (int)col, "");
            cur = col;
        } else if (k) {
            P(" ");
            cur++;
        }
        P("%.*s", (int)an[k], l + as[k]);
        cur += an[k];
    }
    P("\n");
}

static void wrap_all(const out_t *in, out_t *o)
{
    size_t i = 0;
    while (i < in->len) {
        const char *nl = memchr(in->p + i, '\n', in->len - i);
        size_t n = nl ? (size_t)(nl - (in->p + i)) : in->len - i;
        wrap_line(o, in->p + i, n, 0);
        i += n + 1;
    }
}

static int emit(const char *path, const out_t *o, bool check)
{
    if (check) {
        size_t len;
        char *old = read_all(path, &len);
        bool same = old && len == o->len && !memcmp(old, o->p, len);
        free(old);
        if (!same) {
            fprintf(stderr, "kgen: %s is not what src/kafka/messages describes; run `make gen`\n",
                    path);
            return 1;
        }
        return 0;
    }
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(o->p, 1, o->len, fp) != o->len || fclose(fp) != 0) {
        fprintf(stderr, "kgen: cannot write %s\n", path);
        exit(2);
    }
    return 0;
}

int main(int argc, char **argv)
{
    bool check = argc > 1 && !strcmp(argv[1], "--check");
    if (argc != 5 + check) {
        fprintf(stderr, "usage: kgen [--check] MESSAGES_DIR OUT_H OUT_C OUT_API_H\n");
        return 2;
    }
    const char *dir = argv[1 + check];
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "kgen: %s: %s\n", dir, strerror(errno));
        return 2;
    }
    char *names[256];
    int nn = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".msg") && strcmp(e->d_name, "common.msg")) {
            if (nn == 256) return 2;
            names[nn++] = strdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, (size_t)nn, sizeof *names, cmp_str);
    char path[4096];
    snprintf(path, sizeof path, "%s/errors.txt", dir);
    parse_errors(path);
    snprintf(path, sizeof path, "%s/common.msg", dir);
    parse_file(path, true);
    for (int i = 0; i < nn; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        parse_file(path, false);
        free(names[i]);
    }
    cur_file = dir;
    for (int i = 0; i < nstructs; i++)
        check_struct(structs[i]);
    kgen_check_served(apis, napis);
    cur_file = dir;
    qsort(apis, (size_t)napis, sizeof apis[0], cmp_api);
    /* Emission order: shared structs first, then each api's request and
     * response trees, children before parents. */
    for (int i = 0; i < nstructs; i++)
        if (structs[i]->shared) visit(structs[i]);
    for (int i = 0; i < napis; i++) {
        visit(apis[i].req);
        visit(apis[i].resp);
    }
    for (int i = 0; i < nstructs; i++)
        for (int j = 0; j < structs[i]->nf; j++)
            if (structs[i]->f[j].kind == K_STRUCT && structs[i]->f[j].array)
                mark_needz(structs[i]->f[j].st);
    out_t raw_h = {0}, raw_c = {0}, h = {0}, c = {0}, disp = {0};
    gen_header(&raw_h);
    gen_source(&raw_c);
    wrap_all(&raw_h, &h);
    wrap_all(&raw_c, &c);
    free(raw_h.p);
    free(raw_c.p);
    int rc = emit(argv[2 + check], &h, check);
    rc |= emit(argv[3 + check], &c, check);
    kgen_gen_dispatch(&disp, apis, napis); /* not wrapped: its rows are one macro */
    rc |= emit(argv[4 + check], &disp, check);
    free(h.p);
    free(c.p);
    free(disp.p);
    return rc;
}
