#include "registry/ecma_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

/* Bounds of one search: enough for any sane pattern on values of MiBs,
 * small enough that a backtracking bomb ends in milliseconds. */
#define RE_MATCH_LIMIT 1000000u
#define RE_DEPTH_LIMIT 10000u

struct ls_ecma_re {
    pcre2_code *code;
    pcre2_match_context *mctx;
};

ls_ecma_re_t *ls_ecma_re_compile(const char *pattern, char *err, size_t errlen)
{
    pcre2_compile_context *cctx = pcre2_compile_context_create(NULL);
    if (!cctx) {
        snprintf(err, errlen, "out of memory compiling the pattern");
        return NULL;
    }
    pcre2_set_compile_extra_options(cctx, PCRE2_EXTRA_ALT_BSUX);
    pcre2_set_newline(cctx, PCRE2_NEWLINE_ANYCRLF);
    int code;
    PCRE2_SIZE at;
    pcre2_code *c =
        pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                      PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY, &code, &at, cctx);
    pcre2_compile_context_free(cctx);
    if (!c) {
        PCRE2_UCHAR msg[160];
        if (pcre2_get_error_message(code, msg, sizeof msg) < 0) strcpy((char *)msg, "error");
        snprintf(err, errlen, "%s at character %zu", (const char *)msg, (size_t)at);
        return NULL;
    }
    (void)pcre2_jit_compile(c, PCRE2_JIT_COMPLETE); /* interpreted where JIT is unavailable */
    ls_ecma_re_t *re = LS_NEW(ls_ecma_re_t);
    re->code = c;
    re->mctx = pcre2_match_context_create(NULL);
    if (!re->mctx) {
        ls_ecma_re_free(re);
        snprintf(err, errlen, "out of memory compiling the pattern");
        return NULL;
    }
    pcre2_set_match_limit(re->mctx, RE_MATCH_LIMIT);
    pcre2_set_depth_limit(re->mctx, RE_DEPTH_LIMIT);
    return re;
}

void ls_ecma_re_free(ls_ecma_re_t *re)
{
    if (!re) return;
    pcre2_match_context_free(re->mctx);
    pcre2_code_free(re->code);
    ls_free(re);
}

int ls_ecma_re_search(const ls_ecma_re_t *re, const char *s, size_t len)
{
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (!md) return LS_RE_LIMIT;
    int rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, 0, md, re->mctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter's depth limit is larger */
        rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, 0, PCRE2_NO_JIT, md, re->mctx);
    pcre2_match_data_free(md);
    if (rc >= 0) return LS_RE_MATCH;
    if (rc == PCRE2_ERROR_NOMATCH) return LS_RE_NOMATCH;
    return LS_RE_LIMIT;
}
