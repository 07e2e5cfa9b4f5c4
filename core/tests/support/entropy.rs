//! Where the generators get their choices from. Tests use [`XorShift`]
//! (deterministic, never runs dry); the fuzz crate implements [`Entropy`]
//! over libFuzzer's input, so the same generator code serves both.

/// A source of bounded choices.
pub trait Entropy {
    /// A value in `[0, n)`; `n == 0` is treated as 1. A drained source
    /// returns 0.
    fn below(&mut self, n: u64) -> u64;

    /// Whether the source has run dry (generators stop then).
    fn drained(&self) -> bool {
        false
    }

    /// True with probability `pct` percent.
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }

    /// One element of a non-empty slice.
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }

    /// A full-range u64 (two draws, so a byte-based source spends 8 bytes).
    fn u64(&mut self) -> u64 {
        (self.below(1 << 32) << 32) | self.below(1 << 32)
    }
}

/// xorshift64* — tiny, deterministic and good enough to drive test inputs.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        // splitmix64 of the seed: nearby seeds give unrelated streams, and
        // the state is never 0 (xorshift's fixed point).
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        XorShift((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

impl Entropy for XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    fn u64(&mut self) -> u64 {
        self.next_u64()
    }
}
