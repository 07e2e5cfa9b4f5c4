//! A list of values kept in fixed-size chunks and named by a `u32` index.
//! It grows one chunk at a time and never moves what it holds, so growing
//! copies nothing (a doubling `Vec` would copy megabytes under the segment
//! lock) and at most one chunk is partly used. The block and hole slabs of
//! an allocator keep their entries in it.

use crate::memory::{FixedVec, Region};
use std::sync::Arc;

/// Entries per chunk.
pub(super) const CHUNK: usize = 1024;

/// Entries past the end whose line a push starts loading (a few lines
/// ahead).
const PUSH_AHEAD: usize = 6;

#[derive(Debug)]
pub(super) struct Chunked<T> {
    chunks: Vec<FixedVec<T>>,
    len: usize,
    /// Where new chunks are carved from while it has room (the master's
    /// committed region for block slots, `commit_presized`); the heap
    /// otherwise.
    region: Option<Arc<Region>>,
}

/// A copy on the heap: its chunks, and the chunks it makes later (it does
/// not hold the region).
impl<T: Clone> Clone for Chunked<T> {
    fn clone(&self) -> Self {
        Chunked {
            chunks: self.chunks.clone(),
            len: self.len,
            region: None,
        }
    }
}

impl<T> Chunked<T> {
    pub(super) fn new() -> Self {
        Self::in_region(None)
    }

    /// An empty list whose chunks are carved from `region` while it has
    /// room.
    pub(super) fn in_region(region: Option<Arc<Region>>) -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
            region,
        }
    }

    /// Bytes a region holds for `n` entries' chunks (each chunk rounded
    /// up to whole cache lines, as a region carves it).
    pub(super) fn reserved_bytes(n: usize) -> usize {
        n.div_ceil(CHUNK)
            .saturating_mul(FixedVec::<T>::region_footprint(CHUNK))
    }

    /// Bytes of the chunks that lie in a region.
    pub(super) fn region_bytes(&self) -> usize {
        self.chunks.iter().map(FixedVec::region_bytes).sum()
    }

    /// Entries pushed so far.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Appends `v` and returns its index. The caller keeps the length
    /// below `u32::MAX` (its slab's limit), so the index fits.
    pub(super) fn push(&mut self, v: T) -> u32 {
        debug_assert!(self.len < u32::MAX as usize);
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK) {
            let chunk = FixedVec::with_capacity_in(self.region.as_ref(), CHUNK);
            self.chunks.push(chunk);
        }
        let last = self.chunks.last_mut().expect("just ensured");
        let pushed = last.push(v);
        assert!(pushed.is_ok(), "a chunk holds CHUNK entries");
        // The pushes to come write the next lines: on their way now (an
        // address past the chunk's room is never dereferenced either).
        crate::memory::prefetch_ptr(last.as_ptr().wrapping_add(last.len() + PUSH_AHEAD));
        self.len += 1;
        (self.len - 1) as u32
    }

    pub(super) fn get(&self, i: u32) -> Option<&T> {
        self.chunks.get(i as usize / CHUNK)?.get(i as usize % CHUNK)
    }

    pub(super) fn get_mut(&mut self, i: u32) -> Option<&mut T> {
        self.chunks
            .get_mut(i as usize / CHUNK)?
            .get_mut(i as usize % CHUNK)
    }

    /// Starts loading entry `i`'s line, if the entry exists, without
    /// waiting for it ([`crate::memory::prefetch`]).
    pub(super) fn prefetch(&self, i: u32) {
        if let Some(v) = self.get(i) {
            crate::memory::prefetch(v);
        }
    }

    /// An entry the caller knows exists (an index this list handed out,
    /// kept in a link of the slab that owns it).
    pub(super) fn at(&self, i: u32) -> &T {
        &self.chunks[i as usize / CHUNK][i as usize % CHUNK]
    }

    pub(super) fn at_mut(&mut self, i: u32) -> &mut T {
        &mut self.chunks[i as usize / CHUNK][i as usize % CHUNK]
    }

    /// Every entry, in index order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }

    /// The chunks made so far (a test sees growth stop at chunk borders).
    #[cfg(test)]
    pub(super) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Chunks are carved from the region while it has room, then made on
    // the heap; entries read back the same from both, and a clone copies
    // them.
    #[cfg(target_os = "linux")]
    #[test]
    fn chunks_come_from_the_region_while_it_has_room() {
        let region = Region::map_committed(1).unwrap();
        let per_region = crate::memory::HUGE_PAGE / (CHUNK * 8);
        let mut c = Chunked::in_region(Some(region));
        let n = (per_region + 2) * CHUNK;
        for i in 0..n as u64 {
            assert_eq!(c.push(i), i as u32);
        }
        assert_eq!(c.region_bytes(), per_region * CHUNK * 8);
        assert_eq!(Chunked::<u64>::reserved_bytes(CHUNK + 1), 2 * CHUNK * 8);
        let copy = c.clone();
        assert_eq!(copy.region_bytes(), 0, "a clone's chunks are on the heap");
        for i in 0..n as u32 {
            assert_eq!((*c.at(i), *copy.at(i)), (u64::from(i), u64::from(i)));
        }
    }

    #[test]
    fn entries_stay_where_they_were_put_across_chunks() {
        let mut c = Chunked::new();
        for i in 0..(CHUNK as u64 * 2 + 3) {
            assert_eq!(c.push(i), i as u32);
        }
        assert_eq!(c.len(), CHUNK * 2 + 3);
        assert_eq!(c.chunk_count(), 3);
        let first: *const u64 = c.at(0);
        c.push(7);
        assert!(std::ptr::eq(first, c.at(0)), "growth moved an entry");
        *c.at_mut(CHUNK as u32) += 10;
        assert_eq!(c.get(CHUNK as u32), Some(&(CHUNK as u64 + 10)));
        assert_eq!(c.get(CHUNK as u32 * 3), None);
        assert_eq!(c.get_mut(u32::MAX), None);
        assert_eq!(c.iter().count(), CHUNK * 2 + 4);
    }
}
