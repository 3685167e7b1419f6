/* The protocol layer's view of the broker's services; see services.h. */
#include "kafka/services.h"

#include "base/alloc.h"

int32_t ls_ksvc_coordinator(const ls_kafka_services_t *s, const char *key, size_t klen,
                            ls_member_t *out)
{
    ls_member_t *m;
    int n = ls_ksvc_members(s, &m);
    int i = ls_place(m, n, key, klen, NULL);
    *out = m[i];
    ls_free(m);
    return out->id;
}
