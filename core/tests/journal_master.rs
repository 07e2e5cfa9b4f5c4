//! The master's journal surface (docs/CONTRACT.md §12): the
//! `journal_capacity_bytes` setting and its bounds, reading, releasing,
//! statistics and metrics, and what a master without a journal answers.

mod common;

use common::*;
use mooncake_meta_core::journal::codec::decode_batch;
use mooncake_meta_core::*;

fn journal_config(bytes: u64) -> MasterConfig {
    MasterConfig {
        journal_capacity_bytes: bytes,
        ..config()
    }
}

// §12: journal_capacity_bytes = 0 (the default) keeps no journal.
#[test]
fn the_journal_is_off_by_default() {
    assert_eq!(MasterConfig::default().journal_capacity_bytes, 0);
    let m = master();
    let off = |e: Error| {
        assert_eq!(e.kind(), ErrorKind::UnavailableInCurrentStatus, "{e}");
        assert_eq!(
            e.message(),
            "the journal is off (journal_capacity_bytes = 0)"
        );
    };
    off(m.journal_read(1, &mut [0u8; 64]).unwrap_err());
    off(m.journal_read_to_vec(1).unwrap_err());
    off(m.journal_release(0).unwrap_err());
    let s = m.journal_stats();
    assert_eq!(s, journal::JournalStats::default());
    assert_eq!(s.capacity_bytes, 0);
    let mx = m.metrics();
    assert_eq!(
        (
            mx.journal_records_appended,
            mx.journal_bytes_held,
            mx.journal_records_dropped,
            mx.journal_last_seq,
            mx.journal_released_seq
        ),
        (0, 0, 0, 0, 0)
    );
}

// §12 settings: the capacity is bounded by MAX_JOURNAL_CAPACITY_BYTES.
#[test]
fn journal_capacity_beyond_the_maximum_is_invalid_params() {
    for bytes in [MAX_JOURNAL_CAPACITY_BYTES + 1, u64::MAX] {
        let e = Master::new(journal_config(bytes)).err().expect("rejected");
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
        assert_eq!(
            e.message(),
            format!(
                "journal_capacity_bytes {bytes} exceeds the maximum {MAX_JOURNAL_CAPACITY_BYTES}"
            )
        );
        assert_eq!(
            journal_config(bytes).validate().unwrap_err(),
            e,
            "validate refuses it as Master::new does"
        );
    }
    // The maximum itself is accepted (nothing is allocated up front).
    let m = Master::new(journal_config(MAX_JOURNAL_CAPACITY_BYTES)).unwrap();
    assert_eq!(
        m.journal_stats().capacity_bytes as u64,
        MAX_JOURNAL_CAPACITY_BYTES
    );
    let m = Master::new(journal_config(1)).unwrap();
    assert_eq!(m.journal_stats().capacity_bytes, 1);
}

// §12 Reading / Release: an empty journal's bounds.
#[test]
fn an_empty_journal_reads_nothing_and_refuses_bad_sequences() {
    let m = Master::new(journal_config(1 << 20)).unwrap();
    let s = m.journal_stats();
    assert_eq!(
        (s.capacity_bytes, s.first_seq, s.last_seq, s.records_held),
        (1 << 20, 1, 0, 0)
    );
    assert!(m.journal_read_to_vec(1).unwrap().is_empty());
    let mut buf = [0xAAu8; 64];
    match m.journal_read(1, &mut buf).unwrap() {
        Bounded::Fits(r) => assert_eq!((r.records, r.bytes, r.next_seq), (0, 0, 1)),
        Bounded::TooSmall(n) => panic!("an empty read needs no room ({n})"),
    }
    assert_eq!(buf, [0xAAu8; 64], "nothing written");
    for from in [0, 2] {
        let e = m.journal_read_to_vec(from).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidParams, "{from}: {e}");
    }
    assert_eq!(m.journal_release(0).unwrap(), 0, "nothing to release");
    let e = m.journal_release(1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidParams, "{e}");
}

// §12: a record appended is read, released and counted in the metrics.
#[test]
fn records_are_read_released_and_counted() {
    let m = master_with(journal_config(1 << 20), 1, 0, 1 << 20);
    let s = m.journal_stats();
    assert_eq!((s.first_seq, s.last_seq, s.records_appended), (1, 1, 1));
    let b = decode_batch(&m.journal_read_to_vec(1).unwrap()).unwrap();
    assert_eq!(b.first_seq, 1);
    assert!(matches!(
        &b.records[..],
        [journal::Record::SegmentMounted { name, .. }] if name == "mem0"
    ));
    // Too small a buffer: nothing written, the size that holds it.
    let mut small = [0u8; 8];
    let Bounded::TooSmall(n) = m.journal_read(1, &mut small).unwrap() else {
        panic!("8 bytes cannot hold a batch");
    };
    let mut buf = vec![0u8; n];
    let Bounded::Fits(r) = m.journal_read(1, &mut buf).unwrap() else {
        panic!("{n} bytes hold it");
    };
    assert_eq!((r.records, r.bytes, r.next_seq), (1, n, 2));
    let mx = m.metrics();
    assert_eq!(
        (
            mx.journal_records_appended,
            mx.journal_last_seq,
            mx.journal_released_seq,
            mx.journal_records_dropped
        ),
        (1, 1, 0, 0)
    );
    assert_eq!(mx.journal_bytes_held, s.bytes_held as u64);
    assert!(mx.journal_bytes_held > 0);
    assert_eq!(m.journal_release(1).unwrap(), 1);
    assert_eq!(m.journal_release(1).unwrap(), 0, "a repeat is a no-op");
    let e = m.journal_read_to_vec(1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JournalOverrun, "{e}");
    let mx = m.metrics();
    assert_eq!((mx.journal_released_seq, mx.journal_bytes_held), (1, 0));
    let text = m.metrics_prometheus();
    for line in [
        "master_journal_records_appended_total 1",
        "master_journal_bytes_held 0",
        "master_journal_records_dropped_total 0",
        "master_journal_last_seq 1",
        "master_journal_released_seq 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
}

// §12 Bounded memory: a full journal drops its oldest records and counts
// them; the master keeps serving.
#[test]
fn a_full_journal_drops_and_counts() {
    let m = Master::new(journal_config(200)).unwrap();
    for i in 0..10 {
        m.mount_segment(C1, &spec(&format!("segment-{i}"), i, 1 << 20, Pool::Memory))
            .unwrap();
    }
    let s = m.journal_stats();
    assert_eq!(s.records_appended, 10);
    assert!(s.dropped_records > 0 && s.bytes_held <= 200, "{s:?}");
    assert_eq!(m.metrics().journal_records_dropped, s.dropped_records);
    let e = m.journal_read_to_vec(1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::JournalOverrun, "{e}");
    let b = decode_batch(&m.journal_read_to_vec(s.first_seq).unwrap()).unwrap();
    assert_eq!(b.last_seq(), 10);
}
