/* libcurl easy-handle pool and transient-error policy shared by the HTTP
 * clients of the stores (objstore/objstore_s3.c, meta/meta_etcd.c).
 *
 * Pool: handles keep their connections alive across requests. At most
 * max_handles exist at once (0: no bound) — a caller beyond it waits for a
 * handle to come back, so concurrency towards one server is bounded — and at
 * most max_idle are kept when returned (extra ones are cleaned up).
 * Thread-safe: every field is under mu.
 *
 * Error policy: one classification of libcurl's transport errors, by what
 * the caller may conclude about the request:
 *   LS_CURL_NOT_SENT   the request never reached the server (connect,
 *                      resolve, TLS handshake): retry anywhere, even a write;
 *   LS_CURL_MAYBE_SENT it may have been processed (timeout, reset, partial
 *                      answer): retry idempotent requests; a non-idempotent
 *                      write has an unknown outcome;
 *   LS_CURL_PERMANENT  retrying will not help (bad URL, TLS verification,
 *                      write callback refused, ...). */
#ifndef LS_CURL_POOL_H
#define LS_CURL_POOL_H
#include <curl/curl.h>
#include <pthread.h>

typedef struct ls_curl_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    CURL **idle;
    int nidle, nhandles;
    int max_handles, max_idle;
} ls_curl_pool_t;

typedef enum { LS_CURL_NOT_SENT, LS_CURL_MAYBE_SENT, LS_CURL_PERMANENT } ls_curl_failure;

/* curl_global_init, once per process (thread-safe). */
void ls_curl_global_init(void);

void ls_curl_pool_init(ls_curl_pool_t *p, int max_handles, int max_idle);
/* Every handle must be back. A zeroed pool that was never initialized is
 * accepted (nothing to do), so error paths may destroy unconditionally. */
void ls_curl_pool_destroy(ls_curl_pool_t *p);
CURL *ls_curl_pool_get(ls_curl_pool_t *p); /* may wait (max_handles) */
void ls_curl_pool_put(ls_curl_pool_t *p, CURL *c);

ls_curl_failure ls_curl_classify(CURLcode cc); /* cc != CURLE_OK */

#endif
