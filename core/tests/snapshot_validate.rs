//! validate(): one test per structural rule of docs/CONTRACT.md §6 "Failure" (and
//! the ordering rules behind canonical encoding). Each rejection is checked
//! through validate() and through decode(encode(..)), the restore path.

mod snapshot_support;

use mooncake_meta_core::snapshot::codec::{decode, encode, validate};
use mooncake_meta_core::snapshot::image::TaskImage;
use mooncake_meta_core::snapshot::image::{LocationRecord, SnapshotImage};
use mooncake_meta_core::{ErrorKind, MAX_INSTANT, MAX_MOUNTED_BYTES};
use snapshot_support::*;

fn base() -> SnapshotImage {
    let img = representative();
    validate(&img).expect("the base image is valid");
    img
}

fn index(img: &SnapshotImage, tenant: &str, key: &str) -> usize {
    img.objects
        .iter()
        .position(|o| o.tenant == tenant && o.key == key)
        .unwrap()
}

/// The object every rule below tampers with: one memory replica in "mem-a".
fn plain(img: &mut SnapshotImage) -> &mut mooncake_meta_core::snapshot::image::ObjectRecord {
    let i = index(img, "default", "plain");
    &mut img.objects[i]
}

fn buffer_of(img: &mut SnapshotImage) -> (&mut String, &mut u64, &mut u64) {
    match &mut plain(img).replicas[0].location {
        LocationRecord::Buffer {
            segment,
            address,
            len,
        } => (segment, address, len),
        LocationRecord::LocalDisk { .. } => unreachable!("plain has a buffer replica"),
    }
}

#[track_caller]
fn assert_rejected(img: &SnapshotImage, needle: &str) {
    let err = validate(img).expect_err("validate should reject");
    assert_eq!(err.kind(), ErrorKind::DeserializeFail, "{err}");
    assert!(
        err.message().contains(needle),
        "{:?} lacks {needle:?}",
        err.message()
    );
    let via_decode = decode(&encode(img)).expect_err("decode should reject");
    assert_eq!(via_decode, err, "decode reports the validate error");
}

#[track_caller]
fn assert_accepted(img: &SnapshotImage) {
    validate(img).expect("validate should accept");
    assert_eq!(&decode(&encode(img)).unwrap(), img);
}

/// `rule!(name, |img| mutation, "message fragment")`: one test per rule.
macro_rules! rejects {
    ($name:ident, |$img:ident| $mutate:expr, $needle:expr) => {
        #[test]
        fn $name() {
            let mut $img = base();
            $mutate;
            assert_rejected(&$img, $needle);
        }
    };
}

macro_rules! accepts {
    ($name:ident, |$img:ident| $mutate:expr) => {
        #[test]
        fn $name() {
            #[allow(unused_mut)] // some checks only look
            let mut $img = base();
            $mutate;
            assert_accepted(&$img);
        }
    };
}

// Timestamps within [0, MAX_INSTANT].
rejects!(
    created_at_beyond_max_instant,
    |img| img.created_at = MAX_INSTANT + 1,
    "snapshot created_at 9223372036854775808 is beyond MAX_INSTANT"
);
rejects!(
    put_start_beyond_max_instant,
    |img| plain(&mut img).put_start = MAX_INSTANT + 1,
    "put_start"
);
rejects!(
    lease_beyond_max_instant,
    |img| plain(&mut img).lease = u64::MAX,
    "key \"plain\"): lease 18446744073709551615 is beyond MAX_INSTANT"
);
rejects!(
    soft_pin_deadline_beyond_max_instant,
    |img| plain(&mut img).soft_pin_deadline = Some(MAX_INSTANT + 1),
    "soft_pin_deadline"
);
rejects!(
    group_lease_beyond_max_instant,
    |img| img.groups[0].lease = MAX_INSTANT + 1,
    "group 0 (tenant \"default\", name \"g1\"): lease"
);
// A committed deadline is never 0: a record spells 0 as none.
rejects!(
    soft_pin_deadline_zero,
    |img| plain(&mut img).soft_pin_deadline = Some(0),
    "soft_pin_deadline is 0"
);
// A standby resumes after journal_seq: the last sequence a journal can
// number is the largest (u64::MAX names no record).
rejects!(
    journal_seq_beyond_the_last_sequence,
    |img| img.journal_seq = u64::MAX,
    "journal_seq 18446744073709551615 is beyond the last journal sequence"
);
accepts!(journal_seq_at_the_last_sequence, |img| img.journal_seq =
    u64::MAX - 1);

// Two writes in flight never share a token (an End names its write by it).
#[test]
fn writes_in_flight_sharing_a_token_are_rejected() {
    let mut img = representative_live();
    validate(&img).expect("the live image is valid");
    let token = |img: &SnapshotImage, t: &str, k: &str| {
        img.objects
            .iter()
            .position(|o| o.tenant == t && o.key == k)
            .unwrap()
    };
    let a = token(&img, "default", "writing-disable");
    let b = token(&img, "tenant-b", "writing-preserve");
    img.objects[b].write_token = img.objects[a].write_token;
    assert_rejected(&img, "both writes in flight have write token");
}

// Formats 1 to 4 list no writes in flight: a standby takes every object
// with a PROCESSING replica as writing (keyed by its token), so two such
// objects never share a token either, with the format-5 message.
#[test]
fn inferred_writes_of_an_image_without_live_state_sharing_a_token_are_rejected() {
    for journal_seq in [0, 7] {
        let mut img = base();
        img.journal_seq = journal_seq;
        assert!(!img.has_live_state());
        let writing = index(&img, "default", "every-kind");
        let token = img.objects[writing].write_token;
        let o = plain(&mut img);
        o.replicas[0].status = PROCESSING;
        o.write_token = token;
        assert_rejected(
            &img,
            &format!(
                "object 0 (tenant \"default\", key \"every-kind\") and object 4 (tenant \
                 \"default\", key \"plain\"): both writes in flight have write token {token}"
            ),
        );
        // Its own token again: two writes, two tokens.
        plain(&mut img).write_token = token + 1;
        assert_accepted(&img);
    }
}

// A task's replicas are what a master holds while it runs (a standby
// installs the task as stored, and its End or Revoke acts on them): each
// target still held is a PROCESSING buffer replica (MEMORY for a
// promotion), the source, if still held, a COMPLETE buffer replica.
fn live() -> SnapshotImage {
    let img = representative_live();
    validate(&img).expect("the live image is valid");
    img
}

fn live_object<'a>(
    img: &'a mut SnapshotImage,
    tenant: &str,
    key: &str,
) -> &'a mut mooncake_meta_core::snapshot::image::ObjectRecord {
    let i = index(img, tenant, key);
    &mut img.objects[i]
}

/// `rejects_live!(name, |img| mutation, "message fragment")`: as
/// `rejects!`, on [`representative_live`].
macro_rules! rejects_live {
    ($name:ident, |$img:ident| $mutate:expr, $needle:expr) => {
        #[test]
        fn $name() {
            let mut $img = live();
            $mutate;
            assert_rejected(&$img, $needle);
        }
    };
}

rejects_live!(
    complete_copy_target_is_rejected,
    |img| live_object(&mut img, "default", "every-kind").replicas[1].status = COMPLETE,
    "task 0 (tenant \"default\", key \"every-kind\"): target 3 is a COMPLETE Memory replica, \
     not a PROCESSING buffer replica"
);
rejects_live!(
    local_disk_copy_target_is_rejected,
    |img| img.tasks[0].task = TaskImage::Copy {
        source: 2,
        targets: vec![3, 7],
    },
    "task 0 (tenant \"default\", key \"every-kind\"): target 7 is a PROCESSING LocalDisk \
     replica, not a PROCESSING buffer replica"
);
rejects_live!(
    complete_move_target_is_rejected,
    |img| live_object(&mut img, "tenant-b", "plain").replicas[1].status = COMPLETE,
    "task 1 (tenant \"tenant-b\", key \"plain\"): target 21 is a COMPLETE Memory replica"
);
rejects_live!(
    nof_ssd_promotion_target_is_rejected,
    |img| {
        let r = &mut live_object(&mut img, "租户-β", "a\0b").replicas[1];
        assert_eq!(r.id, 13);
        r.kind = NOF_SSD;
        r.location = LocationRecord::Buffer {
            segment: "ssd-a".into(),
            address: 1 << 20,
            len: 3,
        };
    },
    "task 2 (tenant \"租户-β\", key \"a\\0b\"): target 13 is a PROCESSING NofSsd replica, \
     not a PROCESSING Memory replica"
);
rejects_live!(
    local_disk_promotion_target_is_rejected,
    |img| img.tasks[2].task = TaskImage::Promotion { target: 12 },
    "target 12 is a COMPLETE LocalDisk replica, not a PROCESSING Memory replica"
);
rejects_live!(
    processing_copy_source_is_rejected,
    |img| img.tasks[0].task = TaskImage::Copy {
        source: 5,
        targets: vec![3],
    },
    "task 0 (tenant \"default\", key \"every-kind\"): source 5 is a PROCESSING NofSsd \
     replica, not a COMPLETE buffer replica"
);
rejects_live!(
    local_disk_copy_source_is_rejected,
    |img| img.tasks[0].task = TaskImage::Copy {
        source: 6,
        targets: vec![3],
    },
    "source 6 is a COMPLETE LocalDisk replica, not a COMPLETE buffer replica"
);

// A task's ids are below the counter, held or not: a later replica could
// otherwise be given one of them and be taken for the task's target.
rejects_live!(
    task_target_at_the_counter_is_rejected,
    |img| {
        let n = img.next_replica_id;
        img.tasks[0].task = TaskImage::Copy {
            source: 2,
            targets: vec![3, n],
        };
    },
    "task 0 (tenant \"default\", key \"every-kind\"): replica id"
);
rejects_live!(
    task_source_past_the_counter_is_rejected,
    |img| {
        live_object(&mut img, "tenant-b", "plain")
            .replicas
            .remove(0); // move source 20
        img.tasks[1].task = TaskImage::Move {
            source: u64::MAX,
            target: 21,
        };
    },
    "replica id 18446744073709551615 is not below next_replica_id"
);

#[test]
fn task_replicas_an_unmount_took_are_valid() {
    // An unmount drops a source's or a target's replica and leaves the task
    // (it fails at its End): what is no longer held is not checked.
    let mut img = live();
    live_object(&mut img, "tenant-b", "plain")
        .replicas
        .remove(0); // move source 20
    img.tasks[0].task = TaskImage::Copy {
        source: 2,
        targets: vec![3, 18], // 18 held by no object
    };
    assert_accepted(&img);
}

accepts!(timestamps_at_max_instant_are_valid, |img| {
    img.created_at = MAX_INSTANT;
    img.groups[0].lease = MAX_INSTANT;
    plain(&mut img).soft_pin_deadline = Some(MAX_INSTANT);
});

// Keys and replica ids are unique.
rejects!(
    duplicate_key_is_rejected,
    |img| {
        let i = index(&img, "default", "grouped-1");
        img.objects[i + 1].key = "grouped-1".into();
    },
    "object 2 (tenant \"default\", key \"grouped-1\"): duplicate of its predecessor"
);
rejects!(
    unsorted_objects_are_rejected,
    |img| img.objects.swap(0, 1),
    "not sorted"
);
accepts!(same_key_in_two_tenants_is_valid, |img| {
    assert!(img.objects.iter().filter(|o| o.key == "plain").count() == 2);
});
rejects!(
    duplicate_creation_sequence_is_rejected,
    |img| {
        let i = index(&img, "tenant-b", "plain");
        img.objects[i].seq = img.objects[0].seq;
    },
    "creation sequence"
);
rejects!(duplicate_replica_id_across_objects_is_rejected, |img| {
    let i = index(&img, "tenant-b", "plain");
    img.objects[i].replicas[0].id = 1;
}, "replica id 1 is used by object 4 (tenant \"default\", key \"plain\") and object 6 (tenant \"tenant-b\"");
rejects!(
    duplicate_replica_id_within_an_object_is_rejected,
    |img| {
        let i = index(&img, "default", "every-kind");
        img.objects[i].replicas[1].id = 2;
    },
    "replica 1 (id 2): duplicate of its predecessor"
);
rejects!(
    unsorted_replicas_are_rejected,
    |img| {
        let i = index(&img, "default", "every-kind");
        img.objects[i].replicas.swap(2, 3);
    },
    "replica 3 (id 4): not sorted"
);

// Stored ids are below the persisted counters.
rejects!(
    replica_id_at_the_counter_is_rejected,
    |img| {
        let next = img.next_replica_id;
        plain(&mut img).replicas[0].id = next;
    },
    "id is not below next_replica_id"
);
rejects!(
    object_seq_at_the_counter_is_rejected,
    |img| {
        let next = img.next_object_seq;
        plain(&mut img).seq = next;
    },
    "is not below next_object_seq"
);
rejects!(
    write_token_at_the_counter_is_rejected,
    |img| {
        let next = img.next_write_token;
        plain(&mut img).write_token = next + 5;
    },
    "is not below next_write_token"
);

// Buffers live inside known segments of the right pool, without overlap.
rejects!(
    buffer_on_unknown_segment_is_rejected,
    |img| *buffer_of(&mut img).0 = "gone".into(),
    "unknown segment \"gone\""
);
rejects!(
    buffer_below_segment_base_is_rejected,
    |img| *buffer_of(&mut img).1 = 0x1000_0000 - 1,
    "lies outside segment \"mem-a\""
);
rejects!(
    buffer_past_segment_end_is_rejected,
    |img| *buffer_of(&mut img).1 = 0x1000_0000 + 64 * MB - 4095,
    "lies outside segment"
);
rejects!(
    buffer_address_overflow_is_rejected,
    |img| *buffer_of(&mut img).1 = u64::MAX - 10,
    "lies outside segment"
);
accepts!(buffer_ending_at_segment_end_is_valid, |img| *buffer_of(
    &mut img
)
.1 =
    0x1000_0000 + 64 * MB - 4096);
rejects!(
    overlapping_buffers_are_rejected,
    |img| *buffer_of(&mut img).1 = 0x1000_3000 + 63,
    "buffers overlap in segment \"mem-a\""
);
rejects!(
    buffer_inside_another_is_rejected,
    |img| {
        // every-kind's replica spans [0x1000_1000, 0x1000_3000); a small buffer
        // in its middle overlaps it but not its neighbours.
        let o = plain(&mut img);
        o.size = 16;
        if let LocationRecord::Buffer { address, len, .. } = &mut o.replicas[0].location {
            *address = 0x1000_2000;
            *len = 16;
        }
    },
    "buffers overlap"
);
accepts!(touching_buffers_are_valid, |img| {
    // plain ends exactly where every-kind starts in the base image.
    let (_, address, len) = buffer_of(&mut img);
    assert_eq!(*address + *len, 0x1000_1000);
});
accepts!(same_range_in_another_segment_is_valid, |img| {
    let i = index(&img, "tenant-b", "plain");
    if let LocationRecord::Buffer { address, .. } = &mut img.objects[i].replicas[0].location {
        *address = 0x2000_0000 + 64 * MB - 4096;
    }
    *buffer_of(&mut img).1 = 0x1000_0000;
});
rejects!(
    buffer_length_differing_from_size_is_rejected,
    |img| *buffer_of(&mut img).2 = 4095,
    "buffer length 4095 differs from object size 4096"
);
rejects!(
    zero_size_object_is_rejected,
    |img| {
        plain(&mut img).size = 0;
        *buffer_of(&mut img).2 = 0;
    },
    "size is 0"
);
rejects!(
    memory_replica_in_nof_ssd_segment_is_rejected,
    |img| *buffer_of(&mut img).0 = "ssd-a".into(),
    "a Memory replica cannot live in segment \"ssd-a\" of pool 1"
);
rejects!(
    nof_ssd_replica_in_memory_segment_is_rejected,
    |img| plain(&mut img).replicas[0].kind = NOF_SSD,
    "a NofSsd replica cannot live in segment \"mem-a\" of pool 0"
);
rejects!(
    local_disk_kind_with_buffer_is_rejected,
    |img| plain(&mut img).replicas[0].kind = LOCAL_DISK,
    "must have a local-disk location"
);
rejects!(
    memory_kind_with_local_disk_location_is_rejected,
    |img| {
        plain(&mut img).replicas[0].location = LocationRecord::LocalDisk { client: 1 };
    },
    "a Memory replica cannot have a local-disk location"
);
rejects!(
    segment_range_overflow_is_rejected,
    |img| img.segments[0].size = u64::MAX,
    "overflows"
);
// What a mount refuses, decode refuses (restore could not mount it): a
// segment of size 0, and a mounted total above MAX_MOUNTED_BYTES.
rejects!(
    zero_size_segment_is_rejected,
    |img| img.segments[2].size = 0,
    "segment 2 (\"mem-empty\"): size is 0"
);
rejects!(
    mounted_total_above_max_mounted_bytes_is_rejected,
    |img| img.segments[3].size = MAX_MOUNTED_BYTES - 64 * MB,
    &format!(
        "segment 3 (\"ssd-a\"): size {} brings the mounted total above {MAX_MOUNTED_BYTES} bytes",
        MAX_MOUNTED_BYTES - 64 * MB
    )
);
// A client's segments of one pool cover distinct bytes (docs/CONTRACT.md
// section 2): "mem-a" and "mem-b" are one client's, at 0x1000_0000 and
// 0x2000_0000. Another pool, or another client, may use the same addresses.
rejects!(
    overlapping_segments_of_a_client_in_a_pool_are_rejected,
    |img| img.segments[0].size = 0x1000_0000 + 1,
    "segments \"mem-a\" [0x10000000, 0x20000001) and \"mem-b\" [0x20000000, 0x24000000) of client"
);
accepts!(segments_of_a_client_that_touch_are_valid, |img| {
    img.segments[0].size = 0x1000_0000;
});
accepts!(
    segments_of_two_clients_over_the_same_bytes_are_valid,
    |img| {
        img.segments[0].size = 0x1000_0000 + 1;
        img.segments[1].owner += 100;
    }
);
accepts!(mounted_total_of_max_mounted_bytes_is_valid, |img| {
    let others: u64 = img.segments.iter().map(|s| s.size).sum::<u64>() - img.segments[3].size;
    img.segments[3].size = MAX_MOUNTED_BYTES - others;
    // It now covers "ssd-b"'s bytes: make that another client's.
    img.segments[4].owner += 100;
});

// Names.
rejects!(
    empty_key_is_rejected,
    |img| {
        img.objects[0].key.clear();
    },
    "key is empty"
);
rejects!(
    empty_tenant_is_rejected,
    |img| {
        for o in &mut img.objects {
            if o.tenant == "default" {
                o.tenant.clear();
                o.group = None;
            }
        }
    },
    "tenant is empty"
);
rejects!(
    tenant_with_nul_is_rejected,
    |img| {
        let last = img.objects.len() - 1;
        img.objects[last].tenant.push('\0');
    },
    "tenant contains NUL"
);
accepts!(key_with_nul_is_valid, |img| {
    assert!(img.objects.iter().any(|o| o.key.contains('\0')));
});
rejects!(
    empty_segment_name_is_rejected,
    |img| img.segments[0].name.clear(),
    "segment 0 (\"\"): name is empty"
);
rejects!(
    segment_name_with_nul_is_rejected,
    |img| img.segments[0].name.insert(0, '\0'),
    "name contains NUL"
);
rejects!(
    group_name_with_nul_is_rejected,
    |img| img.groups[2].name.push('\0'),
    "group 2 (tenant \"租户-β\", name \"unused\\0\"): name contains NUL"
);
rejects!(
    group_tenant_with_nul_is_rejected,
    |img| img.groups[2].tenant.push('\0'),
    "tenant contains NUL"
);
rejects!(
    empty_group_name_is_rejected,
    |img| img.groups[0].name.clear(),
    "name is empty"
);

// Groups.
rejects!(
    unknown_group_is_rejected,
    |img| plain(&mut img).group = Some("nope".into()),
    "group \"nope\" is not in the group list of its tenant"
);
rejects!(
    group_of_another_tenant_is_rejected,
    |img| plain(&mut img).group = Some("unused".into()),
    "group \"unused\""
);
accepts!(objects_sharing_a_group_are_valid, |img| plain(&mut img)
    .group =
    Some("g1".into()));
rejects!(
    duplicate_group_is_rejected,
    |img| {
        img.groups[1].tenant = "default".into();
    },
    "group 1 (tenant \"default\", name \"g1\"): duplicate of its predecessor"
);
rejects!(
    unsorted_segments_are_rejected,
    |img| img.segments.swap(1, 2),
    "not sorted"
);
rejects!(
    duplicate_segment_is_rejected,
    |img| img.segments[1].name = "mem-a".into(),
    "duplicate of its predecessor"
);

// Enum values of an in-memory image. decode refuses the byte itself, with
// a byte-level message, before validate would see it.
macro_rules! rejects_enum {
    ($name:ident, |$img:ident| $mutate:expr, $needle:expr, $decode_needle:expr) => {
        #[test]
        fn $name() {
            let mut $img = base();
            $mutate;
            let err = validate(&$img).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::DeserializeFail);
            assert!(err.message().contains($needle), "{err}");
            let err = decode(&encode(&$img)).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::DeserializeFail);
            assert!(err.message().contains($decode_needle), "{err}");
        }
    };
}

rejects_enum!(
    pool_out_of_range_is_rejected,
    |img| img.segments[0].pool = 2,
    "pool 2 is not 0 or 1",
    "bad byte 2 in segment 0 (pool)"
);
rejects_enum!(
    kind_out_of_range_is_rejected,
    |img| plain(&mut img).replicas[0].kind = 3,
    "kind 3 is not 0, 1 or 2",
    "bad byte 3 in object 4 replica 0 (kind)"
);
rejects_enum!(
    status_out_of_range_is_rejected,
    |img| plain(&mut img).replicas[0].status = 2,
    "status 2 is not 0 or 1",
    "bad byte 2 in object 4 replica 0 (status)"
);

#[test]
fn overlap_check_scales_to_many_buffers() {
    // 200k packed buffers in one segment, the last one overlapping the first:
    // an O(n^2) check would not finish; the sort-based one takes milliseconds.
    let mut img = generated(100_000);
    validate(&img).unwrap();
    let last = img.objects.len() - 1;
    let first_addr = match &img.objects[0].replicas[0].location {
        LocationRecord::Buffer { address, .. } => *address,
        LocationRecord::LocalDisk { .. } => unreachable!(),
    };
    if let LocationRecord::Buffer { address, .. } = &mut img.objects[last].replicas[0].location {
        *address = first_addr;
    }
    let err = validate(&img).unwrap_err();
    assert!(
        err.message().contains("buffers overlap in segment \"m\""),
        "{err}"
    );
}

#[test]
fn a_copy_with_100_000_targets_is_checked_replica_by_replica() {
    // Each replica is looked up in the task's targets (a binary search, so
    // validation stays O(n log n); this checks the answers, not the time).
    let n = 100_000;
    let img = copy_with_targets(n, 1_700_000_999_000);
    assert_accepted(&img);
    // The write's replica is the one that is no target.
    let mut unlisted = img.clone();
    unlisted.in_flight.clear();
    assert_rejected(
        &unlisted,
        "object 0 (tenant \"default\", key \"o\"): a PROCESSING replica of a write, but no \
         write in flight is listed",
    );
    let mut no_write = img.clone();
    no_write.objects[0].replicas.pop();
    assert_rejected(
        &no_write,
        "write in flight 0 (tenant \"default\", key \"o\"): its object has no PROCESSING \
         replica of a write",
    );
    // Every target is checked, the last one included.
    let mut last_complete = img.clone();
    last_complete.objects[0].replicas[n as usize].status = COMPLETE;
    assert_rejected(
        &last_complete,
        &format!("target {n} is a COMPLETE Memory replica, not a PROCESSING buffer replica"),
    );
}
