//! What lies on each side of an allocated block or a free range (a hole):
//! another block, a hole, or the edge of the segment. Every block and hole
//! keeps both of its sides, so the ranges of a segment form one list in
//! address order: freeing a block finds the holes it merges with in O(1),
//! without searching any tree by address. Two holes are never neighbours
//! (they are always merged).

/// One side, packed in 4 bytes: a block's slab index, a hole's slab index
/// with the top bit set, or all ones for the segment's edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Adjacent(u32);

/// What an [`Adjacent`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    Edge,
    Block(u32),
    Hole(u32),
}

const HOLE: u32 = 1 << 31;

/// Slab indexes an [`Adjacent`] can name, of blocks and of holes alike:
/// `0..MAX_INDEX` (the top bit tags holes and all ones is the edge).
pub(super) const MAX_INDEX: u32 = HOLE - 1;

impl Adjacent {
    pub(super) const EDGE: Adjacent = Adjacent(u32::MAX);

    pub(super) fn block(index: u32) -> Self {
        debug_assert!(index < MAX_INDEX);
        Adjacent(index)
    }

    pub(super) fn hole(index: u32) -> Self {
        debug_assert!(index < MAX_INDEX);
        Adjacent(index | HOLE)
    }

    pub(super) fn side(self) -> Side {
        if self == Self::EDGE {
            Side::Edge
        } else if self.0 & HOLE != 0 {
            Side::Hole(self.0 & !HOLE)
        } else {
            Side::Block(self.0)
        }
    }

    /// The hole this side names, if it names one.
    pub(super) fn as_hole(self) -> Option<u32> {
        match self.side() {
            Side::Hole(h) => Some(h),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_round_trip_at_their_limits() {
        for i in [0, 1, MAX_INDEX - 1] {
            assert_eq!(Adjacent::block(i).side(), Side::Block(i));
            assert_eq!(Adjacent::hole(i).side(), Side::Hole(i));
            assert_eq!(Adjacent::hole(i).as_hole(), Some(i));
            assert_eq!(Adjacent::block(i).as_hole(), None);
        }
        assert_eq!(Adjacent::EDGE.side(), Side::Edge);
        assert_eq!(Adjacent::EDGE.as_hole(), None);
    }
}
