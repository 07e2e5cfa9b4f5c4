//! An object's replicas in 32 bytes, the size of one replica: one lives
//! inline in the record (no allocation, and a read touches no other cache
//! line); two or more live in one boxed slice. Derefs to `[Replica]`.

use crate::object::Replica;
use std::ops::{Deref, DerefMut};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Replicas {
    #[default]
    Empty,
    One(Replica),
    Many(Box<[Replica]>),
}

// The enum's tag lives in a niche of the inline replica, so the pair costs
// no more than the replica itself.
const _: () = assert!(std::mem::size_of::<Replicas>() == std::mem::size_of::<Replica>());

impl Replicas {
    pub const fn new() -> Self {
        Replicas::Empty
    }

    fn from_vec(mut v: Vec<Replica>) -> Self {
        match v.len() {
            0 => Replicas::Empty,
            1 => Replicas::One(v.pop().expect("one replica")),
            _ => Replicas::Many(v.into_boxed_slice()),
        }
    }

    pub fn push(&mut self, r: Replica) {
        *self = match std::mem::take(self) {
            Replicas::Empty => Replicas::One(r),
            Replicas::One(a) => Replicas::Many(Box::new([a, r])),
            Replicas::Many(b) => {
                let mut v = b.into_vec();
                v.push(r);
                Replicas::Many(v.into_boxed_slice())
            }
        }
    }

    /// Removes and returns the replica at `i` (panics if out of range, as
    /// `Vec::remove`).
    pub fn remove(&mut self, i: usize) -> Replica {
        let mut v: Vec<Replica> = std::mem::take(self).into_iter().collect();
        let r = v.remove(i);
        *self = Replicas::from_vec(v);
        r
    }

    /// Keeps the replicas `keep` accepts, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&Replica) -> bool) {
        if self.iter().all(&mut keep) {
            return;
        }
        *self = std::mem::take(self).into_iter().filter(keep).collect();
    }
}

impl Deref for Replicas {
    type Target = [Replica];

    #[inline]
    fn deref(&self) -> &[Replica] {
        match self {
            Replicas::Empty => &[],
            Replicas::One(r) => std::slice::from_ref(r),
            Replicas::Many(b) => b,
        }
    }
}

impl DerefMut for Replicas {
    #[inline]
    fn deref_mut(&mut self) -> &mut [Replica] {
        match self {
            Replicas::Empty => &mut [],
            Replicas::One(r) => std::slice::from_mut(r),
            Replicas::Many(b) => b,
        }
    }
}

impl FromIterator<Replica> for Replicas {
    fn from_iter<I: IntoIterator<Item = Replica>>(iter: I) -> Self {
        let mut it = iter.into_iter();
        let Some(first) = it.next() else {
            return Replicas::Empty;
        };
        let Some(second) = it.next() else {
            return Replicas::One(first);
        };
        let mut v = Vec::with_capacity(2 + it.size_hint().0);
        v.push(first);
        v.push(second);
        v.extend(it);
        Replicas::Many(v.into_boxed_slice())
    }
}

impl Extend<Replica> for Replicas {
    fn extend<I: IntoIterator<Item = Replica>>(&mut self, iter: I) {
        let mut it = iter.into_iter().peekable();
        if it.peek().is_none() {
            return;
        }
        let mut v = match std::mem::take(self) {
            Replicas::Empty => Vec::new(),
            Replicas::One(r) => vec![r],
            Replicas::Many(b) => b.into_vec(),
        };
        v.extend(it);
        *self = Replicas::from_vec(v);
    }
}

/// By-value iteration without an allocation for the inline case.
pub(crate) enum IntoIter {
    One(std::option::IntoIter<Replica>),
    Many(std::vec::IntoIter<Replica>),
}

impl Iterator for IntoIter {
    type Item = Replica;

    #[inline]
    fn next(&mut self) -> Option<Replica> {
        match self {
            IntoIter::One(it) => it.next(),
            IntoIter::Many(it) => it.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            IntoIter::One(it) => it.size_hint(),
            IntoIter::Many(it) => it.size_hint(),
        }
    }
}

impl IntoIterator for Replicas {
    type Item = Replica;
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        match self {
            Replicas::Empty => IntoIter::One(None.into_iter()),
            Replicas::One(r) => IntoIter::One(Some(r).into_iter()),
            Replicas::Many(b) => IntoIter::Many(b.into_vec().into_iter()),
        }
    }
}

impl<'a> IntoIterator for &'a Replicas {
    type Item = &'a Replica;
    type IntoIter = std::slice::Iter<'a, Replica>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Role;
    use crate::types::{ReplicaKind, ReplicaStatus};

    fn r(id: u64) -> Replica {
        Replica {
            id,
            addr: id * 10,
            segment: id as u32,
            block: crate::segment::BlockId::NONE,
            kind: ReplicaKind::Memory,
            status: ReplicaStatus::Complete,
            role: Role::Write,
        }
    }

    fn ids(rs: &Replicas) -> Vec<u64> {
        rs.iter().map(|r| r.id).collect()
    }

    #[test]
    fn grows_from_inline_to_boxed_and_back() {
        let mut rs = Replicas::new();
        assert!(rs.is_empty());
        rs.push(r(1));
        assert!(matches!(rs, Replicas::One(_)));
        rs.push(r(2));
        rs.push(r(3));
        assert_eq!(ids(&rs), [1, 2, 3]);
        rs[1].status = ReplicaStatus::Processing;
        assert_eq!(rs.iter().filter(|r| r.is_complete()).count(), 2);
        assert_eq!(rs.remove(1).id, 2);
        assert_eq!(ids(&rs), [1, 3]);
        rs.push(r(2));
        rs.retain(|r| r.id != 2);
        assert_eq!(ids(&rs), [1, 3]);
        rs.retain(|r| r.id == 3);
        assert!(matches!(rs, Replicas::One(_)));
        assert_eq!(ids(&rs), [3]);
        rs.retain(|_| false);
        assert_eq!(rs, Replicas::Empty);
    }

    #[test]
    fn collect_partition_and_into_iter_keep_order() {
        for n in 0..5u64 {
            let rs: Replicas = (0..n).map(r).collect();
            assert_eq!(ids(&rs), (0..n).collect::<Vec<_>>());
            let (even, odd): (Replicas, Replicas) =
                rs.clone().into_iter().partition(|r| r.id % 2 == 0);
            assert_eq!(
                ids(&even),
                (0..n).filter(|i| i % 2 == 0).collect::<Vec<_>>()
            );
            assert_eq!(ids(&odd), (0..n).filter(|i| i % 2 == 1).collect::<Vec<_>>());
            assert_eq!(
                rs.into_iter().map(|r| r.id).collect::<Vec<_>>(),
                (0..n).collect::<Vec<_>>()
            );
        }
        let mut rs: Replicas = [r(1)].into_iter().collect();
        rs.extend([r(2), r(3)]);
        rs.extend(std::iter::empty());
        assert_eq!(ids(&rs), [1, 2, 3]);
        assert_eq!((&rs).into_iter().count(), 3);
    }
}
