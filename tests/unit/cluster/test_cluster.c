/* Cluster placement (rendezvous hashing, zones, client zone hints) and
 * membership (registration under a lease, duplicate ids, takeover of a
 * crashed incarnation, deregistration) against the in-memory store. */
#include <stdlib.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "cluster/membership.h"
#include "cluster/placement.h"
#include "unit.h"
#include "meta/meta_keys.h"

static ls_member_t member(int32_t id, const char *rack)
{
    ls_member_t m;
    memset(&m, 0, sizeof m);
    m.id = id;
    snprintf(m.host, sizeof m.host, "127.0.0.1");
    m.port = 9000 + id;
    snprintf(m.rack, sizeof m.rack, "%s", rack);
    return m;
}

static int owner(const ls_member_t *m, int n, int key, const char *zone)
{
    char k[16];
    int kl = snprintf(k, sizeof k, "k%d", key);
    int i = ls_place(m, n, k, (size_t)kl, zone);
    return i < 0 ? -1 : m[i].id;
}

TEST(placement_spreads_and_is_stable)
{
    ls_member_t m[4] = {member(1, ""), member(2, ""), member(3, ""), member(4, "")};
    int count[5] = {0};
    for (int k = 0; k < 4000; k++)
        count[owner(m, 3, k, NULL)]++;
    for (int id = 1; id <= 3; id++) /* each of 3 brokers gets roughly a third */
        CHECK(count[id] > 1000 && count[id] < 1700);
    /* a fourth broker takes keys only from the others, about a quarter */
    int moved = 0;
    for (int k = 0; k < 4000; k++) {
        int before = owner(m, 3, k, NULL), after = owner(m, 4, k, NULL);
        if (before != after) {
            CHECK_EQ_INT(after, 4);
            moved++;
        }
    }
    CHECK(moved > 700 && moved < 1300);
    /* order of the member list does not matter */
    ls_member_t r[3] = {m[2], m[0], m[1]};
    for (int k = 0; k < 100; k++)
        CHECK_EQ_INT(owner(r, 3, k, NULL), owner(m, 3, k, NULL));
    CHECK_EQ_INT(ls_place(m, 0, "x", 1, NULL), -1);
}

TEST(placement_prefers_the_clients_zone)
{
    ls_member_t m[3] = {member(1, "a"), member(2, "b"), member(3, "b")};
    for (int k = 0; k < 200; k++) {
        CHECK_EQ_INT(owner(m, 3, k, "a"), 1);
        int o = owner(m, 3, k, "b");
        CHECK(o == 2 || o == 3);
        /* an unknown zone falls back to every broker */
        CHECK_EQ_INT(owner(m, 3, k, "z"), owner(m, 3, k, NULL));
    }
}

TEST(client_zone_hint)
{
    char z[64];
    const char *ids[][2] = {{"ls_az=us-east-1a", "us-east-1a"},
                            {"app-7,ls_az=b;x=1", "b"},
                            {"svc ls_az=zone-c", "zone-c"},
                            {"myapp", ""},
                            {"ls_az=", ""},
                            {"xls_az=q", ""}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        ls_client_zone(ids[i][0], strlen(ids[i][0]), z, sizeof z);
        CHECK(strcmp(z, ids[i][1]) == 0);
    }
    ls_client_zone("ls_az=0123456789", 16, z, 5);
    CHECK(strcmp(z, "0123") == 0);
}

static int changes;
static void on_change(void *arg) { __atomic_add_fetch(&changes, 1, __ATOMIC_SEQ_CST); }

static int wait_members(ls_membership_t *m, int want)
{
    for (int i = 0; i < 400; i++) {
        ls_member_t *v;
        int n = ls_membership_members(m, &v);
        ls_free(v);
        if (n == want) return n;
        usleep(10000);
    }
    ls_member_t *v;
    int n = ls_membership_members(m, &v);
    ls_free(v);
    return n;
}

TEST(membership_lifecycle)
{
    ls_meta_t *meta = ls_meta_mem_open();
    char err[512];
    ls_member_t a = member(1, "a"), b = member(2, "b");
    ls_membership_t *ma = ls_membership_start(meta, &a, 1000, on_change, NULL, err, sizeof err);
    CHECK(ma);
    ls_membership_t *mb = ls_membership_start(meta, &b, 1000, on_change, NULL, err, sizeof err);
    CHECK(mb);
    CHECK_EQ_INT(wait_members(ma, 2), 2);
    ls_member_t *v;
    int n = ls_membership_members(mb, &v);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(v[0].id, 1);
    CHECK(strcmp(v[0].rack, "a") == 0 && v[1].port == 9002);
    ls_free(v);
    /* the same id from another address waits, then is refused by name */
    ls_member_t dup = member(1, "");
    dup.port = 7777;
    int64_t t0 = ls_clock_mono_ms();
    CHECK(!ls_membership_start(meta, &dup, 1000, NULL, NULL, err, sizeof err));
    CHECK(ls_clock_mono_ms() - t0 >= 1000);
    CHECK(strstr(err, "broker.id 1") && strstr(err, "127.0.0.1:9001"));
    /* a clean stop deregisters at once */
    ls_membership_stop(mb);
    CHECK_EQ_INT(wait_members(ma, 1), 1);
    ls_membership_stop(ma);
    ls_meta_close(meta);
}

TEST(membership_takes_over_a_crashed_incarnation)
{
    ls_meta_t *meta = ls_meta_mem_open();
    char err[512];
    /* a registration left by a crash: same id and address, live lease */
    int64_t lease;
    CHECK_EQ_INT(ls_meta_lease_grant(meta, 60000, &lease), LS_OK);
    const char *val = "{\"id\":3,\"host\":\"127.0.0.1\",\"port\":9003,\"rack\":\"\"}";
    ls_meta_op_t put = {.kind = LS_META_OP_PUT,
                        .key = LS_KEY_BROKERS "0000000003",
                        .klen = strlen(LS_KEY_BROKERS "0000000003"),
                        .val = val,
                        .vlen = strlen(val),
                        .lease = lease};
    CHECK_EQ_INT(ls_meta_txn(meta, NULL, 0, &put, 1, NULL), LS_OK);
    ls_member_t c = member(3, "");
    int64_t t0 = ls_clock_mono_ms();
    ls_membership_t *mc = ls_membership_start(meta, &c, 1000, NULL, NULL, err, sizeof err);
    CHECK(mc);
    CHECK(ls_clock_mono_ms() - t0 < 1000);
    /* the old lease was revoked: keepalive on it fails */
    CHECK_EQ_INT(ls_meta_lease_keepalive(meta, lease), LS_ENOTFOUND);
    ls_membership_stop(mc);
    ls_meta_close(meta);
}

TEST(registration_survives_lost_answers_and_failed_writes)
{
    char err[512];
    /* every write is applied but reported failed; then every other one fails */
    const char *urls[] = {"faulty+mem://?lost_ack_rate=1", "faulty+mem://?txn_error_rate=0.5"};
    for (size_t i = 0; i < 2; i++) {
        ls_meta_t *meta = ls_meta_open(urls[i], err, sizeof err);
        CHECK(meta);
        ls_member_t a = member(7, "");
        ls_membership_t *ma = ls_membership_start(meta, &a, 1000, NULL, NULL, err, sizeof err);
        CHECK(ma);
        ls_member_t *v;
        int n = ls_membership_members(ma, &v);
        CHECK(n == 1 && v[0].id == 7);
        ls_free(v);
        ls_membership_stop(ma);
        ls_meta_close(meta);
    }
}

TEST(member_decode_rejects_garbage)
{
    ls_member_t m;
    CHECK(ls_member_decode((const uint8_t *)"{", 1, &m) != 0);
    CHECK(ls_member_decode((const uint8_t *)"{\"id\":\"x\"}", 10, &m) != 0);
    const char *ok = "{\"id\":5,\"host\":\"h\",\"port\":1}";
    CHECK(ls_member_decode((const uint8_t *)ok, strlen(ok), &m) == 0);
    CHECK_EQ_INT(m.id, 5);
    CHECK(m.rack[0] == 0);
}

int main(void)
{
    RUN(placement_spreads_and_is_stable);
    RUN(placement_prefers_the_clients_zone);
    RUN(client_zone_hint);
    RUN(membership_lifecycle);
    RUN(membership_takes_over_a_crashed_incarnation);
    RUN(registration_survives_lost_answers_and_failed_writes);
    RUN(member_decode_rejects_garbage);
    UNIT_DONE();
}
