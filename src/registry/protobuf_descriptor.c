/* Protobuf schemas as serialized descriptors (descriptor.proto's
 * FileDescriptorProto): a parsed schema encoded as one
 * (ls_proto_descriptor, the registry's format=serialized), and a base64
 * descriptor rendered back into .proto text (ls_proto_text_from_descriptor)
 * so that a registration in that form parses like any other. The model is
 * in protobuf_int.h; the parser in protobuf.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "registry/protobuf_int.h"

/* ---- serialized descriptors (descriptor.proto's FileDescriptorProto) ------------------ */

/* Field type codes of FieldDescriptorProto.Type, by scalar name. */
static int type_code(const char *scalar)
{
    static const struct {
        const char *name;
        int code;
    } codes[] = {{"double", 1},    {"float", 2},   {"int64", 3},   {"uint64", 4},
                 {"int32", 5},     {"fixed64", 6}, {"fixed32", 7}, {"bool", 8},
                 {"string", 9},    {"bytes", 12},  {"uint32", 13}, {"sfixed32", 15},
                 {"sfixed64", 16}, {"sint32", 17}, {"sint64", 18}};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (!strcmp(codes[i].name, scalar)) return codes[i].code;
    return 0;
}

static const char *type_name_of(int code)
{
    static const char *const names[19] = {NULL,       "double",   "float",   "int64",  "uint64",
                                          "int32",    "fixed64",  "fixed32", "bool",   "string",
                                          NULL,       NULL,       "bytes",   "uint32", NULL,
                                          "sfixed32", "sfixed64", "sint32",  "sint64"};
    return code > 0 && code < 19 ? names[code] : NULL;
}

static void pb_varint(ls_buf_t *b, uint64_t v)
{
    while (v >= 0x80) {
        ls_buf_append_u8(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    ls_buf_append_u8(b, (uint8_t)v);
}

static void pb_int(ls_buf_t *b, int field, long long v)
{
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, (uint64_t)v); /* negative: ten bytes, as protobuf encodes int32 */
}

static void pb_bytes(ls_buf_t *b, int field, const void *p, size_t n)
{
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    ls_buf_append(b, p, n);
}

static void pb_str(ls_buf_t *b, int field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

static void pb_sub(ls_buf_t *b, int field, ls_buf_t *sub)
{
    pb_bytes(b, field, sub->data, sub->len);
    sub->len = 0;
}

/* FieldDescriptorProto.type and .type_name of a resolved type. */
static void encode_type(ls_buf_t *b, const ptype_t *t, const pfield_t *f)
{
    if (f && f->entry) {
        pb_int(b, 5, 11);
        char *tn = ls_asprintf(".%s", f->entry->full);
        pb_str(b, 6, tn);
        ls_free(tn);
    } else if (t->kind == T_SCALAR) {
        pb_int(b, 5, type_code(t->scalar));
    } else {
        int group = f && f->group;
        pb_int(b, 5, t->kind == T_ENUM ? 14 : group ? 10 : 11);
        char *tn = ls_asprintf(".%s", t->kind == T_ENUM ? t->en->full : t->msg->full);
        pb_str(b, 6, tn);
        ls_free(tn);
    }
}

static void encode_enum(ls_buf_t *b, const penum_t *e)
{
    ls_buf_t v;
    ls_buf_init(&v);
    pb_str(b, 1, e->name);
    for (size_t i = 0; i < e->nvalues; i++) {
        pb_str(&v, 1, e->values[i]);
        pb_int(&v, 2, e->numbers[i]);
        pb_sub(b, 2, &v);
    }
    ls_buf_free(&v);
}

static void encode_msg(ls_buf_t *b, const pmsg_t *m, int proto3)
{
    ls_buf_t sub;
    ls_buf_init(&sub);
    pb_str(b, 1, m->name);
    size_t synthetic = m->noneofs; /* proto3 optional fields get "_name" oneofs after */
    for (size_t i = 0; i < m->nfields; i++) {
        const pfield_t *f = &m->fields[i];
        pb_str(&sub, 1, f->name);
        pb_int(&sub, 3, f->number);
        int label = f->type.kind == T_MAP || f->label == L_REPEATED ? 3
                    : f->label == L_REQUIRED                        ? 2
                                                                    : 1;
        pb_int(&sub, 4, label);
        encode_type(&sub, &f->type, f);
        if (f->oneof >= 0) pb_int(&sub, 9, f->oneof);
        if (proto3 && f->label == L_OPTIONAL) {
            pb_int(&sub, 9, (long long)synthetic++);
            pb_int(&sub, 17, 1);
        }
        pb_sub(b, 2, &sub);
    }
    for (size_t i = 0; i < m->nmsgs; i++) {
        encode_msg(&sub, m->msgs[i], proto3);
        pb_sub(b, 3, &sub);
    }
    for (size_t i = 0; i < m->nenums; i++) {
        encode_enum(&sub, m->enums[i]);
        pb_sub(b, 4, &sub);
    }
    if (m->map_entry) {
        ls_buf_t opt;
        ls_buf_init(&opt);
        pb_int(&opt, 7, 1); /* MessageOptions.map_entry */
        pb_sub(b, 7, &opt);
        ls_buf_free(&opt);
    }
    for (size_t i = 0; i < m->noneofs; i++) {
        pb_str(&sub, 1, m->oneofs[i]);
        pb_sub(b, 8, &sub);
    }
    for (size_t i = 0; i < m->nfields; i++)
        if (proto3 && m->fields[i].label == L_OPTIONAL) {
            char *n = ls_asprintf("_%s", m->fields[i].name);
            pb_str(&sub, 1, n);
            ls_free(n);
            pb_sub(b, 8, &sub);
        }
    ls_buf_free(&sub);
}

char *ls_proto_descriptor(const ls_proto_t *p)
{
    const pfile_t *f = p->files[0];
    ls_buf_t b, sub;
    ls_buf_init(&b);
    ls_buf_init(&sub);
    if (*f->package) pb_str(&b, 2, f->package);
    for (size_t i = 0; i < f->nimports; i++)
        pb_str(&b, 3, f->imports[i]);
    for (size_t i = 0; i < f->nmsgs; i++) {
        encode_msg(&sub, f->msgs[i], f->proto3);
        pb_sub(&b, 4, &sub);
    }
    for (size_t i = 0; i < f->nenums; i++) {
        encode_enum(&sub, f->enums[i]);
        pb_sub(&b, 5, &sub);
    }
    pb_str(&b, 12, f->proto3 ? "proto3" : "proto2");
    char *out = ls_base64_encode(b.data, b.len);
    ls_buf_free(&b);
    ls_buf_free(&sub);
    return out;
}

/* A reader of protobuf wire data with a sticky error. */
typedef struct pbr {
    const uint8_t *p, *end;
    int bad;
} pbr_t;

static uint64_t rd_varint(pbr_t *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) break;
        uint8_t c = *r->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return v;
    }
    r->bad = 1;
    return 0;
}

/* The next field: its number, wire type and (length-delimited) payload,
 * or its varint. 0 at the end or on an error. */
static int rd_field(pbr_t *r, int *wt, pbr_t *payload, uint64_t *val)
{
    if (r->bad || r->p >= r->end) return 0;
    uint64_t key = rd_varint(r);
    *wt = (int)(key & 7);
    *val = 0;
    if (*wt == 0) {
        *val = rd_varint(r);
    } else if (*wt == 2) {
        uint64_t n = rd_varint(r);
        if (n > (uint64_t)(r->end - r->p))
            r->bad = 1;
        else {
            payload->p = r->p;
            payload->end = r->p + n;
            payload->bad = 0;
            r->p += n;
        }
    } else if (*wt == 1 || *wt == 5) {
        size_t n = *wt == 1 ? 8 : 4;
        if (n > (size_t)(r->end - r->p))
            r->bad = 1;
        else
            r->p += n;
    } else {
        r->bad = 1;
    }
    return r->bad ? 0 : (int)(key >> 3);
}

static char *rd_str(const pbr_t *p)
{
    return ls_strndup((const char *)p->p, (size_t)(p->end - p->p));
}

typedef struct rfield {
    char *name, *type_name;
    long long number;
    int label, type, oneof, optional3;
} rfield_t;

typedef struct render {
    ls_buf_t *out;
    int proto3;
    char *err;
    size_t errlen;
    int failed;
} render_t;

static void render_enum(render_t *rd, pbr_t e, int indent)
{
    pbr_t pl;
    int wt, f;
    uint64_t v;
    ls_buf_t body;
    ls_buf_init(&body);
    char *name = NULL;
    while ((f = rd_field(&e, &wt, &pl, &v))) {
        if (f == 1 && wt == 2) {
            ls_free(name);
            name = rd_str(&pl);
        } else if (f == 2 && wt == 2) {
            pbr_t val = pl, vpl;
            int vf, vwt;
            uint64_t vv;
            char *vname = NULL;
            long long num = 0;
            while ((vf = rd_field(&val, &vwt, &vpl, &vv))) {
                if (vf == 1 && vwt == 2) {
                    ls_free(vname);
                    vname = rd_str(&vpl);
                } else if (vf == 2 && vwt == 0) {
                    num = (long long)(int32_t)vv;
                }
            }
            ls_buf_printf(&body, "%*s  %s = %lld;\n", indent, "", vname ? vname : "", num);
            ls_free(vname);
        }
    }
    ls_buf_printf(rd->out, "%*senum %s {\n%.*s%*s}\n", indent, "", name ? name : "", (int)body.len,
                  body.data ? (const char *)body.data : "", indent, "");
    ls_free(name);
    ls_buf_free(&body);
}

/* Whether nested message payload m is a map entry; its key/value types. */
static int map_entry_types(pbr_t m, char **name, char **key, char **value)
{
    pbr_t pl;
    int wt, f, entry = 0;
    uint64_t v;
    *name = *key = *value = NULL;
    while ((f = rd_field(&m, &wt, &pl, &v))) {
        if (f == 1 && wt == 2) {
            ls_free(*name);
            *name = rd_str(&pl);
        } else if (f == 7 && wt == 2) {
            pbr_t o = pl, opl;
            int of, owt;
            uint64_t ov;
            while ((of = rd_field(&o, &owt, &opl, &ov)))
                if (of == 7 && owt == 0 && ov) entry = 1;
        } else if (f == 2 && wt == 2) {
            pbr_t fl = pl, fpl;
            int ff, fwt;
            uint64_t fv;
            long long number = 0, type = 0;
            char *tn = NULL;
            while ((ff = rd_field(&fl, &fwt, &fpl, &fv))) {
                if (ff == 3 && fwt == 0)
                    number = (long long)fv;
                else if (ff == 5 && fwt == 0)
                    type = (long long)fv;
                else if (ff == 6 && fwt == 2) {
                    ls_free(tn);
                    tn = rd_str(&fpl);
                }
            }
            char *t = tn ? tn : ls_strdup(type_name_of((int)type) ? type_name_of((int)type) : "");
            if (tn) tn = NULL;
            if (number == 1) {
                ls_free(*key);
                *key = t;
            } else {
                ls_free(*value);
                *value = t;
            }
            ls_free(tn);
        }
    }
    if (entry && (!*name || !*key || !*value || !**key || !**value))
        entry = 0; /* not a usable map entry: rendered as a message */
    if (!entry) {
        ls_free(*key);
        ls_free(*value);
        *key = *value = NULL;
    }
    return entry;
}

/* One nested message of a message being rendered: a map entry (rendered
 * as its map field) or a message (rendered text). */
typedef struct nested {
    int entry;
    char *name, *key, *value; /* entry */
    char *text;               /* message */
    int done;
} nested_t;

static void render_field(render_t *rd, ls_buf_t *o, const rfield_t *rf, int ind, int in_oneof,
                         nested_t *nest, size_t nn)
{
    if (rf->type == 11 && rf->type_name && rf->label == 3) {
        const char *last = strrchr(rf->type_name, '.');
        last = last ? last + 1 : rf->type_name;
        for (size_t i = 0; i < nn; i++)
            if (nest[i].entry && !strcmp(nest[i].name, last)) {
                ls_buf_printf(o, "%*smap<%s, %s> %s = %lld;\n", ind, "", nest[i].key, nest[i].value,
                              rf->name ? rf->name : "", rf->number);
                return;
            }
    }
    const char *label = rf->label == 3                                ? "repeated "
                        : rf->label == 2                              ? "required "
                        : (!rd->proto3 || rf->optional3) && !in_oneof ? "optional "
                                                                      : "";
    const char *t = rf->type_name ? rf->type_name : type_name_of(rf->type);
    ls_buf_printf(o, "%*s%s%s %s = %lld;\n", ind, "", label, t ? t : "?", rf->name ? rf->name : "",
                  rf->number);
}

/* Emits the nested messages before position `upto` not emitted yet. */
static void flush_nested(ls_buf_t *o, nested_t *nest, size_t upto)
{
    for (size_t i = 0; i < upto; i++)
        if (!nest[i].entry && !nest[i].done) {
            ls_buf_printf(o, "%s", nest[i].text);
            nest[i].done = 1;
        }
}

/* Renders a DescriptorProto. The order of nested messages is kept (it
 * makes the message indexes of Confluent's wire format): a map field is
 * written where its entry message stood among them. */
static void render_msg(render_t *rd, pbr_t m, int indent, int depth)
{
    pbr_t pl;
    int wt, f;
    uint64_t v;
    char *name = NULL;
    rfield_t *fields = NULL;
    size_t nf = 0;
    char **oneofs = NULL;
    size_t no = 0;
    nested_t *nest = NULL;
    size_t nn = 0;
    ls_buf_t enums;
    ls_buf_init(&enums);
    if (depth > PROTO_MAX_DEPTH) {
        rd->failed = 1;
        snprintf(rd->err, rd->errlen, "the descriptor nests messages too deeply");
        return;
    }
    while ((f = rd_field(&m, &wt, &pl, &v))) {
        if (f == 1 && wt == 2) {
            ls_free(name);
            name = rd_str(&pl);
        } else if (f == 3 && wt == 2) {
            nest = ls_realloc(nest, (nn + 1) * sizeof *nest);
            nested_t *n = &nest[nn++];
            memset(n, 0, sizeof *n);
            n->entry = map_entry_types(pl, &n->name, &n->key, &n->value);
            if (!n->entry) {
                ls_buf_t t;
                ls_buf_init(&t);
                render_t sub = *rd;
                sub.out = &t;
                render_msg(&sub, pl, indent + 2, depth + 1);
                if (sub.failed) rd->failed = 1;
                ls_buf_append_u8(&t, 0);
                n->text = (char *)ls_buf_steal(&t, NULL);
            }
        } else if (f == 4 && wt == 2) {
            render_t sub = *rd;
            sub.out = &enums;
            render_enum(&sub, pl, indent + 2);
        } else if (f == 8 && wt == 2) {
            pbr_t op = pl, opl;
            int of, owt;
            uint64_t ov;
            char *oname = NULL;
            while ((of = rd_field(&op, &owt, &opl, &ov)))
                if (of == 1 && owt == 2) {
                    ls_free(oname);
                    oname = rd_str(&opl);
                }
            oneofs = ls_realloc(oneofs, (no + 1) * sizeof *oneofs);
            oneofs[no++] = oname ? oname : ls_strdup("");
        } else if (f == 2 && wt == 2) {
            rfield_t rf = {.oneof = -1};
            pbr_t fl = pl, fpl;
            int ff, fwt;
            uint64_t fv;
            while ((ff = rd_field(&fl, &fwt, &fpl, &fv))) {
                if (ff == 1 && fwt == 2) {
                    ls_free(rf.name);
                    rf.name = rd_str(&fpl);
                } else if (ff == 3 && fwt == 0)
                    rf.number = (long long)fv;
                else if (ff == 4 && fwt == 0)
                    rf.label = (int)fv;
                else if (ff == 5 && fwt == 0)
                    rf.type = (int)fv;
                else if (ff == 6 && fwt == 2) {
                    ls_free(rf.type_name);
                    rf.type_name = rd_str(&fpl);
                } else if (ff == 9 && fwt == 0)
                    rf.oneof = (int)fv;
                else if (ff == 17 && fwt == 0)
                    rf.optional3 = fv != 0;
            }
            if (rf.type == 10 && !rd->failed) {
                rd->failed = 1;
                snprintf(rd->err, rd->errlen, "groups in serialized descriptors are not supported");
            }
            fields = ls_realloc(fields, (nf + 1) * sizeof *fields);
            fields[nf++] = rf;
        }
    }
    ls_buf_t *o = rd->out;
    ls_buf_printf(o, "%*smessage %s {\n", indent, "", name ? name : "");
    int *oneof_done = ls_calloc(no + 1, sizeof *oneof_done);
    for (size_t i = 0; i < nf; i++) {
        rfield_t *rf = &fields[i];
        if (rf->type == 11 && rf->type_name && rf->label == 3) {
            const char *last = strrchr(rf->type_name, '.');
            last = last ? last + 1 : rf->type_name;
            for (size_t k = 0; k < nn; k++)
                if (nest[k].entry && !strcmp(nest[k].name, last)) flush_nested(o, nest, k);
        }
        int in_oneof = rf->oneof >= 0 && rf->oneof < (int)no && !rf->optional3;
        if (!in_oneof) {
            render_field(rd, o, rf, indent + 2, 0, nest, nn);
        } else if (!oneof_done[rf->oneof]) {
            oneof_done[rf->oneof] = 1;
            ls_buf_printf(o, "%*s  oneof %s {\n", indent, "", oneofs[rf->oneof]);
            for (size_t k = i; k < nf; k++)
                if (fields[k].oneof == rf->oneof && !fields[k].optional3)
                    render_field(rd, o, &fields[k], indent + 4, 1, nest, nn);
            ls_buf_printf(o, "%*s  }\n", indent, "");
        }
    }
    flush_nested(o, nest, nn);
    ls_buf_append(o, enums.data ? enums.data : (const uint8_t *)"", enums.len);
    ls_buf_printf(o, "%*s}\n", indent, "");
    for (size_t i = 0; i < nf; i++) {
        ls_free(fields[i].name);
        ls_free(fields[i].type_name);
    }
    for (size_t i = 0; i < no; i++)
        ls_free(oneofs[i]);
    for (size_t i = 0; i < nn; i++) {
        ls_free(nest[i].name);
        ls_free(nest[i].key);
        ls_free(nest[i].value);
        ls_free(nest[i].text);
    }
    ls_free(oneof_done);
    ls_free(nest);
    ls_free(fields);
    ls_free(oneofs);
    ls_free(name);
    ls_buf_free(&enums);
}

static void render_service(render_t *rd, pbr_t s)
{
    pbr_t pl;
    int wt, f;
    uint64_t v;
    char *name = NULL;
    ls_buf_t body;
    ls_buf_init(&body);
    while ((f = rd_field(&s, &wt, &pl, &v))) {
        if (f == 1 && wt == 2) {
            ls_free(name);
            name = rd_str(&pl);
        } else if (f == 2 && wt == 2) {
            pbr_t mt = pl, mpl;
            int mf, mwt;
            uint64_t mv;
            char *mn = NULL, *in = NULL, *out = NULL;
            int cs = 0, ss = 0;
            while ((mf = rd_field(&mt, &mwt, &mpl, &mv))) {
                if (mwt == 2 && mf >= 1 && mf <= 3) {
                    char **dst = mf == 1 ? &mn : mf == 2 ? &in : &out;
                    ls_free(*dst);
                    *dst = rd_str(&mpl);
                } else if (mf == 5 && mwt == 0)
                    cs = mv != 0;
                else if (mf == 6 && mwt == 0)
                    ss = mv != 0;
            }
            ls_buf_printf(&body, "  rpc %s (%s%s) returns (%s%s);\n", mn ? mn : "",
                          cs ? "stream " : "", in ? in : "", ss ? "stream " : "", out ? out : "");
            ls_free(mn);
            ls_free(in);
            ls_free(out);
        }
    }
    ls_buf_printf(rd->out, "service %s {\n%.*s}\n", name ? name : "", (int)body.len,
                  body.data ? (const char *)body.data : "");
    ls_free(name);
    ls_buf_free(&body);
}

char *ls_proto_text_from_descriptor(const char *b64, char *err, size_t errlen)
{
    uint8_t *bytes;
    size_t n;
    if (ls_base64_decode(b64, &bytes, &n)) {
        snprintf(err, errlen, "the serialized descriptor is not valid base64");
        return NULL;
    }
    render_t rd = {.err = err, .errlen = errlen};
    pbr_t r = {.p = bytes, .end = bytes + n}, pl;
    int wt, f;
    uint64_t v;
    char *package = NULL;
    while ((f = rd_field(&r, &wt, &pl, &v)))
        if (f == 12 && wt == 2) {
            char *syn = rd_str(&pl);
            rd.proto3 = !strcmp(syn, "proto3");
            ls_free(syn);
        } else if (f == 2 && wt == 2) {
            ls_free(package);
            package = rd_str(&pl);
        }
    if (r.bad) {
        ls_free(package);
        ls_free(bytes);
        snprintf(err, errlen, "the serialized descriptor is not a FileDescriptorProto");
        return NULL;
    }
    ls_buf_t out;
    ls_buf_init(&out);
    rd.out = &out;
    ls_buf_printf(&out, "syntax = \"%s\";\n", rd.proto3 ? "proto3" : "proto2");
    if (package) ls_buf_printf(&out, "package %s;\n", package);
    ls_free(package);
    r = (pbr_t){.p = bytes, .end = bytes + n};
    while ((f = rd_field(&r, &wt, &pl, &v)) && !rd.failed) {
        if (f == 3 && wt == 2) {
            char *dep = rd_str(&pl);
            ls_buf_printf(&out, "import \"%s\";\n", dep);
            ls_free(dep);
        } else if (f == 4 && wt == 2) {
            render_msg(&rd, pl, 0, 0);
        } else if (f == 5 && wt == 2) {
            render_enum(&rd, pl, 0);
        } else if (f == 6 && wt == 2) {
            render_service(&rd, pl);
        }
    }
    ls_free(bytes);
    if (rd.failed || r.bad) {
        if (!rd.failed)
            snprintf(err, errlen, "the serialized descriptor is not a FileDescriptorProto");
        ls_buf_free(&out);
        return NULL;
    }
    ls_buf_append_u8(&out, 0);
    return (char *)ls_buf_steal(&out, NULL);
}
