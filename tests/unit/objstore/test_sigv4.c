/* SigV4 signer against AWS's published vectors (offline):
 *  - the aws-sig-v4 test suite (service "service", AKIDEXAMPLE,
 *    2015-08-30T12:36:00Z): get-vanilla, query ordering, unreserved
 *    characters, UTF-8 path and query, header value trimming, POST with and
 *    without a body, session token;
 *  - the S3 API reference examples (examplebucket, AKIAIOSFODNN7EXAMPLE,
 *    2013-05-24): GET with Range, PUT with a payload hash and an encoded key,
 *    ListObjects with a query — including the published canonical request
 *    and string to sign where AWS prints them. */
#include <stdio.h>
#include <string.h>

#include "objstore/sigv4.h"
#include "unit.h"

static const ls_sigv4_cred_t suite = {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                                      "us-east-1", "service"};
static const ls_sigv4_cred_t s3doc = {
    "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1", "s3"};

static char auth[512], creq[2048], sts[512];

static void sign(const char *method, const char *path, const char *query, const ls_sigv4_hdr_t *h,
                 int nh, const char *payload_hash, const ls_sigv4_cred_t *c, const char *date)
{
    ls_buf_t a, cr, st;
    ls_buf_init(&a);
    ls_buf_init(&cr);
    ls_buf_init(&st);
    ls_sigv4_req_t r = {method, path, query, h, nh, payload_hash};
    if (ls_sigv4_authorization(&r, c, date, &a, &cr, &st) != 0)
        snprintf(auth, sizeof auth, "<error>");
    else
        snprintf(auth, sizeof auth, "%.*s", (int)a.len, (const char *)a.data);
    snprintf(creq, sizeof creq, "%.*s", (int)cr.len, (const char *)cr.data);
    snprintf(sts, sizeof sts, "%.*s", (int)st.len, (const char *)st.data);
    ls_buf_free(&a);
    ls_buf_free(&cr);
    ls_buf_free(&st);
}

static const char *sig_of(void)
{
    const char *s = strstr(auth, "Signature=");
    return s ? s + 10 : "";
}

#define SUITE_DATE "20150830T123600Z"
#define HOST_DATE                                                                                  \
    {"Host", "example.amazonaws.com"}, { "X-Amz-Date", SUITE_DATE }

TEST(suite_get_vanilla)
{
    ls_sigv4_hdr_t h[] = {HOST_DATE};
    sign("GET", "/", NULL, h, 2, LS_SIGV4_EMPTY_SHA256, &suite, SUITE_DATE);
    CHECK(strcmp(auth,
                 "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
                 "aws4_request, SignedHeaders=host;x-amz-date, "
                 "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31") ==
          0);
    CHECK(strcmp(creq, "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
                       "host;x-amz-date\n" LS_SIGV4_EMPTY_SHA256) == 0);
}

TEST(suite_query_order_key_case)
{
    ls_sigv4_hdr_t h[] = {HOST_DATE};
    sign("GET", "/", "Param2=value2&Param1=value1", h, 2, LS_SIGV4_EMPTY_SHA256, &suite,
         SUITE_DATE);
    CHECK(strcmp(sig_of(), "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500") ==
          0);
}

TEST(suite_query_unreserved)
{
    ls_sigv4_hdr_t h[] = {HOST_DATE};
    sign("GET", "/",
         "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz="
         "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
         h, 2, LS_SIGV4_EMPTY_SHA256, &suite, SUITE_DATE);
    CHECK(strcmp(sig_of(), "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197") ==
          0);
}

TEST(suite_utf8_path_and_query)
{
    ls_sigv4_hdr_t h[] = {HOST_DATE};
    sign("GET", "/\xe1\x88\xb4", NULL, h, 2, LS_SIGV4_EMPTY_SHA256, &suite, SUITE_DATE);
    CHECK(strcmp(sig_of(), "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85") ==
          0);
    CHECK(strncmp(creq, "GET\n/%E1%88%B4\n", 15) == 0);
    sign("GET", "/", "\xe1\x88\xb4=bar", h, 2, LS_SIGV4_EMPTY_SHA256, &suite, SUITE_DATE);
    CHECK(strcmp(sig_of(), "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04") ==
          0);
}

TEST(suite_header_value_trim)
{
    ls_sigv4_hdr_t h[] = {{"Host", "example.amazonaws.com"},
                          {"My-Header1", " value1"},
                          {"My-Header2", " \"a   b   c\""},
                          {"X-Amz-Date", SUITE_DATE}};
    sign("GET", "/", NULL, h, 4, LS_SIGV4_EMPTY_SHA256, &suite, SUITE_DATE);
    CHECK(strstr(auth, "SignedHeaders=host;my-header1;my-header2;x-amz-date,") != NULL);
    CHECK(strcmp(sig_of(), "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736") ==
          0);
}

TEST(suite_post)
{
    ls_sigv4_hdr_t h[] = {HOST_DATE};
    sign("POST", "/", NULL, h, 2, LS_SIGV4_EMPTY_SHA256, &suite, SUITE_DATE);
    CHECK(strcmp(sig_of(), "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b") ==
          0);
    /* post-x-www-form-urlencoded: a body, so a real payload hash */
    char ph[65];
    ls_sha256_hex("Param1=value1", 13, ph);
    ls_sigv4_hdr_t h2[] = {{"Content-Type", "application/x-www-form-urlencoded"}, HOST_DATE};
    sign("POST", "/", NULL, h2, 3, ph, &suite, SUITE_DATE);
    CHECK(strcmp(sig_of(), "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a") ==
          0);
}

TEST(suite_session_token)
{
    ls_sigv4_hdr_t h[] = {HOST_DATE,
                          {"X-Amz-Security-Token",
                           "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"}};
    sign("GET", "/", NULL, h, 3, LS_SIGV4_EMPTY_SHA256, &suite, SUITE_DATE);
    CHECK(strstr(auth, "SignedHeaders=host;x-amz-date;x-amz-security-token,") != NULL);
    CHECK(strcmp(sig_of(), "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8") ==
          0);
}

#define S3_DATE "20130524T000000Z"

TEST(s3doc_get_object_range)
{
    ls_sigv4_hdr_t h[] = {{"Host", "examplebucket.s3.amazonaws.com"},
                          {"Range", "bytes=0-9"},
                          {"x-amz-content-sha256", LS_SIGV4_EMPTY_SHA256},
                          {"x-amz-date", S3_DATE}};
    sign("GET", "/test.txt", NULL, h, 4, LS_SIGV4_EMPTY_SHA256, &s3doc, S3_DATE);
    CHECK(strcmp(creq, "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
                       "x-amz-content-sha256:" LS_SIGV4_EMPTY_SHA256 "\n"
                       "x-amz-date:20130524T000000Z\n\n"
                       "host;range;x-amz-content-sha256;x-amz-date\n" LS_SIGV4_EMPTY_SHA256) == 0);
    CHECK(strcmp(sts, "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                      "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972") == 0);
    CHECK(strcmp(sig_of(), "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41") ==
          0);
}

TEST(s3doc_put_object)
{
    char ph[65];
    ls_sha256_hex("Welcome to Amazon S3.", 21, ph);
    CHECK(strcmp(ph, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072") == 0);
    ls_sigv4_hdr_t h[] = {{"Host", "examplebucket.s3.amazonaws.com"},
                          {"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                          {"x-amz-content-sha256", ph},
                          {"x-amz-date", S3_DATE},
                          {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
    sign("PUT", "/test$file.text", NULL, h, 5, ph, &s3doc, S3_DATE);
    CHECK(strncmp(creq, "PUT\n/test%24file.text\n\n", 23) == 0);
    CHECK(strcmp(sts, "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
                      "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d") == 0);
    CHECK(strcmp(sig_of(), "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd") ==
          0);
}

TEST(s3doc_list_objects)
{
    ls_sigv4_hdr_t h[] = {{"Host", "examplebucket.s3.amazonaws.com"},
                          {"x-amz-content-sha256", LS_SIGV4_EMPTY_SHA256},
                          {"x-amz-date", S3_DATE}};
    sign("GET", "/", "prefix=J&max-keys=2", h, 3, LS_SIGV4_EMPTY_SHA256, &s3doc, S3_DATE);
    CHECK(strstr(creq, "\nmax-keys=2&prefix=J\n") != NULL);
    CHECK(strcmp(sig_of(), "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") ==
          0);
}

TEST(uri_encoding)
{
    ls_buf_t b;
    ls_buf_init(&b);
    const char *in = "a b+c/d=e~f%";
    ls_sigv4_uri_encode(&b, in, strlen(in), 0);
    ls_buf_append_u8(&b, 0);
    CHECK(strcmp((char *)b.data, "a%20b%2Bc/d%3De~f%25") == 0);
    b.len = 0;
    ls_sigv4_uri_encode(&b, in, strlen(in), 1);
    ls_buf_append_u8(&b, 0);
    int ok = strcmp((char *)b.data, "a%20b%2Bc%2Fd%3De~f%25") == 0;
    ls_buf_free(&b);
    CHECK(ok);
    /* an already-encoded query value is not encoded twice */
    ls_sigv4_hdr_t h[] = {HOST_DATE};
    sign("GET", "/", "continuation-token=a%2Bb%2Fc%3D&list-type=2", h, 2, LS_SIGV4_EMPTY_SHA256,
         &suite, SUITE_DATE);
    CHECK(strstr(creq, "\ncontinuation-token=a%2Bb%2Fc%3D&list-type=2\n") != NULL);
    char d[17];
    ls_sigv4_date(1440938160, d);
    CHECK(strcmp(d, SUITE_DATE) == 0);
    char hex[33], b64[25];
    struct iovec v[2] = {{"hello ", 6}, {"world", 5}};
    ls_md5_iov(v, 2, hex, b64);
    CHECK(strcmp(hex, "5eb63bbbe01eeed093cb22bb8f5acdc3") == 0);
    CHECK(strcmp(b64, "XrY7u+Ae7tCTyyK7j1rNww==") == 0);
}

int main(void)
{
    RUN(suite_get_vanilla);
    RUN(suite_query_order_key_case);
    RUN(suite_query_unreserved);
    RUN(suite_utf8_path_and_query);
    RUN(suite_header_value_trim);
    RUN(suite_post);
    RUN(suite_session_token);
    RUN(s3doc_get_object_range);
    RUN(s3doc_put_object);
    RUN(s3doc_list_objects);
    RUN(uri_encoding);
    UNIT_DONE();
}
