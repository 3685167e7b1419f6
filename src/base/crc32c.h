/* CRC-32C (Castagnoli), as used by Kafka RecordBatch v2 and our own formats. */
#ifndef LS_CRC32C_H
#define LS_CRC32C_H
#include <stddef.h>
#include <stdint.h>
uint32_t ls_crc32c(uint32_t crc, const void *data, size_t len); /* start with crc = 0 */
/* The portable (table-driven) engine alone; same results. For tests. */
uint32_t ls_crc32c_sw(uint32_t crc, const void *data, size_t len);
#endif
