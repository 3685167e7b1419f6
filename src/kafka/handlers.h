/* Kafka API handlers, one per API (h_<area>.c). Referenced from the dispatch
 * table in api.c; each finishes its request exactly once (see api.h). */
#ifndef LS_KAFKA_HANDLERS_H
#define LS_KAFKA_HANDLERS_H
#include "kafka/api.h"

void ls_kafka_handle_produce(ls_kreq_t *req);            /* h_produce.c, key 0 */
void ls_kafka_handle_fetch(ls_kreq_t *req);              /* h_fetch.c, key 1 */
void ls_kafka_handle_list_offsets(ls_kreq_t *req);       /* h_list_offsets.c, key 2 */
void ls_kafka_handle_metadata(ls_kreq_t *req);           /* h_metadata.c, key 3 */
void ls_kafka_handle_api_versions(ls_kreq_t *req);       /* api.c, key 18 */
void ls_kafka_handle_create_topics(ls_kreq_t *req);      /* h_topics.c, key 19 */
void ls_kafka_handle_delete_topics(ls_kreq_t *req);      /* h_topics.c, key 20 */
void ls_kafka_handle_init_producer_id(ls_kreq_t *req);   /* h_producer.c, key 22 */
void ls_kafka_handle_offset_for_leader_epoch(ls_kreq_t *req); /* h_list_offsets.c, key 23 */
void ls_kafka_handle_describe_configs(ls_kreq_t *req);   /* h_configs.c, key 32 */
void ls_kafka_handle_create_partitions(ls_kreq_t *req);  /* h_topics.c, key 37 */
void ls_kafka_handle_describe_cluster(ls_kreq_t *req);   /* h_metadata.c, key 60 */
#endif
