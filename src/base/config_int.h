/* The settings table's vocabulary, shared by the parser (config.c) and the
 * table itself (config_keys.c): what one row of ls_config_keys says about a
 * key, and the refused Kafka names. Private to base/config*.c. */
#ifndef LS_BASE_CONFIG_INT_H
#define LS_BASE_CONFIG_INT_H
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

/* Every key, once (config_keys.c). */
extern const cfg_key_t ls_config_keys[];
extern const size_t ls_config_nkeys;

/* Kafka settings refused by name, with why; a leading '*' matches any key
 * ending with the rest. */
typedef struct cfg_refused {
    const char *name, *why;
} cfg_refused_t;
extern const cfg_refused_t ls_config_refused[];
extern const size_t ls_config_nrefused;
#endif
