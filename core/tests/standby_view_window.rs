//! The window a standby's apply decodes its input into (`journal::view`,
//! `check_batch_views` while the input is checked, `InputViews` for the
//! records the window had no room for) holds the same views, and refuses
//! the same bytes with the same messages, as the borrowed decoder the other
//! tests hold to the owned one (docs/CONTRACT.md section 12.3: every record
//! is checked before anything applies, and `DESERIALIZE_FAIL` names the
//! record, field and byte). The put pair's records (ObjectStarted,
//! ObjectEnded) are built in their window slot by a path of their own
//! (`view::pair_record`, which falls back to the checked parse on anything
//! amiss), so the batches here are mostly made of them, and mutated.
//!
//! Debug builds run a tenth of the cases; `cargo test --release` runs all.

mod support;

use mooncake_meta_core::journal::codec::{decode_batch_prefix, encode_batch};
use mooncake_meta_core::journal::view::{
    check_batch_views, decode_batch_view_prefix, InputViews, RecordView,
};
use mooncake_meta_core::journal::Record;
use mooncake_meta_core::MAX_INSTANT;
use support::entropy::{Entropy, XorShift};
use support::journal_gen;
use support::journalmut::{mutated, reframe};

fn scaled(n: u64) -> u64 {
    if cfg!(debug_assertions) {
        n / 10
    } else {
        n
    }
}

/// Batches of 1 to 12 records, about three in four of them a put pair's.
fn pair_batches(e: &mut XorShift, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let count = 1 + e.below(12) as usize;
            let recs: Vec<_> = (0..count)
                .map(|_| match e.below(4) {
                    0 => journal_gen::record(e),
                    1 => journal_gen::record_with_tag(e, 11),
                    _ => journal_gen::record_with_tag(e, 12),
                })
                .collect();
            let first = journal_gen::first_seq(e, recs.len());
            encode_batch(first, &recs).expect("valid span")
        })
        .collect()
}

type Views<'a> = Vec<(u64, RecordView<'a>)>;

/// The reference: every record of the batch at the start of `bytes` with
/// its sequence, and the batch's length; or the message.
fn reference(bytes: &[u8]) -> Result<(Views<'_>, usize), String> {
    decode_batch_view_prefix(bytes)
        .map(|(b, used)| {
            let views = (b.first_seq..).zip(b.records).collect();
            (views, used)
        })
        .map_err(|e| e.message().to_owned())
}

/// Checks `bytes` with `check_batch_views` keeping the records from
/// `keep_from` on, at most `limit` of them in the window, then reads the
/// ones left out with `InputViews`: all of it must agree with
/// [`reference`]. Whether the batch was accepted.
fn agrees(bytes: &[u8], keep_from: u64, limit: usize) -> bool {
    let want = reference(bytes);
    let mut window: Views = Vec::new();
    let mut seen: Vec<(u64, RecordView)> = Vec::new();
    let got = check_batch_views(bytes, keep_from, &mut window, limit, |seq, v| {
        seen.push((seq, v.clone()))
    });
    let (views, used) = match (&want, got) {
        (Err(a), Err(b)) => {
            assert_eq!(a, b.message(), "refused alike: {bytes:02x?}");
            return false;
        }
        (Ok((views, used)), Ok(checked)) => {
            assert_eq!(
                (checked.len, checked.count),
                (*used, views.len()),
                "the batch's length and count"
            );
            (views, *used)
        }
        (want, got) => panic!("the window and the decoder disagree: {want:?} against {got:?}"),
    };
    let kept: Vec<_> = views
        .iter()
        .filter(|(s, _)| *s >= keep_from)
        .cloned()
        .collect();
    assert_eq!(seen, kept, "each record to keep is seen once, in order");
    let in_window = kept.len().min(limit);
    assert_eq!(window, kept[..in_window], "the window holds the first ones");
    // The ones left out, decoded again from where the check left them.
    let checked = check_batch_views(bytes, keep_from, &mut Vec::new(), limit, |_, _| {})
        .expect("accepted above");
    match checked.left_out {
        None => assert_eq!(in_window, kept.len(), "nothing was left out"),
        Some((seq, pos)) => {
            assert_eq!(seq, kept[in_window].0, "the first record left out");
            let mut rest: Views = Vec::new();
            let mut input = InputViews::resume(&bytes[..used], seq, pos).expect("resumes");
            while input.fill(&mut rest, 3).expect("decodes again") {
                window.append(&mut rest);
            }
            window.append(&mut rest);
            assert_eq!(window, kept, "the window and the rest hold every record");
        }
    }
    // And the whole batch read by InputViews from the start.
    let mut all: Views = Vec::new();
    let mut input = InputViews::new(&bytes[..used], keep_from);
    loop {
        let limit = all.len() + 5;
        if !input.fill(&mut all, limit).expect("decodes again") {
            break;
        }
    }
    assert_eq!(all, kept, "InputViews from the start");
    true
}

#[test]
fn valid_batches_fill_the_window_as_they_decode() {
    let mut e = XorShift::new(0x5EED_4000);
    for bytes in pair_batches(&mut e, 400) {
        let first = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
        let keep_from = first.saturating_add(e.below(4));
        let limit = e.below(14) as usize;
        assert!(agrees(&bytes, keep_from, limit));
    }
}

#[test]
fn mutated_batches_fill_the_window_or_are_refused_as_they_decode() {
    let seeds = pair_batches(&mut XorShift::new(0x5EED_4001), 48);
    let mut e = XorShift::new(0x51EE_4002);
    let cases = scaled(100_000);
    let mut accepted = 0u64;
    for case in 0..cases {
        let seed = &seeds[(case % seeds.len() as u64) as usize];
        let bytes = mutated(&mut e, seed, case % 4 != 0);
        let keep_from = match e.below(3) {
            0 => 0,
            1 => u64::MAX,
            _ => e.u64(),
        };
        let limit = e.below(14) as usize;
        accepted += u64::from(agrees(&bytes, keep_from, limit));
    }
    // Both outcomes are reached.
    assert!(accepted > cases / 100, "only {accepted} accepted");
    assert!(accepted < cases - cases / 4, "{accepted} accepted");
}

/// Writes a put pair's record field by field (the layout of
/// `journal::codec`), each field now and then at a value its reader
/// refuses or at the edge of what it accepts: an empty, NUL-holding or
/// non-UTF-8 string, an instant just past `MAX_INSTANT`, a deadline of 0,
/// a bool, tag or enum byte one past its range, replica ids out of order,
/// a count larger than the bytes left. Mutations of whole batches seldom
/// reach these with the rest of the record intact.
struct Edgy<'e> {
    e: &'e mut XorShift,
    out: Vec<u8>,
}

impl Edgy<'_> {
    fn odd(&mut self) -> bool {
        self.e.below(24) == 0
    }
    fn u8(&mut self, v: u8) {
        self.out.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    /// Any u64, small ones likelier.
    fn any(&mut self) {
        let (v, shift) = (self.e.u64(), self.e.below(64));
        self.u64(v >> shift);
    }
    fn below(&mut self, n: u64) {
        let v = self.e.below(n);
        self.u64(v);
    }
    fn byte_upto(&mut self, max: u8) -> u8 {
        let b = if self.odd() {
            max + 1 + self.e.below(3) as u8
        } else {
            self.e.below(u64::from(max) + 1) as u8
        };
        self.u8(b);
        b
    }
    fn instant(&mut self) {
        let v = match self.e.below(12) {
            0 => MAX_INSTANT,
            1 if self.odd() => MAX_INSTANT + 1,
            2 => 0,
            _ => self.e.below(1 << 40),
        };
        self.u64(v);
    }
    fn deadline(&mut self) {
        if self.odd() {
            self.u64(0);
        } else {
            let v = 1 + self.e.below(1 << 40);
            self.u64(v);
        }
    }
    fn str(&mut self) {
        let mut b: Vec<u8> = (0..1 + self.e.below(6)).map(|i| b'a' + i as u8).collect();
        if self.odd() {
            match self.e.below(4) {
                0 => b.clear(),
                1 => b.push(0),
                2 => b.push(0xff),
                _ => b.extend_from_slice("é".as_bytes()),
            }
        }
        self.u32(b.len() as u32);
        self.out.extend_from_slice(&b);
    }
    fn count(&mut self, n: u32) {
        let n = if self.odd() { n + 1_000_000 } else { n };
        self.u32(n);
    }
    fn ids(&mut self, n: u32) -> Vec<u64> {
        let mut id = self.e.below(100);
        (0..n)
            .map(|_| {
                id += if self.odd() { 0 } else { 1 + self.e.below(3) };
                id
            })
            .collect()
    }
    fn key(&mut self) {
        self.str();
        self.str();
    }
    fn started(&mut self) {
        self.u8(12);
        self.key();
        self.any();
        self.any();
        self.instant();
        self.any();
        self.any();
        self.byte_upto(1);
        if self.byte_upto(1) == 1 {
            self.str();
        }
        if self.byte_upto(2) == 1 {
            self.below(1 << 20);
        }
        let n = self.e.below(4) as u32;
        self.count(n);
        for id in self.ids(n) {
            self.u64(id);
            match self.byte_upto(2) {
                0 | 1 => {
                    self.str();
                    self.any();
                }
                2 => self.any(),
                _ => {}
            }
        }
    }
    fn ended(&mut self) {
        self.u8(11);
        self.key();
        self.any();
        self.instant();
        let n = self.e.below(4) as u32;
        self.count(n);
        for id in self.ids(n) {
            self.u64(id);
        }
        if self.byte_upto(1) == 1 && self.byte_upto(1) == 1 {
            self.deadline();
        }
        self.byte_upto(1);
    }
}

/// A framed batch of `records` put pair records written by [`Edgy`].
fn edgy_batch(e: &mut XorShift, records: u32) -> Vec<u8> {
    let seed = encode_batch(1, &[journal_gen::record_with_tag(e, 7)]).expect("valid span");
    let mut w = Edgy { e, out: Vec::new() };
    for _ in 0..records {
        if w.e.below(2) == 0 {
            w.started();
        } else {
            w.ended();
        }
    }
    let mut b = seed[..40].to_vec();
    b[24..28].copy_from_slice(&records.to_le_bytes());
    b.extend_from_slice(&w.out);
    reframe(&mut b);
    b
}

// The put pair's fast path refuses, and accepts, exactly what the owned
// decoder does, field by field (§12.2: decoding is total, one message per
// fault).
#[test]
fn put_pair_records_with_edge_fields_decode_as_the_owned_decoder_does() {
    let mut e = XorShift::new(0x5EED_4003);
    let (mut accepted, cases) = (0u64, scaled(200_000));
    for _ in 0..cases {
        let n = 1 + e.below(3) as u32;
        let bytes = edgy_batch(&mut e, n);
        let owned: Result<Vec<Record>, String> = decode_batch_prefix(&bytes)
            .map(|(b, _)| b.records)
            .map_err(|e| e.message().to_owned());
        let viewed: Result<Vec<Record>, String> =
            reference(&bytes).map(|(v, _)| v.iter().map(|(_, v)| v.to_record()).collect());
        assert_eq!(owned, viewed, "{bytes:02x?}");
        let ok = agrees(&bytes, 0, e.below(4) as usize);
        assert_eq!(ok, owned.is_ok());
        accepted += u64::from(ok);
    }
    assert!(accepted > cases / 10, "only {accepted} accepted");
    assert!(accepted < cases - cases / 10, "{accepted} accepted");
}
