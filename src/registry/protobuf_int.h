/* The model of a parsed Protobuf schema (protobuf.c), shared with the
 * files of that module (protobuf_compat.c, protobuf_descriptor.c) and the
 * modules that read it (avro_view*.c: typed table columns). Private to
 * registry/. A parsed model is immutable. */
#ifndef LS_REGISTRY_PROTOBUF_INT_H
#define LS_REGISTRY_PROTOBUF_INT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "registry/protobuf.h"

/* Nesting depth of messages the parser, the compatibility walk and the
 * descriptor renderer follow before they refuse. */
#define PROTO_MAX_DEPTH 64

typedef enum { T_SCALAR, T_ENUM, T_MESSAGE, T_MAP } tkind;
typedef enum { L_NONE, L_OPTIONAL, L_REQUIRED, L_REPEATED } tlabel;

typedef struct pmsg pmsg_t;
typedef struct penum penum_t;
typedef struct pfile pfile_t;

typedef struct ptype {
    tkind kind;
    const char *written; /* as in the text */
    const char *scalar;  /* T_SCALAR; T_MAP: the key */
    pmsg_t *msg;
    penum_t *en;
    struct ptype *value; /* T_MAP */
} ptype_t;

typedef struct pfield {
    const char *name;
    int number;
    tlabel label;
    int oneof;     /* index into the message's oneofs, -1 */
    int group;     /* proto2 group: type.msg is its message */
    pmsg_t *entry; /* map fields: the synthetic entry message */
    ptype_t type;
    int line;
} pfield_t;

struct pmsg {
    const char *name, *full;
    pmsg_t *parent;
    pfile_t *file;
    pfield_t *fields;
    size_t nfields, capfields;
    const char **oneofs;
    size_t noneofs;
    pmsg_t **msgs; /* nested messages, groups and map entries, in declaration order */
    size_t nmsgs;
    penum_t **enums;
    size_t nenums;
    int map_entry; /* the synthetic message of a map<K, V> field */
};

struct penum {
    const char *name, *full;
    pfile_t *file;
    const char **values;
    long long *numbers;
    size_t nvalues;
};

struct pfile {
    const char *name;
    const char *package; /* "" when none */
    int proto3;
    const char **imports;
    size_t nimports;
    pmsg_t **msgs;
    size_t nmsgs;
    penum_t **enums;
    size_t nenums;
};

struct ls_proto {
    pfile_t **files; /* [0] the schema */
    size_t nfiles;
    char *canon;
    void **allocs;
    size_t nallocs, capallocs;
};

/* The schema's own file (its imports are reached through field types). */
const pfile_t *ls_proto_file(const ls_proto_t *p);
/* The message a Confluent message-index path names in f (an empty path is
 * [0]); NULL with the reason in err when an index names none. */
const pmsg_t *ls_proto_message_at(const pfile_t *f, const int64_t *idx, size_t n, char *err,
                                  size_t errlen);
#endif
