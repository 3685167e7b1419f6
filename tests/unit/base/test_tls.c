/* base/tls: ssl.principal.mapping.rules as Kafka's SslPrincipalMapper, and
 * settings refused with errors naming them. The transport itself is
 * exercised with real clients in tests/integration/test_tls.py. */
#include <string.h>

#include "base/tls.h"
#include "unit.h"

static const char *map(const char *rules, const char *dn)
{
    static char out[600];
    char why[400];
    if (ls_tls_map_principal(rules, dn, out, sizeof out, why, sizeof why) != LS_OK)
        snprintf(out, sizeof out, "ERR %s", why);
    return out;
}

TEST(principal_mapping_rules)
{
    const char *dn = "CN=Alice Smith,OU=Eng,O=Acme,C=US";
    /* DEFAULT: the whole subject */
    CHECK(strcmp(map(NULL, dn), "User:CN=Alice Smith,OU=Eng,O=Acme,C=US") == 0);
    CHECK(strcmp(map("DEFAULT", dn), "User:CN=Alice Smith,OU=Eng,O=Acme,C=US") == 0);
    /* Kafka's documented example forms: replacement with groups, L and U */
    const char *rules = "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
                        "RULE:^CN=(.*?) (.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$3/L,"
                        "DEFAULT";
    CHECK(strcmp(map(rules, "CN=kafka-svc,OU=ServiceUsers,O=Acme"), "User:kafka-svc") == 0);
    CHECK(strcmp(map(rules, dn), "User:alice@eng") == 0);
    CHECK(strcmp(map(rules, "CN=x,O=y"), "User:CN=x,O=y") == 0);
    CHECK(strcmp(map("RULE:^CN=(.*?),.*$/$1/U", "CN=bob,O=Acme"), "User:BOB") == 0);
    /* the pattern must match the whole subject */
    CHECK(strncmp(map("RULE:CN=bob/x/", "CN=bob,O=Acme"), "ERR no rule", 11) == 0);
    /* an escaped '/' belongs to the pattern; commas inside a rule are its own */
    CHECK(strcmp(map("RULE:^CN=a\\/b,O=(.*)$/$1/, DEFAULT", "CN=a/b,O=z"), "User:z") == 0);
    /* no rule applies: authentication fails, naming the subject */
    CHECK(strstr(map("RULE:^CN=admin$/admin/", dn), "no rule of ssl.principal.mapping.rules "
                                                    "applies to 'CN=Alice Smith"));
    /* malformed rules name the setting */
    CHECK(strstr(map("RULE:abc", dn), "ssl.principal.mapping.rules: invalid rule"));
    CHECK(strstr(map("NOPE", dn), "ssl.principal.mapping.rules: invalid rule 'NOPE'"));
    CHECK(strstr(map("RULE:(/x/", dn), "ssl.principal.mapping.rules: pattern '('"));
}

TEST(settings_refused_naming_them)
{
    char err[512];
    ls_tls_settings_t s = {.keystore_type = "JKS", .keystore_location = "/nonexistent"};
    CHECK(ls_tls_server_new(&s, "test", err, sizeof err) == NULL);
    CHECK(strstr(err, "ssl.keystore.type: 'JKS' is not supported"));
    s = (ls_tls_settings_t){.keystore_location = "/nonexistent/ks.pem"};
    CHECK(ls_tls_server_new(&s, "test", err, sizeof err) == NULL);
    CHECK(strstr(err, "ssl.keystore.location: /nonexistent/ks.pem"));
    s = (ls_tls_settings_t){.keystore_chain = "no pem here", .keystore_key = "nor here"};
    CHECK(ls_tls_server_new(&s, "test", err, sizeof err) == NULL);
    CHECK(strstr(err, "ssl.keystore.certificate.chain: no PEM certificate"));
    s = (ls_tls_settings_t){.keystore_location = "/x", .client_auth = "maybe"};
    CHECK(ls_tls_server_new(&s, "test", err, sizeof err) == NULL);
    CHECK(strstr(err, "ssl.client.auth: 'maybe'"));
    s = (ls_tls_settings_t){.keystore_location = "/x", .protocol = "SSLv3"};
    CHECK(ls_tls_server_new(&s, "test", err, sizeof err) == NULL);
    CHECK(strstr(err, "ssl.protocol: 'SSLv3' is not supported"));
}

int main(void)
{
    RUN(principal_mapping_rules);
    RUN(settings_refused_naming_them);
    UNIT_DONE();
}
