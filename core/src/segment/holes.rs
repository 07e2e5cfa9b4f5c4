//! The free ranges (holes) of one offset allocator: a slab of holes, each
//! with its two neighbouring blocks (`adjacent.rs`), found for best fit
//! through lists of holes of equal length, and by address only while
//! ranges are being reserved.
//!
//! - **By length.** The longest hole stands apart (`top`); `by_len` maps
//!   each length the other holes have to a list of the holes of that length
//!   (linked through the holes), so best fit is one search of the lengths,
//!   which are few where objects have few sizes, then `top` if no listed
//!   hole fits, and taking, growing or shrinking a hole moves it between
//!   two lists in O(1) plus that search. A placement at the front of `top`
//!   — every placement while a segment fills front to back, and every
//!   reserve of a standby following it — changes no list and no map.
//! - **By address**, `by_end` (end offset -> hole): what `reserve` needs to
//!   find the hole that contains an arbitrary range. It is built from the
//!   holes by the first reserve and kept up to date by every change after
//!   it, until the next best-fit placement drops it: a standby (which only
//!   reserves) and a restore keep it; a primary, which places by best fit
//!   and frees, never pays for it. Keyed by the end, so the change a
//!   placement or a standby's reserve makes at the front of a hole leaves
//!   the key as it was.
//! - **The last hole a reserve used** is tried before the index: a standby
//!   reserves what its primary placed front to back, so most reserves land
//!   in the hole the previous one carved, and the index is only built (and
//!   from then on kept) once a reserve lands elsewhere.

use std::collections::BTreeMap;

use super::adjacent::Adjacent;
use super::chunked::Chunked;

/// End of a list (of equal lengths, or of vacant slots).
const NIL: u32 = u32::MAX;

/// One hole. `len == 0` marks a vacant slot, whose `next` then holds the
/// next vacant slot.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hole {
    pub(super) start: u64,
    pub(super) len: u64,
    /// The block (or edge) before `start`, and after `start + len`.
    pub(super) left: Adjacent,
    pub(super) right: Adjacent,
    /// Neighbours in the list of holes of this length.
    prev: u32,
    next: u32,
}

impl Hole {
    pub(super) fn end(&self) -> u64 {
        self.start + self.len
    }
}

#[derive(Debug, Clone)]
pub(super) struct Holes {
    slots: Chunked<Hole>,
    /// Head of the vacant-slot list, or `NIL`.
    vacant: u32,
    /// Holes now.
    live: usize,
    /// Length -> the first hole of that length, for every hole but `top`.
    by_len: BTreeMap<u64, u32>,
    /// A longest hole (as long as every listed one, or longer), or `NIL`
    /// when there is no hole.
    top: u32,
    /// End offset -> hole, while reserves are being made (module docs).
    by_end: Option<BTreeMap<u64, u32>>,
    /// The hole the last reserve found, tried first by the next (a hint:
    /// its slot may hold another hole or none by then).
    last: u32,
}

impl Holes {
    pub(super) fn new() -> Self {
        Holes {
            slots: Chunked::new(),
            vacant: NIL,
            live: 0,
            by_len: BTreeMap::new(),
            top: NIL,
            by_end: None,
            last: NIL,
        }
    }

    /// Holes now.
    pub(super) fn count(&self) -> usize {
        self.live
    }

    /// The longest hole's length, 0 if there is none.
    pub(super) fn largest(&self) -> u64 {
        self.slots.get(self.top).map_or(0, |h| h.len)
    }

    /// A hole that exists (its index comes from a side or a list).
    pub(super) fn get(&self, h: u32) -> Hole {
        *self.slots.at(h)
    }

    /// Starts loading hole `h`'s slot, if there is one.
    pub(super) fn prefetch(&self, h: u32) {
        self.slots.prefetch(h);
    }

    /// Starts loading the slots of hole `h`'s neighbours in its list of
    /// equal lengths (what taking it out of the list writes), if it has any.
    pub(super) fn prefetch_links(&self, h: u32) {
        if let Some(hole) = self.slots.get(h).filter(|h| h.len != 0) {
            self.slots.prefetch(hole.prev);
            self.slots.prefetch(hole.next);
        }
    }

    /// One of the shortest holes of at least `len` bytes, if any: a listed
    /// one (no longer than `top`), else `top`.
    pub(super) fn best_fit(&self, len: u64) -> Option<u32> {
        if let Some((_, &h)) = self.by_len.range(len..).next() {
            return Some(h);
        }
        (self.largest() >= len && self.top != NIL).then_some(self.top)
    }

    /// The hole that contains all of `start..end` (`start < end`), if one
    /// does: the hole the last call found if it still does (holes are
    /// disjoint, so a live hole holding the range is the one), else
    /// through the address index, built if it is not there.
    pub(super) fn containing(&mut self, start: u64, end: u64) -> Option<u32> {
        let holds = |h: &Hole| h.len != 0 && h.start <= start && end <= h.end();
        if self.slots.get(self.last).is_some_and(holds) {
            return Some(self.last);
        }
        let slots = &self.slots;
        let by_end = self.by_end.get_or_insert_with(|| {
            slots
                .iter()
                .enumerate()
                .filter(|(_, h)| h.len != 0)
                .map(|(i, h)| (h.end(), i as u32))
                .collect()
        });
        // The first hole ending after `start` is the only one that can hold
        // it (holes are disjoint).
        let (_, &h) = by_end.range(start + 1..).next()?;
        let found = holds(self.slots.at(h)).then_some(h)?;
        self.last = found;
        Some(found)
    }

    /// Whether the address index is built (tests).
    #[cfg(test)]
    pub(super) fn has_address_index(&self) -> bool {
        self.by_end.is_some()
    }

    /// Drops the address index (a best-fit placement: module docs).
    pub(super) fn forget_addresses(&mut self) {
        self.by_end = None;
    }

    /// Adds the hole `start..start+len` (`len > 0`) between `left` and
    /// `right` and returns its index. Holes never outnumber blocks plus one,
    /// and `MAX_BLOCKS + 1 <= MAX_INDEX`, so the index fits an [`Adjacent`].
    pub(super) fn add(&mut self, start: u64, len: u64, left: Adjacent, right: Adjacent) -> u32 {
        debug_assert!(len > 0);
        let hole = Hole {
            start,
            len,
            left,
            right,
            prev: NIL,
            next: NIL,
        };
        let h = if self.vacant != NIL {
            let h = self.vacant;
            let slot = self.slots.at_mut(h);
            self.vacant = slot.next;
            *slot = hole;
            h
        } else {
            self.slots.push(hole)
        };
        self.live += 1;
        self.place(h, len);
        if let Some(by_end) = &mut self.by_end {
            by_end.insert(start + len, h);
        }
        h
    }

    /// Removes the hole `h`.
    pub(super) fn remove(&mut self, h: u32) {
        let hole = self.get(h);
        self.take_out(h, hole);
        if let Some(by_end) = &mut self.by_end {
            by_end.remove(&hole.end());
        }
        let slot = self.slots.at_mut(h);
        slot.len = 0;
        slot.next = self.vacant;
        self.vacant = h;
        self.live -= 1;
    }

    /// Makes the hole `h` the range `start..start+len` (`len > 0`), moving
    /// it to the list of its new length, or keeping it as `top` while it is
    /// still as long as every listed hole.
    pub(super) fn resize(&mut self, h: u32, start: u64, len: u64) {
        debug_assert!(len > 0);
        let old = self.get(h);
        if h == self.top {
            if self.by_len.last_key_value().is_some_and(|(&l, _)| l > len) {
                self.top = self.pop_longest();
                self.list(h, len);
            }
        } else if old.len != len {
            self.unlist(old.len, old.prev, old.next);
            self.place(h, len);
        }
        let slot = self.slots.at_mut(h);
        slot.start = start;
        slot.len = len;
        if old.end() != start + len {
            if let Some(by_end) = &mut self.by_end {
                by_end.remove(&old.end());
                by_end.insert(start + len, h);
            }
        }
    }

    pub(super) fn set_left(&mut self, h: u32, to: Adjacent) {
        self.slots.at_mut(h).left = to;
    }

    pub(super) fn set_right(&mut self, h: u32, to: Adjacent) {
        self.slots.at_mut(h).right = to;
    }

    /// Every hole as `(start, len)`, in no particular order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.each().map(|(_, h)| (h.start, h.len))
    }

    /// Every hole with its index, in index order.
    pub(super) fn each(&self) -> impl Iterator<Item = (u32, Hole)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, h)| h.len != 0)
            .map(|(i, h)| (i as u32, *h))
    }

    /// Panics unless every hole but `top` is in the list of its length
    /// exactly once, the lists hold nothing else, `top` is as long as every
    /// listed hole, and the address index (if built) names exactly the
    /// holes by their ends.
    #[cfg(test)]
    pub(super) fn check(&self) {
        let mut listed = std::collections::BTreeSet::new();
        for (&len, &head) in &self.by_len {
            let (mut at, mut prev) = (head, NIL);
            assert_ne!(head, NIL, "an empty list of length {len}");
            while at != NIL {
                let h = self.get(at);
                assert_eq!(
                    (h.len, h.prev),
                    (len, prev),
                    "hole {at} in the list of {len}"
                );
                assert!(listed.insert(at), "hole {at} listed twice");
                (prev, at) = (at, h.next);
            }
        }
        let live: std::collections::BTreeSet<u32> = self.each().map(|(i, _)| i).collect();
        if live.is_empty() {
            assert_eq!(self.top, NIL, "top without holes");
        } else {
            assert!(live.contains(&self.top), "top {} is no hole", self.top);
            assert!(!listed.contains(&self.top), "top is listed");
            assert!(self.largest() >= self.by_len.last_key_value().map_or(0, |(&l, _)| l));
            listed.insert(self.top);
        }
        assert_eq!(listed, live, "listed holes");
        assert_eq!(live.len(), self.live);
        if let Some(by_end) = &self.by_end {
            let want: BTreeMap<u64, u32> = self.each().map(|(i, h)| (h.end(), i)).collect();
            assert_eq!(by_end, &want, "address index");
        }
    }

    /// Files the hole `h` (neither `top` nor listed), whose length is now
    /// `len`: as `top` if it is longer (the old `top` then listed), else in
    /// its length's list.
    fn place(&mut self, h: u32, len: u64) {
        if self.top == NIL {
            self.top = h;
            self.set_links(h, NIL, NIL);
        } else if len > self.largest() {
            let (old, old_len) = (self.top, self.largest());
            self.list(old, old_len);
            self.top = h;
            self.set_links(h, NIL, NIL);
        } else {
            self.list(h, len);
        }
    }

    /// Takes the hole `h` (as it was before any change: `was`) out of
    /// `top` or its list; a listed hole of the greatest length becomes
    /// `top` if `h` was.
    fn take_out(&mut self, h: u32, was: Hole) {
        if h == self.top {
            self.top = self.pop_longest();
        } else {
            self.unlist(was.len, was.prev, was.next);
        }
    }

    /// Unlists and returns the first hole of the greatest listed length,
    /// `NIL` if no hole is listed.
    fn pop_longest(&mut self) -> u32 {
        let Some((&len, &head)) = self.by_len.last_key_value() else {
            return NIL;
        };
        let next = self.slots.at(head).next;
        self.unlist(len, NIL, next);
        self.set_links(head, NIL, NIL);
        head
    }

    fn set_links(&mut self, h: u32, prev: u32, next: u32) {
        let slot = self.slots.at_mut(h);
        slot.prev = prev;
        slot.next = next;
    }

    /// Puts `h` first in the list of holes of length `len` (its own `prev`
    /// and `next` are overwritten).
    fn list(&mut self, h: u32, len: u64) {
        let next = match self.by_len.entry(len) {
            std::collections::btree_map::Entry::Occupied(mut e) => {
                std::mem::replace(e.get_mut(), h)
            }
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(h);
                NIL
            }
        };
        if next != NIL {
            self.slots.at_mut(next).prev = h;
        }
        let slot = self.slots.at_mut(h);
        slot.prev = NIL;
        slot.next = next;
    }

    /// Takes out of the list of length `len` the hole whose list
    /// neighbours were `prev` and `next`.
    fn unlist(&mut self, len: u64, prev: u32, next: u32) {
        if prev != NIL {
            self.slots.at_mut(prev).next = next;
        } else if next != NIL {
            if let Some(head) = self.by_len.get_mut(&len) {
                *head = next;
            }
        } else {
            self.by_len.remove(&len);
        }
        if next != NIL {
            self.slots.at_mut(next).prev = prev;
        }
    }
}
