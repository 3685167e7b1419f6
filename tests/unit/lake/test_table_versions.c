/* Table versions (lakestream.table.evolution=new-table, lake/materialize.c
 * "Table versions"): the naming and the state machine on in-memory stores
 * and a real registry. A record whose schema the table cannot evolve to
 * stops its log in the batch (the others go on), the commit freezes the
 * table with continued-as; the next begin resolves to <base>__v2 and creates
 * it from what the frozen one recorded; offsets a version does not record
 * are its predecessors'; an older schema starts no version (error.handling);
 * a batch dropped before its commit changes nothing; versions chain on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/diag.h"
#include "lake/cold_batches.h"
#include "lake/materialize.h"
#include "meta/meta.h"
#include "objstore/objstore.h"
#include "registry/registry.h"
#include "stream/catalog.h"
#include "stream/policy.h"
#include "table/iceberg_table.h"
#include "table/table_catalog.h"
#include "unit.h"

#define P(k, v)                                                                                    \
    (ls_prop_t) { (char *)(k), (char *)(v) }

static const char *const V1 = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"id\","
                              "\"type\":\"int\"},{\"name\":\"s\",\"type\":\"string\"}]}";
/* s: string -> int (incompatible), then int -> boolean (incompatible again) */
static const char *const V2 = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"id\","
                              "\"type\":\"int\"},{\"name\":\"s\",\"type\":\"int\"}]}";
static const char *const V3 = "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"id\","
                              "\"type\":\"int\"},{\"name\":\"s\",\"type\":\"boolean\"}]}";

typedef struct fixture {
    ls_meta_t *meta;
    ls_objstore_t *os;
    ls_registry_t *reg;
    int32_t id[4]; /* schema ids of V1..V3 (index 1..3) */
    ls_stream_t stream;
    ls_prop_t props[5];
    ls_policy_t policy;
    ls_table_target_t tt;
} fixture_t;

static int fixture_open(fixture_t *f)
{
    memset(f, 0, sizeof *f);
    f->meta = ls_meta_mem_open();
    f->os = ls_objstore_mem_open();
    f->reg = ls_registry_new(f->meta);
    ls_sr_err_t e;
    if (ls_registry_set_compat(f->reg, "t-value", LS_SR_COMPAT_NONE, &e) != LS_SR_OK) return -1;
    const char *schemas[] = {NULL, V1, V2, V3};
    for (int i = 1; i <= 3; i++) {
        ls_sr_input_t in = {.type = LS_SR_AVRO, .text = schemas[i]};
        int32_t v;
        if (ls_registry_register(f->reg, "t-value", &in, false, &f->id[i], &v, &e) != LS_SR_OK)
            return -1;
    }
    f->stream = (ls_stream_t){.ns = "default", .name = "t", .stream_no = 1, .partitions = 3};
    f->props[0] = P("lakestream.table.enabled", "true");
    f->props[1] = P("lakestream.table.value.format", "schema-registry");
    f->props[2] = P("lakestream.table.evolution", "new-table");
    f->props[3] = P("lakestream.table.error.handling", "dead-letter");
    f->props[4] = P("lakestream.table.partition", "none");
    ls_policy_layers_t l = {f->props, 5, NULL, 0, NULL, 0};
    char err[512];
    if (ls_policy_resolve(&l, &f->policy, err, sizeof err) != LS_OK) return -1;
    return ls_table_target_init(&f->tt, &f->stream, &f->policy, f->reg, err, sizeof err) == LS_OK
               ? 0
               : -1;
}

static void fixture_close(fixture_t *f)
{
    ls_registry_free(f->reg);
    ls_objstore_close(f->os);
    ls_meta_close(f->meta);
}

static void put_varint(ls_buf_t *b, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    do {
        uint8_t c = z & 0x7f;
        z >>= 7;
        ls_buf_append_u8(b, (uint8_t)(c | (z ? 0x80 : 0)));
    } while (z);
}

/* The framed Avro value of record `id` under schema version v (1..3). */
static void value_of(const fixture_t *f, int v, int id, ls_buf_t *out)
{
    ls_buf_init(out);
    uint8_t hdr[5] = {0, (uint8_t)(f->id[v] >> 24), (uint8_t)(f->id[v] >> 16),
                      (uint8_t)(f->id[v] >> 8), (uint8_t)f->id[v]};
    ls_buf_append(out, hdr, 5);
    put_varint(out, id);
    if (v == 1) {
        char s[16];
        int n = snprintf(s, sizeof s, "s%d", id);
        put_varint(out, n);
        ls_buf_append(out, s, (size_t)n);
    } else if (v == 2) {
        put_varint(out, id * 10);
    } else {
        ls_buf_append_u8(out, (uint8_t)(id & 1));
    }
}

/* One range of log (partition) p: the records at offsets first.. with
 * schema versions vs[0..n). */
typedef struct range {
    ls_cold_batcher_t bt;
    ls_co_entry_t ent;
    ls_mat_range_t r;
} range_t;

static int range_make(range_t *rg, const fixture_t *f, int32_t p, int64_t first, const int *vs,
                      int n)
{
    ls_cold_batcher_init(&rg->bt, 0, false, 1 << 20);
    for (int i = 0; i < n; i++) {
        ls_buf_t v;
        value_of(f, vs[i], (int)(p * 100 + first + i), &v);
        ls_raw_record_t rec = {.partition = p,
                               .offset = first + i,
                               .timestamp_ms = 1700000000000 + first + i,
                               .key = NULL,
                               .key_len = -1,
                               .value = v.data,
                               .value_len = (int64_t)v.len};
        ls_status st = ls_cold_batcher_add(&rg->bt, &rec);
        ls_buf_free(&v);
        if (st != LS_OK) return -1;
    }
    if (ls_cold_batcher_flush(&rg->bt) != LS_OK || rg->bt.nbatches != 1) return -1;
    rg->ent = (ls_co_entry_t){.base_offset = first, .pos = 0};
    rg->r = (ls_mat_range_t){.partition = p,
                             .log_id = p,
                             .obj = rg->bt.out.data,
                             .entries = &rg->ent,
                             .n = 1,
                             .body_end = rg->bt.out.len,
                             .from_offset = 0,
                             .last_offset = first + n - 1,
                             .aborted = NULL};
    return 0;
}

static int64_t last_offset(const fixture_t *f, int64_t log_id)
{
    int64_t done = -2;
    char err[512];
    if (ls_materialize_last_offset(f->meta, f->os, &f->tt, log_id, &done, err, sizeof err) !=
        LS_OK) {
        printf("# last offset: %s\n", err);
        return -3;
    }
    return done;
}

/* A property (carried summary key) of table name, copied into out ("": none). */
static void prop_of(const fixture_t *f, const char *name, const char *key, char *out, size_t cap)
{
    out[0] = 0;
    char prefix[300], err[256];
    snprintf(prefix, sizeof prefix, "warehouse/default/%s", name);
    ls_ice_table_t *t = NULL;
    if (ls_tcat_open(f->meta, f->os, "default", name, prefix, &t, err, sizeof err) != LS_OK) return;
    const char *v = ls_ice_table_summary(t, key);
    if (v) snprintf(out, cap, "%s", v);
    ls_ice_table_free(t);
}

static int64_t total_records(const fixture_t *f, const char *name)
{
    char v[32];
    prop_of(f, name, "total-records", v, sizeof v);
    return v[0] ? strtoll(v, NULL, 10) : -1;
}

static bool exists(const fixture_t *f, const char *name)
{
    ls_tcat_pointer_t p;
    char err[256];
    ls_status st = ls_tcat_get(f->meta, "default", name, &p, err, sizeof err);
    if (st == LS_OK) ls_tcat_pointer_clear(&p);
    return st == LS_OK;
}

TEST(a_switch_freezes_the_table_and_the_next_version_takes_over)
{
    fixture_t f;
    CHECK_EQ_INT(fixture_open(&f), 0);
    char err[512], v[512];
    uint64_t rows = 0, added;
    /* the base table from v1: log 0 offsets 0..1, log 2 offset 0 */
    range_t a0, c0;
    static const int v11[] = {1, 1};
    CHECK_EQ_INT(range_make(&a0, &f, 0, 0, v11, 2), 0);
    CHECK_EQ_INT(range_make(&c0, &f, 2, 0, v11, 1), 0);
    CHECK_EQ_INT(
        ls_materialize_range(f.meta, f.os, "mem://w", &f.tt, &a0.r, &rows, err, sizeof err), LS_OK);
    CHECK_EQ_INT(
        ls_materialize_range(f.meta, f.os, "mem://w", &f.tt, &c0.r, &rows, err, sizeof err), LS_OK);
    CHECK_EQ_INT(last_offset(&f, 0), 1);

    /* a pass: log 0 [2..5] = v1 v2 v1 v2 meets v2 at 3; log 1 [0..1] = v1 v1
     * goes on into the base table */
    range_t a1, b1;
    static const int va[] = {1, 2, 1, 2};
    CHECK_EQ_INT(range_make(&a1, &f, 0, 2, va, 4), 0);
    CHECK_EQ_INT(range_make(&b1, &f, 1, 0, v11, 2), 0);
    /* first a batch dropped before its commit (a crash): nothing changes */
    ls_mat_batch_t *b;
    CHECK_EQ_INT(ls_mat_begin(f.meta, f.os, "mem://w", &f.tt, &b, err, sizeof err), LS_OK);
    CHECK(strcmp(ls_mat_table_name(b), "t") == 0);
    CHECK_EQ_INT(ls_mat_add(b, &a1.r, &added, err, sizeof err), LS_OK);
    CHECK(ls_mat_switched(b) && ls_mat_stopped(b, 0));
    ls_mat_free(b);
    CHECK_EQ_INT(last_offset(&f, 0), 1);
    prop_of(&f, "t", "lakestream.table.continued-as", v, sizeof v);
    CHECK(v[0] == 0);
    /* then the pass as it commits */
    CHECK_EQ_INT(ls_mat_begin(f.meta, f.os, "mem://w", &f.tt, &b, err, sizeof err), LS_OK);
    CHECK_EQ_INT(ls_mat_add(b, &a1.r, &added, err, sizeof err), LS_OK);
    CHECK_EQ_INT(added, 1); /* offset 2 only */
    CHECK(ls_mat_switched(b) && ls_mat_stopped(b, 0));
    CHECK_EQ_INT(ls_mat_done(b, 0), 2);
    CHECK_EQ_INT(ls_mat_add(b, &a1.r, &added, err, sizeof err), LS_OK); /* stopped: no-op */
    CHECK_EQ_INT(added, 0);
    CHECK_EQ_INT(ls_mat_add(b, &b1.r, &added, err, sizeof err), LS_OK);
    CHECK_EQ_INT(added, 2);
    CHECK(!ls_mat_stopped(b, 1));
    CHECK_EQ_INT(ls_mat_done(b, 1), 1);
    CHECK_EQ_INT(ls_mat_commit(b, &rows, err, sizeof err), LS_OK);
    ls_mat_free(b);
    CHECK_EQ_INT(total_records(&f, "t"), 6);
    prop_of(&f, "t", "lakestream.table.continued-as", v, sizeof v);
    CHECK(strcmp(v, "t__v2") == 0);
    prop_of(&f, "t", "lakestream.table.continued-as.offset", v, sizeof v);
    CHECK(strcmp(v, "3") == 0);
    prop_of(&f, "t", "lakestream.table.continued-as.partition", v, sizeof v);
    CHECK(strcmp(v, "0") == 0);
    prop_of(&f, "t", "lakestream.table.continued-as.reason", v, sizeof v);
    CHECK(strstr(v, "record at offset 3 has value schema id") && strstr(v, "cannot evolve to: /s"));
    /* the next version is not created yet; its offsets are the base's */
    CHECK(!exists(&f, "t__v2"));
    CHECK_EQ_INT(last_offset(&f, 0), 2);
    CHECK_EQ_INT(last_offset(&f, 1), 1);
    CHECK_EQ_INT(last_offset(&f, 2), 0);

    /* the next pass writes __v2 (created at begin from what t recorded):
     * log 0 again from 3 (v2 row, v1 older: dead letter, v2 row), log 1
     * [2..3] = v1 (older: dead letter), v2 */
    range_t b2;
    static const int vb[] = {1, 2};
    CHECK_EQ_INT(range_make(&b2, &f, 1, 2, vb, 2), 0);
    CHECK_EQ_INT(ls_mat_begin(f.meta, f.os, "mem://w", &f.tt, &b, err, sizeof err), LS_OK);
    CHECK(strcmp(ls_mat_table_name(b), "t__v2") == 0);
    CHECK(exists(&f, "t__v2"));
    CHECK_EQ_INT(ls_mat_add(b, &a1.r, &added, err, sizeof err), LS_OK);
    CHECK_EQ_INT(added, 2);
    CHECK_EQ_INT(ls_mat_add(b, &b2.r, &added, err, sizeof err), LS_OK);
    CHECK_EQ_INT(added, 1);
    CHECK(!ls_mat_switched(b) && !ls_mat_stopped(b, 0));
    CHECK_EQ_INT(ls_mat_commit(b, &rows, err, sizeof err), LS_OK);
    ls_mat_free(b);
    CHECK_EQ_INT(total_records(&f, "t__v2"), 3);
    CHECK_EQ_INT(total_records(&f, "t__dlq"), 2);
    CHECK_EQ_INT(total_records(&f, "t"), 6); /* frozen */
    prop_of(&f, "t__v2", "lakestream.table.version", v, sizeof v);
    CHECK(strcmp(v, "2") == 0);
    prop_of(&f, "t__v2", "lakestream.table.continues", v, sizeof v);
    CHECK(strcmp(v, "t") == 0);
    prop_of(&f, "t__v2", "lakestream.table.version.value-schema-id", v, sizeof v);
    CHECK_EQ_INT(atoi(v), f.id[2]);
    prop_of(&f, "t__v2", "lakestream.value.schema-id", v, sizeof v);
    CHECK_EQ_INT(atoi(v), f.id[2]);
    CHECK_EQ_INT(last_offset(&f, 0), 5);
    CHECK_EQ_INT(last_offset(&f, 1), 3);
    CHECK_EQ_INT(last_offset(&f, 2), 0); /* through __v2 to the base */

    /* v3 at log 0 offset 6 continues __v2 as __v3 (a backfill-style range:
     * finished in the new version in one call); log 2 keeps the base's */
    range_t a3;
    static const int vc[] = {3, 2};
    CHECK_EQ_INT(range_make(&a3, &f, 0, 6, vc, 2), 0);
    CHECK_EQ_INT(
        ls_materialize_range(f.meta, f.os, "mem://w", &f.tt, &a3.r, &rows, err, sizeof err), LS_OK);
    prop_of(&f, "t__v2", "lakestream.table.continued-as", v, sizeof v);
    CHECK(strcmp(v, "t__v3") == 0);
    prop_of(&f, "t__v3", "lakestream.table.continues", v, sizeof v);
    CHECK(strcmp(v, "t__v2") == 0);
    prop_of(&f, "t__v3", "lakestream.table.version", v, sizeof v);
    CHECK(strcmp(v, "3") == 0);
    CHECK_EQ_INT(total_records(&f, "t__v3"), 1); /* v3 at 6; v2 at 7 is older: dead letter */
    CHECK_EQ_INT(total_records(&f, "t__dlq"), 3);
    CHECK_EQ_INT(last_offset(&f, 0), 7);
    CHECK_EQ_INT(last_offset(&f, 1), 3);
    CHECK_EQ_INT(last_offset(&f, 2), 0);
    /* orphan removal walks every version (none are orphans here) */
    uint64_t deleted = 99;
    CHECK_EQ_INT(ls_materialize_remove_orphans(f.meta, f.os, &f.tt, 0, &deleted, err, sizeof err),
                 LS_OK);
    CHECK_EQ_INT(total_records(&f, "t"), 6);
    CHECK_EQ_INT(total_records(&f, "t__v2"), 3);
    range_t *rs[] = {&a0, &c0, &a1, &b1, &b2, &a3};
    for (size_t i = 0; i < sizeof rs / sizeof *rs; i++)
        ls_cold_batcher_free(&rs[i]->bt);
    fixture_close(&f);
}

/* Without a dead-letter table an older incompatible record holds the new
 * version back (error.handling=fail), naming why; the frozen base stays. */
TEST(an_older_schema_follows_error_handling)
{
    fixture_t f;
    CHECK_EQ_INT(fixture_open(&f), 0);
    f.props[3] = P("lakestream.table.error.handling", "fail");
    ls_policy_layers_t l = {f.props, 5, NULL, 0, NULL, 0};
    char err[512];
    CHECK_EQ_INT(ls_policy_resolve(&l, &f.policy, err, sizeof err), LS_OK);
    uint64_t rows;
    range_t a;
    static const int vs[] = {1, 2, 1};
    CHECK_EQ_INT(range_make(&a, &f, 0, 0, vs, 3), 0);
    CHECK_EQ_INT(ls_materialize_range(f.meta, f.os, "mem://w", &f.tt, &a.r, &rows, err, sizeof err),
                 LS_ECORRUPT);
    CHECK(strstr(err, "record at offset 2") && strstr(err, "it is older than value schema id") &&
          strstr(err, "which started table version t__v2") &&
          strstr(err, "lakestream.table.error.handling=fail"));
    CHECK_EQ_INT(total_records(&f, "t"), 1);
    CHECK_EQ_INT(last_offset(&f, 0), 0); /* __v2 holds nothing yet: the base's */
    ls_cold_batcher_free(&a.bt);
    fixture_close(&f);
}

/* The partition policy applies to each new version's own columns; one it
 * cannot be applied to (bucket of a boolean) holds the table back at the
 * record, naming the policy, and freezes nothing. */
TEST(a_partition_policy_the_new_version_cannot_take_holds_back)
{
    fixture_t f;
    CHECK_EQ_INT(fixture_open(&f), 0);
    f.props[4] = P("lakestream.table.partition", "bucket(4, s)");
    ls_policy_layers_t l = {f.props, 5, NULL, 0, NULL, 0};
    char err[512], v[512];
    CHECK_EQ_INT(ls_policy_resolve(&l, &f.policy, err, sizeof err), LS_OK);
    uint64_t rows;
    range_t a, b;
    static const int vs[] = {1, 2}, vb[] = {3};
    CHECK_EQ_INT(range_make(&a, &f, 0, 0, vs, 2), 0);
    CHECK_EQ_INT(range_make(&b, &f, 0, 2, vb, 1), 0);
    /* string -> int: bucket takes both, __v2 partitioned by the int column */
    CHECK_EQ_INT(ls_materialize_range(f.meta, f.os, "mem://w", &f.tt, &a.r, &rows, err, sizeof err),
                 LS_OK);
    CHECK_EQ_INT(total_records(&f, "t__v2"), 1);
    /* int -> boolean: no bucket of a boolean, so no __v3 and __v2 stays live */
    CHECK_EQ_INT(ls_materialize_range(f.meta, f.os, "mem://w", &f.tt, &b.r, &rows, err, sizeof err),
                 LS_EINVAL);
    CHECK(strstr(err, "record at offset 2") &&
          strstr(err, "its new table version t__v3 cannot be created") &&
          strstr(err, "lakestream.table.partition 'bucket(4, s)'"));
    prop_of(&f, "t__v2", "lakestream.table.continued-as", v, sizeof v);
    CHECK(v[0] == 0);
    CHECK(!exists(&f, "t__v3"));
    CHECK_EQ_INT(last_offset(&f, 0), 1);
    ls_cold_batcher_free(&a.bt);
    ls_cold_batcher_free(&b.bt);
    fixture_close(&f);
}

int main(void)
{
    ls_diag_set_level(getenv("LS_TEST_VERBOSE") ? LS_DIAG_DEBUG : LS_DIAG_ERROR);
    RUN(a_switch_freezes_the_table_and_the_next_version_takes_over);
    RUN(an_older_schema_follows_error_handling);
    RUN(a_partition_policy_the_new_version_cannot_take_holds_back);
    UNIT_DONE();
}
