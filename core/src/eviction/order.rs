//! The eviction order, (lease, creation sequence), produced lazily.

use super::collect::{Candidate, Key};

/// Candidates in (lease, creation sequence) order, sorted only as far as a
/// pass reads: a run usually stops after a few percent of them, so the rest
/// is only partitioned (`select_nth_unstable`), never sorted. Sequences are
/// unique, so the order is exactly that of a full sort.
///
/// The order may be held only up to a cut: unprotected candidates after it
/// were dropped by the reading. A position is then readable only while its
/// candidate is not after the cut ([`Ordered::ready`]); past it the caller
/// reads the dropped ones again and hands them over ([`Ordered::resume`]).
pub(super) struct Ordered {
    cands: Vec<Candidate>,
    /// `cands[..sorted]` is the sorted prefix of the total order.
    sorted: usize,
    /// Size of the first chunk to sort.
    first: usize,
    /// Unprotected candidates after this key are not held.
    cut: Option<Key>,
}

/// Whether a position of the order can be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ready {
    /// It holds the candidate at that place of the order.
    Yes,
    /// The order ends before it.
    End,
    /// Candidates dropped at the cut come before it: read them first.
    Behind(Key),
}

impl Ordered {
    pub(super) fn new(cands: Vec<Candidate>, expected: usize, cut: Option<Key>) -> Self {
        Ordered {
            cands,
            cut,
            sorted: 0,
            // An eighth over the estimate: a run that reads a little
            // further than expected (a group that stays, a lease renewed)
            // does not pay for a second partition of the rest.
            first: expected.saturating_add(expected / 8).max(1024),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.cands.len()
    }

    /// The candidates' buffer, for the next run.
    pub(super) fn into_inner(self) -> Vec<Candidate> {
        self.cands
    }

    /// Whether position `i` can be read in order (the positions before it
    /// were): sorts as far as `i`.
    pub(super) fn ready(&mut self, i: usize) -> Ready {
        let held = i < self.cands.len();
        match self.cut {
            None if held => Ready::Yes,
            None => Ready::End,
            Some(cut) => {
                if held && self.at(i).key() <= cut {
                    Ready::Yes
                } else {
                    Ready::Behind(cut)
                }
            }
        }
    }

    /// Hands over the candidates read again after [`Ready::Behind`] at
    /// position `i` (every one of them after the old cut), with the new
    /// cut. The positions before `i` hold the order up to the old cut and
    /// stay as they are; every candidate from `i` on is after it, so the
    /// order goes on from `i` over those and the new ones together.
    pub(super) fn resume(&mut self, i: usize, more: Vec<Candidate>, cut: Option<Key>) {
        debug_assert!(self.cands[..i.min(self.cands.len())]
            .iter()
            .all(|c| self.cut.is_some_and(|k| c.key() <= k)));
        debug_assert!(more.iter().all(|c| self.cut.is_some_and(|k| c.key() > k)));
        self.cands.extend_from_slice(&more);
        self.sorted = i.min(self.sorted);
        self.cut = cut;
    }

    /// The `i`-th candidate in order; sorts the next chunk (doubling) when
    /// `i` is past the sorted prefix.
    pub(super) fn at(&mut self, i: usize) -> &mut Candidate {
        while i >= self.sorted {
            let rest = &mut self.cands[self.sorted..];
            let chunk = self.sorted.max(self.first).min(rest.len());
            if chunk < rest.len() {
                rest.select_nth_unstable_by_key(chunk, Candidate::key);
            }
            rest[..chunk].sort_unstable_by_key(Candidate::key);
            self.sorted += chunk;
        }
        &mut self.cands[i]
    }
}

#[cfg(test)]
mod tests {
    use super::super::collect::cand;
    use super::*;
    use crate::clock::Instant;

    #[test]
    fn lazily_ordered_candidates_follow_the_full_sort() {
        // §5: eviction order is (effective lease, creation sequence), however far a pass reads.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (n, expected) in [(0, 0), (1, 5), (5_000, 10), (5_000, 4_000), (20_000, 1)] {
            let cands: Vec<Candidate> = (0..n as u64).map(|s| cand(next() % 50, s)).collect();
            let mut want: Vec<(Instant, u64)> = cands.iter().map(|c| (c.lease, c.seq)).collect();
            want.sort_unstable();
            let mut lazy = Ordered::new(cands, expected, None);
            let got: Vec<(Instant, u64)> = (0..lazy.len())
                .map(|i| {
                    let c = lazy.at(i);
                    (c.lease, c.seq)
                })
                .collect();
            assert_eq!(got, want, "n={n} expected={expected}");
            // A later pass starts again from the front and reads the same order.
            if n > 0 {
                assert_eq!((lazy.at(0).lease, lazy.at(0).seq), want[0]);
            }
        }
    }

    #[test]
    fn an_order_held_up_to_a_cut_reads_the_full_sort_when_resumed_at_each_cut() {
        // §5: a reading keeps the protected candidates and the first `keep`
        // unprotected ones; reaching the cut, the caller reads the next
        // `keep` after it. Read position by position, as a pass does, the
        // order is the full sort's.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for (n, keep, pinned_every) in [
            (0, 1, 3),
            (1, 1, 2),
            (500, 1, 4),
            (5_000, 7, 3),
            (5_000, 300, 0),
            (3_000, 64, 1),
        ] {
            let all: Vec<Candidate> = (0..n as u64)
                .map(|s| {
                    let mut c = cand(next() % 40, s);
                    c.set(
                        super::super::collect::PINNED,
                        pinned_every > 0 && s % pinned_every == 0,
                    );
                    c
                })
                .collect();
            let is_pinned = |c: &Candidate| c.has(super::super::collect::PINNED);
            let mut want: Vec<(Instant, u64)> = all.iter().map(|c| c.key()).collect();
            want.sort_unstable();
            // The unprotected ones after `after`, the first `keep` of them and the new cut.
            let read = |after: Option<Key>| {
                let mut u: Vec<Candidate> = all
                    .iter()
                    .filter(|c| !is_pinned(c) && after.is_none_or(|a| c.key() > a))
                    .copied()
                    .collect();
                u.sort_unstable_by_key(Candidate::key);
                let cut = (u.len() > keep).then(|| u[keep - 1].key());
                u.truncate(keep);
                (u, cut)
            };
            let (first, cut) = read(None);
            let mut list: Vec<Candidate> = all.iter().filter(|c| is_pinned(c)).copied().collect();
            list.extend(first);
            let mut order = Ordered::new(list, 10, cut);
            let mut got = Vec::new();
            let mut i = 0;
            loop {
                match order.ready(i) {
                    Ready::Yes => {
                        got.push(order.at(i).key());
                        i += 1;
                    }
                    Ready::End => break,
                    Ready::Behind(after) => {
                        let (more, cut) = read(Some(after));
                        order.resume(i, more, cut);
                    }
                }
            }
            assert_eq!(got, want, "n={n} keep={keep}");
            // A later pass reads the same order from the front, with nothing more to read.
            assert!((0..n).all(|i| order.ready(i) == Ready::Yes));
            assert_eq!(order.ready(n), Ready::End);
        }
    }
}
