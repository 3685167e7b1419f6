/* Iceberg REST catalog (read-only); the contract is in iceberg_rest.h.
 *
 * A request is routed first (ls_rest_route: split the raw path on '/',
 * percent-decode each segment on its own, match the spec's paths), then
 * served from the table catalog. Routing never touches a store, so bad
 * paths cost nothing and the fuzzer can drive it alone. */
#include "http/iceberg_rest.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "base/url.h"

#define MAX_SEGMENTS 8
#define UNIT_SEP '\x1f'

struct ls_rest {
    ls_meta_t *meta;
    ls_objstore_t *os;
    char **props; /* key, value, ..., NULL */
    char *(*held_reason)(void *ctx, const char *ns, const char *table);
    void *held_ctx;
    bool (*may_see)(void *ctx, const ls_http_request_t *req, const char *table, bool read,
                    bool log_denied);
    void *may_ctx;
};

/* Endpoints we serve, for /v1/config (spec: ConfigResponse.endpoints,
 * "<verb> <path>" as the spec's paths spell them; a client calls only
 * these). The writes are served with 406 and the reason (the catalog is
 * read-only: the broker writes the tables): listed, so a client sends them
 * and shows that answer instead of refusing on its own side with no reason
 * (Iceberg's Java client checks the list before it calls; for a commit,
 * only after an engine wrote its data files). Every entry routes to a
 * handler (test_iceberg_rest.c endpoints_are_routed). */
static const char *const ENDPOINTS[] = {
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
};

/* ---- routing ---------------------------------------------------------------- */

typedef struct seg {
    const char *p;
    size_t n;
} seg_t;

static int seg_is(const seg_t *s, const char *lit)
{
    return s->n == strlen(lit) && !memcmp(s->p, lit, s->n);
}

static void route_set(ls_rest_route_t *r, ls_rest_op op, const char *fmt, const char *arg)
{
    r->op = op;
    snprintf(r->reason, sizeof r->reason, fmt, arg);
}

/* Decodes a namespace or table segment; 0 when it is well-formed. */
static int decode_name(const seg_t *s, char *out, size_t *out_len, const char *what,
                       ls_rest_route_t *r)
{
    ls_buf_t b;
    ls_buf_init(&b);
    int rc = ls_url_decode(s->p, s->n, false, &b);
    if (rc != 0)
        route_set(r, LS_REST_BAD_REQUEST, "%s: malformed %%-escape", what);
    else if (b.len == 0)
        route_set(r, LS_REST_BAD_REQUEST, "%s is empty", what), rc = -1;
    else if (b.len > LS_REST_SEGMENT_MAX)
        route_set(r, LS_REST_BAD_REQUEST, "%s is too long", what), rc = -1;
    else if (memchr(b.data, 0, b.len))
        route_set(r, LS_REST_BAD_REQUEST, "%s contains a NUL byte", what), rc = -1;
    if (rc == 0) {
        memcpy(out, b.data, b.len);
        out[b.len] = 0;
        *out_len = b.len;
    }
    ls_buf_free(&b);
    return rc;
}

static int decode_namespace(const seg_t *s, ls_rest_route_t *r)
{
    if (decode_name(s, r->ns, &r->ns_len, "namespace", r)) return -1;
    r->ns_levels = 1;
    for (size_t i = 0; i < r->ns_len; i++) {
        if (r->ns[i] != UNIT_SEP) continue;
        if (i == 0 || i + 1 == r->ns_len || r->ns[i + 1] == UNIT_SEP) {
            route_set(r, LS_REST_BAD_REQUEST, "%s", "namespace has an empty level");
            return -1;
        }
        r->ns_levels++;
    }
    return 0;
}

static int is(const char *method, const char *m) { return !strcmp(method, m); }

/* Picks the op for a resource that is read with GET (and maybe HEAD) and
 * written, in the spec, with the methods in writes[]. */
static void pick(ls_rest_route_t *r, const char *method, ls_rest_op get, ls_rest_op head,
                 const char *const *writes, const char *what)
{
    if (is(method, "GET") && get != LS_REST_NOT_FOUND)
        r->op = get;
    else if (is(method, "HEAD") && head != LS_REST_NOT_FOUND)
        r->op = head;
    else {
        for (size_t i = 0; writes && writes[i]; i++)
            if (is(method, writes[i])) {
                route_set(r, LS_REST_UNSUPPORTED, "%s", what);
                return;
            }
        route_set(r, LS_REST_METHOD_NOT_ALLOWED, "%s is not a method of this endpoint", method);
    }
}

void ls_rest_route(const char *method, const char *path, ls_rest_route_t *r)
{
    memset(r, 0, sizeof *r);
    seg_t seg[MAX_SEGMENTS];
    size_t n = 0;
    if (strncmp(path, "/v1", 3) || (path[3] && path[3] != '/')) {
        route_set(r, LS_REST_NOT_FOUND, "%s", "not an Iceberg REST path (/v1/...)");
        return;
    }
    const char *p = path + 3;
    while (*p) {
        const char *s = p + 1, *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == 0) {
            route_set(r, LS_REST_BAD_REQUEST, "%s", "empty path segment");
            return;
        }
        if (n == MAX_SEGMENTS) {
            route_set(r, LS_REST_NOT_FOUND, "%s", "no such endpoint");
            return;
        }
        seg[n++] = (seg_t){s, len};
        p = s + len;
    }
    seg_t *s = seg;
    if (n > 1 && seg_is(&s[0], LS_REST_WAREHOUSE)) {
        r->prefixed = 1;
        s++, n--;
    }
    static const char *const post[] = {"POST", NULL};
    static const char *const del[] = {"DELETE", NULL};
    static const char *const post_del[] = {"POST", "DELETE", NULL};
    if (n == 1 && seg_is(&s[0], "config") && !r->prefixed) {
        pick(r, method, LS_REST_GET_CONFIG, LS_REST_NOT_FOUND, NULL, NULL);
        return;
    }
    if (n == 2 && (seg_is(&s[0], "tables") || seg_is(&s[0], "views")) && seg_is(&s[1], "rename")) {
        pick(r, method, LS_REST_NOT_FOUND, LS_REST_NOT_FOUND, post, "renaming");
        return;
    }
    if (n == 2 && seg_is(&s[0], "transactions") && seg_is(&s[1], "commit")) {
        pick(r, method, LS_REST_NOT_FOUND, LS_REST_NOT_FOUND, post, "committing transactions");
        return;
    }
    if (n == 0 || !seg_is(&s[0], "namespaces")) {
        route_set(r, LS_REST_NOT_FOUND, "%s", "no such endpoint");
        return;
    }
    if (n == 1) {
        pick(r, method, LS_REST_LIST_NAMESPACES, LS_REST_NOT_FOUND, post, "creating namespaces");
        return;
    }
    if (decode_namespace(&s[1], r)) return;
    if (n == 2) {
        pick(r, method, LS_REST_LOAD_NAMESPACE, LS_REST_NAMESPACE_EXISTS, del,
             "dropping namespaces");
        return;
    }
    if (n == 3 && seg_is(&s[2], "properties")) {
        pick(r, method, LS_REST_NOT_FOUND, LS_REST_NOT_FOUND, post,
             "updating namespace properties");
        return;
    }
    if (n == 3 && seg_is(&s[2], "register")) {
        pick(r, method, LS_REST_NOT_FOUND, LS_REST_NOT_FOUND, post, "registering tables");
        return;
    }
    int tables = seg_is(&s[2], "tables"), views = seg_is(&s[2], "views");
    if (!tables && !views) {
        route_set(r, LS_REST_NOT_FOUND, "%s", "no such endpoint");
        return;
    }
    if (n == 3) {
        if (tables)
            pick(r, method, LS_REST_LIST_TABLES, LS_REST_NOT_FOUND, post, "creating tables");
        else
            pick(r, method, LS_REST_LIST_VIEWS, LS_REST_NOT_FOUND, post, "creating views");
        return;
    }
    if (decode_name(&s[3], r->name, &r->name_len, tables ? "table" : "view", r)) return;
    if (n == 4) {
        if (tables)
            pick(r, method, LS_REST_LOAD_TABLE, LS_REST_TABLE_EXISTS, post_del,
                 "committing to or dropping tables");
        else
            pick(r, method, LS_REST_LOAD_VIEW, LS_REST_LOAD_VIEW, post_del,
                 "replacing or dropping views");
        return;
    }
    if (n == 5 && tables && seg_is(&s[4], "metrics")) {
        if (is(method, "POST"))
            r->op = LS_REST_REPORT_METRICS;
        else
            route_set(r, LS_REST_METHOD_NOT_ALLOWED, "%s is not a method of this endpoint", method);
        return;
    }
    route_set(r, LS_REST_NOT_FOUND, "%s", "no such endpoint");
}

/* ---- responses ---------------------------------------------------------------- */

static void store_error(ls_http_response_t *resp, const char *what, ls_status st)
{
    ls_http_error(resp, 503, "ServiceUnavailableException", "%s: %s (retry later)", what,
                  ls_status_str(st));
}

static json_t *props_json(const ls_rest_t *r)
{
    json_t *o = json_object();
    for (size_t i = 0; r->props[i] && r->props[i + 1]; i += 2)
        json_object_set_new(o, r->props[i], json_string(r->props[i + 1]));
    return o;
}

static json_t *namespace_json(const char *ns) { return json_pack("[s]", ns); }

/* Paging: pageSize > 0 bounds the page; pageToken is the last name given.
 * -1 (with a 400 written) on a bad parameter. */
typedef struct page {
    long size;
    ls_buf_t token;
    int has_token;
} page_t;

static int page_parse(const ls_http_request_t *req, page_t *pg, ls_http_response_t *resp)
{
    ls_buf_t v;
    ls_buf_init(&v);
    ls_buf_init(&pg->token);
    pg->size = 0;
    int rc = ls_url_query_get(req->query, "pageSize", &v);
    if (rc == 1) {
        char *end;
        pg->size = strtol((char *)v.data, &end, 10);
        if (!v.len || *end || pg->size < 1) rc = -1;
    }
    ls_buf_free(&v);
    if (rc >= 0) {
        rc = ls_url_query_get(req->query, "pageToken", &pg->token);
        pg->has_token = rc == 1 && pg->token.len > 0;
    }
    if (rc < 0) {
        ls_http_error(resp, 400, "BadRequestException",
                      "pageSize must be a positive integer and pageToken well-escaped");
        ls_buf_free(&pg->token);
        return -1;
    }
    return 0;
}

/* Appends names[i] (sorted) after the token, up to the page size, with
 * make(); sets next-page-token when more remain. */
static void page_fill(page_t *pg, char **names, size_t n, json_t *arr, json_t *resp_obj,
                      json_t *(*make)(const char *name, const void *ctx), const void *ctx)
{
    size_t added = 0;
    for (size_t i = 0; i < n; i++) {
        if (pg->has_token && strcmp(names[i], (const char *)pg->token.data) <= 0) continue;
        if (pg->size > 0 && added == (size_t)pg->size) {
            json_object_set_new(resp_obj, "next-page-token", json_string(names[i - 1]));
            break;
        }
        json_array_append_new(arr, make(names[i], ctx));
        added++;
    }
    ls_buf_free(&pg->token);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when ns holds a table, 0 when not, -1 (503 written) on a store error. */
static int namespace_exists(const ls_rest_t *r, const char *ns, ls_http_response_t *resp)
{
    ls_tcat_pointer_t *v;
    size_t n;
    ls_status st = ls_tcat_list(r->meta, ns, &v, &n);
    if (st != LS_OK) {
        store_error(resp, "listing tables", st);
        return -1;
    }
    ls_tcat_list_free(v, n);
    return n > 0;
}

/* A namespace as people write it, its levels joined by '.' (the 0x1F that
 * separates them in a route would show raw in a message). */
static const char *ns_text(const ls_rest_route_t *rt, char *buf)
{
    snprintf(buf, LS_REST_SEGMENT_MAX + 1, "%s", rt->ns);
    for (char *p = buf; (p = strchr(p, UNIT_SEP)) != NULL;)
        *p = '.';
    return buf;
}

static void no_namespace(ls_http_response_t *resp, const ls_rest_route_t *rt)
{
    char nb[LS_REST_SEGMENT_MAX + 1];
    ls_http_error(resp, 404, "NoSuchNamespaceException", "namespace does not exist: %s%s",
                  ns_text(rt, nb), rt->ns_levels > 1 ? " (namespaces here have one level)" : "");
}

static json_t *make_namespace(const char *name, const void *ctx) { return namespace_json(name); }

static void list_namespaces(const ls_rest_t *r, const ls_http_request_t *req,
                            ls_http_response_t *resp)
{
    ls_buf_t parent;
    ls_buf_init(&parent);
    int prc = ls_url_query_get(req->query, "parent", &parent);
    if (prc < 0) {
        ls_buf_free(&parent);
        ls_http_error(resp, 400, "BadRequestException", "parent: malformed %%-escape");
        return;
    }
    page_t pg;
    if (page_parse(req, &pg, resp)) {
        ls_buf_free(&parent);
        return;
    }
    ls_tcat_pointer_t *v;
    size_t n;
    ls_status st = ls_tcat_list(r->meta, NULL, &v, &n);
    if (st != LS_OK) {
        ls_buf_free(&parent);
        ls_buf_free(&pg.token);
        store_error(resp, "listing tables", st);
        return;
    }
    json_t *arr = json_array(), *out = json_object();
    if (prc == 1 && parent.len > 0) {
        /* one-level namespaces have no children; the parent must exist */
        int found = 0;
        for (size_t i = 0; i < n && !found; i++)
            found = !strcmp(v[i].ns, (const char *)parent.data);
        ls_buf_free(&pg.token);
        if (!found) {
            ls_http_error(resp, 404, "NoSuchNamespaceException",
                          "parent namespace does not exist: %.200s", (const char *)parent.data);
            json_decref(arr);
            json_decref(out);
            goto done;
        }
    } else {
        char **names = LS_NEWN(char *, n ? n : 1);
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (!k || strcmp(names[k - 1], v[i].ns)) names[k++] = v[i].ns;
        qsort(names, k, sizeof *names, cmp_str);
        page_fill(&pg, names, k, arr, out, make_namespace, NULL);
        ls_free(names);
    }
    json_object_set_new(out, "namespaces", arr);
    ls_http_send_json(resp, 200, out);
done:
    ls_buf_free(&parent);
    ls_tcat_list_free(v, n);
}

static json_t *make_identifier(const char *name, const void *ctx)
{
    return json_pack("{s:o, s:s}", "namespace", namespace_json(ctx), "name", name);
}

static void list_tables(const ls_rest_t *r, const ls_rest_route_t *rt, const ls_http_request_t *req,
                        ls_http_response_t *resp)
{
    if (rt->ns_levels != 1) {
        no_namespace(resp, rt);
        return;
    }
    page_t pg;
    if (page_parse(req, &pg, resp)) return;
    ls_tcat_pointer_t *v;
    size_t n;
    ls_status st = ls_tcat_list(r->meta, rt->ns, &v, &n);
    if (st != LS_OK) {
        ls_buf_free(&pg.token);
        store_error(resp, "listing tables", st);
        return;
    }
    if (n == 0) {
        ls_buf_free(&pg.token);
        no_namespace(resp, rt);
        ls_tcat_list_free(v, n);
        return;
    }
    char **names = LS_NEWN(char *, n);
    for (size_t i = 0; i < n; i++)
        names[i] = v[i].name;
    qsort(names, n, sizeof *names, cmp_str);
    size_t shown = n;
    if (r->may_see) { /* what the principal may not see is left out, as Metadata does */
        shown = 0;
        for (size_t i = 0; i < n; i++)
            if (r->may_see(r->may_ctx, req, names[i], false, false)) names[shown++] = names[i];
    }
    json_t *arr = json_array(), *out = json_object();
    page_fill(&pg, names, shown, arr, out, make_identifier, rt->ns);
    json_object_set_new(out, "identifiers", arr);
    ls_http_send_json(resp, 200, out);
    ls_free(names);
    ls_tcat_list_free(v, n);
}

static void load_table(const ls_rest_t *r, const ls_rest_route_t *rt, int head,
                       const ls_http_request_t *req, ls_http_response_t *resp)
{
    if (r->may_see && rt->ns_levels == 1 && !r->may_see(r->may_ctx, req, rt->name, !head, true)) {
        ls_http_error(resp, 403, "ForbiddenException", "not authorized to %s table %s.%s",
                      head ? "describe" : "read", rt->ns, rt->name);
        return;
    }
    ls_tcat_pointer_t p;
    char err[512] = "";
    ls_status st = rt->ns_levels == 1 ? ls_tcat_get(r->meta, rt->ns, rt->name, &p, err, sizeof err)
                                      : LS_ENOTFOUND;
    if (st == LS_ENOTFOUND) {
        /* NoSuchTableException even when the namespace is missing, as the
         * spec's reference catalog answers: Iceberg's Java client tries a
         * metadata table (t.snapshots = namespace "ns.t", table "snapshots")
         * only after NoSuchTableException, so Spark's SELECT ... FROM
         * ns.t.snapshots needs exactly this answer. */
        int ns = rt->ns_levels == 1 ? namespace_exists(r, rt->ns, resp) : 0;
        if (ns < 0) return;
        char nb[LS_REST_SEGMENT_MAX + 1];
        if (rt->ns_levels > 1) {
            /* "default.a.b" split at every dot: the topic a.b is the table
             * ("default", "a.b") */
            size_t first = strcspn(rt->ns, "\x1f");
            ls_http_error(resp, 404, "NoSuchTableException",
                          "table does not exist: namespace %s, table %s (namespaces here have one "
                          "level: a table whose name has dots is named by the identifier "
                          "(\"%.*s\", \"%s.%s\"))",
                          ns_text(rt, nb), rt->name, (int)first, rt->ns, nb + first + 1, rt->name);
            return;
        }
        ls_http_error(resp, 404, "NoSuchTableException", "table does not exist: %s.%s%s", rt->ns,
                      rt->name, ns ? "" : " (no such namespace)");
        return;
    }
    if (st == LS_ECORRUPT) {
        ls_http_error(resp, 500, "InternalServerError", "%s", err);
        return;
    }
    if (st != LS_OK) {
        store_error(resp, "reading the table pointer", st);
        return;
    }
    if (head) {
        resp->status = 204;
        ls_tcat_pointer_clear(&p);
        return;
    }
    ls_buf_t b;
    ls_buf_init(&b);
    st = ls_objstore_get(r->os, p.metadata_key, 0, UINT64_MAX, &b);
    json_error_t je;
    json_t *meta = st == LS_OK ? json_loadb((const char *)b.data, b.len, 0, &je) : NULL;
    if (st != LS_OK)
        ls_http_error(resp, st == LS_ENOTFOUND ? 500 : 503,
                      st == LS_ENOTFOUND ? "InternalServerError" : "ServiceUnavailableException",
                      "reading metadata %s: %s", p.metadata_key, ls_status_str(st));
    else if (!json_is_object(meta))
        ls_http_error(resp, 500, "InternalServerError", "metadata %s is not a JSON object: %s",
                      p.metadata_key, meta ? "wrong type" : je.text);
    else {
        char *held = r->held_reason ? r->held_reason(r->held_ctx, rt->ns, rt->name) : NULL;
        if (held) {
            json_t *props = json_object_get(meta, "properties");
            if (!json_is_object(props)) {
                props = json_object();
                json_object_set_new(meta, "properties", props);
            }
            json_object_set_new(props, "lakestream.held-reason", json_string(held));
            ls_free(held);
        }
        ls_http_send_json(resp, 200,
                          json_pack("{s:s, s:O, s:o}", "metadata-location", p.metadata_location,
                                    "metadata", meta, "config", props_json(r)));
    }
    json_decref(meta);
    ls_buf_free(&b);
    ls_tcat_pointer_clear(&p);
}

static void get_config(const ls_rest_t *r, const ls_http_request_t *req, ls_http_response_t *resp)
{
    ls_buf_t wh;
    ls_buf_init(&wh);
    int rc = ls_url_query_get(req->query, "warehouse", &wh);
    if (rc < 0) {
        ls_buf_free(&wh);
        ls_http_error(resp, 400, "BadRequestException", "warehouse: malformed %%-escape");
        return;
    }
    json_t *overrides = json_object();
    if (rc == 1 && !strcmp((const char *)wh.data, LS_REST_WAREHOUSE))
        json_object_set_new(overrides, "prefix", json_string(LS_REST_WAREHOUSE));
    ls_buf_free(&wh);
    json_t *eps = json_array();
    for (size_t i = 0; i < sizeof ENDPOINTS / sizeof ENDPOINTS[0]; i++)
        json_array_append_new(eps, json_string(ENDPOINTS[i]));
    ls_http_send_json(resp, 200,
                      json_pack("{s:o, s:o, s:o}", "defaults", props_json(r), "overrides",
                                overrides, "endpoints", eps));
}

void ls_rest_handle(void *arg, const ls_http_request_t *req, ls_http_response_t *resp)
{
    const ls_rest_t *r = arg;
    ls_rest_route_t rt;
    ls_rest_route(req->method, req->path, &rt);
    int exists;
    switch (rt.op) {
    case LS_REST_GET_CONFIG: get_config(r, req, resp); return;
    case LS_REST_LIST_NAMESPACES: list_namespaces(r, req, resp); return;
    case LS_REST_LOAD_NAMESPACE:
    case LS_REST_NAMESPACE_EXISTS:
    case LS_REST_LIST_VIEWS:
        exists = rt.ns_levels == 1 ? namespace_exists(r, rt.ns, resp) : 0;
        if (exists < 0) return;
        if (!exists)
            no_namespace(resp, &rt);
        else if (rt.op == LS_REST_NAMESPACE_EXISTS)
            resp->status = 204;
        else if (rt.op == LS_REST_LIST_VIEWS)
            ls_http_send_json(resp, 200, json_pack("{s:[]}", "identifiers"));
        else
            ls_http_send_json(
                resp, 200,
                json_pack("{s:o, s:{}}", "namespace", namespace_json(rt.ns), "properties"));
        return;
    case LS_REST_LIST_TABLES: list_tables(r, &rt, req, resp); return;
    case LS_REST_LOAD_TABLE:
    case LS_REST_TABLE_EXISTS: load_table(r, &rt, rt.op == LS_REST_TABLE_EXISTS, req, resp); return;
    case LS_REST_REPORT_METRICS:
        resp->status = 204; /* scan reports are accepted and dropped */
        return;
    case LS_REST_LOAD_VIEW: {
        char nb[LS_REST_SEGMENT_MAX + 1];
        ls_http_error(resp, 404, "NoSuchViewException",
                      "view does not exist: %s.%s "
                      "(this catalog has no views)",
                      ns_text(&rt, nb), rt.name);
        return;
    }
    case LS_REST_UNSUPPORTED:
        ls_http_error(resp, 406, "UnsupportedOperationException",
                      "%s is not supported: this catalog is read-only; the broker creates and "
                      "commits the table of every topic with lakestream.table.enabled=true",
                      rt.reason);
        return;
    case LS_REST_METHOD_NOT_ALLOWED:
        ls_http_error(resp, 405, "MethodNotAllowedException", "%s", rt.reason);
        return;
    case LS_REST_NOT_FOUND:
        ls_http_error(resp, 404, "NotFoundException", "%s: %s %.200s", rt.reason, req->method,
                      req->path);
        return;
    case LS_REST_BAD_REQUEST:
        ls_http_error(resp, 400, "BadRequestException", "malformed path: %s", rt.reason);
        return;
    }
}

/* ---- lifecycle --------------------------------------------------------------- */

ls_rest_t *ls_rest_new(const ls_rest_config_t *cfg)
{
    ls_rest_t *r = LS_NEW(ls_rest_t);
    r->meta = cfg->meta;
    r->os = cfg->os;
    r->held_reason = cfg->held_reason;
    r->held_ctx = cfg->held_ctx;
    r->may_see = cfg->may_see;
    r->may_ctx = cfg->may_ctx;
    size_t n = 0;
    while (cfg->client_props && cfg->client_props[n] && cfg->client_props[n + 1])
        n += 2;
    r->props = LS_NEWN(char *, n + 2);
    for (size_t i = 0; i < n; i++)
        r->props[i] = ls_strdup(cfg->client_props[i]);
    return r;
}

void ls_rest_free(ls_rest_t *r)
{
    if (!r) return;
    for (size_t i = 0; r->props[i]; i++)
        ls_free(r->props[i]);
    ls_free(r->props);
    ls_free(r);
}
