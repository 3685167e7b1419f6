/* libFuzzer harness for what the schema registry parses from the network:
 * Avro, JSON Schema and Protobuf schema texts, serialized Protobuf
 * descriptors, and whole REST requests (against a mem-backed registry that
 * keeps what earlier inputs registered).
 *
 * Input: byte 0 picks the case (mod 6): 0 Avro, 1 JSON Schema, 2 Protobuf
 * text, 3 a serialized descriptor (the rest of the input, base64-encoded),
 * 4 a REST request (byte 1 the method; the path up to '\n', the query up
 * to the next '\n', the rest the body), 5 a record value checked by
 * produce-time validation (registry/framing.h: byte 1 picks schema id 1-3,
 * a recursive Avro record, a JSON Schema and a Protobuf message, or 4, not
 * registered; the rest is the payload after the wire-format header). Oracles besides the
 * sanitizers: a schema that parses reads its own data (compatible with itself); a descriptor that
 * renders to .proto text which parses serializes back to a descriptor that renders to the same
 * text; every REST answer has a status the API sends and, but for raw /schema texts, a JSON body; a
 * value check answers valid or invalid, never a store error. Build and run: `make fuzz`. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/base64.h"
#include "http/registry_rest.h"
#include "registry/framing.h"
#include "registry/registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ls_registry_t *reg;

static char *take_line(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    const uint8_t *e = nl ? nl : end;
    char *s = ls_strndup((const char *)*p, (size_t)(e - *p));
    *p = nl ? nl + 1 : end;
    return s;
}

static void self_compatible(ls_sr_type type, const char *text)
{
    ls_sr_input_t in = {.type = type, .text = text};
    ls_sr_schema_t *s;
    ls_sr_err_t e;
    if (ls_sr_parse_standalone(&in, &s, &e) != LS_SR_OK) return;
    ls_sr_schema_t *prev[1] = {s};
    if (!ls_sr_compatible(LS_SR_COMPAT_FULL, s, prev, 1, NULL)) abort();
    ls_sr_schema_release(s);
}

static void descriptor(const uint8_t *p, size_t n)
{
    char *b64 = ls_base64_encode(p, n), err[400];
    char *text = ls_proto_text_from_descriptor(b64, err, sizeof err);
    ls_free(b64);
    if (!text) return;
    ls_proto_t *pr = ls_proto_parse(NULL, NULL, 0, text, err, sizeof err);
    if (pr) {
        char *d = ls_proto_descriptor(pr);
        char *again = ls_proto_text_from_descriptor(d, err, sizeof err);
        ls_proto_t *pr2 = again ? ls_proto_parse(NULL, NULL, 0, again, err, sizeof err) : NULL;
        if (!pr2) abort();
        char *d2 = ls_proto_descriptor(pr2);
        if (strcmp(d, d2)) abort();
        ls_free(d2);
        ls_proto_free(pr2);
        ls_free(again);
        ls_free(d);
        ls_proto_free(pr);
    }
    ls_free(text);
}

static void rest(const uint8_t *data, size_t size)
{
    static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "HEAD"};
    static ls_registry_rest_t rr; /* the handler's argument, as the broker mounts it */
    if (!reg) {
        reg = ls_registry_new(ls_meta_mem_open());
        rr = (ls_registry_rest_t){.registry = reg};
    }
    if (size < 1) return;
    const uint8_t *p = data + 1, *end = data + size;
    char *raw = take_line(&p, end);
    char *path = ls_asprintf("/%s", raw[0] == '/' ? raw + 1 : raw);
    char *query = take_line(&p, end);
    char *body = ls_strndup((const char *)p, (size_t)(end - p));
    ls_http_request_t req = {.method = methods[data[0] % 5],
                             .path = path,
                             .query = query,
                             .body = body,
                             .body_len = strlen(body)};
    ls_http_response_t resp = {.status = 200};
    ls_buf_init(&resp.body);
    ls_registry_rest_handle(&rr, &req, &resp);
    if (resp.status < 200 || resp.status > 599) abort();
    size_t pl = strlen(path);
    int raw_schema = resp.status == 200 && pl >= 7 && !strcmp(path + pl - 7, "/schema");
    if (resp.body.len && !raw_schema) {
        json_t *j = json_loadb((const char *)resp.body.data, resp.body.len, JSON_DECODE_ANY, NULL);
        if (!j) abort();
        json_decref(j);
    }
    ls_buf_free(&resp.body);
    ls_free(body);
    ls_free(query);
    ls_free(path);
    ls_free(raw);
}

static void framed_value(const uint8_t *data, size_t size)
{
    static ls_registry_t *fr;
    if (!fr) {
        static const struct {
            ls_sr_type type;
            const char *text;
        } schemas[] = {
            {LS_SR_AVRO, "{\"type\":\"record\",\"name\":\"N\",\"fields\":[{\"name\":\"i\","
                         "\"type\":\"int\"},{\"name\":\"s\",\"type\":\"string\"},{\"name\":"
                         "\"m\",\"type\":{\"type\":\"map\",\"values\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\","
                         "\"B\"]}}}},{\"name\":\"f\",\"type\":{\"type\":\"fixed\",\"name\":"
                         "\"F\",\"size\":3}},{\"name\":\"next\",\"type\":[\"null\",\"N\"]}]}"},
            {LS_SR_JSON, "{\"type\":\"object\"}"},
            {LS_SR_PROTOBUF, "syntax = \"proto3\"; message M { int64 a = 1; string s = 2; }"},
        };
        fr = ls_registry_new(ls_meta_mem_open());
        for (size_t i = 0; i < 3; i++) {
            ls_sr_input_t in = {.type = schemas[i].type, .text = schemas[i].text};
            int32_t id, version;
            ls_sr_err_t e;
            char subject[16];
            snprintf(subject, sizeof subject, "s%zu", i);
            if (ls_registry_register(fr, subject, &in, false, &id, &version, &e) != LS_SR_OK ||
                id != (int32_t)i + 1)
                abort();
        }
    }
    if (size < 1) return;
    uint8_t *v = ls_malloc(size + 4);
    v[0] = 0;
    v[1] = v[2] = v[3] = 0;
    v[4] = (uint8_t)(1 + data[0] % 4);
    memcpy(v + 5, data + 1, size - 1);
    char why[512];
    /* the subject check too, by each strategy (schema i is a version of s<i-1>) */
    const ls_frame_subject_t want = {.strategy = (ls_sr_strategy)(data[0] / 4 % 4),
                                     .topic = "s0",
                                     .key = data[0] & 0x80,
                                     .strategy_key = "strategy",
                                     .strategy_value = "fuzzed"};
    ls_frame_check r =
        ls_frame_check_payload(fr, v, size + 4, want.strategy <= 2 ? &want : NULL, why, sizeof why);
    if (r != LS_FRAME_OK && r != LS_FRAME_INVALID) abort();
    if (v[4] == 4 && r == LS_FRAME_OK) abort(); /* id 4 is not registered */
    ls_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int which = data[0] % 6;
    if (which == 5) {
        framed_value(data + 1, size - 1);
    } else if (which == 3) {
        descriptor(data + 1, size - 1);
    } else if (which == 4) {
        rest(data + 1, size - 1);
    } else {
        char *text = ls_strndup((const char *)data + 1, size - 1);
        self_compatible(which == 0 ? LS_SR_AVRO : which == 1 ? LS_SR_JSON : LS_SR_PROTOBUF, text);
        ls_free(text);
    }
    return 0;
}
