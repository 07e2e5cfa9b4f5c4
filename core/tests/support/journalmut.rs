//! Journal batch mutation for the decoder fuzzers: the snapshot mutator's
//! byte-level edits (`snapmut::mutate_once`), then, for half of the cases,
//! re-framing (payload length and CRC recomputed) so the edit reaches the
//! record parser instead of stopping at the checksum.

use super::entropy::Entropy;
use super::journal_gen;
use super::snapmut::{crc32, mutate_once};
use mooncake_meta_core::journal::codec::{
    decode_batch, encode_batch, encode_batch_as, peek_header, HEADER_LEN,
};
use mooncake_meta_core::journal::{Journal, RECORD_OVERHEAD};
use mooncake_meta_core::ErrorKind;

/// Offsets of the header fields (see journal/codec.rs).
const PAYLOAD_LEN_AT: usize = 28;
const CRC_AT: usize = 36;

/// Rewrites the header's payload length and CRC (over header bytes 0..36
/// and the payload) to match the payload.
pub fn reframe(b: &mut [u8]) {
    if b.len() < HEADER_LEN {
        return;
    }
    let payload_len = (b.len() - HEADER_LEN) as u64;
    b[PAYLOAD_LEN_AT..PAYLOAD_LEN_AT + 8].copy_from_slice(&payload_len.to_le_bytes());
    let mut covered = b[..CRC_AT].to_vec();
    covered.extend_from_slice(&b[HEADER_LEN..]);
    let crc = crc32(&covered);
    b[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
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

/// Seed batches for the fuzzers: every record variant appears in one of
/// them, alone, and in mixed batches.
pub fn seed_batches(src: &mut impl Entropy, mixed: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for tag in 1..=journal_gen::VARIANTS {
        let rec = journal_gen::record_with_tag(src, tag);
        out.push(encode_batch(u64::from(tag), &[rec]).expect("valid span"));
    }
    for _ in 0..mixed {
        let recs = journal_gen::records(src, 12);
        let first = journal_gen::first_seq(src, recs.len());
        out.push(encode_batch(first, &recs).expect("valid span"));
    }
    out
}

/// What became of one decoder input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalDecoded {
    /// DESERIALIZE_FAIL.
    Rejected,
    /// Decoded; re-encoded identically, and a journal holding the records
    /// hands back the same bytes.
    Accepted,
}

/// bytes → decode_batch; when Ok, the canonical re-encoding must be the
/// input, and appending the records to a journal starting at the batch's
/// first sequence and reading them back must give the input again. Any
/// other outcome (a panic, another error kind) is a broken rule.
pub fn journal_decode(bytes: &[u8]) -> JournalDecoded {
    let batch = match decode_batch(bytes) {
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::DeserializeFail, "decode: {e}");
            return JournalDecoded::Rejected;
        }
        Ok(b) => b,
    };
    // One encoding per records and version (a format-1 batch still
    // decodes; a journal writes the current format).
    let version = peek_header(bytes).expect("decoded").version;
    let again =
        encode_batch_as(version, batch.first_seq, &batch.records).expect("a decoded span is valid");
    assert_eq!(again, bytes, "decode accepted non-canonical bytes");
    let current = encode_batch(batch.first_seq, &batch.records).expect("a decoded span is valid");
    assert_eq!(
        current[HEADER_LEN..],
        bytes[HEADER_LEN..],
        "formats 1, 2 and 3 share tags 1..=10 (and 2 and 3 tag 11)"
    );
    // Room for every record and its bookkeeping: nothing is dropped.
    let room = bytes.len() + batch.records.len() * RECORD_OVERHEAD;
    let j = Journal::starting_at(room, batch.first_seq).expect("valid journal");
    let seqs = j.append_all(&batch.records).expect("sequences fit");
    assert_eq!(seqs, Some(batch.first_seq..=batch.last_seq()));
    assert_eq!(
        j.read_to_vec(batch.first_seq).expect("held"),
        current,
        "the journal's batch differs from the decoded one"
    );
    JournalDecoded::Accepted
}
