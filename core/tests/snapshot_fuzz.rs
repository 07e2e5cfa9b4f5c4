//! Deterministic mutation fuzzing of decode (docs/CONTRACT.md §6 "Failure"): every
//! mutated snapshot must decode to Ok or fail with DESERIALIZE_FAIL — never
//! panic, never allocate from a corrupt count — and anything accepted must
//! re-encode to the very same bytes (canonical encoding).
//!
//! No catch_unwind: a panic inside decode fails this test outright.

mod snapshot_support;

use mooncake_meta_core::snapshot::codec::{decode, encode, HEADER_LEN};
use mooncake_meta_core::snapshot::image::SnapshotImage;
use mooncake_meta_core::ErrorKind;
use snapshot_support::*;

const CASES: u64 = 12_000;

/// xorshift64*: tiny, deterministic, good enough to pick positions.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes that are interesting where counts, tags and lengths live.
const SPECIAL: [u8; 8] = [0, 1, 2, 3, 0x7F, 0x80, 0xFE, 0xFF];

fn mutate(rng: &mut Rng, b: &mut Vec<u8>, keep_header: bool) {
    // With the header about to be recomputed, aim most edits at the payload.
    let lo = if keep_header && b.len() > HEADER_LEN && rng.below(8) != 0 {
        HEADER_LEN
    } else {
        0
    };
    // A position in [lo, len] (for cuts and insertions) and an index in
    // [lo, len) (for edits; callers check len > lo).
    let at = |rng: &mut Rng, len: usize| lo + rng.below(len - lo + 1);
    let idx = |rng: &mut Rng, len: usize| lo + rng.below(len - lo);
    let len = b.len();
    match rng.below(6) {
        0 if len > lo => b[idx(rng, len)] ^= 1 << rng.below(8),
        1 if len > lo => {
            let i = idx(rng, len);
            b[i] = if rng.below(2) == 0 {
                SPECIAL[rng.below(SPECIAL.len())]
            } else {
                rng.next() as u8
            };
        }
        2 => b.truncate(at(rng, len)),
        3 => {
            let i = at(rng, len);
            let bytes: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
            b.splice(i..i, bytes);
        }
        4 if len > lo => {
            let start = idx(rng, len);
            let n = 1 + rng.below(64.min(len - start));
            let chunk = b[start..start + n].to_vec();
            let i = at(rng, len);
            b.splice(i..i, chunk);
        }
        _ if len >= lo + 8 => {
            // Overwrite a little-endian u32/u64 with an extreme value: the
            // likeliest way to hit a count or length prefix.
            let i = idx(rng, len - 7);
            let v: u64 = match rng.below(4) {
                0 => u64::MAX,
                1 => 1 << 60,
                2 => u64::from(u32::MAX),
                _ => rng.next() >> rng.below(64),
            };
            let w = if rng.below(2) == 0 { 4 } else { 8 };
            b[i..i + w].copy_from_slice(&v.to_le_bytes()[..w]);
        }
        _ => b.push(rng.next() as u8),
    }
}

#[test]
fn mutated_snapshots_never_panic_and_fail_cleanly() {
    let seeds: Vec<Vec<u8>> = [
        SnapshotImage::default(),
        representative(),
        representative_live(),
        generated(1),
        generated(12),
    ]
    .iter()
    .map(encode)
    .collect();

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut reached_payload, mut accepted, mut unchanged) = (0u64, 0u64, 0u64);
    for case in 0..CASES {
        let seed = &seeds[(case % seeds.len() as u64) as usize];
        let fix_header = case % 2 == 1;
        let mut b = seed.clone();
        for _ in 0..1 + rng.below(3) {
            mutate(&mut rng, &mut b, fix_header);
        }
        if fix_header {
            reframe(&mut b);
        }
        if frame_ok(&b) {
            reached_payload += 1;
        }
        match decode(&b) {
            Ok(img) => {
                accepted += 1;
                if b == *seed {
                    unchanged += 1;
                }
                assert!(frame_ok(&b), "case {case}: accepted a bad frame");
                assert_eq!(encode(&img), b, "case {case}: accepted non-canonical bytes");
            }
            Err(e) => assert_eq!(e.kind(), ErrorKind::DeserializeFail, "case {case}: {e}"),
        }
    }
    println!(
        "snapshot fuzz: {CASES} cases, {reached_payload} reached payload parsing, \
         {accepted} accepted and re-encoded identically ({unchanged} of them unmodified)"
    );
    assert!(
        reached_payload > CASES / 4,
        "too few cases reached the payload"
    );
    assert!(accepted > 0, "no mutation produced a valid snapshot");
}
