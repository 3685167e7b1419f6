#ifndef LS_UUID_H
#define LS_UUID_H
#include <stdint.h>
typedef struct {
    uint8_t b[16];
} ls_uuid_t;
void ls_uuid_random(ls_uuid_t *u); /* version 4 */
void ls_uuid_format(const ls_uuid_t *u, char out[37]);
/* Kafka's text form of a Uuid (its toString): the 16 bytes in URL-safe
 * base64 without padding, 22 characters (cluster ids, client instance ids). */
void ls_uuid_format_kafka(const ls_uuid_t *u, char out[23]);
int ls_uuid_parse(const char *s, ls_uuid_t *u); /* 0 on success */
int ls_uuid_is_zero(const ls_uuid_t *u);
void ls_random_bytes(void *p, unsigned n);
#endif
