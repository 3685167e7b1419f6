/* libFuzzer harness for what the Iceberg REST catalog parses from the
 * network and from the metadata store: percent-decoding, query strings,
 * path routing, the whole request handler (against a mem-backed table
 * catalog holding one table), and table pointer records.
 *
 * Input: byte 0 picks the method; then the path up to '\n', the query up
 * to the next '\n', and the rest is a table pointer value (decoded under
 * a key made from the path). Oracles besides the sanitizers: every response
 * is valid JSON (or empty) with a status the handler may send, and an
 * accepted pointer has its required fields. Build and run: `make fuzz`. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/url.h"
#include "http/iceberg_rest.h"
#include "objstore/objstore.h"
#include "table/iceberg_raw.h"
#include "table/table_catalog.h"
#include "meta/meta_keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ls_rest_t *rest;

static void setup(void)
{
    ls_meta_t *m = ls_meta_mem_open();
    ls_objstore_t *os = ls_objstore_mem_open();
    ls_ice_spec_t spec = {0};
    ls_ice_table_t *t;
    char err[256];
    if (ls_tcat_create(m, os, "default", "t", "warehouse/default/t", "mem://warehouse/default/t",
                       ls_raw_iceberg_schema_json(), LS_RAW_LAST_COLUMN_ID, &spec, NULL, &t, err,
                       sizeof err) != LS_OK)
        abort();
    ls_ice_table_free(t);
    rest = ls_rest_new(&(ls_rest_config_t){.meta = m, .os = os, .client_props = NULL});
}

static char *take_line(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    const uint8_t *e = nl ? nl : end;
    char *s = ls_strndup((const char *)*p, (size_t)(e - *p));
    *p = nl ? nl + 1 : end;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const methods[] = {"GET", "HEAD", "POST", "DELETE", "PUT", "PATCH"};
    if (!rest) setup();
    if (size < 1) return 0;
    const uint8_t *p = data + 1, *end = data + size;
    char *raw = take_line(&p, end);
    char *path = ls_asprintf("/%s", raw[0] == '/' ? raw + 1 : raw);
    char *query = take_line(&p, end);

    ls_buf_t b;
    ls_buf_init(&b);
    ls_url_decode(raw, strlen(raw), false, &b);
    ls_url_query_get(query, "pageToken", &b);
    ls_rest_route_t rt;
    ls_rest_route(methods[data[0] % 6], path, &rt);

    ls_http_request_t req = {.method = methods[data[0] % 6], .path = path, .query = query};
    ls_http_response_t resp = {.status = 200};
    ls_buf_init(&resp.body);
    ls_rest_handle(rest, &req, &resp);
    if (resp.status < 200 || resp.status > 599) abort();
    if (resp.body.len) {
        json_t *j = json_loadb((const char *)resp.body.data, resp.body.len, 0, NULL);
        if (!j) abort();
        json_decref(j);
    }
    ls_buf_free(&resp.body);

    char *key = ls_asprintf(LS_KEY_TABLE "%s", raw);
    ls_kv_t kv = {
        .key = (uint8_t *)key, .klen = strlen(key), .val = (uint8_t *)p, .vlen = (size_t)(end - p)};
    ls_tcat_pointer_t ptr;
    char err[256];
    if (ls_tcat_pointer_decode(&kv, &ptr, err, sizeof err) == LS_OK) {
        if (!ptr.metadata_key || !ptr.prefix || !ptr.metadata_location || ptr.version < 1) abort();
        ls_tcat_pointer_clear(&ptr);
    }
    ls_free(key);
    ls_buf_free(&b);
    ls_free(query);
    ls_free(path);
    ls_free(raw);
    return 0;
}
