//! The snapshot byte format: round trips, the pinned layout, canonicity and
//! every decode failure of docs/CONTRACT.md §6 ("bad magic, version, checksum or
//! length; truncation").

mod snapshot_support;

use mooncake_meta_core::snapshot::codec::{
    decode, encode, peek_created_at, validate, FORMAT_VERSION, FORMAT_VERSION_1, FORMAT_VERSION_2,
    FORMAT_VERSION_3, FORMAT_VERSION_4, HEADER_LEN, MAGIC,
};
use mooncake_meta_core::snapshot::image::{
    DiscardedRecord, InFlightRecord, ObjectRecord, RetentionRecord, SnapshotImage, SoftPinIntent,
    TaskImage, TaskRecord,
};
use mooncake_meta_core::{ErrorKind, MAX_INSTANT, MAX_MOUNTED_BYTES};
use snapshot_support::*;

/// Asserts `bytes` fail to decode with DESERIALIZE_FAIL and a message
/// containing `needle`; returns the message.
#[track_caller]
fn rejected(bytes: &[u8], needle: &str) -> String {
    let err = decode(bytes).expect_err("decode should fail");
    assert_eq!(err.kind(), ErrorKind::DeserializeFail, "{err}");
    assert!(
        err.message().contains(needle),
        "message {:?} lacks {needle:?}",
        err.message()
    );
    err.message().to_string()
}

/// Asserts `peek_created_at(bytes)` fails with DESERIALIZE_FAIL and a
/// message containing `needle`.
#[track_caller]
fn peek_rejected(bytes: &[u8], needle: &str) {
    let err = peek_created_at(bytes).expect_err("peek should fail");
    assert_eq!(err.kind(), ErrorKind::DeserializeFail, "{err}");
    assert!(
        err.message().contains(needle),
        "message {:?} lacks {needle:?}",
        err.message()
    );
}

#[track_caller]
fn assert_round_trip(img: &SnapshotImage) {
    validate(img).expect("sample image must be valid");
    let bytes = encode(img);
    let back = decode(&bytes).expect("decode of encoded image");
    assert_eq!(&back, img);
    assert_eq!(encode(&back), bytes, "encode(decode(b)) == b");
    assert_eq!(peek_created_at(&bytes).unwrap(), img.created_at);
}

// ------------------------------------------------------------ round trips

#[test]
fn empty_image_round_trips() {
    let img = SnapshotImage::default();
    assert_round_trip(&img);
    assert_eq!(encode(&img).len(), HEADER_LEN + 7 * 8);
}

#[test]
fn representative_image_round_trips() {
    assert_round_trip(&representative());
}

#[test]
fn generated_images_round_trip() {
    for n in [1, 2, 10, 300] {
        assert_round_trip(&generated(n));
    }
}

#[test]
fn segments_of_both_pools_without_objects_round_trip() {
    let img = SnapshotImage {
        created_at: 5,
        // The largest total a master mounts (MAX_MOUNTED_BYTES), to the byte.
        segments: vec![
            segment("a", 0, 0, 1),
            segment("b", 1, 0, MAX_MOUNTED_BYTES - 1),
        ],
        ..Default::default()
    };
    assert_round_trip(&img);
}

#[test]
fn saturated_timestamps_round_trip() {
    // §1: deadlines saturate at MAX_INSTANT and must be stored verbatim.
    let mut img = representative();
    img.created_at = MAX_INSTANT;
    for o in &mut img.objects {
        o.soft_pin_deadline = Some(MAX_INSTANT);
        o.lease = MAX_INSTANT;
        o.put_start = MAX_INSTANT;
    }
    for g in &mut img.groups {
        g.lease = MAX_INSTANT;
    }
    assert_round_trip(&img);
}

#[test]
fn counters_at_u64_max_round_trip() {
    let mut img = generated(3);
    img.next_replica_id = u64::MAX;
    img.next_object_seq = u64::MAX;
    img.next_write_token = u64::MAX;
    assert_round_trip(&img);
}

#[test]
fn encoding_is_deterministic() {
    assert_eq!(encode(&representative()), encode(&representative().clone()));
}

// ------------------------------------------------------------ the layout

/// One record of each kind with every optional field present; the bytes
/// are spelled out here so a layout change cannot slip through.
fn small_image() -> SnapshotImage {
    SnapshotImage {
        created_at: 7,
        wall_at_capture: None,
        journal_seq: 0,
        next_replica_id: 3,
        next_write_token: 9,
        next_object_seq: 2,
        segments: vec![segment("s", MEMORY, 100, 50)],
        groups: vec![group("t", "g", 5)],
        retention: vec![],
        objects: vec![ObjectRecord {
            tenant: "t".into(),
            key: "k".into(),
            writer: 1,
            size: 10,
            put_start: 2,
            lease: 3,
            soft_pin_deadline: Some(4),
            hard_pin: true,
            group: Some("g".into()),
            seq: 1,
            write_token: 8,
            replicas: vec![
                buffer(1, MEMORY, COMPLETE, "s", 100, 10),
                local_disk(2, PROCESSING, 6),
            ],
        }],
        ..Default::default()
    }
}

/// The bytes a field-by-field variation of [`small_image`] encodes to.
struct Small {
    pool: u8,
    deadline_tag: u8,
    hard_pin: u8,
    group_tag: u8,
    kind: u8,
    status: u8,
    location_tag: u8,
    key: &'static [u8],
}

const SMALL: Small = Small {
    pool: 0,
    deadline_tag: 1,
    hard_pin: 1,
    group_tag: 1,
    kind: 0,
    status: 1,
    location_tag: 0,
    key: b"k",
};

fn small_payload(v: Small) -> Vec<u8> {
    let mut p = counters(7, 3, 9, 2)
        .u64(1) // segments
        .str("s")
        .u64(0xC11E_0000)
        .u8(v.pool)
        .u64(100)
        .u64(50)
        .u64(1) // groups
        .str("t")
        .str("g")
        .u64(5)
        .u64(1) // objects
        .str("t")
        .raw_str(v.key)
        .u64(1)
        .u64(10)
        .u64(2)
        .u64(3)
        .u8(v.deadline_tag);
    if v.deadline_tag != 0 {
        p = p.u64(4);
    }
    p = p.u8(v.hard_pin).u8(v.group_tag);
    if v.group_tag != 0 {
        p = p.str("g");
    }
    p = p.u64(1).u64(8).u32(2); // seq, write_token, replica count
    p = p.u64(1).u8(v.kind).u8(v.status).u8(v.location_tag);
    p = if v.location_tag == 1 {
        p.u64(6)
    } else {
        p.str("s").u64(100).u64(10)
    };
    p.u64(2).u8(LOCAL_DISK).u8(PROCESSING).u8(1).u64(6).0
}

/// Format 2 is format 1 with the wall clock at capture after the four
/// counters; the header names the version.
#[test]
fn format_2_layout_carries_the_wall_after_the_counters() {
    let img = SnapshotImage {
        wall_at_capture: Some(0x5A11),
        ..small_image()
    };
    let bytes = encode(&img);
    let v1 = small_payload(SMALL);
    let mut v2 = v1[..32].to_vec();
    v2.extend_from_slice(&0x5A11u64.to_le_bytes());
    v2.extend_from_slice(&v1[32..]);
    assert_eq!(&bytes[8..12], &FORMAT_VERSION_2.to_le_bytes());
    assert_eq!(FORMAT_VERSION_2, 2);
    assert_eq!(&bytes[HEADER_LEN..], &v2[..]);
    assert_eq!(decode(&bytes).unwrap(), img);
    assert_eq!(peek_created_at(&bytes).unwrap(), 7);
}

fn retained(tenant: &str, group: &str, deadline: u64) -> RetentionRecord {
    RetentionRecord {
        tenant: tenant.into(),
        group: group.into(),
        deadline,
    }
}

/// Bytes of `small_image`'s payload up to the end of its group list: the
/// counters (32), one segment (8 + 30) and one group (8 + 18).
const SMALL_GROUPS_END: usize = 32 + 38 + 26;

/// Format 3 is format 2 with the wall as opt<u64> and the retention list
/// (count, then tenant str, group str, deadline u64 each) after the groups.
#[test]
fn format_3_layout_carries_retention_after_the_groups() {
    let img = SnapshotImage {
        wall_at_capture: Some(0x5A11),
        retention: vec![retained("t", "g", 77), retained("t", "h", MAX_INSTANT)],
        ..small_image()
    };
    let bytes = encode(&img);
    let v1 = small_payload(SMALL);
    let mut v3 = v1[..32].to_vec();
    v3.push(1);
    v3.extend_from_slice(&0x5A11u64.to_le_bytes());
    v3.extend_from_slice(&v1[32..SMALL_GROUPS_END]);
    let list = P::default()
        .u64(2)
        .str("t")
        .str("g")
        .u64(77)
        .str("t")
        .str("h")
        .u64(MAX_INSTANT);
    v3.extend_from_slice(&list.0);
    v3.extend_from_slice(&v1[SMALL_GROUPS_END..]);
    assert_eq!(&bytes[8..12], &FORMAT_VERSION_3.to_le_bytes());
    assert_eq!(FORMAT_VERSION_3, 3);
    assert_eq!(&bytes[HEADER_LEN..], &v3[..]);
    assert_round_trip(&img);
    assert_eq!(decode(&bytes).unwrap(), img);
}

#[test]
fn format_3_without_a_wall_record_round_trips() {
    let img = SnapshotImage {
        retention: vec![retained("t", "g", 77)],
        ..small_image()
    };
    let bytes = encode(&img);
    assert_eq!(&bytes[8..12], &FORMAT_VERSION_3.to_le_bytes());
    assert_eq!(bytes[HEADER_LEN + 32], 0, "wall tag: none");
    assert_round_trip(&img);
}

#[test]
fn images_without_retention_keep_their_older_versions() {
    let v1 = small_image();
    assert_eq!(&encode(&v1)[8..12], &FORMAT_VERSION_1.to_le_bytes());
    let v2 = SnapshotImage {
        wall_at_capture: Some(3),
        ..small_image()
    };
    assert_eq!(&encode(&v2)[8..12], &FORMAT_VERSION_2.to_le_bytes());
    for img in [v1, v2] {
        assert_round_trip(&img);
    }
}

/// Format 4 is format 3 with the journal sequence (u64, at least 1) after
/// the wall record, and a retention list that may be empty.
#[test]
fn format_4_layout_carries_the_journal_seq_after_the_wall() {
    for (retention, wall) in [
        (vec![], None),
        (vec![retained("t", "g", 77)], Some(0x5A11u64)),
    ] {
        let img = SnapshotImage {
            wall_at_capture: wall,
            journal_seq: 0x0102_0304,
            retention: retention.clone(),
            ..small_image()
        };
        let bytes = encode(&img);
        assert_eq!(&bytes[8..12], &FORMAT_VERSION_4.to_le_bytes());
        assert_eq!(FORMAT_VERSION_4, 4);
        let v1 = small_payload(SMALL);
        let mut v4 = v1[..32].to_vec();
        match wall {
            None => v4.push(0),
            Some(w) => {
                v4.push(1);
                v4.extend_from_slice(&w.to_le_bytes());
            }
        }
        v4.extend_from_slice(&0x0102_0304u64.to_le_bytes());
        v4.extend_from_slice(&v1[32..SMALL_GROUPS_END]);
        let mut list = P::default().u64(retention.len() as u64);
        for r in &retention {
            list = list.str(&r.tenant).str(&r.group).u64(r.deadline);
        }
        v4.extend_from_slice(&list.0);
        v4.extend_from_slice(&v1[SMALL_GROUPS_END..]);
        assert_eq!(&bytes[HEADER_LEN..], &v4[..]);
        assert_round_trip(&img);
        assert_eq!(decode(&bytes).unwrap(), img);
    }
}

#[test]
fn format_4_with_journal_seq_0_is_not_canonical() {
    // Without a journal sequence an image is encoded in format 1 to 3.
    let img = SnapshotImage {
        journal_seq: 1,
        ..small_image()
    };
    let mut b = encode(&img);
    let at = HEADER_LEN + 32 + 1;
    assert_eq!(b[at..at + 8], 1u64.to_le_bytes());
    b[at..at + 8].copy_from_slice(&0u64.to_le_bytes());
    reframe(&mut b);
    rejected(
        &b,
        &format!("format 4 snapshot with journal_seq 0, at byte {at}"),
    );
    let v3 = SnapshotImage {
        retention: vec![retained("t", "g", 77)],
        ..small_image()
    };
    assert_eq!(&encode(&v3)[8..12], &FORMAT_VERSION_3.to_le_bytes());
}

#[test]
fn format_3_without_retention_is_not_canonical() {
    // A format-3 header over a payload whose retention list is empty: such
    // an image is only ever encoded as format 1 or 2.
    let mut b = encode(&small_image())[..HEADER_LEN].to_vec();
    b[8..12].copy_from_slice(&FORMAT_VERSION_3.to_le_bytes());
    let v1 = small_payload(SMALL);
    b.extend_from_slice(&v1[..32]);
    b.push(0);
    b.extend_from_slice(&v1[32..SMALL_GROUPS_END]);
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&v1[SMALL_GROUPS_END..]);
    reframe(&mut b);
    rejected(&b, "without retention deadlines");
}

#[test]
fn format_3_retention_records_are_validated() {
    for (bad, needle) in [
        (vec![retained("", "g", 1)], "tenant is empty"),
        (vec![retained("t", "", 1)], "group is empty"),
        (vec![retained("t", "a\0b", 1)], "contains NUL"),
        (
            vec![retained("t", "g", MAX_INSTANT + 1)],
            "beyond MAX_INSTANT",
        ),
        (
            vec![retained("t", "g", 1), retained("t", "g", 2)],
            "duplicate",
        ),
        (
            vec![retained("t", "h", 1), retained("t", "g", 2)],
            "not sorted",
        ),
    ] {
        let img = SnapshotImage {
            retention: bad,
            ..small_image()
        };
        rejected(&encode(&img), needle);
    }
}

#[test]
fn format_3_truncated_inside_the_retention_list_is_rejected() {
    let img = SnapshotImage {
        retention: vec![retained("t", "g", 77)],
        ..small_image()
    };
    let bytes = encode(&img);
    // Cut after the retention count: the count claims more than follows.
    let mut b = bytes[..HEADER_LEN + 33 + SMALL_GROUPS_END - 32 + 8].to_vec();
    reframe(&mut b);
    rejected(&b, "retention list");
}

#[test]
fn format_2_wall_beyond_max_instant_is_rejected() {
    let img = SnapshotImage {
        wall_at_capture: Some(MAX_INSTANT + 1),
        ..small_image()
    };
    let e = decode(&encode(&img)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeserializeFail);
    assert!(e.message().contains("wall_at_capture"), "{}", e.message());
}

#[test]
fn format_2_cut_inside_the_wall_record_is_rejected() {
    let img = SnapshotImage {
        wall_at_capture: Some(9),
        ..Default::default()
    };
    let bytes = encode(&img);
    // A format-2 header over a format-1 payload: the wall field is missing.
    let mut b = bytes[..HEADER_LEN].to_vec();
    b.extend_from_slice(&counters(0, 0, 0, 0).u64(0).u64(0).u64(0).0);
    reframe(&mut b);
    let e = decode(&b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DeserializeFail);
}

#[test]
fn layout_matches_the_documented_bytes() {
    let bytes = encode(&small_image());
    assert_eq!(bytes, frame(&small_payload(SMALL)));
    assert_eq!(&bytes[..8], &MAGIC);
    assert_eq!(&bytes[8..12], &FORMAT_VERSION_1.to_le_bytes());
    assert_eq!(decode(&bytes).unwrap(), small_image());
}

#[test]
fn absent_options_are_a_single_zero_byte() {
    let mut img = small_image();
    img.objects[0].soft_pin_deadline = None;
    img.objects[0].group = None;
    img.objects[0].hard_pin = false;
    let payload = small_payload(Small {
        deadline_tag: 0,
        group_tag: 0,
        hard_pin: 0,
        ..SMALL
    });
    assert_eq!(encode(&img), frame(&payload));
    assert_eq!(decode(&frame(&payload)).unwrap(), img);
}

// ------------------------------------------------------------ header failures

#[test]
fn bad_magic_is_rejected() {
    let mut b = encode(&small_image());
    b[0] = b'M';
    rejected(&b, "bad magic");
    peek_rejected(&b, "bad magic");
}

#[test]
fn unknown_version_is_rejected() {
    let mut b = encode(&small_image());
    b[8..12].copy_from_slice(&6u32.to_le_bytes());
    rejected(&b, "unsupported snapshot format version 6");
    b[8..12].copy_from_slice(&0u32.to_le_bytes());
    rejected(&b, "version 0");
}

#[test]
fn nonzero_flags_are_rejected() {
    let mut b = encode(&small_image());
    b[12] = 1;
    rejected(&b, "unknown header flags 0x1");
}

#[test]
fn bad_checksum_is_rejected() {
    let mut b = encode(&small_image());
    b[24] ^= 0xFF;
    rejected(&b, "checksum mismatch");
    assert_eq!(
        peek_created_at(&b).unwrap_err().kind(),
        ErrorKind::DeserializeFail
    );
    // A flipped payload bit without a fixed checksum fails the same way.
    let mut b = encode(&small_image());
    let last = b.len() - 1;
    b[last] ^= 1;
    rejected(&b, "checksum mismatch");
}

#[test]
fn payload_length_larger_than_input_is_rejected() {
    let mut b = encode(&small_image());
    let len = (b.len() - HEADER_LEN) as u64;
    b[16..24].copy_from_slice(&(len + 1).to_le_bytes());
    rejected(&b, "truncated payload");
    b[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    rejected(&b, "truncated payload");
}

#[test]
fn payload_length_smaller_than_input_is_rejected() {
    let mut b = encode(&small_image());
    let len = (b.len() - HEADER_LEN) as u64;
    b[16..24].copy_from_slice(&(len - 1).to_le_bytes());
    rejected(&b, "1 trailing bytes after the");
}

#[test]
fn trailing_bytes_after_the_payload_are_rejected() {
    let mut b = encode(&small_image());
    b.push(0);
    rejected(&b, "trailing bytes after the");
    peek_rejected(&b, "trailing bytes after the");
}

#[test]
fn trailing_bytes_inside_the_payload_are_rejected() {
    // Length and checksum cover the extra bytes, but no record claims them.
    let mut b = encode(&small_image());
    b.extend_from_slice(&[0, 0, 0]);
    reframe(&mut b);
    rejected(&b, "3 trailing bytes inside the payload");
    // The header is fine, so peek (which does not parse records) accepts it.
    assert_eq!(peek_created_at(&b).unwrap(), 7);
}

#[test]
fn every_truncation_is_rejected() {
    for img in [SnapshotImage::default(), small_image(), representative()] {
        let full = encode(&img);
        for n in 0..full.len() {
            let cut = &full[..n];
            decode_fails(cut);
            // With the header fixed up the cut reaches the payload parser,
            // which must notice that records are missing.
            if n >= HEADER_LEN {
                let mut fixed = cut.to_vec();
                reframe(&mut fixed);
                // Either a field runs past the end, or a count promises
                // more records than the remaining bytes could hold.
                let msg = decode(&fixed).unwrap_err().message().to_string();
                assert!(
                    msg.starts_with("truncated in") || msg.contains("elements but only"),
                    "{msg}"
                );
                assert!(msg.contains(" at byte "), "{msg}");
            } else {
                rejected(cut, "truncated header");
            }
        }
    }
}

#[track_caller]
fn decode_fails(bytes: &[u8]) {
    let err = decode(bytes).expect_err("decode should fail");
    assert_eq!(err.kind(), ErrorKind::DeserializeFail, "{err}");
}

#[test]
fn truncation_names_the_record_and_field() {
    // The object count is backed by object 0's long key, so the parser gets
    // into object 1 and runs out two bytes into its key length.
    let mut img = SnapshotImage {
        next_object_seq: 10,
        next_write_token: 10,
        ..Default::default()
    };
    img.objects.push(object("t", &"a".repeat(300), 1, vec![]));
    img.objects.push(ObjectRecord {
        seq: 1,
        ..object("t", "zz", 1, vec![])
    });
    let full = encode(&img);
    decode(&full).unwrap();
    let object_1_len = 63 + 1 + 2; // fixed part + tenant + key bytes
    let key_len_at = full.len() - object_1_len + 4 + 1;
    let mut cut = full[..key_len_at + 2].to_vec();
    reframe(&mut cut);
    let msg = rejected(&cut, "truncated in object 1 (key length)");
    assert!(
        msg.contains(&format!("at byte {key_len_at}: need 4 bytes, 2 left")),
        "{msg}"
    );
}

#[test]
fn peek_needs_a_full_counter() {
    let b = frame(&[1, 2, 3]);
    assert_eq!(
        peek_created_at(&b).unwrap_err().kind(),
        ErrorKind::DeserializeFail
    );
    let b = frame(&counters(MAX_INSTANT + 1, 0, 0, 0).0);
    peek_rejected(&b, "beyond MAX_INSTANT");
}

// ------------------------------------------------------------ counts

#[test]
fn huge_segment_count_fails_without_allocating() {
    let payload = counters(1, 0, 0, 0).u64(1 << 60).0;
    rejected(
        &frame(&payload),
        "segment list (count) at byte 60 claims 1152921504606846976",
    );
}

#[test]
fn huge_group_and_object_counts_fail_without_allocating() {
    let payload = counters(1, 0, 0, 0).u64(0).u64(1 << 60).0;
    rejected(&frame(&payload), "group list (count)");
    let payload = counters(1, 0, 0, 0).u64(0).u64(0).u64(u64::MAX).0;
    rejected(&frame(&payload), "object list (count)");
    // The bound is exact: two groups need at least 2 × 16 bytes.
    let two_groups = |pad: usize| {
        let p = counters(1, 0, 0, 0).u64(0).u64(2).str("t").str("g").u64(0);
        frame(&p.bytes(&vec![0; pad]).0)
    };
    rejected(
        &two_groups(13),
        "group list (count) at byte 68 claims 2 elements but only 31 bytes",
    );
    rejected(&two_groups(14), "truncated in group 1 (lease)");
}

#[test]
fn huge_replica_count_fails_without_allocating() {
    let mut b = small_payload(SMALL);
    let count_at = b.len() - (8 + 3 + 4 + 1 + 16) - (8 + 3 + 8) - 4;
    b[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    rejected(&frame(&b), "object 0 (replica count)");
}

#[test]
fn huge_string_length_fails_without_allocating() {
    let payload = counters(1, 0, 0, 0).u64(1).u32(u32::MAX).bytes(&[0; 40]).0;
    rejected(&frame(&payload), "truncated in segment 0 (name bytes)");
}

// ------------------------------------------------------------ bytes with one meaning

#[test]
fn bad_option_tags_are_rejected() {
    let b = frame(&small_payload(Small {
        deadline_tag: 2,
        ..SMALL
    }));
    rejected(&b, "bad byte 2 in object 0 (soft_pin_deadline tag)");
    let b = frame(&small_payload(Small {
        group_tag: 0xFF,
        ..SMALL
    }));
    rejected(&b, "bad byte 255 in object 0 (group tag)");
}

#[test]
fn bad_location_tag_is_rejected() {
    let b = frame(&small_payload(Small {
        location_tag: 2,
        ..SMALL
    }));
    rejected(&b, "bad byte 2 in object 0 replica 0 (location tag)");
}

#[test]
fn bool_bytes_other_than_0_or_1_are_rejected() {
    let b = frame(&small_payload(Small {
        hard_pin: 2,
        ..SMALL
    }));
    rejected(&b, "bad byte 2 in object 0 (hard_pin)");
}

#[test]
fn enum_bytes_out_of_range_are_rejected() {
    let b = frame(&small_payload(Small { pool: 2, ..SMALL }));
    rejected(
        &b,
        "bad byte 2 in segment 0 (pool) at byte 81 (expected 0..=1)",
    );
    let b = frame(&small_payload(Small { kind: 3, ..SMALL }));
    rejected(&b, "bad byte 3 in object 0 replica 0 (kind)");
    let b = frame(&small_payload(Small { status: 2, ..SMALL }));
    rejected(&b, "bad byte 2 in object 0 replica 0 (status)");
}

#[test]
fn non_utf8_strings_are_rejected() {
    let b = frame(&small_payload(Small {
        key: b"\xFF\xFE",
        ..SMALL
    }));
    rejected(&b, "object 0 (key) at byte");
    rejected(&b, "is not UTF-8");
    // Overlong encodings and lone surrogates are not UTF-8 either.
    let b = frame(&small_payload(Small {
        key: b"\xC0\x80",
        ..SMALL
    }));
    rejected(&b, "is not UTF-8");
    let b = frame(&small_payload(Small {
        key: b"\xED\xA0\x80",
        ..SMALL
    }));
    rejected(&b, "is not UTF-8");
}

#[test]
fn payload_errors_are_all_deserialize_fail_with_valid_variants_accepted() {
    // Sanity check on the builder: the valid variations decode.
    let b = frame(&small_payload(Small {
        location_tag: 1,
        kind: LOCAL_DISK,
        ..SMALL
    }));
    let img = decode(&b).unwrap();
    assert_eq!(encode(&img), b);
}

// ------------------------------------------------------------ canonical order

#[test]
fn unsorted_objects_are_rejected_by_decode() {
    let mut img = generated(3);
    img.objects.swap(0, 1);
    rejected(&encode(&img), "not sorted");
}

#[test]
fn duplicate_keys_are_rejected_by_decode() {
    let mut img = generated(3);
    img.objects[1].tenant = img.objects[0].tenant.clone();
    img.objects[1].key = img.objects[0].key.clone();
    rejected(&encode(&img), "duplicate of its predecessor");
}

#[test]
fn unsorted_segments_groups_and_replicas_are_rejected_by_decode() {
    let mut img = representative();
    img.segments.swap(0, 1);
    rejected(&encode(&img), "segment 1 (\"mem-a\"): not sorted");

    let mut img = representative();
    img.groups.swap(0, 1);
    rejected(
        &encode(&img),
        "group 1 (tenant \"default\", name \"g1\"): not sorted",
    );

    let mut img = representative();
    let o = img
        .objects
        .iter_mut()
        .find(|o| o.replicas.len() > 2)
        .unwrap();
    o.replicas.swap(0, 1);
    rejected(&encode(&img), "replica 1 (id 2): not sorted");
}

/// Times encode/decode/validate of 10^6 objects; run with
/// `cargo test --release --test snapshot_codec -- --ignored --nocapture`.
#[test]
#[ignore]
fn million_object_timing() {
    let img = generated(1_000_000);
    let t = std::time::Instant::now();
    let bytes = encode(&img);
    let enc = t.elapsed();
    let t = std::time::Instant::now();
    let back = decode(&bytes).unwrap();
    let dec = t.elapsed();
    let t = std::time::Instant::now();
    validate(&back).unwrap();
    let val = t.elapsed();
    println!(
        "10^6 objects, {} MB: encode {enc:?}, decode+validate {dec:?}, validate alone {val:?}",
        bytes.len() >> 20
    );
    assert_eq!(back, img);
}

// ------------------------------------------------------------ format 5

fn live() -> SnapshotImage {
    representative_live()
}

#[test]
fn format_5_image_round_trips_with_and_without_a_journal_seq() {
    // §6: writes in flight, tasks and discarded buffers need format 5; its
    // journal sequence may be 0 (a master without a journal).
    let img = live();
    assert_round_trip(&img);
    assert_eq!(&encode(&img)[8..12], &FORMAT_VERSION.to_le_bytes());
    assert_eq!(FORMAT_VERSION, 5);
    let with_seq = SnapshotImage {
        journal_seq: 77,
        retention: vec![retained("t", "g", 5)],
        wall_at_capture: Some(123),
        ..live()
    };
    assert_round_trip(&with_seq);
    // Each list alone makes the image format 5.
    for keep in 0..3 {
        let mut one = live();
        if keep != 0 {
            one.in_flight.clear();
            // Its writes' PROCESSING replicas must go too.
            for o in &mut one.objects {
                let targets: Vec<u64> = one
                    .tasks
                    .iter()
                    .filter(|t| t.tenant == o.tenant && t.key == o.key)
                    .flat_map(|t| match &t.task {
                        TaskImage::Copy { targets, .. } => targets.clone(),
                        TaskImage::Move { target, .. } | TaskImage::Promotion { target } => {
                            vec![*target]
                        }
                    })
                    .collect();
                o.replicas
                    .retain(|r| r.status == COMPLETE || targets.contains(&r.id));
            }
        }
        if keep != 1 {
            one.tasks.clear();
            for o in &mut one.objects {
                o.replicas.retain(|r| ![3, 13, 21].contains(&r.id));
            }
        }
        if keep != 2 {
            one.discarded.clear();
        }
        assert_round_trip(&one);
        assert_eq!(&encode(&one)[8..12], &FORMAT_VERSION.to_le_bytes());
    }
}

#[test]
fn images_without_live_state_keep_their_older_versions_byte_for_byte() {
    // Format 5 is written only when a list is not empty.
    let mut img = live();
    img.in_flight.clear();
    img.tasks.clear();
    img.discarded.clear();
    assert_eq!(&encode(&img)[8..12], &FORMAT_VERSION_1.to_le_bytes());
    img.journal_seq = 3;
    assert_eq!(&encode(&img)[8..12], &FORMAT_VERSION_4.to_le_bytes());
    assert_round_trip(&img);
}

#[test]
fn format_5_layout_appends_the_three_lists_after_the_objects() {
    let v4 = SnapshotImage {
        journal_seq: 9,
        ..small_image()
    };
    let mut img = SnapshotImage {
        in_flight: vec![InFlightRecord {
            tenant: "t".into(),
            key: "k".into(),
            pending: Some(SoftPinIntent::Enable { ttl_ms: 0x0102 }),
        }],
        tasks: vec![TaskRecord {
            tenant: "t".into(),
            key: "k".into(),
            task: TaskImage::Copy {
                source: 1,
                targets: vec![5],
            },
        }],
        discarded: vec![DiscardedRecord {
            segment: "s".into(),
            address: 120,
            len: 10,
            release_at: 0x0A0B,
            replica: 3,
        }],
        ..v4.clone()
    };
    // small_image's local-disk replica 2 is PROCESSING: the write's.
    img.next_replica_id = 6;
    let v4_bytes = encode(&v4);
    let bytes = encode(&img);
    let live = P::default()
        .u64(1)
        .str("t")
        .str("k")
        .u8(1)
        .u8(1)
        .u64(0x0102)
        .u64(1)
        .str("t")
        .str("k")
        .u8(0)
        .u64(1)
        .u32(1)
        .u64(5)
        .u64(1)
        .str("s")
        .u64(120)
        .u64(10)
        .u64(0x0A0B)
        .u64(3)
        .0;
    assert_eq!(&bytes[8..12], &FORMAT_VERSION.to_le_bytes());
    // The counters differ only in next_replica_id.
    assert_eq!(
        bytes[HEADER_LEN + 16..HEADER_LEN + v4_bytes.len() - HEADER_LEN],
        v4_bytes[HEADER_LEN + 16..]
    );
    assert_eq!(&bytes[v4_bytes.len()..], &live[..]);
    assert_eq!(decode(&bytes).unwrap(), img);
}

#[test]
fn format_5_without_live_state_is_not_canonical() {
    let v4 = encode(&SnapshotImage {
        journal_seq: 1,
        ..small_image()
    });
    let mut b = v4.clone();
    b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    b.extend_from_slice(&[0; 24]);
    reframe(&mut b);
    rejected(
        &b,
        &format!(
            "format 5 snapshot without writes in flight, tasks or discarded buffers, at byte {}",
            v4.len()
        ),
    );
}

#[test]
fn format_5_bad_bytes_are_rejected() {
    let good = encode(&live());
    // Every truncation fails, naming where.
    for n in HEADER_LEN..good.len() {
        let mut cut = good[..n].to_vec();
        reframe(&mut cut);
        let msg = decode(&cut).unwrap_err().message().to_string();
        assert!(
            msg.starts_with("truncated in") || msg.contains("elements but only"),
            "{msg}"
        );
    }
    // A huge count, a bad option tag and a bad intent byte.
    let bytes = encode(&live());
    let tail = bytes.len()
        - live()
            .discarded
            .iter()
            .map(|d| 4 + d.segment.len() + 32)
            .sum::<usize>()
        - 8;
    let mut b = bytes.clone();
    b.truncate(tail);
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    reframe(&mut b);
    rejected(&b, "discarded list (count)");
    // The in-flight list starts right after the last object.
    let no_live = {
        let mut i = live();
        i.in_flight.clear();
        i.tasks.clear();
        i.discarded.clear();
        i.journal_seq = 1;
        encode(&i)
    };
    let start = no_live.len();
    let mut b = bytes.clone();
    b[start..start + 8].copy_from_slice(&(1u64 << 60).to_le_bytes());
    reframe(&mut b);
    rejected(&b, "in-flight list (count)");
    // First in-flight record: tenant "default", key "every-kind", then the
    // pending tag and the intent byte.
    let at = start + 8 + 4 + 7 + 4 + 10;
    assert_eq!(b[at], 1);
    let mut c = bytes.clone();
    c[at] = 2;
    reframe(&mut c);
    rejected(&c, "write in flight 0 (pending tag)");
    let mut c = bytes.clone();
    c[at + 1] = 3;
    reframe(&mut c);
    rejected(&c, "write in flight 0 (pending)");
}

#[test]
fn format_5_state_is_validated() {
    let ok = live();
    validate(&ok).unwrap();
    let bad = |f: &dyn Fn(&mut SnapshotImage), needle: &str| {
        let mut img = live();
        f(&mut img);
        let e = validate(&img).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DeserializeFail);
        assert!(
            e.message().contains(needle),
            "{:?} lacks {needle:?}",
            e.message()
        );
        // The encoder writes what it is given; the decoder refuses it.
        rejected(&encode(&img), needle);
    };
    bad(
        &|i| i.in_flight[0].key = "nowhere".into(),
        "names no object",
    );
    bad(&|i| i.in_flight.swap(0, 1), "not sorted");
    bad(
        &|i| {
            i.in_flight.remove(1);
        },
        "no write in flight is listed",
    );
    bad(
        &|i| {
            let f = InFlightRecord {
                tenant: "tenant-b".into(),
                key: "no-replicas".into(),
                pending: None,
            };
            i.in_flight.insert(2, f)
        },
        "no PROCESSING replica of a write",
    );
    bad(&|i| i.tasks[0].key = "nowhere".into(), "names no object");
    bad(&|i| i.tasks.swap(1, 2), "not sorted");
    bad(
        &|i| {
            i.tasks[0].task = TaskImage::Copy {
                source: 2,
                targets: vec![],
            }
        },
        "a copy without targets",
    );
    bad(
        &|i| {
            i.tasks[0].task = TaskImage::Copy {
                source: 2,
                targets: vec![3, 3],
            }
        },
        "not strictly increasing",
    );
    bad(
        &|i| {
            i.tasks[1].task = TaskImage::Move {
                source: 21,
                target: 21,
            }
        },
        "source and target",
    );
    bad(&|i| i.discarded.swap(0, 1), "not sorted");
    bad(
        &|i| i.discarded[0].segment = "gone".into(),
        "unknown segment",
    );
    bad(&|i| i.discarded[0].len = 0, "do not lie inside segment");
    bad(
        &|i| i.discarded[2].address = u64::MAX - 4,
        "do not lie inside segment",
    );
    bad(
        &|i| i.discarded[0].release_at = MAX_INSTANT + 1,
        "beyond MAX_INSTANT",
    );
    bad(
        &|i| i.discarded[0].replica = 1 << 40,
        "not below next_replica_id",
    );
    bad(
        &|i| i.discarded[0].address = 0x1000_5000,
        "buffers overlap in segment \"mem-a\"",
    );
}
