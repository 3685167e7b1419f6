/* Confluent wire-format checks; the rules are in framing.h. */
#include "registry/framing.h"

#include "registry/avro_view.h"
#include "registry/json_schema.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

static bool rd_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Protobuf wire bytes (encoding guide: tags, the four wire types in use,
 * and groups balanced); the reason in why. */
static ls_status proto_wire_check(const uint8_t *p, const uint8_t *end, char *why, size_t whylen)
{
    const uint8_t *start = p;
    uint64_t groups[64];
    int depth = 0;
    while (p < end) {
        uint64_t tag, v;
        size_t at = (size_t)(p - start);
        if (!rd_varint(&p, end, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff) {
            snprintf(why, whylen, "bad Protobuf tag at byte %zu", at);
            return LS_EINVAL;
        }
        switch (tag & 7) {
        case 0: /* varint */
            if (!rd_varint(&p, end, &v)) goto truncated;
            break;
        case 1: /* fixed64 */
            if (end - p < 8) goto truncated;
            p += 8;
            break;
        case 2: /* length-delimited */
            if (!rd_varint(&p, end, &v) || v > (uint64_t)(end - p)) goto truncated;
            p += v;
            break;
        case 3: /* start group */
            if (depth == 64) {
                snprintf(why, whylen, "Protobuf groups nested deeper than 64 at byte %zu", at);
                return LS_EINVAL;
            }
            groups[depth++] = tag >> 3;
            break;
        case 4: /* end group */
            if (!depth || groups[--depth] != tag >> 3) {
                snprintf(why, whylen, "unmatched Protobuf end-group at byte %zu", at);
                return LS_EINVAL;
            }
            break;
        case 5: /* fixed32 */
            if (end - p < 4) goto truncated;
            p += 4;
            break;
        default:
            snprintf(why, whylen, "Protobuf wire type %d at byte %zu", (int)(tag & 7), at);
            return LS_EINVAL;
        }
        continue;
    truncated:
        snprintf(why, whylen, "Protobuf field at byte %zu runs past the end", at);
        return LS_EINVAL;
    }
    if (depth) {
        snprintf(why, whylen, "Protobuf group not closed");
        return LS_EINVAL;
    }
    return LS_OK;
}

/* The Confluent message-index array (zig-zag varints: a count, then that
 * many indexes; a single 0 stands for [0]) and then the wire bytes. */
static ls_status proto_check(const ls_proto_t *proto, const uint8_t *p, size_t len,
                             int64_t path[64], size_t *npath, char *why, size_t whylen)
{
    const uint8_t *end = p + len;
    uint64_t n, idx;
    if (!rd_varint(&p, end, &n)) {
        snprintf(why, whylen, "truncated Protobuf message-index array");
        return LS_EINVAL;
    }
    n = (n >> 1) ^ -(n & 1);
    if ((int64_t)n < 0 || n > (uint64_t)(end - p) || n > 64) {
        snprintf(why, whylen, "bad Protobuf message-index count");
        return LS_EINVAL;
    }
    for (uint64_t i = 0; i < n; i++)
        if (!rd_varint(&p, end, &idx) || (int64_t)((idx >> 1) ^ -(idx & 1)) < 0) {
            snprintf(why, whylen, "bad Protobuf message index %llu", (unsigned long long)i);
            return LS_EINVAL;
        } else {
            path[i] = (int64_t)((idx >> 1) ^ -(idx & 1));
        }
    if (proto_wire_check(p, end, why, whylen) != LS_OK) return LS_EINVAL;
    *npath = (size_t)n;
    return ls_proto_check_payload(proto, path, (size_t)n, p, (size_t)(end - p), why, whylen);
}

/* Whether id is a version of the subject want names for schema s (the
 * record name of Protobuf message path[0..npath)): LS_FRAME_OK, or why. */
static ls_frame_check subject_check(ls_registry_t *r, int32_t id, const ls_sr_schema_t *s,
                                    const int64_t *path, size_t npath,
                                    const ls_frame_subject_t *want, char *why, size_t whylen)
{
    const ls_avro_node_t *root = NULL;
    char e[200];
    if (s->type == LS_SR_AVRO)
        root = ls_avro_root(s->avro);
    else if (s->type == LS_SR_JSON)
        root = s->view ? ls_avro_view_root(s->view) : NULL;
    else if (s->pviews) {
        const ls_avro_view_t *v = ls_avro_views_find(s->pviews, path, npath, e, sizeof e);
        root = v ? ls_avro_view_root(v) : NULL;
    }
    if (!root && want->strategy != LS_SR_TOPIC_NAME) {
        snprintf(why, whylen,
                 "names schema id %d, which has no record name for %s=%s (%s schemas of this "
                 "shape are not named types)",
                 (int)id, want->strategy_key, want->strategy_value, ls_sr_type_name(s->type));
        return LS_FRAME_INVALID;
    }
    char subject[512];
    ls_sr_subject_name(want->strategy, want->topic, want->key, ls_sr_record_name(root), subject,
                       sizeof subject);
    ls_sr_version_t *vs = NULL;
    size_t n = 0;
    ls_sr_err_t err;
    if (ls_registry_id_versions(r, id, true, &vs, &n, &err) != LS_SR_OK) {
        snprintf(why, whylen, "looking up the subjects of schema id %d: %s", (int)id, err.message);
        return LS_FRAME_STORE_ERROR;
    }
    bool ok = false;
    for (size_t i = 0; i < n && !ok; i++)
        ok = !strcmp(vs[i].subject, subject);
    ls_sr_versions_free(vs, n);
    if (ok) return LS_FRAME_OK;
    snprintf(why, whylen, "names schema id %d, which is not a version of subject %.250s (%s=%s)",
             (int)id, subject, want->strategy_key, want->strategy_value);
    return LS_FRAME_INVALID;
}

ls_frame_check ls_frame_check_payload(ls_registry_t *r, const uint8_t *p, size_t len,
                                      const ls_frame_subject_t *want, char *why, size_t whylen)
{
    if (!p || len < 5 || p[0] != 0) {
        snprintf(
            why, whylen,
            "is not in the schema registry's wire format (magic byte 0 and a 4-byte schema id)");
        return LS_FRAME_INVALID;
    }
    int32_t id =
        (int32_t)((uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4]);
    ls_sr_schema_t *s = NULL;
    ls_sr_err_t e;
    ls_sr_code c = ls_registry_schema(r, id, &s, &e);
    if (c == LS_SR_SCHEMA_NOT_FOUND) {
        snprintf(why, whylen, "names schema id %d, which is not registered", (int)id);
        return LS_FRAME_INVALID;
    }
    if (c != LS_SR_OK) {
        snprintf(why, whylen, "looking up schema id %d: %s", (int)id, e.message);
        return LS_FRAME_STORE_ERROR;
    }
    const uint8_t *body = p + 5;
    size_t n = len - 5;
    char what[400] = "";
    ls_status rc = LS_OK;
    int64_t path[64];
    size_t npath = 0;
    switch (s->type) {
    case LS_SR_AVRO:
        rc = ls_avro_datum_check(ls_avro_root(s->avro), body, n, what, sizeof what);
        break;
    case LS_SR_JSON: {
        json_error_t je;
        json_t *j = json_loadb((const char *)body, n, JSON_DECODE_ANY, &je);
        if (!j) {
            snprintf(what, sizeof what, "not JSON: %s at byte %d", je.text, je.position);
            rc = LS_EINVAL;
        } else {
            rc = ls_jsonschema_validate(s->json, j, what, sizeof what);
        }
        json_decref(j);
        break;
    }
    case LS_SR_PROTOBUF:
        rc = proto_check(s->proto, body, n, path, &npath, what, sizeof what);
        break;
    }
    ls_frame_check out = LS_FRAME_OK;
    if (rc != LS_OK) {
        snprintf(why, whylen, "does not decode as schema id %d (%s): %s", (int)id,
                 ls_sr_type_name(s->type), what);
        out = LS_FRAME_INVALID;
    } else if (want) {
        out = subject_check(r, id, s, path, npath, want, why, whylen);
    }
    ls_sr_schema_release(s);
    return out;
}
