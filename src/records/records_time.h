/* Kafka-specific entry hook for log storage: finds, inside one RecordBatch,
 * the first record whose timestamp is >= ts (ListOffsets by timestamp). */
#ifndef LS_RECORDS_TIME_H
#define LS_RECORDS_TIME_H
#include <stddef.h>
#include <stdint.h>
int64_t ls_kafka_batch_offset_for_time(const uint8_t *batch, size_t len, int64_t ts,
                                       int64_t *found_ts);
#endif
