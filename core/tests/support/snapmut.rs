//! Snapshot mutation for the decoder fuzzers: byte-level edits aimed at the
//! places counts, tags and lengths live, and re-framing (payload length and
//! CRC recomputed) so that half of the cases get past the checksum and
//! exercise the record parser, validation and restore.

use super::entropy::Entropy;
use mooncake_meta_core::snapshot::codec::HEADER_LEN;

/// Offsets of the header fields after the 8-byte magic (see codec.rs).
const PAYLOAD_LEN_AT: usize = 16;
const CRC_AT: usize = 24;

/// Bytes that are interesting where counts, tags and lengths live.
const SPECIAL: [u8; 8] = [0, 1, 2, 3, 0x7F, 0x80, 0xFE, 0xFF];

/// Rewrites the header's payload length and CRC to match the payload, so
/// a mutation of the payload reaches the record parser.
pub fn reframe(b: &mut [u8]) {
    if b.len() < HEADER_LEN {
        return;
    }
    let payload_len = (b.len() - HEADER_LEN) as u64;
    b[PAYLOAD_LEN_AT..PAYLOAD_LEN_AT + 8].copy_from_slice(&payload_len.to_le_bytes());
    let crc = crc32(&b[HEADER_LEN..]);
    b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
}

/// CRC-32 (IEEE, reflected), bit by bit: independent of the codec's crate.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// One random edit. With `payload_only` most edits avoid the header (it is
/// about to be recomputed anyway).
pub fn mutate_once(src: &mut impl Entropy, b: &mut Vec<u8>, payload_only: bool) {
    let lo = if payload_only && b.len() > HEADER_LEN && src.below(8) != 0 {
        HEADER_LEN
    } else {
        0
    };
    let len = b.len();
    let at = |src: &mut dyn FnMut(u64) -> u64| lo + src((len - lo + 1) as u64) as usize;
    let mut draw = |n: u64| src.below(n);
    match draw(7) {
        0 if len > lo => {
            let i = lo + draw((len - lo) as u64) as usize;
            b[i] ^= 1 << draw(8);
        }
        1 if len > lo => {
            let i = lo + draw((len - lo) as u64) as usize;
            b[i] = if draw(2) == 0 {
                SPECIAL[draw(SPECIAL.len() as u64) as usize]
            } else {
                draw(256) as u8
            };
        }
        2 => {
            let i = at(&mut draw);
            b.truncate(i);
        }
        3 => {
            let i = at(&mut draw);
            let n = 1 + draw(8) as usize;
            let bytes: Vec<u8> = (0..n).map(|_| draw(256) as u8).collect();
            b.splice(i..i, bytes);
        }
        4 if len > lo => {
            // Duplicate a chunk elsewhere: repeated records, shifted fields.
            let start = lo + draw((len - lo) as u64) as usize;
            let n = 1 + draw(64.min(len - start) as u64) as usize;
            let chunk = b[start..start + n].to_vec();
            let i = at(&mut draw);
            b.splice(i..i, chunk);
        }
        5 if len > lo + 1 => {
            // Delete a short range: a record loses a field.
            let start = lo + draw((len - lo) as u64) as usize;
            let n = 1 + draw(16.min(len - start) as u64) as usize;
            b.drain(start..start + n);
        }
        _ if len >= lo + 8 => {
            // An extreme little-endian integer: the likeliest way to hit a
            // count, a length prefix, an address or a timestamp.
            let i = lo + draw((len - 7 - lo) as u64) as usize;
            let v: u64 = match draw(6) {
                0 => u64::MAX,
                1 => 1 << 60,
                2 => u64::from(u32::MAX),
                3 => i64::MAX as u64,
                4 => 0,
                _ => (draw(1 << 32) << 32 | draw(1 << 32)) >> draw(64),
            };
            let w = if draw(2) == 0 { 4 } else { 8 };
            b[i..i + w].copy_from_slice(&v.to_le_bytes()[..w]);
        }
        _ => b.push(draw(256) as u8),
    }
}

/// A mutated copy of `seed`: 1–3 edits, then re-framed when `reframe_it`.
pub fn mutated(src: &mut impl Entropy, seed: &[u8], reframe_it: bool) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + src.below(3) {
        mutate_once(src, &mut b, reframe_it);
    }
    if reframe_it {
        reframe(&mut b);
    }
    b
}
