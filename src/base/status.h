/* Internal status codes. Kafka error codes appear only at the protocol edge
 * (src/kafka); everything below it speaks ls_status. */
#ifndef LS_STATUS_H
#define LS_STATUS_H

typedef enum ls_status {
    LS_OK = 0,
    LS_EAGAIN,    /* transient: retry may succeed (store unreachable, timeout) */
    LS_ENOTFOUND, /* key / object / log does not exist */
    LS_EEXISTS,   /* create-only write found an existing key or object */
    LS_ECONFLICT, /* compare-and-set lost: version changed underneath */
    LS_EIO,       /* I/O failure reported by a backend */
    LS_ECORRUPT,  /* stored bytes fail validation */
    LS_EINVAL,    /* caller passed something invalid */
    LS_ENOSPC,    /* store is full */
    LS_EFENCED,   /* log is fenced (deleted / ownership changed) */
    LS_ERANGE,    /* offset outside [log start, high watermark] */
    LS_ELIMIT,    /* a configured bound would be exceeded */
    LS_ESHUTDOWN, /* component is stopping */
} ls_status;

const char *ls_status_str(ls_status st);

/* True when a caller should retry the same operation later. */
static inline int ls_status_retriable(ls_status st)
{
    return st == LS_EAGAIN || st == LS_ECONFLICT || st == LS_EIO || st == LS_ESHUTDOWN;
}

#endif
