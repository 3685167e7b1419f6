/* ls_meta etcd backend: etcd v3 over its JSON gateway (libcurl).
 *
 * URL: etcd://host:port[,host:port...][/prefix]
 *   Every key lives under "prefix/" in etcd (the '/' is added when the prefix
 *   does not end with one; no prefix: keys are stored as given). Several
 *   endpoints of one cluster: requests go to the last endpoint that answered
 *   and fail over to the next when one is unreachable. */
#ifndef LS_META_ETCD_H
#define LS_META_ETCD_H
#include "meta/meta.h"

ls_meta_t *ls_meta_etcd_open(const char *url, char *err, size_t errlen);

/* Compacts etcd's history up to rev (all keys of the cluster, not only the
 * prefix): watches from before rev then get LS_ERANGE. For operators and
 * tests; m must be an etcd backend. */
ls_status ls_meta_etcd_compact(ls_meta_t *m, int64_t rev);
#endif
