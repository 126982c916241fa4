//! The identity-hash generator's per-thread state: HotSpot's xor-shift (`-XX:hashCode=5`,
//! `get_next_hash` in `synchronizer.cpp`) with four words per thread, so that generating a
//! hash touches no shared cache line. What a hash is for and where each protocol keeps it is
//! `hash.rs`'s business; this file owns the generator only. A lower layer: every
//! `ThreadCore` holds a [`HashState`], so this file knows nothing above the loom shim.

use crate::sync::{AtomicU32, Ordering};

/// HotSpot's initial Y, Z and W (`Thread::Thread()`: `_hashStateY = 842502087`,
/// `_hashStateZ = 0x8767`, `_hashStateW = 273326509`).
const INIT_Y: u32 = 842_502_087;
const INIT_Z: u32 = 0x8767;
const INIT_W: u32 = 273_326_509;

/// A thread's xor-shift state. Only its thread calls [`next`](Self::next); atomics (relaxed
/// loads and stores, no read-modify-write) only because the `ThreadCore` holding it is
/// shared.
pub(crate) struct HashState {
    x: AtomicU32,
    y: AtomicU32,
    z: AtomicU32,
    w: AtomicU32,
}

impl HashState {
    /// The state of thread `id` (its `generation`-th holder).
    pub(crate) fn new(id: u16, generation: u32) -> Self {
        // A multiplicative mix (the golden-ratio constant) spreads neighbouring ids over the
        // whole word, so that the first hashes of threads 1 and 2 are unrelated.
        let seed = (u32::from(id) ^ generation.rotate_left(16)).wrapping_mul(0x9e37_79b9);
        Self {
            x: AtomicU32::new(seed | 1),
            y: AtomicU32::new(INIT_Y),
            z: AtomicU32::new(INIT_Z),
            w: AtomicU32::new(INIT_W),
        }
    }

    /// One step of the generator: the next 32-bit value.
    fn step(&self) -> u32 {
        let r = Ordering::Relaxed;
        let mut t = self.x.load(r);
        t ^= t << 11;
        self.x.store(self.y.load(r), r);
        self.y.store(self.z.load(r), r);
        let mut v = self.w.load(r);
        self.z.store(v, r);
        v = (v ^ (v >> 19)) ^ (t ^ (t >> 8));
        self.w.store(v, r);
        v
    }

    /// A fresh hash in `1..2^bits` (`bits` in 1..=32).
    pub(crate) fn next(&self, bits: u32) -> u32 {
        let mask = if bits >= 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        };
        loop {
            let v = self.step() & mask;
            if v != 0 {
                return v;
            }
        }
    }
}

impl std::fmt::Debug for HashState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HashState")
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The generator is HotSpot's: from X = 1 and HotSpot's Y, Z, W, the first value is what
    /// `get_next_hash` computes by hand: t = 1 ^ (1 << 11) = 0x801;
    /// v = (W ^ (W >> 19)) ^ (t ^ (t >> 8)).
    #[test]
    fn first_value_matches_hotspot_formula() {
        let s = HashState::new(0, 0);
        s.x.store(1, Ordering::Relaxed);
        let t: u32 = 0x801;
        let w = INIT_W;
        assert_eq!(s.step(), (w ^ (w >> 19)) ^ (t ^ (t >> 8)));
        // The state shifted down one word, as in HotSpot.
        assert_eq!(s.x.load(Ordering::Relaxed), INIT_Y);
        assert_eq!(s.y.load(Ordering::Relaxed), INIT_Z);
        assert_eq!(s.z.load(Ordering::Relaxed), INIT_W);
    }

    /// Masked, never 0, and different threads draw different sequences.
    #[test]
    fn values_are_masked_nonzero_and_per_thread() {
        let a = HashState::new(1, 0);
        let b = HashState::new(2, 0);
        let c = HashState::new(1, 1);
        let va: Vec<u32> = (0..64).map(|_| a.next(4)).collect();
        assert!(va.iter().all(|&v| (1..16).contains(&v)));
        let (sa, sb, sc): (Vec<u32>, Vec<u32>, Vec<u32>) = (
            (0..8).map(|_| a.next(31)).collect(),
            (0..8).map(|_| b.next(31)).collect(),
            (0..8).map(|_| c.next(31)).collect(),
        );
        assert_ne!(sa, sb);
        assert_ne!(sa, sc);
    }
}
