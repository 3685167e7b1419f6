/* The topology of a streams group (stgroup.h) as data: deep copies of
 * what a heartbeat brings, equality (a member may not change it under the
 * others), its stored form, and its configuration against the topics that
 * exist: which source topics are missing, the partition counts of the
 * repartition and changelog topics, each sub-topology's task count, and the
 * internal topics to create. Pure logic; the rules are in stgroup.h's
 * design note. */
#ifndef LS_STGROUP_TOPOLOGY_H
#define LS_STGROUP_TOPOLOGY_H
#include <stdbool.h>
#include <stdint.h>
#include "base/binrec.h"
#include "base/buf.h"
#include "group/stgroup.h"

/* Owned copies; free with the matching _free. */
ls_stgroup_topology_t *ls_stgroup_topology_dup(const ls_stgroup_topology_t *t);
void ls_stgroup_topology_free(ls_stgroup_topology_t *t);
bool ls_stgroup_topology_equal(const ls_stgroup_topology_t *a, const ls_stgroup_topology_t *b);
ls_stgroup_kv_t *ls_stgroup_kv_dup(const ls_stgroup_kv_t *v, int n);
void ls_stgroup_kv_free(const ls_stgroup_kv_t *v, int n);
bool ls_stgroup_kv_equal(const ls_stgroup_kv_t *a, int na, const ls_stgroup_kv_t *b, int nb);
/* The index of sub-topology id in t, -1 when none. */
int ls_stgroup_find_sub(const ls_stgroup_topology_t *t, const char *id);

/* The topology as configured against the topics that exist. */
typedef struct ls_stgroup_conf {
    bool ready;
    int8_t code; /* -1 ready, else the status */
    char *detail;
    int32_t *ntasks; /* per sub-topology */
    int nsubs;
    ls_stgroup_create_t *create;
    int ncreate;
} ls_stgroup_conf_t;

/* Configures t against the topics fn knows (Kafka's order: missing
 * sources, repartition counts, copartitioning, changelogs, the internal
 * topics' existence). NULL on success (conf filled, maybe with a status;
 * its create entries point into t), else why the topology is invalid
 * (STREAMS_INVALID_TOPOLOGY) and conf is empty. */
const char *ls_stgroup_configure(const ls_stgroup_topology_t *t, ls_stgroup_partitions_fn fn,
                                 void *arg, ls_stgroup_conf_t *conf);
void ls_stgroup_conf_clear(ls_stgroup_conf_t *c);
/* What a target assignment depends on from conf (ready, task counts). */
uint64_t ls_stgroup_conf_sig(const ls_stgroup_conf_t *c);

/* Stored forms (docs/FORMATS.md "Streams group state"); decode sets r->err
 * on bad input and still returns what it built (free it). */
void ls_stgroup_kv_encode(ls_buf_t *b, const ls_stgroup_kv_t *v, int n);
ls_stgroup_kv_t *ls_stgroup_kv_decode(ls_br_t *r, int *n);
void ls_stgroup_topology_encode(ls_buf_t *b, const ls_stgroup_topology_t *t); /* t may be NULL */
ls_stgroup_topology_t *ls_stgroup_topology_decode(ls_br_t *r);                /* NULL: none */
#endif
