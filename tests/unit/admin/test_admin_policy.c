/* admin/table_policy.c: the policy edits `lakestream tables` and the REST
 * API share — key expansion, the checks made before anything is sent, and
 * namespace defaults written through the catalog (mem metadata backend). */
#include <stdio.h>
#include <string.h>

#include "admin/table_policy.h"
#include "meta/meta.h"
#include "stream/catalog.h"
#include "unit.h"

static ls_meta_t *M;
static ls_catalog_t *C;

static const char *ns_prop(const char *ns, const char *key, char *buf, size_t cap)
{
    ls_namespace_t *n = ls_catalog_namespace(C, ns);
    const char *v = NULL;
    for (int i = 0; n && i < n->nprops; i++)
        if (strcmp(n->props[i].key, key) == 0) {
            snprintf(buf, cap, "%s", n->props[i].value);
            v = buf;
        }
    ls_namespace_release(n);
    return v;
}

TEST(short_and_full_keys_expand_alike)
{
    char buf[96];
    CHECK(strcmp(ls_admin_policy_key("enabled", buf, sizeof buf), "lakestream.table.enabled") == 0);
    CHECK(strcmp(ls_admin_policy_key("lakestream.table.enabled", buf, sizeof buf),
                 "lakestream.table.enabled") == 0);
    ls_admin_policy_edit_t e;
    memset(&e, 0, sizeof e);
    char err[512];
    CHECK_EQ_INT(ls_admin_policy_edit_set(&e, "compression", "snappy", false, err, sizeof err),
                 LS_OK);
    CHECK_EQ_INT(ls_admin_policy_edit_unset(&e, "lakestream.table.partition", err, sizeof err),
                 LS_OK);
    CHECK(e.nset == 1 && strcmp(e.set_k[0], "lakestream.table.compression") == 0 &&
          strcmp(e.set_v[0], "snappy") == 0);
    CHECK(e.nunset == 1 && strcmp(e.unset_k[0], "lakestream.table.partition") == 0);
    /* the same key twice, in either form, is refused naming it */
    CHECK_EQ_INT(ls_admin_policy_edit_set(&e, "lakestream.table.compression", "gzip", false, err,
                                          sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "lakestream.table.compression") && strstr(err, "twice"));
    CHECK_EQ_INT(ls_admin_policy_edit_unset(&e, "partition", err, sizeof err), LS_EINVAL);
    ls_admin_policy_edit_free(&e);
}

TEST(bad_values_and_keys_are_refused_naming_the_key)
{
    ls_admin_policy_edit_t e;
    memset(&e, 0, sizeof e);
    char err[512];
    CHECK_EQ_INT(ls_admin_policy_edit_set(&e, "compression", "lzma", false, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "lakestream.table.compression") && strstr(err, "zstd"));
    CHECK_EQ_INT(ls_admin_policy_edit_set(&e, "no.such", "1", false, err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "lakestream.table.no.such") != NULL);
    CHECK_EQ_INT(ls_admin_policy_edit_set(&e, "enabled.since", "1", false, err, sizeof err),
                 LS_EINVAL);
    CHECK_EQ_INT(ls_admin_policy_edit_unset(&e, "retention.ms", err, sizeof err), LS_EINVAL);
    CHECK(strstr(err, "not a table policy key") != NULL);
    /* a primary key names one topic's key fields: not a namespace default */
    CHECK_EQ_INT(ls_admin_policy_edit_set(&e, "primary.key", "id", true, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "lakestream.table.primary.key") != NULL);
    CHECK(e.nset == 0 && e.nunset == 0);
    ls_admin_policy_edit_free(&e);
}

TEST(namespace_defaults_set_unset_and_create)
{
    char err[512], buf[64];
    ls_admin_policy_edit_t e;
    memset(&e, 0, sizeof e);
    CHECK_EQ_INT(ls_admin_ns_policy_update(C, "analytics", &e, false, err, sizeof err), LS_OK);
    CHECK(ls_catalog_namespace(C, "analytics") == NULL); /* no edits, no create: nothing */
    CHECK_EQ_INT(ls_admin_ns_policy_update(C, "analytics", &e, true, err, sizeof err), LS_OK);
    ls_namespace_t *n = ls_catalog_namespace(C, "analytics");
    CHECK(n != NULL && n->nprops == 0);
    ls_namespace_release(n);
    ls_admin_policy_edit_free(&e);

    memset(&e, 0, sizeof e);
    CHECK_EQ_INT(ls_admin_policy_edit_set(&e, "compression", "gzip", true, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_admin_policy_edit_set(&e, "commit.interval.ms", "5000", true, err, sizeof err),
                 LS_OK);
    CHECK_EQ_INT(ls_admin_ns_policy_update(C, "analytics", &e, false, err, sizeof err), LS_OK);
    ls_admin_policy_edit_free(&e);
    CHECK(ns_prop("analytics", "lakestream.table.compression", buf, sizeof buf) &&
          strcmp(buf, "gzip") == 0);

    memset(&e, 0, sizeof e);
    CHECK_EQ_INT(ls_admin_policy_edit_unset(&e, "compression", err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_admin_policy_edit_set(&e, "commit.interval.ms", "7000", true, err, sizeof err),
                 LS_OK);
    CHECK_EQ_INT(ls_admin_ns_policy_update(C, "analytics", &e, false, err, sizeof err), LS_OK);
    ls_admin_policy_edit_free(&e);
    CHECK(ns_prop("analytics", "lakestream.table.compression", buf, sizeof buf) == NULL);
    CHECK(ns_prop("analytics", "lakestream.table.commit.interval.ms", buf, sizeof buf) &&
          strcmp(buf, "7000") == 0);
    /* a name no namespace may have */
    memset(&e, 0, sizeof e);
    CHECK_EQ_INT(ls_admin_ns_policy_update(C, "../x", &e, true, err, sizeof err), LS_EINVAL);
}

int main(void)
{
    char err[256];
    M = ls_meta_mem_open();
    C = ls_catalog_open(M, err, sizeof err);
    if (!C) {
        printf("FAIL open catalog: %s\n", err);
        return 1;
    }
    RUN(short_and_full_keys_expand_alike);
    RUN(bad_values_and_keys_are_refused_naming_the_key);
    RUN(namespace_defaults_set_unset_and_create);
    ls_catalog_close(C);
    ls_meta_close(M);
    UNIT_DONE();
}
