/* Protobuf schema compatibility (ls_proto_can_read): walks (old, new)
 * message pairs, with a stack against recursive types like json_schema.c,
 * and names every rule a change breaks. The model is in protobuf_int.h; the
 * parser in protobuf.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/protobuf_int.h"

/* ---- compatibility ----------------------------------------------------------------------- */

typedef struct mpair {
    const pmsg_t *o, *u;
} mpair_t;

typedef struct pcx {
    mpair_t *stack;
    int *depth;
    int bad;
    ls_buf_t *why;
} pcx_t;

__attribute__((format(printf, 3, 4))) static void pbad(pcx_t *c, const char *where, const char *fmt,
                                                       ...)
{
    c->bad++;
    if (!c->why) return;
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ls_buf_printf(c->why, "%s at %s\n", msg, where);
}

static void compare_msg(pcx_t *c, const pmsg_t *o, const pmsg_t *u);

static const char *scalar_group(const ptype_t *t)
{
    if (t->kind == T_ENUM) return "number";
    static const char *const groups[][2] = {
        {"int32", "number"},     {"int64", "number"},     {"uint32", "number"},
        {"uint64", "number"},    {"bool", "number"},      {"sint32", "signed"},
        {"sint64", "signed"},    {"string", "text"},      {"bytes", "text"},
        {"fixed32", "fixed32"},  {"sfixed32", "fixed32"}, {"fixed64", "fixed64"},
        {"sfixed64", "fixed64"}, {"float", "float"},      {"double", "double"}};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (!strcmp(groups[i][0], t->scalar)) return groups[i][1];
    return t->scalar;
}

static const char *local_name(const pmsg_t *m)
{
    size_t n = strlen(m->file->package);
    return n && !strncmp(m->full, m->file->package, n) && m->full[n] == '.' ? m->full + n + 1
                                                                            : m->full;
}

static void compare_type(pcx_t *c, const char *where, const ptype_t *o, const ptype_t *u)
{
    int ko = o->kind == T_ENUM ? T_SCALAR : (int)o->kind;
    int ku = u->kind == T_ENUM ? T_SCALAR : (int)u->kind;
    if (ko != ku) {
        pbad(c, where, "FIELD_KIND_CHANGED");
    } else if (ko == T_SCALAR) {
        if (strcmp(scalar_group(o), scalar_group(u)))
            pbad(c, where, "FIELD_SCALAR_KIND_CHANGED (%s to %s)",
                 o->kind == T_ENUM ? o->en->full : o->scalar,
                 u->kind == T_ENUM ? u->en->full : u->scalar);
    } else if (ko == T_MAP) {
        ptype_t ok = {.kind = T_SCALAR, .scalar = o->scalar};
        ptype_t uk = {.kind = T_SCALAR, .scalar = u->scalar};
        compare_type(c, where, &ok, &uk);
        compare_type(c, where, o->value, u->value);
    } else if (strcmp(local_name(o->msg), local_name(u->msg))) {
        pbad(c, where, "FIELD_NAMED_TYPE_CHANGED (%s to %s)", o->msg->full, u->msg->full);
    } else {
        pcx_t sub = {.stack = c->stack, .depth = c->depth};
        compare_msg(&sub, o->msg, u->msg);
        if (sub.bad) pbad(c, where, "FIELD_NAMED_TYPE_CHANGED (%s is incompatible)", o->msg->full);
    }
}

static const pfield_t *by_number(const pmsg_t *m, int number, int oneof_only, int plain_only)
{
    for (size_t i = 0; i < m->nfields; i++) {
        const pfield_t *f = &m->fields[i];
        if (f->number != number) continue;
        if ((oneof_only && f->oneof < 0) || (plain_only && f->oneof >= 0)) continue;
        return f;
    }
    return NULL;
}

static int oneof_index(const pmsg_t *m, const char *name)
{
    for (size_t i = 0; i < m->noneofs; i++)
        if (!strcmp(m->oneofs[i], name)) return (int)i;
    return -1;
}

static void compare_types(pcx_t *c, pmsg_t *const *om, size_t no, pmsg_t *const *um, size_t nu);

static void compare_msg(pcx_t *c, const pmsg_t *o, const pmsg_t *u)
{
    for (int i = 0; i < *c->depth; i++)
        if (c->stack[i].o == o && c->stack[i].u == u) return;
    if (*c->depth == PROTO_MAX_DEPTH) {
        pbad(c, o->full, "messages nested too deeply to compare");
        return;
    }
    c->stack[(*c->depth)++] = (mpair_t){o, u};
    char where[512];
    /* fields moved into oneofs */
    for (size_t k = 0; k < u->noneofs; k++) {
        int moved = 0, existing = 0;
        for (size_t i = 0; i < u->nfields; i++) {
            const pfield_t *f = &u->fields[i];
            if (f->oneof != (int)k) continue;
            if (by_number(o, f->number, 0, 1))
                moved++;
            else if (by_number(o, f->number, 1, 0))
                existing++;
        }
        snprintf(where, sizeof where, "%s.%s", u->full, u->oneofs[k]);
        if (moved > 1)
            pbad(c, where, "MULTIPLE_FIELDS_MOVED_TO_ONEOF");
        else if (moved == 1 && existing > 0)
            pbad(c, where, "FIELD_MOVED_TO_EXISTING_ONEOF");
    }
    /* oneofs present in both: a member removed */
    for (size_t k = 0; k < o->noneofs; k++) {
        int uk = oneof_index(u, o->oneofs[k]);
        if (uk < 0) continue; /* ONEOF_REMOVED: compatible */
        for (size_t i = 0; i < o->nfields; i++) {
            const pfield_t *f = &o->fields[i];
            if (f->oneof != (int)k) continue;
            const pfield_t *g = by_number(u, f->number, 1, 0);
            snprintf(where, sizeof where, "%s.%s.%d", o->full, o->oneofs[k], f->number);
            if (!g || g->oneof != uk) pbad(c, where, "ONEOF_FIELD_REMOVED");
        }
    }
    /* fields by number: required added / removed, types of the common ones */
    for (size_t i = 0; i < o->nfields; i++) {
        const pfield_t *f = &o->fields[i];
        const pfield_t *g = by_number(u, f->number, 0, 0);
        snprintf(where, sizeof where, "%s.%d", o->full, f->number);
        if (!g) {
            if (f->label == L_REQUIRED) pbad(c, where, "REQUIRED_FIELD_REMOVED");
        } else {
            compare_type(c, where, &f->type, &g->type);
        }
    }
    for (size_t i = 0; i < u->nfields; i++) {
        const pfield_t *g = &u->fields[i];
        snprintf(where, sizeof where, "%s.%d", u->full, g->number);
        if (!by_number(o, g->number, 0, 0) && g->label == L_REQUIRED)
            pbad(c, where, "REQUIRED_FIELD_ADDED");
    }
    compare_types(c, o->msgs, o->nmsgs, u->msgs, u->nmsgs);
    (*c->depth)--;
}

/* Messages by name: removed is incompatible (enums: anything goes). */
static void compare_types(pcx_t *c, pmsg_t *const *om, size_t no, pmsg_t *const *um, size_t nu)
{
    for (size_t i = 0; i < no; i++) {
        if (om[i]->map_entry) continue; /* compared as the map field's types */
        const pmsg_t *m = NULL;
        for (size_t k = 0; k < nu && !m; k++)
            if (!strcmp(om[i]->name, um[k]->name)) m = um[k];
        if (m)
            compare_msg(c, om[i], m);
        else
            pbad(c, om[i]->full, "MESSAGE_REMOVED");
    }
}

int ls_proto_can_read(const ls_proto_t *reader, const ls_proto_t *writer, ls_buf_t *why)
{
    mpair_t stack[PROTO_MAX_DEPTH];
    int depth = 0;
    pcx_t c = {.stack = stack, .depth = &depth, .why = why};
    const pfile_t *o = writer->files[0], *u = reader->files[0];
    size_t mark = why ? why->len : 0;
    if (strcmp(o->package, u->package))
        pbad(&c, "package", "PACKAGE_CHANGED (%s to %s)", o->package, u->package);
    compare_types(&c, o->msgs, o->nmsgs, u->msgs, u->nmsgs);
    if (why && why->len > mark && why->data[why->len - 1] == '\n') why->len--;
    return c.bad == 0;
}
