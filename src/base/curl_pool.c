#include "base/curl_pool.h"

#include "base/alloc.h"
#include "base/check.h"

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static void global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

void ls_curl_global_init(void) { pthread_once(&global_once, global_init); }

void ls_curl_pool_init(ls_curl_pool_t *p, int max_handles, int max_idle)
{
    LS_CHECK(max_idle > 0 && (max_handles == 0 || max_idle <= max_handles));
    ls_curl_global_init();
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->idle = LS_NEWN(CURL *, max_idle);
    p->nidle = p->nhandles = 0;
    p->max_handles = max_handles;
    p->max_idle = max_idle;
}

void ls_curl_pool_destroy(ls_curl_pool_t *p)
{
    if (!p->idle) return; /* zeroed, never initialized (a store that failed to open) */
    pthread_mutex_lock(&p->mu);
    LS_CHECKF(p->nidle == p->nhandles, "curl pool destroyed with %d of %d handles in use",
              p->nhandles - p->nidle, p->nhandles);
    for (int i = 0; i < p->nidle; i++)
        curl_easy_cleanup(p->idle[i]);
    p->nidle = p->nhandles = 0;
    pthread_mutex_unlock(&p->mu);
    ls_free(p->idle);
    p->idle = NULL;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
}

CURL *ls_curl_pool_get(ls_curl_pool_t *p)
{
    CURL *c = NULL;
    pthread_mutex_lock(&p->mu);
    while (p->nidle == 0 && p->max_handles && p->nhandles >= p->max_handles)
        pthread_cond_wait(&p->cv, &p->mu);
    if (p->nidle > 0)
        c = p->idle[--p->nidle];
    else
        p->nhandles++;
    pthread_mutex_unlock(&p->mu);
    if (!c) {
        c = curl_easy_init();
        if (!c) LS_PANIC("curl_easy_init failed (out of memory)");
    }
    return c;
}

void ls_curl_pool_put(ls_curl_pool_t *p, CURL *c)
{
    pthread_mutex_lock(&p->mu);
    if (p->nidle < p->max_idle) {
        p->idle[p->nidle++] = c;
        c = NULL;
    } else {
        p->nhandles--;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (c) curl_easy_cleanup(c);
}

ls_curl_failure ls_curl_classify(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SSL_CONNECT_ERROR: return LS_CURL_NOT_SENT;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SEND_FAIL_REWIND: return LS_CURL_MAYBE_SENT;
    default: return LS_CURL_PERMANENT;
    }
}
