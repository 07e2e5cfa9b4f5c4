//! A list of values kept in fixed-size chunks and named by a `u32` index.
//! It grows one chunk at a time and never moves what it holds, so growing
//! copies nothing (a doubling `Vec` would copy megabytes under the segment
//! lock) and at most one chunk is partly used. The block and hole slabs of
//! an allocator keep their entries in it.

/// Entries per chunk.
pub(super) const CHUNK: usize = 1024;

#[derive(Debug, Clone)]
pub(super) struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Chunked<T> {
    pub(super) fn new() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
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
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        self.chunks.last_mut().expect("just ensured").push(v);
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
