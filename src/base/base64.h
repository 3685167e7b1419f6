/* Base64 (RFC 4648 section 4) for the wire formats that carry bytes as text:
 * etcd's JSON gateway, serialized Protobuf descriptors in the schema
 * registry. Decoding also takes the URL-safe alphabet ('-', '_') and stops
 * at the first '='. */
#ifndef LS_BASE64_H
#define LS_BASE64_H
#include <stddef.h>
#include <stdint.h>

/* A fresh NUL-terminated encoding of data[0..n) (padded). */
char *ls_base64_encode(const void *data, size_t n);
/* Decodes s into a fresh buffer (NUL-terminated, not counted). -1 if malformed. */
int ls_base64_decode(const char *s, uint8_t **out, size_t *outlen);
#endif
