/* Client quota enforcement on one broker (Kafka's ClientQuotaManager and
 * KIP-219); the quota values come from security/quotas.h.
 *
 * Rate windows: a request counts against the window its quota entity names
 * (ls_quotas_lookup): quota.window.num samples of quota.window.size.seconds
 * each, measured as Kafka's Rate: the sum of the samples still inside
 * num * size over the time they span, never less than (num - 1) * size, so
 * a fresh window does not read as a burst. Windows are per broker, as
 * Kafka's: a client spread over N brokers may use N times its quota.
 *
 * Throttle: a window over its quota Q after recording (rate R over span W)
 * gives (R - Q) / Q * W milliseconds, at most num * size seconds. The
 * response carries it in throttle_time_ms and the connection is muted (not
 * read) for that long after the response (kafka/conn.c), so the client
 * backs off even if it ignores the field. A throttled fetch is answered with
 * no records and its bytes are not counted, and a fetch asks for at most
 * what its window allows (ls_kreq_quota_window_max), both as Kafka's. Request time
 * (request_percentage) is the time a request's handler runs on the event
 * loop, as a percentage of one thread over the window; it is known only
 * once the handler ran, so it mutes the connection without appearing in
 * that response.
 *
 * Threads: the event loop's only. Windows idle for twice their span are
 * dropped. */
#ifndef LS_KAFKA_KQUOTA_H
#define LS_KAFKA_KQUOTA_H
#include <stdint.h>

#include "kafka/api.h"
#include "security/quotas.h"

typedef struct ls_kquota ls_kquota_t;

ls_kquota_t *ls_kquota_new(ls_quotas_t *quotas, int samples, int sample_seconds);
void ls_kquota_free(ls_kquota_t *k); /* NULL: no-op */

/* Counts amount (bytes; percent-seconds for request_percentage) for
 * principal ("User:name") and client_id against key's quota: the throttle
 * in milliseconds (0: none, or no quota applies). k NULL: 0. */
int32_t ls_kquota_record(ls_kquota_t *k, const char *principal, const char *client_id,
                         ls_quota_key key, double amount, int64_t now_ms);
/* Takes back what the last ls_kquota_record of the same arguments counted
 * (a throttled fetch that sends nothing). */
void ls_kquota_unrecord(ls_kquota_t *k, const char *principal, const char *client_id,
                        ls_quota_key key, double amount);

/* The most key's window lets req count before it is over its quota (the
 * quota times the window's shortest span), as Kafka bounds a fetch by it;
 * -1 when no quota applies. */
double ls_kreq_quota_window_max(ls_kreq_t *req, ls_quota_key key);

/* The same for a request (its principal and client id, now): raises
 * req->throttle_ms to the throttle and returns it. */
int32_t ls_kreq_quota_record(ls_kreq_t *req, ls_quota_key key, double amount);
void ls_kreq_quota_unrecord(ls_kreq_t *req, ls_quota_key key, double amount);
#endif
