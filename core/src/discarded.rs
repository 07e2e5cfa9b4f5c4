//! A shard's discarded buffers (docs/CONTRACT.md §3: buffers no replica
//! owns any more, held until their release instant so a reader that still
//! has a descriptor never sees them reused), in the order they were
//! discarded: an operation's own discards are the entries from the length
//! it saw when it took the shard lock (its journal record lists them).
//!
//! The list knows the earliest release instant it holds and whether its
//! instants are in order. Buffers are discarded as time goes on, each
//! `now + put_start_release_timeout`, so the order holds but for a sweep's
//! (`put_start + release`, already due) or a restore's: the release pass
//! then skips a shard with nothing due in O(1) and takes the due buffers
//! as a prefix, so its cost follows what is due, not what is held. Out of
//! order, it falls back to a walk over the list, which puts it back in
//! order once the entries out of place are released.

use crate::clock::{Instant, MAX_INSTANT};
use crate::shard::Discarded;
use crate::types::SegmentId;

#[derive(Debug, Default)]
pub(crate) struct DiscardedList {
    list: Vec<Discarded>,
    /// The earliest release instant held (meaningless when empty).
    earliest: Instant,
    /// Whether release instants never decrease along `list`.
    ordered: bool,
}

impl std::ops::Deref for DiscardedList {
    type Target = [Discarded];
    fn deref(&self) -> &[Discarded] {
        &self.list
    }
}

impl<'a> IntoIterator for &'a DiscardedList {
    type Item = &'a Discarded;
    type IntoIter = std::slice::Iter<'a, Discarded>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

impl DiscardedList {
    /// Appends a buffer discarded now (an operation's, after the ones
    /// before it).
    pub fn push(&mut self, d: Discarded) {
        match self.list.last() {
            None => {
                self.earliest = d.release_at;
                self.ordered = true;
            }
            Some(last) => {
                self.ordered &= last.release_at <= d.release_at;
                self.earliest = self.earliest.min(d.release_at);
            }
        }
        self.list.push(d);
    }

    /// The earliest release instant held; `None` when the list is empty.
    pub fn earliest(&self) -> Option<Instant> {
        (!self.list.is_empty()).then_some(self.earliest)
    }

    /// Whether a buffer is due at `at` (released at or before it): O(1).
    pub fn any_due(&self, at: Instant) -> bool {
        self.earliest().is_some_and(|e| e <= at)
    }

    /// Takes out the buffers due at `at` (in list order; the rest keep
    /// theirs). In order, that is a prefix: O(due) plus moving the rest
    /// down; otherwise one walk over the list.
    pub fn take_due(&mut self, at: Instant) -> Vec<Discarded> {
        self.take_due_where(at, |_| true)
    }

    /// Takes out the buffers due at `at` that `also` accepts (a standby
    /// releasing the buffers a record names), as [`take_due`](Self::take_due).
    pub fn take_due_where(
        &mut self,
        at: Instant,
        also: impl Fn(&Discarded) -> bool,
    ) -> Vec<Discarded> {
        if !self.any_due(at) {
            return Vec::new();
        }
        let due_end = if self.ordered {
            self.list.partition_point(|d| d.release_at <= at)
        } else {
            self.list.len()
        };
        let rest = self.list.split_off(due_end);
        let (due, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.list)
            .into_iter()
            .partition(|d| d.release_at <= at && also(d));
        self.list = kept;
        self.list.extend(rest);
        self.settle();
        due
    }

    /// Keeps only the buffers `keep` accepts (a segment's go with its
    /// unmount). One walk over the list.
    pub fn retain(&mut self, keep: impl FnMut(&Discarded) -> bool) {
        self.list.retain(keep);
        self.settle();
    }

    /// Drops the buffers on `segment` (they go with its unmount) and
    /// returns their bytes.
    pub fn drop_segment(&mut self, segment: SegmentId) -> i64 {
        let mut gone = 0i64;
        self.retain(|d| {
            let keep = d.segment != segment;
            if !keep {
                gone += d.len as i64;
            }
            keep
        });
        gone
    }

    /// After entries were taken out: the earliest instant and the order,
    /// again. A subsequence
    /// of an ordered list is ordered, so in order this is O(1); out of
    /// order one walk, which finds the order back once the entries out of
    /// place are gone.
    fn settle(&mut self) {
        if self.ordered {
            self.earliest = self.list.first().map_or(MAX_INSTANT, |d| d.release_at);
            return;
        }
        let mut ordered = true;
        let mut earliest = MAX_INSTANT;
        let mut last = 0;
        for d in &self.list {
            ordered &= last <= d.release_at;
            last = d.release_at;
            earliest = earliest.min(d.release_at);
        }
        self.ordered = ordered;
        self.earliest = earliest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::BlockId;

    fn d(addr: u64, release_at: Instant) -> Discarded {
        Discarded {
            segment: 1,
            addr,
            block: BlockId::NONE,
            len: 64,
            release_at,
            replica: addr,
        }
    }

    fn addrs(l: &[Discarded]) -> Vec<u64> {
        l.iter().map(|d| d.addr).collect()
    }

    #[test]
    fn in_order_the_due_buffers_are_a_prefix_taken_in_list_order() {
        let mut l = DiscardedList::default();
        assert_eq!(l.earliest(), None);
        assert!(!l.any_due(MAX_INSTANT));
        for (a, t) in [(1, 10), (2, 10), (3, 20), (4, 30)] {
            l.push(d(a, t));
        }
        assert_eq!(l.earliest(), Some(10));
        assert!(!l.any_due(9));
        assert!(l.take_due(9).is_empty());
        assert_eq!(addrs(&l.take_due(20)), [1, 2, 3]);
        assert_eq!(addrs(&l), [4]);
        assert_eq!(l.earliest(), Some(30));
        assert_eq!(addrs(&l.take_due(30)), [4]);
        assert_eq!(l.earliest(), None);
    }

    #[test]
    fn out_of_order_every_due_buffer_is_found_and_the_order_comes_back() {
        let mut l = DiscardedList::default();
        // A sweep's buffer (already due) after later ones.
        for (a, t) in [(1, 50), (2, 60), (3, 5), (4, 70)] {
            l.push(d(a, t));
        }
        assert!(!l.ordered);
        assert_eq!(l.earliest(), Some(5));
        assert_eq!(addrs(&l.take_due(10)), [3]);
        assert!(l.ordered, "the entry out of place is gone");
        assert_eq!(addrs(&l), [1, 2, 4]);
        assert_eq!(l.earliest(), Some(50));
        assert_eq!(addrs(&l.take_due(60)), [1, 2]);
        assert_eq!(addrs(&l), [4]);
    }

    #[test]
    fn a_filtered_take_keeps_what_it_does_not_accept_in_place() {
        let mut l = DiscardedList::default();
        for (a, t) in [(1, 10), (2, 10), (3, 10), (4, 40)] {
            l.push(d(a, t));
        }
        assert_eq!(addrs(&l.take_due_where(40, |x| x.addr % 2 == 0)), [2, 4]);
        assert_eq!(addrs(&l), [1, 3]);
        assert_eq!(l.earliest(), Some(10));
        l.retain(|x| x.addr != 1);
        assert_eq!(addrs(&l), [3]);
        assert_eq!(l.earliest(), Some(10));
        l.retain(|_| false);
        assert_eq!(l.earliest(), None);
        // Pushed into again after it emptied: ordered from scratch.
        l.push(d(9, 3));
        l.push(d(8, 4));
        assert!(l.ordered);
        assert_eq!(l.earliest(), Some(3));
    }

    /// Against a plain list: any pushes, takes and retains leave the same
    /// buffers in the same order, and the earliest instant is the minimum.
    #[test]
    fn matches_a_plain_list() {
        let mut rng = crate::test_rng::XorShift(7);
        for _ in 0..200 {
            let mut l = DiscardedList::default();
            let mut plain: Vec<Discarded> = Vec::new();
            let mut now = 100;
            for step in 0..200u64 {
                match rng.below(6) {
                    0..=2 => {
                        now += rng.below(5);
                        // Mostly now + a fixed timeout; sometimes an earlier one.
                        let t = if rng.below(8) == 0 {
                            now - rng.below(100).min(now)
                        } else {
                            now + 50
                        };
                        l.push(d(step, t));
                        plain.push(d(step, t));
                    }
                    3 | 4 => {
                        let at = now + rng.below(60);
                        let got = l.take_due(at);
                        let want: Vec<_> = plain
                            .iter()
                            .copied()
                            .filter(|x| x.release_at <= at)
                            .collect();
                        plain.retain(|x| x.release_at > at);
                        assert_eq!(got, want);
                    }
                    _ => {
                        let m = rng.below(3);
                        l.retain(|x| x.addr % 3 != m);
                        plain.retain(|x| x.addr % 3 != m);
                    }
                }
                assert_eq!(&l[..], &plain[..]);
                assert_eq!(l.earliest(), plain.iter().map(|x| x.release_at).min());
            }
        }
    }
}
