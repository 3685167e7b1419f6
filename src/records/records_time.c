#include "records/records_time.h"

#include "records/records.h"

typedef struct {
    int64_t ts;
    int64_t delta;
    int64_t found_ts;
} time_search_t;

static int on_record(void *arg, const ls_record_view_t *rec)
{
    time_search_t *s = arg;
    if (rec->timestamp >= s->ts) {
        s->delta = rec->offset_delta;
        s->found_ts = rec->timestamp;
        return 1;
    }
    return 0;
}

int64_t ls_kafka_batch_offset_for_time(const uint8_t *batch, size_t len, int64_t ts,
                                       int64_t *found_ts)
{
    time_search_t s = {ts, -1, -1};
    /* decompression bounded well above message.max.bytes; on failure fall back to the batch */
    if (ls_records_foreach(batch, len, 64u << 20, on_record, &s) != LS_RB_OK || s.delta < 0)
        return -1;
    *found_ts = s.found_ts;
    return s.delta;
}
