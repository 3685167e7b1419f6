/* What kgen's two files share: kgen.c reads the descriptions and writes the
 * codecs (src/kafka/msg_gen.{h,c}); serve.c reads the lines saying how an
 * api is served and writes the dispatch rows (src/kafka/api_gen.h). */
#ifndef KGEN_H
#define KGEN_H
#include <stdbool.h>
#include <stddef.h>

typedef struct strct strct_t;

typedef struct api {
    char name[64];
    char upper[96];
    int key, min, max, flex; /* flex VMAX+1: never */
    strct_t *req, *resp;
    char file[256];
    /* `handler NAME [serial]` and `row N` (serve.c); handler "" when the
     * api is described but not served */
    char handler[96];
    bool serial, has_row;
    int row, serve_line;
} api_t;

/* Generated text, grown as needed. */
typedef struct out {
    char *p;
    size_t len, cap;
} out_t;

void o_printf(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define P(...) o_printf(o, __VA_ARGS__)

/* Exits 2 with "kgen: FILE:LINE: message" (FILE: cur_file). */
void die(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
extern const char *cur_file;
/* The "GENERATED ... do not edit" comment atop every output. */
extern const char *const kgen_banner;

/* serve.c. A `handler` or `row` line of api's file (tokens tok[0..n)): true
 * when it was one (recorded in api), false for another directive. */
bool kgen_serve_directive(api_t *api, bool common, char **tok, int n, int line);
/* Refuses, naming the file and line, a served api without its row or a row
 * without a handler, a handler twice, and rows that are not 0..N-1 each
 * once for the N served apis. */
void kgen_check_served(api_t *apis, int n);
/* src/kafka/api_gen.h: the handlers' declarations (apis in key order) and
 * LS_KAFKA_API_ROWS, the dispatch table's rows in row order. */
void kgen_gen_dispatch(out_t *o, const api_t *apis, int n);
#endif
