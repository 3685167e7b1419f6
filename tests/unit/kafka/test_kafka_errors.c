/* Kafka's error codes (generated from src/kafka/messages/errors.txt into
 * kafka/msg_gen.{h,c}): names and retriability as Kafka's clients see them. */
#include <string.h>

#include "kafka/msg_gen.h"
#include "unit.h"

TEST(names_are_kafkas)
{
    CHECK(strcmp(ls_kafka_error_name(LS_KERR_NONE), "NONE") == 0);
    CHECK(strcmp(ls_kafka_error_name(-1), "UNKNOWN_SERVER_ERROR") == 0);
    CHECK(strcmp(ls_kafka_error_name(3), "UNKNOWN_TOPIC_OR_PARTITION") == 0);
    CHECK(strcmp(ls_kafka_error_name(6), "NOT_LEADER_OR_FOLLOWER") == 0);
    CHECK(strcmp(ls_kafka_error_name(114), "MISMATCHED_ENDPOINT_TYPE") == 0);
    CHECK(strcmp(ls_kafka_error_name(115), "UNSUPPORTED_ENDPOINT_TYPE") == 0);
    CHECK(strcmp(ls_kafka_error_name(LS_KERR_SHARE_SESSION_LIMIT_REACHED),
                 "SHARE_SESSION_LIMIT_REACHED") == 0);
}
TEST(codes_are_kafkas)
{ /* a few the handlers used to define by hand */
    CHECK_EQ_INT(LS_KERR_INVALID_REPLICA_ASSIGNMENT, 39);
    CHECK_EQ_INT(LS_KERR_LOG_DIR_NOT_FOUND, 57);
    CHECK_EQ_INT(LS_KERR_FETCH_SESSION_ID_NOT_FOUND, 70);
    CHECK_EQ_INT(LS_KERR_ELECTION_NOT_NEEDED, 84);
    CHECK_EQ_INT(LS_KERR_INVALID_UPDATE_VERSION, 95);
    CHECK_EQ_INT(LS_KERR_INVALID_RECORD_STATE, 121);
    CHECK_EQ_INT(LS_KERR_SHARE_SESSION_NOT_FOUND, 122);
    CHECK_EQ_INT(LS_KERR_INVALID_SHARE_SESSION_EPOCH, 123);
    CHECK_EQ_INT(LS_KERR_SHARE_SESSION_LIMIT_REACHED, 133);
}
TEST(unknown_codes_have_no_name)
{
    CHECK(ls_kafka_error_name(-2) == NULL);
    CHECK(ls_kafka_error_name(9999) == NULL);
    CHECK(ls_kafka_error_name(-32768) == NULL);
    CHECK(!ls_kafka_error_retriable(9999));
}
TEST(every_code_named_once)
{ /* the list is dense from -1 up to its last code; names differ */
    int last = -1;
    while (ls_kafka_error_name(last + 1))
        last++;
    CHECK(last >= LS_KERR_SHARE_SESSION_LIMIT_REACHED);
    for (int a = -1; a <= last; a++) {
        CHECK(ls_kafka_error_name(a) != NULL);
        for (int b = a + 1; b <= last; b++)
            CHECK(strcmp(ls_kafka_error_name(a), ls_kafka_error_name(b)) != 0);
    }
}
TEST(retriable_as_kafka)
{ /* RetriableException subclasses in Kafka's clients */
    CHECK(ls_kafka_error_retriable(LS_KERR_NOT_COORDINATOR));
    CHECK(ls_kafka_error_retriable(LS_KERR_COORDINATOR_LOAD_IN_PROGRESS));
    CHECK(ls_kafka_error_retriable(LS_KERR_UNKNOWN_TOPIC_OR_PARTITION));
    CHECK(ls_kafka_error_retriable(LS_KERR_NOT_LEADER_OR_FOLLOWER));
    CHECK(ls_kafka_error_retriable(LS_KERR_REQUEST_TIMED_OUT));
    CHECK(ls_kafka_error_retriable(LS_KERR_CONCURRENT_TRANSACTIONS));
    CHECK(ls_kafka_error_retriable(LS_KERR_SHARE_SESSION_NOT_FOUND));
    CHECK(!ls_kafka_error_retriable(LS_KERR_NONE));
    CHECK(!ls_kafka_error_retriable(LS_KERR_UNKNOWN_SERVER_ERROR));
    CHECK(!ls_kafka_error_retriable(LS_KERR_OFFSET_OUT_OF_RANGE));
    CHECK(!ls_kafka_error_retriable(LS_KERR_TOPIC_AUTHORIZATION_FAILED));
    CHECK(!ls_kafka_error_retriable(LS_KERR_INVALID_REQUEST));
    CHECK(!ls_kafka_error_retriable(LS_KERR_PRODUCER_FENCED));
    CHECK(!ls_kafka_error_retriable(LS_KERR_MISMATCHED_ENDPOINT_TYPE));
}

int main(void)
{
    RUN(names_are_kafkas);
    RUN(codes_are_kafkas);
    RUN(unknown_codes_have_no_name);
    RUN(every_code_named_once);
    RUN(retriable_as_kafka);
    UNIT_DONE();
}
