/* Protobuf schema parsing and compatibility; the contract is in protobuf.h.
 *
 * The text is tokenized once (comments dropped), parsed by recursive
 * descent into files of messages and enums (every file of the schema and
 * its imports in one arena), then every field type is resolved in a second
 * pass, when all names are known. Also the payload check of produce-time
 * validation (ls_proto_check_payload). Cut along its seams:
 * protobuf_compat.c compatibility, protobuf_descriptor.c serialized
 * descriptors; the model they share is in protobuf_int.h. */
#include "registry/protobuf.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/pbwire.h"
#include "base/status.h"
#include "base/utf8.h"
#include "registry/protobuf_int.h"

#define MAX_FIELD_NUMBER 536870911

/* ---- the built-in well-known files (google/protobuf/...) ------------------------ */

static const struct {
    const char *name, *text;
} WELL_KNOWN[] = {
    {"google/protobuf/timestamp.proto",
     "syntax = \"proto3\"; package google.protobuf;"
     "message Timestamp { int64 seconds = 1; int32 nanos = 2; }"},
    {"google/protobuf/duration.proto", "syntax = \"proto3\"; package google.protobuf;"
                                       "message Duration { int64 seconds = 1; int32 nanos = 2; }"},
    {"google/protobuf/any.proto", "syntax = \"proto3\"; package google.protobuf;"
                                  "message Any { string type_url = 1; bytes value = 2; }"},
    {"google/protobuf/empty.proto",
     "syntax = \"proto3\"; package google.protobuf; message Empty {}"},
    {"google/protobuf/field_mask.proto", "syntax = \"proto3\"; package google.protobuf;"
                                         "message FieldMask { repeated string paths = 1; }"},
    {"google/protobuf/struct.proto",
     "syntax = \"proto3\"; package google.protobuf;"
     "message Struct { map<string, Value> fields = 1; }"
     "message Value { oneof kind { NullValue null_value = 1; double number_value = 2;"
     " string string_value = 3; bool bool_value = 4; Struct struct_value = 5;"
     " ListValue list_value = 6; } }"
     "enum NullValue { NULL_VALUE = 0; }"
     "message ListValue { repeated Value values = 1; }"},
    {"google/protobuf/wrappers.proto",
     "syntax = \"proto3\"; package google.protobuf;"
     "message DoubleValue { double value = 1; } message FloatValue { float value = 1; }"
     "message Int64Value { int64 value = 1; } message UInt64Value { uint64 value = 1; }"
     "message Int32Value { int32 value = 1; } message UInt32Value { uint32 value = 1; }"
     "message BoolValue { bool value = 1; } message StringValue { string value = 1; }"
     "message BytesValue { bytes value = 1; }"},
};

static const char *const SCALARS[] = {
    "double",  "float",   "int32",    "int64",    "uint32", "uint64", "sint32", "sint64",
    "fixed32", "fixed64", "sfixed32", "sfixed64", "bool",   "string", "bytes",  NULL};

/* ---- model ---------------------------------------------------------------------- */

static void *own(ls_proto_t *p, void *x)
{
    if (p->nallocs == p->capallocs) {
        p->capallocs = p->capallocs ? 2 * p->capallocs : 64;
        p->allocs = ls_realloc(p->allocs, p->capallocs * sizeof *p->allocs);
    }
    p->allocs[p->nallocs++] = x;
    return x;
}

static void push(ls_proto_t *p, void ***arr, size_t *n, void *x)
{
    void **old = *arr;
    *arr = ls_malloc((*n + 1) * sizeof **arr);
    if (*n) memcpy(*arr, old, *n * sizeof **arr);
    (*arr)[(*n)++] = x;
    own(p, *arr);
}

void ls_proto_free(ls_proto_t *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->nallocs; i++)
        ls_free(p->allocs[i]);
    ls_free(p->allocs);
    ls_free(p->files);
    ls_free(p->canon);
    ls_free(p);
}

const char *ls_proto_canonical(const ls_proto_t *p) { return p->canon; }

const pfile_t *ls_proto_file(const ls_proto_t *p) { return p->files[0]; }

const pmsg_t *ls_proto_message_at(const pfile_t *f, const int64_t *idx, size_t n, char *err,
                                  size_t errlen)
{
    int64_t zero = 0;
    if (!n) idx = &zero, n = 1;
    const pmsg_t *msg = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t cnt = msg ? msg->nmsgs : f->nmsgs;
        if (idx[i] < 0 || (uint64_t)idx[i] >= cnt) {
            snprintf(err, errlen, "message index %lld at level %zu names no message of the schema",
                     (long long)idx[i], i);
            return NULL;
        }
        msg = msg ? msg->msgs[idx[i]] : f->msgs[idx[i]];
    }
    return msg;
}

/* ---- tokens ------------------------------------------------------------------------ */

typedef enum { K_IDENT, K_NUM, K_STR, K_SYM, K_END } tokkind;

typedef struct tok {
    tokkind k;
    char *s; /* lexeme; strings: decoded contents */
    char *raw;
    int line;
} tok_t;

typedef struct parser {
    ls_proto_t *p;
    tok_t *t;
    size_t nt, i;
    char *err;
    size_t errlen;
    int failed;
    int depth;
    pfile_t *file;
    const char *fname;
} parser_t;

__attribute__((format(printf, 2, 3))) static void fail(parser_t *ps, const char *fmt, ...)
{
    if (ps->failed) return;
    ps->failed = 1;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = ps->i < ps->nt ? ps->t[ps->i].line : ps->nt ? ps->t[ps->nt - 1].line : 1;
    snprintf(ps->err, ps->errlen, "%s%sline %d: %s", ps->fname ? ps->fname : "",
             ps->fname ? ", " : "", line, msg);
}

static int tokenize(parser_t *ps, const char *s)
{
    size_t cap = 64;
    ps->t = ls_malloc(cap * sizeof *ps->t);
    ps->nt = 0;
    int line = 1;
    while (*s) {
        if (*s == '\n') line++;
        if (isspace((unsigned char)*s)) {
            s++;
            continue;
        }
        if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n')
                s++;
            continue;
        }
        if (s[0] == '/' && s[1] == '*') {
            const char *e = strstr(s + 2, "*/");
            if (!e) {
                fail(ps, "a comment is not closed");
                return -1;
            }
            for (; s < e; s++)
                if (*s == '\n') line++;
            s = e + 2;
            continue;
        }
        if (ps->nt + 1 >= cap) ps->t = ls_realloc(ps->t, (cap *= 2) * sizeof *ps->t);
        tok_t *t = &ps->t[ps->nt];
        t->line = line;
        const char *start = s;
        if (isalpha((unsigned char)*s) || *s == '_') {
            while (isalnum((unsigned char)*s) || *s == '_')
                s++;
            t->k = K_IDENT;
        } else if (isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]))) {
            while (isalnum((unsigned char)*s) || *s == '.' ||
                   ((*s == '+' || *s == '-') && (s[-1] == 'e' || s[-1] == 'E')))
                s++;
            t->k = K_NUM;
        } else if (*s == '"' || *s == '\'') {
            char q = *s++;
            ls_buf_t b;
            ls_buf_init(&b);
            while (*s && *s != q && *s != '\n') {
                if (*s == '\\' && s[1]) {
                    ls_buf_append_u8(&b, (uint8_t)s[1]);
                    s += 2;
                } else {
                    ls_buf_append_u8(&b, (uint8_t)*s++);
                }
            }
            if (*s != q) {
                ls_buf_free(&b);
                ps->nt++;
                fail(ps, "a string is not closed");
                return -1;
            }
            s++;
            ls_buf_append_u8(&b, 0);
            t->k = K_STR;
            t->s = own(ps->p, ls_buf_steal(&b, NULL));
            t->raw = own(ps->p, ls_strndup(start, (size_t)(s - start)));
            ps->nt++;
            continue;
        } else if (strchr("{}[]()<>;=,.:-+/", *s)) {
            s++;
            t->k = K_SYM;
        } else {
            ps->nt++;
            fail(ps, "unexpected character '%c'", *s);
            return -1;
        }
        t->s = t->raw = own(ps->p, ls_strndup(start, (size_t)(s - start)));
        ps->nt++;
    }
    ps->t[ps->nt] = (tok_t){.k = K_END, .s = "", .raw = "", .line = line};
    return 0;
}

static const tok_t *peek(parser_t *ps) { return &ps->t[ps->i < ps->nt ? ps->i : ps->nt]; }

static int is(parser_t *ps, const char *s)
{
    const tok_t *t = peek(ps);
    return t->k != K_END && t->k != K_STR && !strcmp(t->s, s);
}

static int accept(parser_t *ps, const char *s)
{
    if (!is(ps, s)) return 0;
    ps->i++;
    return 1;
}

static void expect(parser_t *ps, const char *s)
{
    if (ps->failed) return;
    if (!accept(ps, s)) fail(ps, "expected '%s', found '%s'", s, peek(ps)->raw);
}

static const char *ident(parser_t *ps, const char *what)
{
    if (ps->failed) return "";
    const tok_t *t = peek(ps);
    if (t->k != K_IDENT) {
        fail(ps, "expected %s, found '%s'", what, t->raw);
        return "";
    }
    ps->i++;
    return t->s;
}

/* A dotted name, possibly starting with '.'. */
static const char *full_ident(parser_t *ps, const char *what)
{
    ls_buf_t b;
    ls_buf_init(&b);
    if (accept(ps, ".")) ls_buf_append_u8(&b, '.');
    ls_buf_printf(&b, "%s", ident(ps, what));
    while (!ps->failed && accept(ps, "."))
        ls_buf_printf(&b, ".%s", ident(ps, what));
    ls_buf_append_u8(&b, 0);
    return own(ps->p, ls_buf_steal(&b, NULL));
}

static long long number(parser_t *ps, const char *what)
{
    if (ps->failed) return 0;
    int neg = accept(ps, "-");
    const tok_t *t = peek(ps);
    char *end;
    long long v = t->k == K_NUM ? strtoll(t->s, &end, 0) : 0;
    if (t->k != K_NUM || *end) {
        if (t->k == K_IDENT && !strcmp(t->s, "max")) {
            ps->i++;
            return MAX_FIELD_NUMBER;
        }
        fail(ps, "expected %s, found '%s'", what, t->raw);
        return 0;
    }
    ps->i++;
    return neg ? -v : v;
}

/* Skips a constant (scalar, or an aggregate in braces). */
static void skip_constant(parser_t *ps)
{
    if (ps->failed) return;
    if (is(ps, "{")) {
        int depth = 0;
        do {
            if (peek(ps)->k == K_END) {
                fail(ps, "an option value is not closed");
                return;
            }
            if (is(ps, "{"))
                depth++;
            else if (is(ps, "}"))
                depth--;
            ps->i++;
        } while (depth > 0);
        return;
    }
    if (!accept(ps, "-")) accept(ps, "+");
    if (peek(ps)->k == K_END || peek(ps)->k == K_SYM) {
        fail(ps, "expected a constant, found '%s'", peek(ps)->raw);
        return;
    }
    ps->i++;
    while (!ps->failed && peek(ps)->k == K_STR)
        ps->i++; /* adjacent strings */
}

/* option name: ident or "(" full ident ")" then ("." ident)* */
static void option_name(parser_t *ps)
{
    if (accept(ps, "(")) {
        full_ident(ps, "an option name");
        expect(ps, ")");
    } else {
        ident(ps, "an option name");
    }
    while (!ps->failed && accept(ps, ".")) {
        if (accept(ps, "(")) {
            full_ident(ps, "an option name");
            expect(ps, ")");
        } else {
            ident(ps, "an option name");
        }
    }
}

static void option_stmt(parser_t *ps)
{
    option_name(ps);
    expect(ps, "=");
    skip_constant(ps);
    expect(ps, ";");
}

static void field_options(parser_t *ps)
{
    if (!accept(ps, "[")) return;
    do {
        option_name(ps);
        expect(ps, "=");
        skip_constant(ps);
    } while (!ps->failed && accept(ps, ","));
    expect(ps, "]");
}

/* reserved / extensions: ranges ("5", "9 to 11", "100 to max") or names
 * (strings; identifiers in editions style), mixed as protobufjs writes them */
static void ranges_stmt(parser_t *ps)
{
    do {
        if (peek(ps)->k == K_STR) {
            ps->i++;
        } else if (peek(ps)->k == K_IDENT && !is(ps, "max")) {
            ident(ps, "a reserved name");
        } else {
            number(ps, "a number");
            if (accept(ps, "to")) number(ps, "a number");
        }
    } while (!ps->failed && accept(ps, ","));
    field_options(ps);
    expect(ps, ";");
}

static int is_scalar(const char *t)
{
    for (const char *const *s = SCALARS; *s; s++)
        if (!strcmp(*s, t)) return 1;
    return 0;
}

static const char *join(parser_t *ps, const char *a, const char *b)
{
    return own(ps->p, *a ? ls_asprintf("%s.%s", a, b) : ls_strdup(b));
}

static pmsg_t *new_msg(parser_t *ps, const char *name, pmsg_t *parent)
{
    pmsg_t *m = own(ps->p, LS_NEW(pmsg_t));
    m->name = name;
    m->parent = parent;
    m->file = ps->file;
    m->full = join(ps, parent ? parent->full : ps->file->package, name);
    return m;
}

static penum_t *enum_def(parser_t *ps, const char *scope)
{
    penum_t *e = own(ps->p, LS_NEW(penum_t));
    e->name = ident(ps, "an enum name");
    e->full = join(ps, scope, e->name);
    e->file = ps->file;
    expect(ps, "{");
    size_t values = 0;
    while (!ps->failed && !accept(ps, "}")) {
        if (accept(ps, ";")) continue;
        if (accept(ps, "option"))
            option_stmt(ps);
        else if (accept(ps, "reserved"))
            ranges_stmt(ps);
        else {
            const char *vname = ident(ps, "an enum value name");
            expect(ps, "=");
            long long num = number(ps, "an enum value number");
            field_options(ps);
            expect(ps, ";");
            if (!ps->failed) {
                push(ps->p, (void ***)&e->values, &e->nvalues, (void *)vname);
                long long *nums = ls_malloc(e->nvalues * sizeof *nums);
                if (e->nvalues > 1) memcpy(nums, e->numbers, (e->nvalues - 1) * sizeof *nums);
                nums[e->nvalues - 1] = num;
                e->numbers = own(ps->p, nums);
            }
            values++;
        }
        if (peek(ps)->k == K_END && !ps->failed) fail(ps, "enum '%s' is not closed", e->name);
    }
    if (!ps->failed && values == 0) fail(ps, "enum '%s' has no values", e->name);
    return e;
}

static void message_body(parser_t *ps, pmsg_t *m);

static pfield_t *add_field(parser_t *ps, pmsg_t *m)
{
    if (m->nfields == m->capfields) {
        m->capfields = m->capfields ? 2 * m->capfields : 8;
        pfield_t *nf = ls_malloc(m->capfields * sizeof *nf);
        if (m->nfields) memcpy(nf, m->fields, m->nfields * sizeof *nf);
        m->fields = own(ps->p, nf);
    }
    pfield_t *f = &m->fields[m->nfields++];
    memset(f, 0, sizeof *f);
    f->oneof = -1;
    f->line = peek(ps)->line;
    return f;
}

/* [label] type name = number [options] ;   |   map<K, V> name = number ... */
static void field(parser_t *ps, pmsg_t *m, tlabel label, int oneof)
{
    pfield_t *f = add_field(ps, m);
    f->label = label;
    f->oneof = oneof;
    if (accept(ps, "map")) {
        if (label != L_NONE) fail(ps, "a map field cannot have a label");
        expect(ps, "<");
        f->type.kind = T_MAP;
        f->type.scalar = ident(ps, "a map key type");
        if (!ps->failed && (!is_scalar(f->type.scalar) || !strcmp(f->type.scalar, "double") ||
                            !strcmp(f->type.scalar, "float") || !strcmp(f->type.scalar, "bytes")))
            fail(ps, "'%s' cannot be a map key type", f->type.scalar);
        expect(ps, ",");
        f->type.value = own(ps->p, LS_NEW(ptype_t));
        f->type.value->written = full_ident(ps, "a map value type");
        expect(ps, ">");
        f->type.written = "map";
    } else if (accept(ps, "group")) {
        /* proto2 group: a nested message and a field of its type */
        const char *gname = ident(ps, "a group name");
        f->name = own(ps->p, ls_strdup(gname));
        for (char *c = (char *)f->name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        expect(ps, "=");
        f->number = (int)number(ps, "a field number");
        field_options(ps);
        pmsg_t *g = new_msg(ps, gname, m);
        size_t idx = (size_t)(f - m->fields);
        push(ps->p, (void ***)&m->msgs, &m->nmsgs, g);
        expect(ps, "{");
        message_body(ps, g);
        f = &m->fields[idx]; /* body may have grown nothing of m, but stay safe */
        f->type.written = g->full;
        f->type.kind = T_MESSAGE;
        f->type.msg = g;
        f->group = 1;
        return;
    } else {
        f->type.written = full_ident(ps, "a field type");
    }
    f->name = ident(ps, "a field name");
    expect(ps, "=");
    f->number = (int)number(ps, "a field number");
    field_options(ps);
    expect(ps, ";");
    if (f->type.kind == T_MAP && !ps->failed) {
        /* the entry message protoc makes of a map field: "by_sku" -> BySkuEntry */
        ls_buf_t n;
        ls_buf_init(&n);
        int up = 1;
        for (const char *c = f->name; *c; c++) {
            if (*c == '_') {
                up = 1;
                continue;
            }
            ls_buf_append_u8(&n, (uint8_t)(up ? toupper((unsigned char)*c) : *c));
            up = 0;
        }
        ls_buf_printf(&n, "Entry");
        ls_buf_append_u8(&n, 0);
        size_t idx = (size_t)(f - m->fields);
        pmsg_t *e = new_msg(ps, own(ps->p, ls_buf_steal(&n, NULL)), m);
        e->map_entry = 1;
        pfield_t *k = add_field(ps, e);
        k->name = "key";
        k->number = 1;
        k->type.written = m->fields[idx].type.scalar;
        pfield_t *v = add_field(ps, e);
        v->name = "value";
        v->number = 2;
        v->type.written = m->fields[idx].type.value->written;
        push(ps->p, (void ***)&m->msgs, &m->nmsgs, e);
        m->fields[idx].entry = e;
    }
}

static void message_body(parser_t *ps, pmsg_t *m)
{
    if (++ps->depth > PROTO_MAX_DEPTH) {
        fail(ps, "messages nested deeper than %d levels", PROTO_MAX_DEPTH);
        return;
    }
    while (!ps->failed && !accept(ps, "}")) {
        if (peek(ps)->k == K_END) {
            fail(ps, "message '%s' is not closed", m->name);
            break;
        }
        if (accept(ps, ";")) continue;
        if (accept(ps, "option"))
            option_stmt(ps);
        else if (accept(ps, "reserved") || accept(ps, "extensions"))
            ranges_stmt(ps);
        else if (accept(ps, "message")) {
            pmsg_t *n = new_msg(ps, ident(ps, "a message name"), m);
            push(ps->p, (void ***)&m->msgs, &m->nmsgs, n);
            expect(ps, "{");
            message_body(ps, n);
        } else if (accept(ps, "enum")) {
            push(ps->p, (void ***)&m->enums, &m->nenums, enum_def(ps, m->full));
        } else if (accept(ps, "extend")) {
            /* extensions of another message: parsed, not part of this one */
            full_ident(ps, "a message name");
            expect(ps, "{");
            pmsg_t scratch = {.name = m->name, .full = m->full, .parent = m, .file = ps->file};
            message_body(ps, &scratch);
        } else if (accept(ps, "oneof")) {
            const char *name = ident(ps, "a oneof name");
            int idx = (int)m->noneofs;
            push(ps->p, (void ***)&m->oneofs, &m->noneofs, (void *)name);
            expect(ps, "{");
            while (!ps->failed && !accept(ps, "}")) {
                if (peek(ps)->k == K_END)
                    fail(ps, "oneof '%s' is not closed", name);
                else if (accept(ps, ";"))
                    continue;
                else if (accept(ps, "option"))
                    option_stmt(ps);
                else
                    field(ps, m, L_NONE, idx);
            }
        } else {
            tlabel l = accept(ps, "optional")   ? L_OPTIONAL
                       : accept(ps, "required") ? L_REQUIRED
                       : accept(ps, "repeated") ? L_REPEATED
                                                : L_NONE;
            field(ps, m, l, -1);
        }
    }
    ps->depth--;
}

static void service(parser_t *ps)
{
    ident(ps, "a service name");
    expect(ps, "{");
    while (!ps->failed && !accept(ps, "}")) {
        if (peek(ps)->k == K_END) {
            fail(ps, "a service is not closed");
            return;
        }
        if (accept(ps, ";")) continue;
        if (accept(ps, "option")) {
            option_stmt(ps);
            continue;
        }
        expect(ps, "rpc");
        ident(ps, "an rpc name");
        expect(ps, "(");
        accept(ps, "stream");
        full_ident(ps, "a message type");
        expect(ps, ")");
        expect(ps, "returns");
        expect(ps, "(");
        accept(ps, "stream");
        full_ident(ps, "a message type");
        expect(ps, ")");
        if (accept(ps, "{")) {
            while (!ps->failed && !accept(ps, "}")) {
                if (peek(ps)->k == K_END)
                    fail(ps, "an rpc is not closed");
                else if (!accept(ps, ";")) {
                    expect(ps, "option");
                    option_stmt(ps);
                }
            }
        } else {
            expect(ps, ";");
        }
    }
}

/* Parses one file; its imports are appended to *imports. */
static pfile_t *parse_file(parser_t *ps, const char *name, const char *text, ls_buf_t *imports)
{
    pfile_t *f = own(ps->p, LS_NEW(pfile_t));
    f->name = own(ps->p, ls_strdup(name));
    f->package = "";
    ps->file = f;
    ps->fname = *name ? f->name : NULL;
    ps->i = 0;
    ps->depth = 0;
    if (tokenize(ps, text)) {
        ls_free(ps->t);
        ps->t = NULL;
        return NULL;
    }
    own(ps->p, ps->t);
    if (is(ps, "edition")) {
        fail(ps, "protobuf editions are not supported (proto2 and proto3 are)");
        return NULL;
    }
    if (accept(ps, "syntax")) {
        expect(ps, "=");
        const tok_t *t = peek(ps);
        if (!ps->failed && (t->k != K_STR || (strcmp(t->s, "proto2") && strcmp(t->s, "proto3"))))
            fail(ps, "syntax must be \"proto2\" or \"proto3\"");
        f->proto3 = t->k == K_STR && !strcmp(t->s, "proto3");
        ps->i++;
        expect(ps, ";");
    }
    int seen_package = 0;
    while (!ps->failed && peek(ps)->k != K_END) {
        if (accept(ps, ";")) continue;
        if (accept(ps, "import")) {
            if (!accept(ps, "public")) accept(ps, "weak");
            const tok_t *t = peek(ps);
            if (t->k != K_STR)
                fail(ps, "expected an import path");
            else {
                ls_buf_printf(imports, "%s", t->s);
                ls_buf_append_u8(imports, 0);
                push(ps->p, (void ***)&f->imports, &f->nimports, (void *)t->s);
                ps->i++;
            }
            expect(ps, ";");
        } else if (accept(ps, "package")) {
            if (seen_package++) fail(ps, "a second package statement");
            f->package = full_ident(ps, "a package name");
            expect(ps, ";");
        } else if (accept(ps, "option")) {
            option_stmt(ps);
        } else if (accept(ps, "message")) {
            pmsg_t *m = new_msg(ps, ident(ps, "a message name"), NULL);
            push(ps->p, (void ***)&f->msgs, &f->nmsgs, m);
            expect(ps, "{");
            message_body(ps, m);
        } else if (accept(ps, "enum")) {
            push(ps->p, (void ***)&f->enums, &f->nenums, enum_def(ps, f->package));
        } else if (accept(ps, "service")) {
            service(ps);
        } else if (accept(ps, "extend")) {
            full_ident(ps, "a message name");
            expect(ps, "{");
            pmsg_t scratch = {.name = "", .full = f->package, .file = f};
            message_body(ps, &scratch);
        } else {
            fail(ps, "unexpected '%s'", peek(ps)->raw);
        }
    }
    return ps->failed ? NULL : f;
}

/* ---- resolution ----------------------------------------------------------------------- */

static void *find_type(ls_proto_t *p, const char *full, int *is_enum);

static void *find_in_msg(pmsg_t *m, const char *full, int *is_enum)
{
    if (!strcmp(m->full, full)) {
        *is_enum = 0;
        return m;
    }
    for (size_t i = 0; i < m->nenums; i++)
        if (!strcmp(m->enums[i]->full, full)) {
            *is_enum = 1;
            return m->enums[i];
        }
    for (size_t i = 0; i < m->nmsgs; i++) {
        void *x = find_in_msg(m->msgs[i], full, is_enum);
        if (x) return x;
    }
    return NULL;
}

static void *find_type(ls_proto_t *p, const char *full, int *is_enum)
{
    for (size_t f = 0; f < p->nfiles; f++) {
        pfile_t *file = p->files[f];
        for (size_t i = 0; i < file->nenums; i++)
            if (!strcmp(file->enums[i]->full, full)) {
                *is_enum = 1;
                return file->enums[i];
            }
        for (size_t i = 0; i < file->nmsgs; i++) {
            void *x = find_in_msg(file->msgs[i], full, is_enum);
            if (x) return x;
        }
    }
    return NULL;
}

/* protoc's scoping: innermost scope outward; a leading '.' is absolute. */
static int resolve_type(ls_proto_t *p, ptype_t *t, const char *scope)
{
    if (t->kind == T_MAP) {
        if (!is_scalar(t->scalar)) return -1;
        return resolve_type(p, t->value, scope);
    }
    if (t->msg) return 0; /* groups */
    if (is_scalar(t->written)) {
        t->kind = T_SCALAR;
        t->scalar = t->written;
        return 0;
    }
    int is_enum = 0;
    void *x = NULL;
    if (t->written[0] == '.') {
        x = find_type(p, t->written + 1, &is_enum);
    } else {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", scope);
        for (;;) {
            char cand[2048];
            snprintf(cand, sizeof cand, "%s%s%s", buf, *buf ? "." : "", t->written);
            if ((x = find_type(p, cand, &is_enum))) break;
            if (!*buf) break;
            char *dot = strrchr(buf, '.');
            if (dot)
                *dot = 0;
            else
                buf[0] = 0;
        }
    }
    if (!x) return -1;
    if (is_enum) {
        t->kind = T_ENUM;
        t->en = x;
    } else {
        t->kind = T_MESSAGE;
        t->msg = x;
    }
    return 0;
}

static ls_status check_msg(ls_proto_t *p, pmsg_t *m, char *err, size_t errlen)
{
    for (size_t i = 0; i < m->nfields; i++) {
        pfield_t *f = &m->fields[i];
        if (f->number < 1 || f->number > MAX_FIELD_NUMBER ||
            (f->number >= 19000 && f->number <= 19999)) {
            snprintf(err, errlen,
                     "line %d: field '%s' of '%s' has the number %d (1 to %d, not "
                     "19000-19999)",
                     f->line, f->name, m->full, f->number, MAX_FIELD_NUMBER);
            return LS_EINVAL;
        }
        for (size_t k = 0; k < i; k++)
            if (m->fields[k].number == f->number || !strcmp(m->fields[k].name, f->name)) {
                snprintf(err, errlen, "line %d: field '%s' of '%s' repeats the %s of field '%s'",
                         f->line, f->name, m->full,
                         m->fields[k].number == f->number ? "number" : "name", m->fields[k].name);
                return LS_EINVAL;
            }
        if (resolve_type(p, &f->type, m->full)) {
            snprintf(err, errlen, "line %d: field '%s' of '%s': unknown type '%s'", f->line,
                     f->name, m->full,
                     f->type.kind == T_MAP ? f->type.value->written : f->type.written);
            return LS_EINVAL;
        }
    }
    for (size_t i = 0; i < m->nmsgs; i++)
        if (check_msg(p, m->msgs[i], err, errlen) != LS_OK) return LS_EINVAL;
    return LS_OK;
}

static int well_known(const char *name)
{
    for (size_t i = 0; i < sizeof WELL_KNOWN / sizeof WELL_KNOWN[0]; i++)
        if (!strcmp(WELL_KNOWN[i].name, name)) return (int)i;
    return -1;
}

static int looks_serialized(const char *text)
{
    size_t n = 0;
    for (const char *s = text; *s; s++, n++)
        if (!isalnum((unsigned char)*s) && *s != '+' && *s != '/' && *s != '=') return 0;
    return n > 0;
}

int ls_proto_is_serialized(const char *text) { return looks_serialized(text); }

ls_proto_t *ls_proto_parse(const char *const *names, const char *const *texts, size_t ndeps,
                           const char *text, char *err, size_t errlen)
{
    ls_proto_t *p = LS_NEW(ls_proto_t);
    parser_t ps = {.p = p, .err = err, .errlen = errlen};
    if (looks_serialized(text)) {
        snprintf(err, errlen,
                 "a serialized (base64) FileDescriptorProto is not supported; "
                 "register the .proto text");
        ls_proto_free(p);
        return NULL;
    }
    /* the schema, then its references, then the well-known files it needs */
    ls_buf_t imports;
    ls_buf_init(&imports);
    pfile_t *top = parse_file(&ps, "", text, &imports);
    p->files = LS_NEWN(pfile_t *, ndeps + 1 + sizeof WELL_KNOWN / sizeof WELL_KNOWN[0]);
    if (top) p->files[p->nfiles++] = top;
    char *canon_src = NULL;
    if (top) {
        ls_buf_t c;
        ls_buf_init(&c);
        for (size_t i = 0; i < ps.nt; i++)
            ls_buf_printf(&c, "%s%s", i ? " " : "", ps.t[i].raw);
        ls_buf_append_u8(&c, 0);
        canon_src = (char *)ls_buf_steal(&c, NULL);
    }
    for (size_t i = 0; i < ndeps && !ps.failed; i++) {
        pfile_t *f = parse_file(&ps, names[i], texts[i], &imports);
        if (f) p->files[p->nfiles++] = f;
    }
    int used[sizeof WELL_KNOWN / sizeof WELL_KNOWN[0]] = {0};
    for (size_t off = 0; off < imports.len && !ps.failed;) {
        const char *imp = (const char *)imports.data + off;
        off += strlen(imp) + 1;
        int found = 0;
        for (size_t i = 0; i < ndeps && !found; i++)
            found = !strcmp(names[i], imp);
        int wk = found ? -1 : well_known(imp);
        if (!found && wk < 0) {
            snprintf(err, errlen,
                     "import \"%s\" is neither a schema reference nor a "
                     "well-known google/protobuf file",
                     imp);
            ps.failed = 1;
        } else if (wk >= 0 && !used[wk]) {
            used[wk] = 1;
            pfile_t *f = parse_file(&ps, WELL_KNOWN[wk].name, WELL_KNOWN[wk].text, &imports);
            if (f) p->files[p->nfiles++] = f;
        }
    }
    ls_buf_free(&imports);
    for (size_t i = 0; i < p->nfiles && !ps.failed; i++)
        for (size_t k = 0; k < p->files[i]->nmsgs && !ps.failed; k++)
            if (check_msg(p, p->files[i]->msgs[k], err, errlen) != LS_OK) ps.failed = 1;
    if (ps.failed) {
        ls_free(canon_src);
        ls_proto_free(p);
        return NULL;
    }
    p->canon = canon_src;
    return p;
}

/* ---- payload check against the descriptor ---------------------------------------- */

/* The wire type a field's values take (packed runs aside): 0 varint, 1
 * fixed64, 2 length-delimited, 3 group, 5 fixed32. */
static int wire_type_of(const pfield_t *f)
{
    if (f->group) return 3;
    if (f->type.kind == T_ENUM) return 0;
    if (f->type.kind != T_SCALAR) return 2;
    const char *s = f->type.scalar;
    if (!strcmp(s, "string") || !strcmp(s, "bytes")) return 2;
    if (!strcmp(s, "fixed64") || !strcmp(s, "sfixed64") || !strcmp(s, "double")) return 1;
    if (!strcmp(s, "fixed32") || !strcmp(s, "sfixed32") || !strcmp(s, "float")) return 5;
    return 0;
}

/* The bytes of a packed run of wire type wt: whole elements only. */
static bool ck_packed(int wt, const uint8_t *p, const uint8_t *end)
{
    if (wt == 1 || wt == 5) return (size_t)(end - p) % (wt == 1 ? 8 : 4) == 0;
    uint64_t v;
    while (p < end)
        if (!ls_pbwire_varint(&p, end, &v)) return false;
    return true;
}

/* Fields of message m in p[0..end); endgroup > 0: a group's fields, ended
 * by that field number's end-group tag (*used set by the caller's walk).
 * Unknown field numbers are kept by Protobuf parsers and pass; a known
 * field must come in its type's wire type, a proto3 string must be UTF-8,
 * and embedded messages are checked the same way. */
static ls_status ck_fields(const pmsg_t *m, const uint8_t **pp, const uint8_t *end, int endgroup,
                           int depth, char *why, size_t whylen)
{
    const uint8_t *p = *pp;
    if (depth > 64) {
        snprintf(why, whylen, "messages nested deeper than 64 in %s", m ? m->full : "?");
        return LS_EINVAL;
    }
    while (p < end) {
        uint64_t tag, v;
        if (!ls_pbwire_varint(&p, end, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff) {
            snprintf(why, whylen, "bad Protobuf tag in %s", m ? m->full : "a group");
            return LS_EINVAL;
        }
        int num = (int)(tag >> 3), wt = (int)(tag & 7);
        if (wt == 4) {
            if (endgroup != num) {
                snprintf(why, whylen, "unmatched end-group of field %d", num);
                return LS_EINVAL;
            }
            *pp = p;
            return LS_OK;
        }
        const pfield_t *f = NULL;
        for (size_t i = 0; m && i < m->nfields; i++)
            if (m->fields[i].number == num) f = &m->fields[i];
        int want = f ? wire_type_of(f) : wt;
        bool packed = f && wt == 2 && want != 2 && want != 3 && f->label == L_REPEATED;
        if (f && wt != want && !packed) {
            snprintf(why, whylen, "field %s (%d) of %s has wire type %d, not its type's %d",
                     f->name, num, m->full, wt, want);
            return LS_EINVAL;
        }
        const uint8_t *d = p;
        switch (wt) {
        case 0:
            if (!ls_pbwire_varint(&p, end, &v)) goto truncated;
            break;
        case 1:
        case 5:
            if ((size_t)(end - p) < (wt == 1 ? 8u : 4u)) goto truncated;
            p += wt == 1 ? 8 : 4;
            break;
        case 2:
            if (!ls_pbwire_varint(&p, end, &v) || v > (uint64_t)(end - p)) goto truncated;
            d = p;
            p += v;
            if (!f) break;
            if (packed && !ck_packed(want, d, p)) {
                snprintf(why, whylen, "packed field %s (%d) of %s is cut inside an element",
                         f->name, num, m->full);
                return LS_EINVAL;
            }
            if (packed) break;
            if (f->type.kind == T_SCALAR && !strcmp(f->type.scalar, "string") && m->file->proto3 &&
                !ls_utf8_valid(d, (size_t)v)) {
                snprintf(why, whylen, "string field %s (%d) of %s is not UTF-8 (proto3)", f->name,
                         num, m->full);
                return LS_EINVAL;
            }
            if (f->type.kind == T_MESSAGE || f->type.kind == T_MAP) {
                const pmsg_t *sub = f->type.kind == T_MAP ? f->entry : f->type.msg;
                const uint8_t *q = d;
                if (ck_fields(sub, &q, p, 0, depth + 1, why, whylen)) return LS_EINVAL;
            }
            break;
        case 3:
            if (ck_fields(f ? f->type.msg : NULL, &p, end, num, depth + 1, why, whylen))
                return LS_EINVAL;
            break;
        default:
            snprintf(why, whylen, "Protobuf wire type %d in %s", wt, m ? m->full : "a group");
            return LS_EINVAL;
        }
        continue;
    truncated:
        snprintf(why, whylen, "field %d of %s runs past the end", num, m ? m->full : "a group");
        return LS_EINVAL;
    }
    if (endgroup) {
        snprintf(why, whylen, "group field %d is not closed", endgroup);
        return LS_EINVAL;
    }
    *pp = p;
    return LS_OK;
}

ls_status ls_proto_check_payload(const ls_proto_t *p, const int64_t *idx, size_t n,
                                 const uint8_t *wire, size_t len, char *why, size_t whylen)
{
    const pmsg_t *msg = ls_proto_message_at(ls_proto_file(p), idx, n, why, whylen);
    if (!msg) return LS_EINVAL;
    const uint8_t *q = wire;
    return ck_fields(msg, &q, wire + len, 0, 0, why, whylen);
}
