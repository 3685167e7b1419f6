/* Iceberg REST catalog: URL decoding, routing of every spec path we answer
 * (and of malformed ones), and the handlers against a table catalog on the
 * mem backends — status codes and response bodies as the spec shapes them. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "http/iceberg_rest.h"
#include "objstore/objstore.h"
#include "table/iceberg_raw.h"
#include "table/table_catalog.h"
#include "unit.h"

static ls_rest_op op(const char *method, const char *path)
{
    ls_rest_route_t r;
    ls_rest_route(method, path, &r);
    return r.op;
}

TEST(routing)
{
    CHECK_EQ_INT(op("GET", "/v1/config"), LS_REST_GET_CONFIG);
    CHECK_EQ_INT(op("GET", "/v1/namespaces"), LS_REST_LIST_NAMESPACES);
    CHECK_EQ_INT(op("GET", "/v1/lakestream/namespaces"), LS_REST_LIST_NAMESPACES);
    CHECK_EQ_INT(op("GET", "/v1/lakestream/config"), LS_REST_NOT_FOUND);
    CHECK_EQ_INT(op("GET", "/v1/other/namespaces"), LS_REST_NOT_FOUND);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/default"), LS_REST_LOAD_NAMESPACE);
    CHECK_EQ_INT(op("HEAD", "/v1/namespaces/default"), LS_REST_NAMESPACE_EXISTS);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/default/tables"), LS_REST_LIST_TABLES);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/default/tables/t"), LS_REST_LOAD_TABLE);
    CHECK_EQ_INT(op("HEAD", "/v1/lakestream/namespaces/default/tables/t"), LS_REST_TABLE_EXISTS);
    CHECK_EQ_INT(op("POST", "/v1/namespaces/default/tables/t/metrics"), LS_REST_REPORT_METRICS);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/default/views"), LS_REST_LIST_VIEWS);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/default/views/v"), LS_REST_LOAD_VIEW);
    /* the spec's write endpoints: 406 */
    CHECK_EQ_INT(op("POST", "/v1/namespaces"), LS_REST_UNSUPPORTED);
    CHECK_EQ_INT(op("DELETE", "/v1/namespaces/default"), LS_REST_UNSUPPORTED);
    CHECK_EQ_INT(op("POST", "/v1/namespaces/default/properties"), LS_REST_UNSUPPORTED);
    CHECK_EQ_INT(op("POST", "/v1/namespaces/default/tables"), LS_REST_UNSUPPORTED);
    CHECK_EQ_INT(op("POST", "/v1/namespaces/default/tables/t"), LS_REST_UNSUPPORTED);
    CHECK_EQ_INT(op("DELETE", "/v1/namespaces/default/tables/t"), LS_REST_UNSUPPORTED);
    CHECK_EQ_INT(op("POST", "/v1/namespaces/default/register"), LS_REST_UNSUPPORTED);
    CHECK_EQ_INT(op("POST", "/v1/tables/rename"), LS_REST_UNSUPPORTED);
    CHECK_EQ_INT(op("POST", "/v1/transactions/commit"), LS_REST_UNSUPPORTED);
    /* other methods: 405; unknown paths: 404 */
    CHECK_EQ_INT(op("PUT", "/v1/namespaces"), LS_REST_METHOD_NOT_ALLOWED);
    CHECK_EQ_INT(op("POST", "/v1/config"), LS_REST_METHOD_NOT_ALLOWED);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/default/tables/t/metrics"), LS_REST_METHOD_NOT_ALLOWED);
    CHECK_EQ_INT(op("GET", "/v1"), LS_REST_NOT_FOUND);
    CHECK_EQ_INT(op("GET", "/v1x/config"), LS_REST_NOT_FOUND);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/a/b"), LS_REST_NOT_FOUND);
    CHECK_EQ_INT(op("GET", "/v1/a/b/c/d/e/f/g/h/i/j"), LS_REST_NOT_FOUND);
    /* malformed: 400 */
    CHECK_EQ_INT(op("GET", "/v1/namespaces/"), LS_REST_BAD_REQUEST);
    CHECK_EQ_INT(op("GET", "/v1//namespaces"), LS_REST_BAD_REQUEST);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/x%ZZ"), LS_REST_BAD_REQUEST);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/a%00b"), LS_REST_BAD_REQUEST);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/%1Fa"), LS_REST_BAD_REQUEST);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/a%1F%1Fb"), LS_REST_BAD_REQUEST);
    CHECK_EQ_INT(op("GET", "/v1/namespaces/a/tables/%"), LS_REST_BAD_REQUEST);
    char longp[2200] = "/v1/namespaces/";
    memset(longp + strlen(longp), 'x', 1100);
    CHECK_EQ_INT(op("GET", longp), LS_REST_BAD_REQUEST);

    ls_rest_route_t r;
    ls_rest_route("GET", "/v1/namespaces/acc%1Ftax/tables/pa%2Fid", &r);
    CHECK_EQ_INT(r.op, LS_REST_LOAD_TABLE);
    CHECK_EQ_INT(r.ns_levels, 2);
    CHECK(r.ns_len == 7 && !memcmp(r.ns, "acc\x1ftax", 7));
    CHECK(!strcmp(r.name, "pa/id")); /* %2F stays inside its segment */
}

typedef struct fixture {
    ls_meta_t *m;
    ls_objstore_t *os;
    ls_rest_t *rest;
} fixture_t;

static void fixture_open(fixture_t *f)
{
    f->m = ls_meta_mem_open();
    f->os = ls_objstore_mem_open();
    const char *props[] = {"s3.endpoint", "http://127.0.0.1:7480", NULL};
    f->rest = ls_rest_new(&(ls_rest_config_t){.meta = f->m, .os = f->os, .client_props = props});
}

static void fixture_close(fixture_t *f)
{
    ls_rest_free(f->rest);
    ls_objstore_close(f->os);
    ls_meta_close(f->m);
}

static int add_table(fixture_t *f, const char *ns, const char *name)
{
    char prefix[128], loc[160], err[256];
    snprintf(prefix, sizeof prefix, "warehouse/%s/%s", ns, name);
    snprintf(loc, sizeof loc, "mem://%s", prefix);
    ls_ice_spec_t spec = {0};
    ls_ice_table_t *t;
    ls_status st = ls_tcat_create(f->m, f->os, ns, name, prefix, loc, ls_raw_iceberg_schema_json(),
                                  LS_RAW_LAST_COLUMN_ID, &spec, NULL, &t, err, sizeof err);
    if (st == LS_OK) ls_ice_table_free(t);
    return st;
}

/* Runs one request; returns the status and (when there is a body) its JSON. */
static int call(fixture_t *f, const char *method, const char *path, const char *query,
                json_t **body)
{
    ls_http_request_t req = {.method = method, .path = path, .query = query ? query : ""};
    ls_http_response_t resp = {.status = 200};
    ls_buf_init(&resp.body);
    ls_rest_handle(f->rest, &req, &resp);
    *body = resp.body.len ? json_loadb((char *)resp.body.data, resp.body.len, 0, NULL) : NULL;
    ls_buf_free(&resp.body);
    return resp.status;
}

static const char *err_type(json_t *body)
{
    return json_string_value(json_object_get(json_object_get(body, "error"), "type"));
}

static int err_code(json_t *body)
{
    return (int)json_integer_value(json_object_get(json_object_get(body, "error"), "code"));
}

TEST(handlers)
{
    fixture_t f;
    fixture_open(&f);
    json_t *b;
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces", NULL, &b), 200);
    CHECK_EQ_INT(json_array_size(json_object_get(b, "namespaces")), 0);
    json_decref(b);
    CHECK_EQ_INT(add_table(&f, "default", "orders"), LS_OK);
    CHECK_EQ_INT(add_table(&f, "default", "clicks"), LS_OK);
    CHECK_EQ_INT(add_table(&f, "sales", "eu"), LS_OK);

    CHECK_EQ_INT(call(&f, "GET", "/v1/config", "warehouse=lakestream", &b), 200);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(b, "overrides"), "prefix")),
                  "lakestream"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(b, "defaults"), "s3.endpoint")),
                  "http://127.0.0.1:7480"));
    /* issue 29 item 7: the commit a Spark write makes is advertised (else
     * the client refuses it on its own side, without the server's reason),
     * and every advertised endpoint is one the router answers */
    json_t *eps = json_object_get(b, "endpoints"), *ep;
    size_t i;
    bool commit_listed = false;
    json_array_foreach(eps, i, ep)
    {
        const char *e = json_string_value(ep);
        commit_listed |= !strcmp(e, "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}");
        char method[8], path[200], real[256];
        CHECK_EQ_INT(sscanf(e, "%7s %199s", method, path), 2);
        size_t w = 0; /* the placeholders, filled in */
        for (const char *p = path; *p && w + 16 < sizeof real;) {
            static const char *const ph[][2] = {{"{prefix}", "lakestream"},
                                                {"{namespace}", "default"},
                                                {"{table}", "orders"},
                                                {"{view}", "v"}};
            size_t k = 0;
            while (k < 4 && strncmp(p, ph[k][0], strlen(ph[k][0])))
                k++;
            if (k < 4) {
                w += (size_t)snprintf(real + w, sizeof real - w, "%s", ph[k][1]);
                p += strlen(ph[k][0]);
            } else {
                real[w++] = *p++;
            }
        }
        real[w] = 0;
        ls_rest_op o = op(method, real);
        CHECK(o != LS_REST_NOT_FOUND && o != LS_REST_METHOD_NOT_ALLOWED &&
              o != LS_REST_BAD_REQUEST);
    }
    CHECK(commit_listed);
    json_decref(b);

    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces", NULL, &b), 200);
    json_t *ns = json_object_get(b, "namespaces");
    CHECK_EQ_INT(json_array_size(ns), 2);
    CHECK(!strcmp(json_string_value(json_array_get(json_array_get(ns, 0), 0)), "default"));
    CHECK(!strcmp(json_string_value(json_array_get(json_array_get(ns, 1), 0)), "sales"));
    json_decref(b);
    /* paging: one per page, the token is the last name */
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces", "pageSize=1", &b), 200);
    CHECK_EQ_INT(json_array_size(json_object_get(b, "namespaces")), 1);
    CHECK(!strcmp(json_string_value(json_object_get(b, "next-page-token")), "default"));
    json_decref(b);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces", "pageSize=1&pageToken=default", &b), 200);
    CHECK(!strcmp(
        json_string_value(json_array_get(json_array_get(json_object_get(b, "namespaces"), 0), 0)),
        "sales"));
    CHECK(!json_object_get(b, "next-page-token"));
    json_decref(b);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces", "pageSize=0", &b), 400);
    json_decref(b);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces", "parent=default", &b), 200);
    CHECK_EQ_INT(json_array_size(json_object_get(b, "namespaces")), 0);
    json_decref(b);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces", "parent=nope", &b), 404);
    json_decref(b);

    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/sales", NULL, &b), 200);
    CHECK(!strcmp(json_string_value(json_array_get(json_object_get(b, "namespace"), 0)), "sales"));
    CHECK(json_is_object(json_object_get(b, "properties")));
    json_decref(b);
    CHECK_EQ_INT(call(&f, "HEAD", "/v1/namespaces/sales", NULL, &b), 204);
    CHECK(!b);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/nope", NULL, &b), 404);
    CHECK(!strcmp(err_type(b), "NoSuchNamespaceException") && err_code(b) == 404);
    json_decref(b);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/sales%1Feu", NULL, &b), 404);
    json_decref(b);

    CHECK_EQ_INT(call(&f, "GET", "/v1/lakestream/namespaces/default/tables", NULL, &b), 200);
    json_t *ids = json_object_get(b, "identifiers");
    CHECK_EQ_INT(json_array_size(ids), 2);
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(ids, 0), "name")), "clicks"));
    CHECK(!strcmp(
        json_string_value(json_array_get(json_object_get(json_array_get(ids, 1), "namespace"), 0)),
        "default"));
    json_decref(b);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/nope/tables", NULL, &b), 404);
    CHECK(!strcmp(err_type(b), "NoSuchNamespaceException"));
    json_decref(b);

    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/default/tables/orders", NULL, &b), 200);
    const char *loc = json_string_value(json_object_get(b, "metadata-location"));
    CHECK(loc && !strncmp(loc, "mem://warehouse/default/orders/metadata/00001-", 46));
    json_t *md = json_object_get(b, "metadata");
    CHECK_EQ_INT(json_integer_value(json_object_get(md, "format-version")), 2);
    CHECK(!strcmp(json_string_value(json_object_get(md, "location")),
                  "mem://warehouse/default/orders"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(b, "config"), "s3.endpoint")),
                  "http://127.0.0.1:7480"));
    json_decref(b);
    CHECK_EQ_INT(call(&f, "HEAD", "/v1/namespaces/default/tables/orders", NULL, &b), 204);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/default/tables/nope", NULL, &b), 404);
    CHECK(!strcmp(err_type(b), "NoSuchTableException"));
    json_decref(b);
    /* an unknown namespace is still NoSuchTableException for loadTable: Iceberg's
     * Java client then tries a metadata table (Spark: orders.snapshots) */
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/nope/tables/orders", NULL, &b), 404);
    CHECK(!strcmp(err_type(b), "NoSuchTableException"));
    json_decref(b);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/default%1Forders/tables/snapshots", NULL, &b),
                 404);
    CHECK(!strcmp(err_type(b), "NoSuchTableException"));
    json_decref(b);
    CHECK_EQ_INT(call(&f, "HEAD", "/v1/namespaces/default/tables/nope", NULL, &b), 404);
    json_decref(b);

    CHECK_EQ_INT(call(&f, "POST", "/v1/namespaces/default/tables", NULL, &b), 406);
    CHECK(!strcmp(err_type(b), "UnsupportedOperationException") && err_code(b) == 406);
    json_decref(b);
    CHECK_EQ_INT(call(&f, "POST", "/v1/namespaces/default/tables/orders/metrics", NULL, &b), 204);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/default/views", NULL, &b), 200);
    CHECK_EQ_INT(json_array_size(json_object_get(b, "identifiers")), 0);
    json_decref(b);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/default/views/v", NULL, &b), 404);
    CHECK(!strcmp(err_type(b), "NoSuchViewException"));
    json_decref(b);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/a%ZZ/tables", NULL, &b), 400);
    CHECK(!strcmp(err_type(b), "BadRequestException") && err_code(b) == 400);
    json_decref(b);
    CHECK_EQ_INT(call(&f, "PATCH", "/v1/namespaces", NULL, &b), 405);
    json_decref(b);
    /* names that are not UTF-8 are echoed as U+FFFD: the body stays JSON */
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/%8D%FFx/tables/t", NULL, &b), 404);
    CHECK(b && strstr(json_string_value(json_object_get(json_object_get(b, "error"), "message")),
                      "\xef\xbf\xbd\xef\xbf\xbdx") != NULL);
    json_decref(b);

    /* a pointer whose metadata file vanished: a server error naming it */
    CHECK_EQ_INT(ls_objstore_del(f.os, "warehouse/sales/eu/metadata/v1.metadata.json"), LS_OK);
    ls_tcat_pointer_t p;
    char err[256];
    CHECK_EQ_INT(ls_tcat_get(f.m, "sales", "eu", &p, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_objstore_del(f.os, p.metadata_key), LS_OK);
    ls_tcat_pointer_clear(&p);
    CHECK_EQ_INT(call(&f, "GET", "/v1/namespaces/sales/tables/eu", NULL, &b), 500);
    CHECK(strstr(json_string_value(json_object_get(json_object_get(b, "error"), "message")),
                 "warehouse/sales/eu/metadata/00001-") != NULL);
    json_decref(b);
    fixture_close(&f);
}

int main(void)
{
    RUN(routing);
    RUN(handlers);
    UNIT_DONE();
}
