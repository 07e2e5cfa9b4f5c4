/* Version and ABI queries, and the status codes of docs/CONTRACT.md section 3.2. */
#include "check.h"

#include <stdint.h>

static void version_matches_the_header(void) {
    char expected[64];
    snprintf(expected, sizeof expected, "%d.%d.%d", MOONCAKE_META_VERSION_MAJOR,
             MOONCAKE_META_VERSION_MINOR, MOONCAKE_META_VERSION_PATCH);
    CHECK_STR_EQ(MOONCAKE_META_VERSION_STRING, expected);
    CHECK_STR_EQ(mooncake_meta_version(), MOONCAKE_META_VERSION_STRING);
}

static void abi_version_is_one_in_header_and_library(void) {
    CHECK_EQ_INT(MOONCAKE_META_ABI_VERSION, 1);
    CHECK_EQ_INT(mooncake_meta_abi_version(), MOONCAKE_META_ABI_VERSION);
}

static void status_codes_are_the_contract_values(void) {
    static const struct {
        mooncake_meta_status code;
        int32_t expected;
        const char *name;
    } table[] = {
        {MOONCAKE_META_OK, 0, "OK"},
        {MOONCAKE_META_INTERNAL_ERROR, -1, "INTERNAL_ERROR"},
        {MOONCAKE_META_SEGMENT_NOT_FOUND, -101, "SEGMENT_NOT_FOUND"},
        {MOONCAKE_META_SEGMENT_ALREADY_EXISTS, -102, "SEGMENT_ALREADY_EXISTS"},
        {MOONCAKE_META_NO_AVAILABLE_HANDLE, -200, "NO_AVAILABLE_HANDLE"},
        {MOONCAKE_META_INVALID_PARAMS, -600, "INVALID_PARAMS"},
        {MOONCAKE_META_ILLEGAL_CLIENT, -601, "ILLEGAL_CLIENT"},
        {MOONCAKE_META_INVALID_WRITE, -700, "INVALID_WRITE"},
        {MOONCAKE_META_REPLICA_IS_NOT_READY, -703, "REPLICA_IS_NOT_READY"},
        {MOONCAKE_META_OBJECT_NOT_FOUND, -704, "OBJECT_NOT_FOUND"},
        {MOONCAKE_META_OBJECT_ALREADY_EXISTS, -705, "OBJECT_ALREADY_EXISTS"},
        {MOONCAKE_META_OBJECT_HAS_LEASE, -706, "OBJECT_HAS_LEASE"},
        {MOONCAKE_META_OBJECT_HAS_REPLICATION_TASK, -708, "OBJECT_HAS_REPLICATION_TASK"},
        {MOONCAKE_META_OBJECT_NO_REPLICATION_TASK, -709, "OBJECT_NO_REPLICATION_TASK"},
        {MOONCAKE_META_REPLICA_NOT_FOUND, -710, "REPLICA_NOT_FOUND"},
        {MOONCAKE_META_REPLICA_IS_GONE, -712, "REPLICA_IS_GONE"},
        {MOONCAKE_META_OBJECT_REPLICA_BUSY, -714, "OBJECT_REPLICA_BUSY"},
        {MOONCAKE_META_UNAVAILABLE_IN_CURRENT_STATUS, -1010, "UNAVAILABLE_IN_CURRENT_STATUS"},
        {MOONCAKE_META_SERIALIZE_FAIL, -1501, "SERIALIZE_FAIL"},
        {MOONCAKE_META_DESERIALIZE_FAIL, -1502, "DESERIALIZE_FAIL"},
        {MOONCAKE_META_NULL_ARGUMENT, -9001, "NULL_ARGUMENT"},
        {MOONCAKE_META_INVALID_UTF8, -9002, "INVALID_UTF8"},
        {MOONCAKE_META_BUFFER_TOO_SMALL, -9003, "BUFFER_TOO_SMALL"},
        {MOONCAKE_META_STRUCT_SIZE_UNSUPPORTED, -9004, "STRUCT_SIZE_UNSUPPORTED"},
        {MOONCAKE_META_UNKNOWN_FLAGS, -9005, "UNKNOWN_FLAGS"},
        {MOONCAKE_META_PANIC, -9006, "PANIC"},
        {MOONCAKE_META_STALE_WRITE_TOKEN, -9007, "STALE_WRITE_TOKEN"},
        {MOONCAKE_META_CLOCK_UNSUPPORTED, -9008, "CLOCK_UNSUPPORTED"},
        {MOONCAKE_META_GROUP_RETENTION_FULL, -9009, "GROUP_RETENTION_FULL"},
        {MOONCAKE_META_JOURNAL_OVERRUN, -9010, "JOURNAL_OVERRUN"},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        CHECK_EQ_INT(table[i].code, table[i].expected);
        CHECK_STR_EQ(mooncake_meta_status_name(table[i].code), table[i].name);
    }
    CHECK_STR_EQ(mooncake_meta_status_name(-2), "UNKNOWN_STATUS");
    CHECK_STR_EQ(mooncake_meta_status_name(INT32_MIN), "UNKNOWN_STATUS");
    CHECK_EQ_INT(sizeof(mooncake_meta_status), 4);
}

int main(void) {
    RUN_TEST(version_matches_the_header);
    RUN_TEST(abi_version_is_one_in_header_and_library);
    RUN_TEST(status_codes_are_the_contract_values);
    return check_summary("test_version");
}
