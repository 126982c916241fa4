//! The 32-bit lock word shared by the `fat` and `thin` protocols: a 24-bit lock field in the
//! high bits and 8 bits left to the host in the low bits (seed 000 §2.3, Figure 1(a)).

use crate::sync::{AtomicU32, Ordering};

/// The host's 8 bits of a [`LockWord`]: GC state, age, a hash tag — whatever the host keeps
/// there. The protocols never change them.
pub const HOST_BITS_MASK: u32 = 0xff;

/// A header word with a 24-bit lock field (bits 31..8) and 8 host bits (bits 7..0).
///
/// The host bits are fixed when the header is made. Seed 000 §2.3 treats them as constant
/// while the object is live ("subject to change only when an object is moved"), which is what
/// lets the owner unlock with a plain store; so there is no setter.
pub struct LockWord(pub(crate) AtomicU32);

impl Default for LockWord {
    /// An unlocked header with all host bits clear.
    fn default() -> Self {
        Self::new(0)
    }
}

impl LockWord {
    crate::sync::const_unless_loom! {
        /// An unlocked header carrying `host_bits` in its low byte.
        pub fn new(host_bits: u8) -> Self {
            Self(AtomicU32::new(host_bits as u32))
        }
    }

    /// The host's 8 bits.
    #[inline]
    pub fn host_bits(&self) -> u8 {
        (self.0.load(Ordering::Relaxed) & HOST_BITS_MASK) as u8
    }

    /// Seed 000 §2.3.1, the whole uncontended lock: one load, one compare-and-swap of
    /// `host → host | id_shifted16` (the lock field must be 0: unlocked, not inflated).
    /// `id_shifted16` is the thread index already shifted into place
    /// ([`ThreadCore::id_shifted16`](crate::vm::ThreadCore::id_shifted16)). Shared by every
    /// protocol whose lock word has the thin shape.
    #[inline]
    pub fn try_lock_unlocked(&self, id_shifted16: u32) -> bool {
        let old = self.0.load(Ordering::Relaxed) & HOST_BITS_MASK;
        self.0
            .compare_exchange(
                old,
                old | id_shifted16,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// The header's address (its identity for introspection).
    #[inline]
    pub(crate) fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// The whole word, for introspection and tests (a racy snapshot).
    #[inline]
    pub fn raw(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for LockWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LockWord({:#010x})", self.raw())
    }
}
