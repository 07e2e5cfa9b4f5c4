//! The journal batch codec (docs/CONTRACT.md section 12, "Encoding"): every
//! record variant round-trips, the encoding is canonical, and every
//! corruption of a valid batch is rejected with DESERIALIZE_FAIL (or, for
//! the few edits that leave the bytes a valid batch, decodes to exactly
//! what those bytes encode).

mod support;

use mooncake_meta_core::journal::codec::{
    decode_batch, decode_batch_prefix, encode_batch, encode_batch_as, encode_record, encoded_len,
    peek_header, FORMAT_VERSION, HEADER_LEN, MAGIC, MAX_SEQ,
};
use mooncake_meta_core::journal::*;
use mooncake_meta_core::{ErrorKind, ReplicaStatus, SoftPinIntent, MAX_INSTANT};
use proptest::prelude::*;
use support::entropy::XorShift;
use support::journal_gen::{self, Choices, VARIANTS};
use support::journalmut::reframe;

fn deser_fail(bytes: &[u8]) -> String {
    let e = decode_batch(bytes).expect_err("must be rejected");
    assert_eq!(e.kind(), ErrorKind::DeserializeFail, "{e}");
    e.message().to_owned()
}

/// A batch holding one record of every variant, from sequence 7.
fn every_variant() -> (u64, Vec<Record>) {
    let mut rng = XorShift::new(0x7A65);
    let recs = (1..=VARIANTS)
        .map(|t| journal_gen::record_with_tag(&mut rng, t))
        .collect();
    (7, recs)
}

proptest! {
    // Fixed seed and no failure files: CI is deterministic and writes
    // nothing; a failure prints its shrunk choices.
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x10C),
        ..ProptestConfig::default()
    })]

    // Every variant, any field values: decode(encode(b)) == b, and the
    // bytes re-encode identically.
    #[test]
    fn every_record_round_trips(choices in prop::collection::vec(any::<u64>(), 0..400), tag in 1..=VARIANTS) {
        let mut e = Choices::new(choices);
        let mut recs = vec![journal_gen::record_with_tag(&mut e, tag)];
        recs.extend(journal_gen::records(&mut e, 6));
        let first = journal_gen::first_seq(&mut e, recs.len());
        let bytes = encode_batch(first, &recs).unwrap();
        let batch = decode_batch(&bytes).unwrap();
        prop_assert_eq!(batch.first_seq, first);
        prop_assert_eq!(batch.last_seq(), first + recs.len() as u64 - 1);
        prop_assert_eq!(&batch.records, &recs);
        prop_assert_eq!(encode_batch(batch.first_seq, &batch.records).unwrap(), bytes);
    }

    // A record's encoded length is what a batch's payload grows by.
    #[test]
    fn encoded_len_is_the_payload_share(choices in prop::collection::vec(any::<u64>(), 0..200)) {
        let mut e = Choices::new(choices);
        let recs = journal_gen::records(&mut e, 8);
        let bytes = encode_batch(1, &recs).unwrap();
        let sum: usize = recs.iter().map(encoded_len).sum();
        prop_assert_eq!(bytes.len(), HEADER_LEN + sum);
    }
}

#[test]
fn the_generator_reaches_every_variant() {
    let (_, recs) = every_variant();
    let names: Vec<&str> = recs.iter().map(Record::name).collect();
    assert_eq!(names, Record::NAMES);
    for (i, r) in recs.iter().enumerate() {
        assert_eq!(usize::from(r.tag()), i + 1);
    }
}

#[test]
fn header_fields_are_where_the_layout_says() {
    let (first, recs) = every_variant();
    let b = encode_batch(first, &recs).unwrap();
    assert_eq!(b[..8], MAGIC);
    assert_eq!(
        u32::from_le_bytes(b[8..12].try_into().unwrap()),
        FORMAT_VERSION
    );
    assert_eq!(u32::from_le_bytes(b[12..16].try_into().unwrap()), 0);
    assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), first);
    assert_eq!(
        u32::from_le_bytes(b[24..28].try_into().unwrap()),
        recs.len() as u32
    );
    assert_eq!(
        u64::from_le_bytes(b[28..36].try_into().unwrap()),
        (b.len() - HEADER_LEN) as u64
    );
    let mut covered = b[..36].to_vec();
    covered.extend_from_slice(&b[HEADER_LEN..]);
    assert_eq!(
        u32::from_le_bytes(b[36..40].try_into().unwrap()),
        support::snapmut::crc32(&covered)
    );
    let h = peek_header(&b).unwrap();
    assert_eq!(
        (h.version, h.first_seq, h.count, h.total_len),
        (FORMAT_VERSION, first, recs.len() as u32, b.len())
    );
}

#[test]
fn every_flipped_byte_of_a_valid_batch_is_rejected() {
    // CRC-32 detects every error confined to one byte, so no flip of any
    // bit of any byte may get through, header or payload.
    let (first, recs) = every_variant();
    let b = encode_batch(first, &recs).unwrap();
    for i in 0..b.len() {
        for bit in 0..8 {
            let mut m = b.clone();
            m[i] ^= 1 << bit;
            let msg = deser_fail(&m);
            assert!(!msg.is_empty(), "byte {i} bit {bit}");
        }
    }
}

#[test]
fn every_truncation_and_extension_is_rejected() {
    let (first, recs) = every_variant();
    let b = encode_batch(first, &recs).unwrap();
    for n in 0..b.len() {
        let msg = deser_fail(&b[..n]);
        let expected = if n < HEADER_LEN {
            "truncated batch header"
        } else {
            "truncated batch"
        };
        assert!(msg.starts_with(expected), "cut at {n}: {msg}");
    }
    let mut longer = b.clone();
    longer.push(0);
    assert!(deser_fail(&longer).contains("1 trailing bytes after"));
}

#[test]
fn reframed_payload_edits_decode_to_what_the_bytes_say_or_are_rejected() {
    // Past the checksum (payload length and CRC recomputed), each flipped
    // byte of the payload is rejected by the parser or decodes to records
    // that re-encode to exactly the edited bytes: never to anything else.
    let (first, recs) = every_variant();
    let b = encode_batch(first, &recs).unwrap();
    let (mut rejected, mut accepted) = (0, 0);
    for i in HEADER_LEN..b.len() {
        for v in [0x01u8, 0x80, 0xFF] {
            let mut m = b.clone();
            m[i] ^= v;
            reframe(&mut m);
            match decode_batch(&m) {
                Ok(batch) => {
                    accepted += 1;
                    assert_eq!(encode_batch(batch.first_seq, &batch.records).unwrap(), m);
                }
                Err(e) => {
                    rejected += 1;
                    assert_eq!(e.kind(), ErrorKind::DeserializeFail, "{e}");
                }
            }
        }
    }
    assert!(
        rejected > 0 && accepted > 0,
        "{rejected} rejected, {accepted} accepted"
    );
}

fn erased(key: RecordKey) -> Record {
    Record::ObjectErased {
        key,
        discarded: vec![],
    }
}

/// An image of the default tenant's key "k" with nothing optional set.
fn bare_image() -> ObjectImage {
    ObjectImage {
        key: RecordKey::new("default", "k"),
        size: 4096,
        writer: 1,
        put_start: 10,
        lease: 10,
        seq: 1,
        write_token: 1,
        hard_pin: false,
        group: None,
        committed: None,
        in_flight: None,
        task: None,
        replicas: vec![],
    }
}

#[test]
fn header_errors_name_what_is_wrong() {
    let b = encode_batch(1, &[erased(RecordKey::new("default", "k"))]).unwrap();
    let with = |at: usize, bytes: &[u8]| {
        let mut m = b.clone();
        m[at..at + bytes.len()].copy_from_slice(bytes);
        reframe(&mut m);
        deser_fail(&m)
    };
    assert!(with(0, b"XMCJRNL\n").starts_with("bad magic"));
    let next = FORMAT_VERSION + 1;
    assert!(with(8, &next.to_le_bytes())
        .contains(&format!("unsupported journal format version {next}")));
    assert!(with(8, &0u32.to_le_bytes()).contains("version 0"));
    assert!(with(12, &1u32.to_le_bytes()).contains("unknown batch header flags 0x1"));
    assert!(with(16, &0u64.to_le_bytes()).contains("start at 1"));
    assert!(with(24, &0u32.to_le_bytes()).contains("at least one record"));
    let mut m = b.clone();
    m[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    m[24..28].copy_from_slice(&2u32.to_le_bytes());
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(
        msg.contains("bad batch header") && msg.contains("would pass"),
        "{msg}"
    );
    let claims = with(24, &1000u32.to_le_bytes());
    assert!(claims.contains("claims 1000 records"), "{claims}");
    // A wrong payload length is a truncation or trailing bytes, before the checksum.
    let mut m = b.clone();
    m[28..36].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(deser_fail(&m).starts_with("truncated batch"));
    let mut m = b.clone();
    m[36] ^= 1;
    assert!(deser_fail(&m).starts_with("batch checksum mismatch"));
}

#[test]
fn payload_errors_name_the_record_field_and_byte() {
    let key = RecordKey::new("default", "k");
    let one = |r: Record| encode_batch(5, &[r]).unwrap();
    // Payload offsets in a batch of the bare image: tag, key ("default",
    // "k": 4 + 7 + 4 + 1), then size, writer, put_start, lease, seq,
    // write_token (8 each), then hard_pin.
    let image_at = HEADER_LEN + 1;
    let hard_pin_at = image_at + 16 + 6 * 8;

    // Unknown tags: 0 and one past the last.
    for tag in [0u8, VARIANTS + 1, 0xFF] {
        let mut m = one(erased(key.clone()));
        m[HEADER_LEN] = tag;
        reframe(&mut m);
        let msg = deser_fail(&m);
        assert!(
            msg.contains(&format!(
                "unknown record tag {tag} for sequence 5 at byte 40"
            )),
            "{msg}"
        );
    }

    // An instant beyond MAX_INSTANT.
    let mut m = one(Record::GroupRetained {
        tenant: "default".into(),
        group: "g".into(),
        deadline: MAX_INSTANT,
    });
    let at = m.len() - 8;
    m[at..].copy_from_slice(&(MAX_INSTANT + 1).to_le_bytes());
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(
        msg.contains("GroupRetained 5 (deadline)") && msg.contains("beyond MAX_INSTANT"),
        "{msg}"
    );
    // ... and inside an image (its lease).
    let mut m = one(Record::ObjectSet {
        image: Box::new(bare_image()),
        discarded: vec![],
    });
    let lease_at = image_at + 16 + 3 * 8;
    m[lease_at..lease_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(
        msg.contains(&format!("ObjectSet 5 (lease) at byte {lease_at}"))
            && msg.contains("beyond MAX_INSTANT"),
        "{msg}"
    );

    // A bool that is neither 0 nor 1.
    let mut m = one(Record::ObjectSet {
        image: Box::new(bare_image()),
        discarded: vec![],
    });
    assert_eq!(m[hard_pin_at], 0);
    m[hard_pin_at] = 2;
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(
        msg.contains("bad byte 2 in ObjectSet 5 (hard_pin)"),
        "{msg}"
    );

    // Enum bytes out of range: replica status, role, task kind.
    let mut img = bare_image();
    img.replicas.push(ReplicaImage {
        id: 3,
        status: ReplicaStatus::Complete,
        role: ReplicaRole::Write,
        place: Placement::LocalDisk { client: 9 },
    });
    img.task = Some(TaskImage::Promotion { target: 3 });
    let b = one(Record::ObjectSet {
        image: Box::new(img.clone()),
        discarded: vec![],
    });
    // After hard_pin: group, committed, in_flight (one byte each, none),
    // task (1 + kind + target), then the replica count and the replica.
    let task_kind_at = hard_pin_at + 1 + 3 + 1;
    let status_at = task_kind_at + 1 + 8 + 4 + 8;
    for (at, v, what) in [
        (task_kind_at, 3u8, "ObjectSet 5 (task kind)"),
        (status_at, 2, "ObjectSet 5 (replica status)"),
        (status_at + 1, 2, "ObjectSet 5 (replica role)"),
        (status_at + 2, 3, "ObjectSet 5 (placement tag)"),
    ] {
        let mut m = b.clone();
        m[at] = v;
        reframe(&mut m);
        let msg = deser_fail(&m);
        assert!(
            msg.contains(&format!("bad byte {v} in {what} at byte {at}")),
            "{msg}"
        );
    }

    // Replica ids must be strictly increasing (one order, one encoding).
    for ids in [[4u64, 3], [4, 4]] {
        let mut img = img.clone();
        img.task = None;
        img.replicas = ids
            .iter()
            .map(|&id| ReplicaImage {
                id,
                status: ReplicaStatus::Processing,
                role: ReplicaRole::TaskTarget,
                place: Placement::Memory {
                    segment: "seg".into(),
                    address: id,
                },
            })
            .collect();
        let msg = deser_fail(&one(Record::ObjectSet {
            image: Box::new(img),
            discarded: vec![],
        }));
        assert!(
            msg.contains(&format!(
                "ObjectSet 5 (replicas) at byte {}: replica id {} follows 4; ids must be \
                 strictly increasing",
                hard_pin_at + 1 + 3 + 1 + 4 + 26,
                ids[1]
            )),
            "{msg}"
        );
    }

    // A list count the payload cannot hold: refused before allocating.
    let mut m = one(Record::ObjectErased {
        key: key.clone(),
        discarded: vec![DiscardedBuffer {
            buffer: BufferRef {
                segment: "seg".into(),
                address: 0,
                len: 1,
            },
            release_at: 0,
        }],
    });
    let count_at = HEADER_LEN + 1 + 16;
    m[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(
        msg.contains("ObjectErased 5 (discarded)") && msg.contains("claims 4294967295 elements"),
        "{msg}"
    );

    // A blob length past the payload.
    let mut m = one(Record::Reset {
        image: vec![1, 2, 3],
    });
    m[HEADER_LEN + 1..HEADER_LEN + 9].copy_from_slice(&u64::MAX.to_le_bytes());
    reframe(&mut m);
    assert!(deser_fail(&m).contains("Reset 5 (image)"));

    // Names must be non-empty and NUL-free; keys non-empty.
    for (tenant, k, what) in [
        ("", "k", "name"),
        ("t\0", "k", "name"),
        ("t", "", "empty key"),
    ] {
        let b = one(erased(RecordKey::new(tenant, k)));
        let msg = deser_fail(&b);
        assert!(
            msg.contains("ObjectErased 5") && msg.contains(what),
            "{msg}"
        );
    }
    let mut img = bare_image();
    img.group = Some(String::new());
    let msg = deser_fail(&one(Record::ObjectSet {
        image: Box::new(img),
        discarded: vec![],
    }));
    assert!(
        msg.contains("ObjectSet 5 (group)") && msg.contains("non-empty"),
        "{msg}"
    );

    // Not UTF-8 (the key's last byte, before the empty discarded list).
    let mut m = one(erased(RecordKey::new("t", "k")));
    let at = m.len() - 5;
    m[at] = 0xFF;
    reframe(&mut m);
    assert!(deser_fail(&m).contains("is not UTF-8"));

    // Bytes left over inside the payload.
    let mut m = one(erased(key));
    m.push(0);
    reframe(&mut m);
    assert!(deser_fail(&m).contains("1 trailing bytes inside the payload"));
}

fn ended(completed: Vec<u64>, commit: Option<Option<u64>>) -> Record {
    Record::ObjectEnded {
        key: RecordKey::new("default", "k"),
        write_token: 9,
        at: 100,
        completed,
        commit,
        write_over: true,
    }
}

// docs/CONTRACT.md §12.2: format 2 adds tag 11 (ObjectEnded); a version 1
// batch still decodes, and tag 11 in one is an unknown tag.
#[test]
fn tag_11_is_unknown_in_a_version_1_batch() {
    let b = encode_batch_as(1, 5, &[erased(RecordKey::new("default", "k"))]).unwrap();
    assert_eq!(b[8..12], 1u32.to_le_bytes());
    assert_eq!(
        decode_batch(&b).unwrap().records,
        [erased(RecordKey::new("default", "k"))]
    );
    // The same payload as an ObjectEnded in version 1 and in version 2.
    let v2 = encode_batch_as(2, 5, &[ended(vec![1], None)]).unwrap();
    assert_eq!(v2[8..12], 2u32.to_le_bytes());
    assert_eq!(decode_batch(&v2).unwrap().records, [ended(vec![1], None)]);
    let mut v1 = v2.clone();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    reframe(&mut v1);
    let msg = deser_fail(&v1);
    assert!(
        msg.contains("unknown record tag 11 for sequence 5 at byte 40"),
        "{msg}"
    );
    // The encoder refuses to write one into version 1, and any version it
    // does not know.
    let e = encode_batch_as(1, 5, &[ended(vec![1], None)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParams);
    assert!(e.message().contains("ObjectEnded"), "{e}");
    for v in [0, FORMAT_VERSION + 1] {
        let e = encode_batch_as(v, 5, &[erased(RecordKey::new("default", "k"))]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
    }
}

// The ObjectEnded fields: completed ids strictly increasing, the commit
// outcome opt<opt<deadline>>, write_over a bool; each spelled one way.
#[test]
fn object_ended_fields_have_one_spelling() {
    for commit in [None, Some(None), Some(Some(1)), Some(Some(MAX_INSTANT))] {
        for ids in [vec![], vec![3], vec![0, 1, u64::MAX]] {
            let r = ended(ids, commit);
            let b = encode_batch(5, std::slice::from_ref(&r)).unwrap();
            assert_eq!(decode_batch(&b).unwrap().records, [r]);
        }
    }
    // Payload: tag, key (4 + 7 + 4 + 1), write_token, at, then the ids.
    let ids_at = HEADER_LEN + 1 + 16 + 16;
    for (a, b) in [(2u64, 2u64), (3, 2)] {
        let mut m = encode_batch(5, &[ended(vec![1, 7], None)]).unwrap();
        m[ids_at + 4..ids_at + 12].copy_from_slice(&a.to_le_bytes());
        m[ids_at + 12..ids_at + 20].copy_from_slice(&b.to_le_bytes());
        reframe(&mut m);
        let msg = deser_fail(&m);
        assert!(
            msg.contains("ObjectEnded 5 (completed)") && msg.contains("strictly increasing"),
            "{msg}"
        );
    }
    // An instant beyond MAX_INSTANT in `at` and in the committed deadline.
    let mut m = encode_batch(5, &[ended(vec![], None)]).unwrap();
    m[ids_at - 8..ids_at].copy_from_slice(&u64::MAX.to_le_bytes());
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(msg.contains("ObjectEnded 5 (at)"), "{msg}");
    let mut m = encode_batch(5, &[ended(vec![], Some(Some(1)))]).unwrap();
    let d_at = ids_at + 4 + 2;
    m[d_at..d_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(msg.contains("ObjectEnded 5 (commit deadline)"), "{msg}");
    // Option and bool bytes above 1.
    for (at, what) in [(ids_at + 4, "commit"), (ids_at + 5, "write_over")] {
        let mut m = encode_batch(5, &[ended(vec![], None)]).unwrap();
        m[at] = 2;
        reframe(&mut m);
        let msg = deser_fail(&m);
        assert!(msg.contains(&format!("ObjectEnded 5 ({what})")), "{msg}");
    }
}

// docs/CONTRACT.md §12.2: a committed soft-pin deadline is never 0 (a
// master commits an End's instant plus a TTL of at least 1 ms, and stores 0
// as "no deadline"; a snapshot refuses one too). An image's committed
// deadline and an End's commit outcome of 0 are DESERIALIZE_FAIL naming
// the record, the field and the byte; 1 decodes. (Review finding: both
// decoders accepted 0, and a standby then registered and counted a pin for
// an object with no deadline, for ever.)
#[test]
fn a_committed_deadline_of_0_is_refused() {
    let set = |committed| Record::ObjectSet {
        image: Box::new(ObjectImage {
            committed,
            ..bare_image()
        }),
        discarded: vec![],
    };
    // The deadline's byte: after the key (4 + 7 + 4 + 1), six u64 fields,
    // hard_pin, group (none) and the committed option byte.
    let d_at = HEADER_LEN + 1 + 16 + 6 * 8 + 1 + 1 + 1;
    let b = encode_batch(5, &[set(Some(0))]).unwrap();
    assert_eq!(b[d_at - 1..d_at + 8], [1, 0, 0, 0, 0, 0, 0, 0, 0]);
    let msg = deser_fail(&b);
    assert!(
        msg.contains(&format!("ObjectSet 5 (committed) at byte {d_at}"))
            && msg.contains("committed deadline of 0"),
        "{msg}"
    );
    for ok in [Some(1), Some(MAX_INSTANT), None] {
        let b = encode_batch(5, &[set(ok)]).unwrap();
        assert_eq!(decode_batch(&b).unwrap().records, [set(ok)]);
    }
    // The End's commit outcome "fired, the deadline is now 0", in every
    // format that has the record; "fired, no deadline" is Some(None).
    for v in [2, FORMAT_VERSION] {
        let b = encode_batch_as(v, 5, &[ended(vec![1], Some(Some(0)))]).unwrap();
        let msg = deser_fail(&b);
        assert!(
            msg.contains("ObjectEnded 5 (commit deadline)")
                && msg.contains("committed deadline of 0"),
            "{msg}"
        );
        for ok in [Some(None), Some(Some(1))] {
            let b = encode_batch_as(v, 5, &[ended(vec![1], ok)]).unwrap();
            assert_eq!(decode_batch(&b).unwrap().records, [ended(vec![1], ok)]);
        }
    }
    // A pending ENABLE with TTL 0 is a valid intent (it commits ordinary
    // cache, as DISABLE does): kept, in an image and in a Start.
    let pending = SoftPinIntent::Enable { ttl_ms: 0 };
    let img = Record::ObjectSet {
        image: Box::new(ObjectImage {
            in_flight: Some(InFlightImage {
                pending: Some(pending),
            }),
            ..bare_image()
        }),
        discarded: vec![],
    };
    let start = started(vec![(1, mem(4096))], None, pending);
    let b = encode_batch(5, &[img.clone(), start.clone()]).unwrap();
    assert_eq!(decode_batch(&b).unwrap().records, [img, start]);
}

// docs/CONTRACT.md §12.2 (review finding: the codec's docs claimed every
// accepted batch re-encodes byte for byte): one encoding per value within
// a format version. A version 1 or 2 batch decodes to the records it
// always did; encode_batch writes them in the current version, so other
// bytes that decode to the same records, and encode_batch_as with the
// batch's own version gives the batch back byte for byte.
#[test]
fn an_older_batch_re_encodes_in_the_current_version() {
    let recs = [
        erased(RecordKey::new("default", "k")),
        Record::Counters {
            next_replica_id: 2,
            next_write_token: 3,
            next_object_seq: 4,
        },
    ];
    for v in 1..FORMAT_VERSION {
        let old = encode_batch_as(v, 5, &recs).unwrap();
        let decoded = decode_batch(&old).unwrap();
        assert_eq!(decoded.records, recs);
        let now = encode_batch(decoded.first_seq, &decoded.records).unwrap();
        assert_ne!(now, old, "version {v}");
        assert_eq!(now[8..12], FORMAT_VERSION.to_le_bytes());
        assert_eq!(
            now[12..36],
            old[12..36],
            "version {v}: only the version differs"
        );
        assert_eq!(
            now[HEADER_LEN..],
            old[HEADER_LEN..],
            "version {v}: same payload"
        );
        assert_eq!(decode_batch(&now).unwrap(), decoded);
        assert_eq!(
            encode_batch_as(v, decoded.first_seq, &decoded.records).unwrap(),
            old
        );
    }
}

fn started(replicas: Vec<(u64, Placement)>, group: Option<&str>, pending: SoftPinIntent) -> Record {
    Record::ObjectStarted {
        key: RecordKey::new("default", "k"),
        size: 64,
        writer: 3,
        put_start: 100,
        seq: 4,
        write_token: 9,
        hard_pin: false,
        group: group.map(str::to_owned),
        pending,
        replicas: replicas
            .into_iter()
            .map(|(id, place)| StartedReplica { id, place })
            .collect(),
    }
}

fn mem(address: u64) -> Placement {
    Placement::Memory {
        segment: "mem0".into(),
        address,
    }
}

// docs/CONTRACT.md §12.2: format 3 adds tag 12 (ObjectStarted); version 1
// and 2 batches still decode, and tag 12 in one is an unknown tag.
#[test]
fn tag_12_is_unknown_before_version_3() {
    let rec = started(vec![(1, mem(4096))], None, SoftPinIntent::Preserve);
    let v3 = encode_batch_as(3, 5, std::slice::from_ref(&rec)).unwrap();
    assert_eq!(v3[8..12], 3u32.to_le_bytes());
    assert_eq!(
        decode_batch(&v3).unwrap().records,
        std::slice::from_ref(&rec)
    );
    for (v, known) in [(1u32, 10), (2, 11)] {
        let mut old = v3.clone();
        old[8..12].copy_from_slice(&v.to_le_bytes());
        reframe(&mut old);
        let msg = deser_fail(&old);
        assert!(
            msg.contains("unknown record tag 12 for sequence 5 at byte 40")
                && msg.contains(&format!("1..={known}")),
            "{msg}"
        );
        let e = encode_batch_as(v, 5, std::slice::from_ref(&rec)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
        assert!(
            e.message().contains("ObjectStarted") && e.message().contains("format 3 on"),
            "{e}"
        );
    }
    // Tag 11 stays unknown in version 1 of a format-3 build, and known in 2.
    let b = encode_batch_as(2, 5, &[ended(vec![1], None)]).unwrap();
    assert_eq!(decode_batch(&b).unwrap().records, [ended(vec![1], None)]);
    // A tag past every layout's (format 4 added tag 13).
    let mut m = encode_batch(5, std::slice::from_ref(&rec)).unwrap();
    m[HEADER_LEN] = 14;
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(msg.contains("unknown record tag 14"), "{msg}");
}

// The ObjectStarted fields: each spelled one way (group opt<name>, the
// intent, replica ids strictly increasing, placement tags 0..=2); the
// record is the ObjectSet `expand_start` gives.
#[test]
fn object_started_fields_have_one_spelling() {
    let places = [
        (0, mem(0)),
        (
            2,
            Placement::NofSsd {
                segment: "nof0".into(),
                address: u64::MAX,
            },
        ),
        (u64::MAX, Placement::LocalDisk { client: 7 }),
    ];
    for pending in [
        SoftPinIntent::Preserve,
        SoftPinIntent::Enable { ttl_ms: 5_000 },
        SoftPinIntent::Disable,
    ] {
        for group in [None, Some("g")] {
            for n in 0..=places.len() {
                let r = started(places[..n].to_vec(), group, pending);
                let b = encode_batch(5, std::slice::from_ref(&r)).unwrap();
                assert_eq!(decode_batch(&b).unwrap().records, std::slice::from_ref(&r));
                // Shorter than the ObjectSet it stands for.
                let set = r.clone().expand_start();
                assert!(encoded_len(&r) < encoded_len(&set));
                let Record::ObjectSet { image, discarded } = set else {
                    panic!("not expanded");
                };
                assert!(discarded.is_empty());
                assert_eq!(image.lease, 0);
                assert_eq!(image.committed, None);
                assert_eq!(image.task, None);
                assert_eq!(
                    image.in_flight,
                    Some(InFlightImage {
                        pending: Some(pending)
                    })
                );
                assert_eq!(image.replicas.len(), n);
                assert!(
                    image
                        .replicas
                        .iter()
                        .all(|x| x.status == ReplicaStatus::Processing
                            && x.role == ReplicaRole::Write)
                );
            }
        }
    }
    // Any other record expands to itself.
    assert_eq!(ended(vec![], None).expand_start(), ended(vec![], None));
    // Payload: tag, key (4 + 7 + 4 + 1), size, writer, put_start, seq,
    // write_token, hard_pin, group (0), intent (preserve), then replicas.
    let hard_pin_at = HEADER_LEN + 1 + 16 + 5 * 8;
    let reps_at = hard_pin_at + 3;
    let two = started(
        vec![(1, mem(0)), (5, mem(64))],
        None,
        SoftPinIntent::Preserve,
    );
    let second_id = reps_at + 4 + 8 + 1 + 4 + 4 + 8;
    for id in [5u64, 1, 0] {
        let mut m = encode_batch(5, std::slice::from_ref(&two)).unwrap();
        m[reps_at + 4..reps_at + 12].copy_from_slice(&5u64.to_le_bytes());
        m[second_id..second_id + 8].copy_from_slice(&id.to_le_bytes());
        reframe(&mut m);
        let msg = deser_fail(&m);
        assert!(
            msg.contains("ObjectStarted 5 (replicas)") && msg.contains("strictly increasing"),
            "{msg}"
        );
    }
    // A count the payload cannot hold, refused before allocating.
    let mut m = encode_batch(5, std::slice::from_ref(&two)).unwrap();
    m[reps_at..reps_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(
        msg.contains("ObjectStarted 5 (replicas)") && msg.contains("claims 4294967295"),
        "{msg}"
    );
    // Bytes above their range: hard_pin, group, intent, placement tag.
    for (at, b, what) in [
        (hard_pin_at, 2, "hard_pin"),
        (hard_pin_at + 1, 2, "group"),
        (hard_pin_at + 2, 3, "pending"),
        (reps_at + 4 + 8, 3, "placement tag"),
    ] {
        let mut m = encode_batch(5, std::slice::from_ref(&two)).unwrap();
        m[at] = b;
        reframe(&mut m);
        let msg = deser_fail(&m);
        assert!(
            msg.contains(&format!("ObjectStarted 5 ({what})"))
                && msg.contains(&format!("byte {at}")),
            "{what}: {msg}"
        );
    }
    // put_start beyond MAX_INSTANT.
    let mut m = encode_batch(5, std::slice::from_ref(&two)).unwrap();
    let ps = HEADER_LEN + 1 + 16 + 16;
    m[ps..ps + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(msg.contains("ObjectStarted 5 (put_start)"), "{msg}");
    // Truncated replicas.
    let mut m = encode_batch(5, std::slice::from_ref(&two)).unwrap();
    m.truncate(m.len() - 3);
    reframe(&mut m);
    let msg = deser_fail(&m);
    assert!(msg.contains("truncated in ObjectStarted 5"), "{msg}");
}

#[test]
fn encode_refuses_spans_no_batch_can_have() {
    let r = erased(RecordKey::new("t", "k"));
    for (first, n, msg) in [
        (0, 1, "start at 1"),
        (1, 0, "at least one record"),
        (u64::MAX, 2, "would pass the last sequence"),
    ] {
        let e = encode_batch(first, &vec![r.clone(); n]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams);
        assert!(e.message().contains(msg), "{e}");
    }
    // The very last sequence can be written; the one after it cannot.
    let b = encode_batch(MAX_SEQ, std::slice::from_ref(&r)).unwrap();
    assert_eq!(decode_batch(&b).unwrap().last_seq(), MAX_SEQ);
    assert_eq!(
        encode_batch(u64::MAX, &[r]).unwrap_err().kind(),
        ErrorKind::InvalidParams
    );
}

#[test]
fn concatenated_batches_split_where_each_ends() {
    // Self-delimiting: a consumer's file of batches back to back decodes
    // batch by batch.
    let mut rng = XorShift::new(42);
    let mut stream = Vec::new();
    let mut expected = Vec::new();
    let mut next = 1;
    for _ in 0..20 {
        let recs = journal_gen::records(&mut rng, 5);
        stream.extend(encode_batch(next, &recs).unwrap());
        expected.push((next, recs.clone()));
        next += recs.len() as u64;
    }
    let mut rest = &stream[..];
    for (first, recs) in expected {
        let (b, used) = decode_batch_prefix(rest).unwrap();
        assert_eq!((b.first_seq, b.records), (first, recs));
        rest = &rest[used..];
    }
    assert!(rest.is_empty());
    // The whole stream is not one batch.
    assert!(deser_fail(&stream).contains("trailing bytes after"));
}

#[test]
fn record_bytes_are_the_payload_of_a_one_record_batch() {
    let (_, recs) = every_variant();
    for r in &recs {
        let mut body = Vec::new();
        encode_record(r, &mut body);
        assert_eq!(body[0], r.tag());
        assert_eq!(
            encode_batch(3, std::slice::from_ref(r)).unwrap()[HEADER_LEN..],
            body
        );
    }
}
