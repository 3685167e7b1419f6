/* JSON Schema's regular expressions: ECMA-262 syntax (JSON Schema's
 * "pattern" and "patternProperties"), matched with PCRE2.
 *
 * JSON Schema says patterns are ECMA-262 regular expressions, searched (not
 * anchored) in the string. PCRE2 compiles them with the options that make
 * its dialect ECMAScript's where they differ in ways a schema meets:
 *  - PCRE2_UTF: patterns and strings are UTF-8, '.' and classes take whole
 *    code points (jansson hands us valid UTF-8);
 *  - PCRE2_ALT_BSUX | PCRE2_EXTRA_ALT_BSUX: \uhhhh and \u{h...} are code
 *    points, \xhh exactly two hex digits, as in ECMAScript;
 *  - PCRE2_DOLLAR_ENDONLY: '$' matches only at the very end (Perl's "before
 *    a final newline" is not ECMAScript's);
 *  - lookarounds, backreferences, lazy quantifiers, \b, non-capturing and
 *    named groups mean the same in both.
 * Left different, documented in README: \s and \w stay ASCII (ECMAScript's
 * \s also takes Unicode spaces), and '.' stops at LF and CR only
 * (ECMAScript also at U+2028/U+2029).
 *
 * A pattern PCRE2 cannot compile is refused at registration (the schema is
 * invalid, as Java-based registries find too). Matching is bounded
 * (PCRE2's match and depth limits), so a pattern that backtracks
 * catastrophically on a hostile value costs bounded CPU: such a value is
 * refused naming the limit, never waited on. Compiled patterns are
 * immutable and shared by threads; each search uses its own match data. */
#ifndef LS_ECMA_REGEX_H
#define LS_ECMA_REGEX_H
#include <stddef.h>

typedef struct ls_ecma_re ls_ecma_re_t;

/* NULL on error, err then says why and where in the pattern. */
ls_ecma_re_t *ls_ecma_re_compile(const char *pattern, char *err, size_t errlen);
void ls_ecma_re_free(ls_ecma_re_t *re);

enum { LS_RE_NOMATCH = 0, LS_RE_MATCH = 1, LS_RE_LIMIT = -1 };
/* Searches s[0..len) for a match anywhere: LS_RE_MATCH, LS_RE_NOMATCH, or
 * LS_RE_LIMIT when the search hit the match limit or failed otherwise. */
int ls_ecma_re_search(const ls_ecma_re_t *re, const char *s, size_t len);
#endif
