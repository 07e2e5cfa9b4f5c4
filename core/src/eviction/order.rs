//! The eviction order, (lease, creation sequence), produced lazily.

use super::collect::{Candidate, Key, PINNED, PROTECTED, UNPROTECTED};

/// Candidates in (lease, creation sequence) order, sorted only as far as a
/// pass reads: a run usually stops after a few percent of them, so the rest
/// is only partitioned (`select_nth_unstable`), never sorted. Sequences are
/// unique, so the order is exactly that of a full sort.
///
/// The order may be held only up to a cut on each side: unprotected
/// candidates after one, protected ones after the other, were dropped by
/// the reading. A position is then readable only while its candidate is
/// not after the cut of a side the reader takes ([`Ordered::ready`]); past
/// it the caller reads the dropped ones again and hands them over
/// ([`Ordered::resume`]).
pub(super) struct Ordered {
    cands: Vec<Candidate>,
    /// `cands[..sorted]` is the sorted prefix of the total order.
    sorted: usize,
    /// Size of the first chunk to sort.
    first: usize,
    /// Candidates of a side ([`UNPROTECTED`], [`PROTECTED`]) after its key
    /// are not held.
    cuts: [Option<Key>; 2],
}

/// Whether a position of the order can be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ready {
    /// It holds the candidate at that place of the order.
    Yes,
    /// The order ends before it.
    End,
    /// Candidates of a side dropped after its cut come before it: read
    /// them first (with the other side's cut, where the part of the order
    /// held whole ends on that side).
    Behind {
        side: usize,
        cut: Key,
        other_cut: Option<Key>,
    },
}

impl Ordered {
    pub(super) fn new(cands: Vec<Candidate>, expected: usize, cuts: [Option<Key>; 2]) -> Self {
        Ordered {
            cands,
            cuts,
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

    /// Whether position `i` can be read in order by a reader that takes
    /// unprotected candidates only, or `protected` ones too (the positions
    /// before it were read by it): sorts as far as `i`. A reader of
    /// unprotected candidates reads past the protected side's cut, whose
    /// candidates it skips.
    pub(super) fn ready(&mut self, i: usize, protected: bool) -> Ready {
        let key = (i < self.cands.len()).then(|| self.at(i).key());
        for side in [UNPROTECTED, PROTECTED] {
            if side == PROTECTED && !protected {
                break;
            }
            if let Some(cut) = self.cuts[side] {
                if key.is_none_or(|k| k > cut) {
                    return Ready::Behind {
                        side,
                        cut,
                        // The other side's (sides index a pair).
                        other_cut: self.cuts[1 - side],
                    };
                }
            }
        }
        if key.is_some() {
            Ready::Yes
        } else {
            Ready::End
        }
    }

    /// Hands over the candidates of `side` read again after
    /// [`Ready::Behind`] at position `i` (every one of them after the
    /// side's old cut), with its new cut. The positions before `i` hold the
    /// order up to the old cut and stay as they are; every candidate from
    /// `i` on is after it, so the order goes on from `i` over those and the
    /// new ones together.
    ///
    /// A reading also brings back candidates of the other side it may hold
    /// already, and an object that changed side after the first reading
    /// (pinned, or its pin cleared, meanwhile) may be held on its old side:
    /// a candidate's sequence names its object, so one already held from
    /// `i` on (where any such one is: its key is after the old cut) is not
    /// added again; the held one takes the side it was read on now.
    pub(super) fn resume(
        &mut self,
        i: usize,
        side: usize,
        mut more: Vec<Candidate>,
        cut: Option<Key>,
    ) {
        let old = self.cuts[side];
        let i = i.min(self.cands.len());
        debug_assert!(self.cands[..i]
            .iter()
            .all(|c| old.is_some_and(|k| c.key() <= k)));
        debug_assert!(more.iter().all(|c| old.is_some_and(|k| c.key() > k)));
        if i < self.cands.len() && !more.is_empty() {
            let mut held: Vec<(u64, usize)> = (i..self.cands.len())
                .map(|p| (self.cands[p].seq, p))
                .collect();
            held.sort_unstable();
            more.retain(
                |c| match held.binary_search_by_key(&c.seq, |&(seq, _)| seq) {
                    Ok(at) => {
                        let pinned = c.has(PINNED);
                        self.cands[held[at].1].set(PINNED, pinned);
                        false
                    }
                    Err(_) => true,
                },
            );
        }
        if !more.is_empty() {
            self.cands.extend_from_slice(&more);
            self.sorted = i.min(self.sorted);
        }
        self.cuts[side] = cut;
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
    use super::super::collect::{cand, PINNED};
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
            let mut lazy = Ordered::new(cands, expected, [None, None]);
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
    fn an_order_held_up_to_cuts_reads_the_full_sort_when_resumed_at_each_cut() {
        // §5: a reading keeps the first `keep` candidates of each side;
        // reaching a side's cut, the caller reads the next `keep` of that
        // side after it. Read position by position, as a pass does, the
        // order is the full sort's (a reader of unprotected candidates: the
        // full sort of those, protected ones skipped wherever they are).
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let cases = [
            (0, 1, 3),
            (1, 1, 2),
            (500, 1, 4),
            (5_000, 7, 3),
            (5_000, 300, 0),
            (3_000, 64, 1),
            (4_000, 50, 10),
        ];
        for (n, keep, pinned_every) in cases {
            let all: Vec<Candidate> = (0..n as u64)
                .map(|s| {
                    let mut c = cand(next() % 40, s);
                    c.set(PINNED, pinned_every > 0 && s % pinned_every == 0);
                    c
                })
                .collect();
            let side_of = |c: &Candidate| {
                if c.has(PINNED) {
                    PROTECTED
                } else {
                    UNPROTECTED
                }
            };
            // The candidates of `side` after `after`: the first `keep` and the new cut.
            let read = |side: usize, after: Option<Key>| {
                let mut v: Vec<Candidate> = all
                    .iter()
                    .filter(|c| side_of(c) == side && after.is_none_or(|a| c.key() > a))
                    .copied()
                    .collect();
                v.sort_unstable_by_key(Candidate::key);
                let cut = (v.len() > keep).then(|| v[keep - 1].key());
                v.truncate(keep);
                (v, cut)
            };
            for protected in [false, true] {
                let mut want: Vec<Key> = all
                    .iter()
                    .filter(|c| protected || !c.has(PINNED))
                    .map(Candidate::key)
                    .collect();
                want.sort_unstable();
                let (mut list, cut_u) = read(UNPROTECTED, None);
                let (pinned, cut_p) = read(PROTECTED, None);
                list.extend(pinned);
                let mut order = Ordered::new(list, 10, [cut_u, cut_p]);
                let mut got = Vec::new();
                let mut i = 0;
                loop {
                    match order.ready(i, protected) {
                        Ready::Yes => {
                            let c = *order.at(i);
                            if protected || !c.has(PINNED) {
                                got.push(c.key());
                            }
                            i += 1;
                        }
                        Ready::End => break,
                        Ready::Behind { side, cut, .. } => {
                            assert!(protected || side == UNPROTECTED);
                            let (more, cut) = read(side, Some(cut));
                            order.resume(i, side, more, cut);
                        }
                    }
                }
                assert_eq!(got, want, "n={n} keep={keep} protected={protected}");
                // A later pass reads the same order from the front.
                assert!((0..i).all(|j| order.ready(j, protected) == Ready::Yes));
                assert_eq!(order.ready(i, protected), Ready::End);
            }
        }
    }

    #[test]
    fn a_candidate_read_again_on_the_other_side_is_held_once() {
        // An object kept unprotected (seq 7, key (0, 7)) and pinned since is
        // read again by the protected side's reading: resume holds it once,
        // as protected.
        let mut p = cand(0, 3);
        p.set(PINNED, true);
        let list = vec![cand(0, 1), cand(0, 7), p];
        let mut order = Ordered::new(list, 10, [None, Some((0, 3))]);
        assert_eq!(order.ready(0, true), Ready::Yes);
        assert_eq!(order.ready(1, true), Ready::Yes);
        assert_eq!(
            order.ready(2, true),
            Ready::Behind {
                side: PROTECTED,
                cut: (0, 3),
                other_cut: None,
            }
        );
        let mut again = cand(0, 7);
        again.set(PINNED, true);
        let mut other = cand(0, 9);
        other.set(PINNED, true);
        order.resume(2, PROTECTED, vec![again, other], None);
        let keys: Vec<(Instant, u64)> = (0..order.len()).map(|i| order.at(i).key()).collect();
        assert_eq!(keys, vec![(0, 1), (0, 3), (0, 7), (0, 9)]);
        // Held once, on the side it was read on last.
        assert!(order.at(2).has(PINNED), "the held one takes its side now");
        assert_eq!(order.ready(4, true), Ready::End);
    }
}
