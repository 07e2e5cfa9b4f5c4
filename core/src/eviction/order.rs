//! The eviction order, (lease, creation sequence), produced lazily.

use super::collect::Candidate;

/// Candidates in (lease, creation sequence) order, sorted only as far as a
/// pass reads: a run usually stops after a few percent of them, so the rest
/// is only partitioned (`select_nth_unstable`), never sorted. Sequences are
/// unique, so the order is exactly that of a full sort.
pub(super) struct Ordered {
    cands: Vec<Candidate>,
    /// `cands[..sorted]` is the sorted prefix of the total order.
    sorted: usize,
    /// Size of the first chunk to sort.
    first: usize,
}

impl Ordered {
    pub(super) fn new(cands: Vec<Candidate>, expected: usize) -> Self {
        Ordered {
            cands,
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
            let mut lazy = Ordered::new(cands, expected);
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
}
