/* S3 response XML: see s3_xml.c. Pure functions, any thread. */
#ifndef LS_OBJSTORE_S3_XML_H
#define LS_OBJSTORE_S3_XML_H
#include <stddef.h>
#include <stdint.h>

/* Finds the next <tag>...</tag> in buf[*pos, len); the content is
 * buf[*vs, *vs + *vlen). Advances *pos past the end tag. Tags with
 * attributes or namespaces on the element itself ("<tag xmlns=...>") match
 * too. Returns 0 when there is none. Never reads outside buf. */
int ls_s3_xml_next(const char *buf, size_t len, size_t *pos, const char *tag, size_t *vs,
                   size_t *vlen);
/* Copies XML text with the five predefined entities and numeric ASCII
 * references decoded into out (cap bytes with NUL). Returns 0, or -1 if it
 * does not fit or holds an entity we do not decode. */
int ls_s3_xml_text(const char *p, size_t n, char *out, size_t cap);
/* The decoded text of the first <tag> in buf, or "" (bounded copy). */
void ls_s3_xml_first(const char *buf, size_t len, const char *tag, char *out, size_t cap);
/* "2024-01-02T03:04:05.678Z" -> ms since the epoch (0 if unparsable). */
int64_t ls_s3_iso8601_ms(const char *s);
#endif
