/* The vocabulary of a settings table: what one row says about a key, the
 * refused Kafka names, and the schema that bundles them. The parser
 * (base/config.c) reads any such table; the broker's own rows live at the
 * composition root (server/settings.c) and reach the parser through
 * ls_config_init. Included by the parser and by a table's file only (the
 * size macros below are short names). */
#ifndef LS_BASE_CONFIG_SCHEMA_H
#define LS_BASE_CONFIG_SCHEMA_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"

#define KiB ((int64_t)1 << 10)
#define MiB ((int64_t)1 << 20)
#define GiB ((int64_t)1 << 30)
#define TiB ((int64_t)1 << 40)
#define DAY_MS ((int64_t)86400000)
#define STR_(x) #x
#define STR(x) STR_(x) /* a macro's value as a string literal */

typedef enum cfg_type {
    CT_STRING,   /* non-empty text; empty resets optional keys (default NULL) */
    CT_URL,      /* scheme://rest */
    CT_INT,      /* decimal integer within [min, max] */
    CT_SIZE,     /* byte count with optional binary suffix */
    CT_BOOL,     /* true/false, yes/no, on/off, 1/0 */
    CT_PORT,     /* TCP port within [min, max] */
    CT_LISTENER, /* [NAME://]host:port[,...], fills a host and a port field */
    CT_LEVEL,    /* debug|info|warn|error */
} cfg_type;

typedef struct cfg_key {
    const char *name;
    const char *alias;   /* another accepted spelling (Kafka KRaft name), or NULL */
    const char *section; /* printed by --help before the first key of a group */
    cfg_type type;
    size_t off, size;    /* the field (host field for listeners) */
    size_t port_off;     /* listeners: the port field */
    bool empty_disables; /* listeners: an empty value turns the feature off (host NULL) */
    bool multi;          /* listeners: a Kafka list NAME://host:port,... */
    bool secret;         /* never a command-line flag; in a config file only if 0600 */
    const char *def;     /* default as text; NULL means unset until ls_config_finish */
    int64_t min, max;
    const char *help;
} cfg_key_t;

#define FIELD(m) .off = offsetof(ls_config_t, m), .size = sizeof(((ls_config_t *)0)->m)

/* Kafka settings refused by name, with why; a leading '*' matches any key
 * ending with the rest. */
typedef struct cfg_refused {
    const char *name, *why;
} cfg_refused_t;

/* A settings table: every key once, and the names refused. */
struct ls_config_schema {
    const cfg_key_t *keys;
    size_t nkeys;
    const cfg_refused_t *refused;
    size_t nrefused;
};
#endif
