/* How the broker serves each described api: the `handler` and `row` lines of
 * its description, checked, and written out as the handlers' declarations and
 * the rows of the dispatch table (src/kafka/api_gen.h, included by
 * kafka/api.c and kafka/handlers.h).
 *
 *   api OffsetCommit key 8 versions 0-9 flexible 8
 *   handler ls_kafka_handle_offset_commit serial
 *   row 4
 *
 * `serial`: handled one at a time per connection (kafka/api.h, conn.c).
 * `row N`: the api's place in the dispatch table, which is the order
 * ApiVersions lists the apis in; rows are 0..N-1 for the N served apis, and a
 * new api takes the next one. A description without these lines is parsed
 * (codecs, LS_KAFKA_* macros) but not served. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "kgen.h"

#define HANDLER_PREFIX "ls_kafka_handle_"

static bool is_c_name(const char *s)
{
    if (!isalpha((unsigned char)*s) && *s != '_') return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return false;
    return true;
}

bool kgen_serve_directive(api_t *api, bool common, char **tok, int n, int line)
{
    bool handler = !strcmp(tok[0], "handler");
    if (!handler && strcmp(tok[0], "row")) return false;
    if (common || !api) die(line, "'%s' belongs after an 'api' line", tok[0]);
    if (handler) {
        if (n < 2 || n > 3 || (n == 3 && strcmp(tok[2], "serial")))
            die(line, "expected 'handler ls_kafka_handle_name [serial]'");
        if (!is_c_name(tok[1]) || strncmp(tok[1], HANDLER_PREFIX, strlen(HANDLER_PREFIX)) ||
            strlen(tok[1]) >= sizeof api->handler)
            die(line, "handler '%s' is not a C name starting " HANDLER_PREFIX, tok[1]);
        if (api->handler[0]) die(line, "handler twice");
        strcpy(api->handler, tok[1]);
        api->serial = n == 3;
        api->serve_line = line;
        return true;
    }
    if (api->has_row) die(line, "row twice");
    char *end;
    long r = n == 2 ? strtol(tok[1], &end, 10) : -1;
    if (n != 2 || end == tok[1] || *end || r < 0 || r > 1000)
        die(line, "expected 'row N' (N from 0: the api's place in ApiVersions)");
    api->has_row = true;
    api->row = (int)r;
    if (!api->serve_line) api->serve_line = line;
    return true;
}

void kgen_check_served(api_t *apis, int n)
{
    int served = 0;
    for (int i = 0; i < n; i++) {
        cur_file = apis[i].file;
        if (apis[i].handler[0] && !apis[i].has_row)
            die(apis[i].serve_line, "a served api needs its 'row N'");
        if (!apis[i].handler[0] && apis[i].has_row)
            die(apis[i].serve_line, "'row' without a 'handler' line");
        for (int j = 0; j < i; j++)
            if (apis[i].handler[0] && !strcmp(apis[i].handler, apis[j].handler))
                die(apis[i].serve_line, "handler %s also serves %s", apis[i].handler, apis[j].name);
        served += apis[i].has_row;
    }
    for (int i = 0; i < n; i++) {
        if (!apis[i].has_row) continue;
        cur_file = apis[i].file;
        if (apis[i].row >= served)
            die(apis[i].serve_line, "row %d past the last: %d apis are served, rows 0-%d",
                apis[i].row, served, served - 1);
        for (int j = 0; j < i; j++)
            if (apis[j].has_row && apis[j].row == apis[i].row)
                die(apis[i].serve_line, "row %d twice (also %s)", apis[i].row, apis[j].file);
    }
}

void kgen_gen_dispatch(out_t *o, const api_t *apis, int n)
{
    P("%s", kgen_banner);
    P("/* The served Kafka APIs, from the `handler` and `row` lines of their\n"
      " * descriptions (tools/kgen/serve.c): each handler's declaration, and the\n"
      " * rows of the dispatch table ls_kafka_apis (kafka/api.c) in row order,\n"
      " * which is the order ApiVersions lists them in. */\n");
    P("#ifndef LS_KAFKA_API_GEN_H\n#define LS_KAFKA_API_GEN_H\n");
    P("#include \"kafka/api.h\"\n\n");
    P("/* Each finishes its request exactly once (kafka/api.h). In key order. */\n");
    for (int i = 0; i < n; i++)
        if (apis[i].handler[0])
            P("void %s(ls_kreq_t *req); /* %s, key %d */\n", apis[i].handler, apis[i].name,
              apis[i].key);
    P("\n/* ROW(Name, PFX, handler, serial) per served api, in row order: Name as in\n"
      " * ls_kmsg_<Name>, PFX as in LS_KAFKA_API_<PFX> and LS_KAFKA_<PFX>_{MIN,MAX,FLEX};\n"
      " * serial: handled one at a time per connection (kafka/api.h). */\n");
    P("#define LS_KAFKA_API_ROWS(ROW)");
    for (int row = 0;; row++) {
        const api_t *a = NULL;
        for (int i = 0; i < n && !a; i++)
            if (apis[i].has_row && apis[i].row == row) a = &apis[i];
        if (!a) break; /* kgen_check_served: rows are 0..N-1 */
        P(" \\\n    ROW(%s, %s, %s, %s)", a->name, a->upper, a->handler,
          a->serial ? "true" : "false");
    }
    P("\n\n#endif\n");
}
