/* Placement: which live broker a partition's "leader" or a group's
 * coordinator is, by rendezvous (highest-random-weight) hashing over the
 * live brokers.
 *
 * Properties the cluster relies on:
 *  - every broker computes the same answer from the same member list (no
 *    coordination): the weight depends only on the key and the broker id;
 *  - a membership change moves only the keys of the brokers that came or
 *    went (about 1/N of them), so reads of a partition keep hitting one
 *    broker's read cache and most groups keep their coordinator;
 *  - with a zone, only brokers whose rack equals the zone are candidates when
 *    there is at least one; otherwise every broker is.
 * Pure functions: no I/O, no state. */
#ifndef LS_PLACEMENT_H
#define LS_PLACEMENT_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LS_MEMBER_MAX_ENDPOINTS 8

/* The address a broker advertises on one of its Kafka listeners. */
typedef struct ls_endpoint {
    char name[64]; /* listener name, e.g. PLAINTEXT, SSL */
    char host[256];
    int32_t port;
} ls_endpoint_t;

typedef struct ls_member {
    int32_t id;
    char host[256]; /* its first listener's advertised address */
    int32_t port;
    char rack[64]; /* "" = none (broker.rack) */
    /* every listener's advertised address (a registration of an older
     * broker has none: host and port stand for every listener) */
    int nendpoints;
    ls_endpoint_t endpoints[LS_MEMBER_MAX_ENDPOINTS];
} ls_member_t;

/* The address m advertises on listener name: its endpoint of that name;
 * else (a broker without that listener, or registered before listeners had
 * names) its first listener's. */
static inline void ls_member_endpoint(const ls_member_t *m, const char *name, const char **host,
                                      int32_t *port)
{
    *host = m->host;
    *port = m->port;
    for (int i = 0; name && i < m->nendpoints; i++)
        if (strcmp(m->endpoints[i].name, name) == 0) {
            *host = m->endpoints[i].host;
            *port = m->endpoints[i].port;
            return;
        }
}

/* Index into m[0..n) of the broker that owns key, or -1 if n == 0.
 * zone: NULL or "" for no preference. */
int ls_place(const ls_member_t *m, int n, const void *key, size_t klen, const char *zone);
/* The id of that broker, or -1 if n == 0. */
int32_t ls_place_id(const ls_member_t *m, int n, const void *key, size_t klen, const char *zone);

/* The zone a client names in its client.id: the value of an "ls_az=<zone>"
 * token (tokens separated by ',', ';', ' ' or '&'). Copies at most cap-1
 * bytes into out; returns 0 and out="" when there is none. */
int ls_client_zone(const char *client_id, size_t len, char *out, size_t cap);
#endif
