#include "kafka/names.h"

#include "stream/catalog.h"

#include <stdio.h>
#include <string.h>

#define PRINTABLE_MAX 128

char *ls_kafka_topic_name(ls_arena_t *a, ls_kstr_t s)
{
    if (s.len <= 0 || memchr(s.ptr, 0, (size_t)s.len)) return NULL;
    char *name = ls_arena_kstr(a, s, NULL);
    return ls_stream_name_valid(name) ? name : NULL;
}

char *ls_kafka_id_name(ls_arena_t *a, ls_kstr_t s, bool *ok)
{
    *ok = true;
    if (s.len < 0) return NULL;
    for (int32_t i = 0; i < s.len; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        if (ch < 0x20 || ch == 0x7f) {
            *ok = false;
            break;
        }
    }
    return ls_arena_kstr(a, s, NULL);
}

const char *ls_kafka_printable(ls_arena_t *a, ls_kstr_t s)
{
    if (s.len < 0) return "(null)";
    size_t n = (size_t)s.len < PRINTABLE_MAX ? (size_t)s.len : PRINTABLE_MAX;
    char *out = ls_arena_alloc(a, n * 4 + 8), *o = out;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        if (ch < 0x20 || ch == 0x7f || ch == '"' || ch == '\\')
            o += sprintf(o, "\\x%02x", ch);
        else
            *o++ = (char)ch;
    }
    *o++ = '"';
    if ((size_t)s.len > n) {
        memcpy(o, "...", 3);
        o += 3;
    }
    *o = 0;
    return out;
}
