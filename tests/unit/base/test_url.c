/* base/url.c: percent-decoding and query strings, and base/fault.c's
 * parameter vocabulary (parsed through it). */
#include <string.h>

#include "base/fault.h"
#include "base/url.h"
#include "unit.h"

TEST(url_decoding)
{
    ls_buf_t b;
    ls_buf_init(&b);
    CHECK_EQ_INT(ls_url_decode("a%1Fb%2fc+d", 11, false, &b), 0);
    CHECK(b.len == 7 && !memcmp(b.data,
                                "a\x1f"
                                "b/c+d",
                                7));
    CHECK_EQ_INT(ls_url_decode("c+d", 3, true, &b), 0);
    CHECK(!strcmp((char *)b.data, "c d"));
    CHECK_EQ_INT(ls_url_decode("%", 1, false, &b), -1);
    CHECK_EQ_INT(ls_url_decode("%4", 2, false, &b), -1);
    CHECK_EQ_INT(ls_url_decode("%zz", 3, false, &b), -1);
    CHECK_EQ_INT(ls_url_decode("ab%41", 4, false, &b), -1); /* only n bytes are read */
    CHECK_EQ_INT(ls_url_decode("ab%41", 5, false, &b), 0);
    CHECK(b.len == 3 && !memcmp(b.data, "abA", 3));
    CHECK_EQ_INT(ls_url_query_get("a=1&warehouse=x%20y+z&b", "warehouse", &b), 1);
    CHECK(!strcmp((char *)b.data, "x y z"));
    CHECK_EQ_INT(ls_url_query_get("a=1&b", "b", &b), 1);
    CHECK_EQ_INT(b.len, 0);
    CHECK_EQ_INT(ls_url_query_get("a=1", "warehouse", &b), 0);
    CHECK_EQ_INT(ls_url_query_get("", "a", &b), 0);
    CHECK_EQ_INT(ls_url_query_get("a=%g1", "a", &b), -1);
    ls_buf_free(&b);
}

typedef struct seen {
    char text[256];
    int stop_at; /* return LS_ELIMIT at this item (1-based); 0: never */
    int n;
} seen_t;

static ls_status collect(void *arg, const char *k, const char *v, const char *raw, size_t rawlen)
{
    seen_t *s = arg;
    size_t used = strlen(s->text);
    snprintf(s->text + used, sizeof s->text - used, "[%s|%s|%.*s]", k, v, (int)rawlen, raw);
    return ++s->n == s->stop_at ? LS_ELIMIT : LS_OK;
}

TEST(query_foreach)
{
    seen_t s = {"", 0, 0};
    char err[128] = "";
    CHECK_EQ_INT(ls_url_query_foreach("a=1&&b&c=x%2By+z", false, collect, &s, err, sizeof err), 0);
    CHECK(!strcmp(s.text, "[a|1|a=1][b||b][c|x+y+z|c=x%2By+z]"));
    s = (seen_t){"", 0, 0};
    CHECK_EQ_INT(ls_url_query_foreach("c=y+z", true, collect, &s, err, sizeof err), 0);
    CHECK(!strcmp(s.text, "[c|y z|c=y+z]"));
    s = (seen_t){"", 1, 0};
    CHECK_EQ_INT(ls_url_query_foreach("a=1&b=2", false, collect, &s, err, sizeof err), LS_ELIMIT);
    CHECK_EQ_INT(s.n, 1);
    s = (seen_t){"", 0, 0};
    CHECK_EQ_INT(ls_url_query_foreach("a=1&b=%zz", false, collect, &s, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "b=%zz") != NULL);
    CHECK_EQ_INT(ls_url_query_foreach(NULL, false, collect, &s, err, sizeof err), 0);
}

static const char *const ops[] = {"get", "put", "txn"};

TEST(fault_vocabulary)
{
    ls_fault_t f;
    ls_fault_init(&f, "test store", ops, 3, 1u << 1, LS_EIO);
    char err[256] = "";
    ls_buf_t rest;
    ls_buf_init(&rest);
    CHECK_EQ_INT(ls_fault_configure(&f, "put_error_rate=1&ops=put,txn&seed=3&endpoint=http://x",
                                    &rest, err, sizeof err),
                 0);
    CHECK(rest.len == strlen("endpoint=http://x") &&
          !memcmp(rest.data, "endpoint=http://x", rest.len));
    ls_buf_free(&rest);
    /* get is not counted (ops), put always fails, txn never */
    CHECK(!ls_fault_before(&f, 0, NULL, 0).fail);
    char why[128];
    ls_fault_verdict_t v = ls_fault_before(&f, 1, why, sizeof why);
    CHECK(v.fail && v.error == LS_EIO && strstr(why, "put") != NULL);
    CHECK(!ls_fault_before(&f, 2, NULL, 0).fail);
    /* unknown keys without a rest buffer, bad values: refused, settings unchanged */
    CHECK_EQ_INT(ls_fault_configure(&f, "nope=1", NULL, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "test store") && strstr(err, "nope"));
    CHECK_EQ_INT(ls_fault_configure(&f, "put_error_rate=0&error_rate=2", NULL, err, sizeof err),
                 LS_EINVAL);
    CHECK(ls_fault_before(&f, 1, NULL, 0).fail);
    CHECK_EQ_INT(ls_fault_configure(&f, "put_error_rate=0&fail_every=2&lost_ack_rate=1", NULL, err,
                                    sizeof err),
                 0);
    /* counted calls so far: put, txn, put = 3; the 4th fails (every 2nd) */
    CHECK(ls_fault_before(&f, 2, NULL, 0).fail);
    v = ls_fault_before(&f, 1, NULL, 0); /* 5th: passes, and put's ack is lost */
    CHECK(!v.fail && v.lose_ack);
    CHECK(!ls_fault_before(&f, 2, NULL, 0).lose_ack); /* 6th: txn is not a write here */
    ls_fault_stats_t st;
    ls_fault_get_stats(&f, &st);
    CHECK_EQ_INT(st.calls, 6);
    CHECK(st.injected >= 3 && st.lost_acks >= 1);
    CHECK_EQ_INT(ls_fault_configure(&f, "down=true&fail_every=0", NULL, err, sizeof err), 0);
    CHECK(ls_fault_before(&f, 2, NULL, 0).fail);
    ls_fault_destroy(&f);
}

int main(void)
{
    RUN(url_decoding);
    RUN(query_foreach);
    RUN(fault_vocabulary);
    UNIT_DONE();
}
