/* The tables as read-only consumer groups (group/group.h
 * LS_TABLE_GROUP_PREFIX "<namespace>.<table>"): each table's recorded
 * status (lake/table_plan.h "Status": what its last commit accounts for
 * per partition, written by whichever broker committed it) read as the
 * committed offsets of a group consuming its stream, so Kafka's tools show
 * a table's lag like any consumer's. The Kafka handlers serve them
 * (kafka/h_group.c) and /metrics exports their lag (broker_metrics.c).
 *
 * A table turned off keeps its last status, so its group stays listed with
 * the lag growing: the table is that far behind. Blocking (metadata store
 * reads): worker or HTTP threads. */
#ifndef LS_TABLE_GROUPS_H
#define LS_TABLE_GROUPS_H
#include "group/group.h"
#include "meta/meta.h"
#include "stream/catalog.h"

ls_status ls_table_groups_read(ls_meta_t *meta, ls_catalog_t *catalog, ls_table_group_t **out,
                               int *n);
#endif
