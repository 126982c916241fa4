//! One header, one runtime: the runtime tag kept in the spare bytes of a 4-byte-word
//! header, and the host bits a VM stores beside the lock bits.

use super::*;

/// Whether `h`'s tag word names a runtime other than the one tagged `tag`. A runtime whose
/// protocol word is 8 bytes has tag 0 and checks nothing; an untagged (all-zero) header is
/// accepted by every runtime.
///
/// # Safety
/// `h` points to a live `objmon_header`; when `tag != 0` its upper 4 bytes are the tag word
/// (the protocol's word fills only the lower 4, checked at runtime creation).
#[inline]
pub(crate) unsafe fn foreign(tag: u32, h: *const objmon_header) -> bool {
    // SAFETY: see the contract: in bounds, 4-aligned, never touched by the protocol.
    tag != 0 && {
        let t = unsafe { tag_word(h) }.load(Ordering::Relaxed);
        t != 0 && t != tag
    }
}

/// The upper 4 bytes of `h`, where a tagged runtime keeps its tag.
///
/// # Safety
/// `h` points to a live `objmon_header` whose protocol word is 4 bytes.
pub(crate) unsafe fn tag_word<'a>(h: *const objmon_header) -> &'a AtomicU32 {
    // SAFETY: an objmon_header is 8 bytes, 8-aligned: bytes 4..8 are in bounds and 4-aligned,
    // and the protocol's 4-byte word (at offset 0) never overlaps them.
    unsafe { &*(h as *const AtomicU32).add(1) }
}

/// Tags handed to runtimes (nonzero; wraps after 2^32 - 1 runtimes, when two runtimes alive
/// at once could share one: detection is then best effort).
pub(crate) fn next_tag() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    loop {
        let t = NEXT.fetch_add(1, Ordering::Relaxed);
        if t != 0 {
            return t;
        }
    }
}

/// The host's bits of each protocol's header, as one C value of `width` bits (bit 0 up).
///
/// `P::Header` is any type to the generic code (`Protocol` bounds it by no host-bits trait), so
/// the header types are told apart by `TypeId`; a header type not listed here (a protocol
/// added later) leaves the host no bits until it is.
pub(crate) mod host_bits {
    use super::objmon_header;
    use objmon::vm::{BiasWord, HostWord, LockWord, MarkWord, StackWord, TasukiHeader};
    use std::any::TypeId;

    /// One protocol's host bits: how many, and how to write and read them.
    #[derive(Clone, Copy)]
    pub(crate) struct HostBits {
        /// How many bits (values 0 .. 2^width - 1); 0: none.
        pub width: u32,
        /// Writes an unlocked header carrying the value (of at most `width` bits).
        init: unsafe fn(*mut objmon_header, u32),
        /// The value, or `None` while the protocol has displaced it.
        read: unsafe fn(*const objmon_header) -> Option<u32>,
    }

    /// Mark words (`lightweight*`, `stack`) keep 7 host bits in place: bits 7..2 and 63
    /// (`MARK_HOST_BITS`). The C value packs them as bits 5..0 and 6.
    fn mark_from_value(v: u32) -> u64 {
        (u64::from(v & 0x3f) << 2) | (u64::from(v >> 6 & 1) << 63)
    }

    fn mark_to_value(w: u64) -> u32 {
        ((w >> 2) & 0x3f) as u32 | (((w >> 63) as u32) << 6)
    }

    // The accessors below each run on a pointer whose type was proven by `TypeId` in
    // `HostBits::of`. SAFETY of every dereference: the caller's contract (`init`: `h` valid for
    // writes of an `objmon_header`, which the header type fits, checked at runtime creation;
    // `read`: `h` an initialised header of the runtime, so a valid `H`).

    unsafe fn init_as<H>(h: *mut objmon_header, header: H) {
        // SAFETY: see above; the slot holds no live header yet (`objmon_header_init`'s contract).
        unsafe { std::ptr::write(h as *mut H, header) }
    }

    unsafe fn as_ref<'a, H>(h: *const objmon_header) -> &'a H {
        // SAFETY: see above.
        unsafe { &*(h as *const H) }
    }

    impl HostBits {
        /// The host bits of header type `H`.
        pub fn of<H: 'static>() -> HostBits {
            let t = TypeId::of::<H>();
            // SAFETY (every `unsafe` block in the closures): the header type is `H`, as the
            // `TypeId` comparison selecting the branch proves; see `init_as` / `as_ref`.
            if t == TypeId::of::<LockWord>() {
                HostBits {
                    width: 8,
                    init: |h, v| unsafe { init_as(h, LockWord::new(v as u8)) },
                    read: |h| Some(u32::from(unsafe { as_ref::<LockWord>(h) }.host_bits())),
                }
            } else if t == TypeId::of::<HostWord>() {
                HostBits {
                    width: 8,
                    init: |h, v| unsafe { init_as(h, HostWord::new(v)) },
                    read: |h| Some(unsafe { as_ref::<HostWord>(h) }.bits()),
                }
            } else if t == TypeId::of::<BiasWord>() {
                HostBits {
                    width: 8,
                    init: |h, v| unsafe { init_as(h, BiasWord::new(v as u8)) },
                    read: |h| Some(u32::from(unsafe { as_ref::<BiasWord>(h) }.host_bits())),
                }
            } else if t == TypeId::of::<MarkWord>() {
                HostBits {
                    width: 7,
                    init: |h, v| unsafe { init_as(h, MarkWord::new(mark_from_value(v))) },
                    read: |h| Some(mark_to_value(unsafe { as_ref::<MarkWord>(h) }.host_bits())),
                }
            } else if t == TypeId::of::<StackWord>() {
                HostBits {
                    width: 7,
                    init: |h, v| unsafe { init_as(h, StackWord::new(mark_from_value(v))) },
                    read: |h| {
                        unsafe { as_ref::<StackWord>(h) }
                            .host_bits()
                            .map(mark_to_value)
                    },
                }
            } else if t == TypeId::of::<TasukiHeader>() {
                // The lock word's host byte is bits 7..0 of the value, the aux word's 15..8.
                HostBits {
                    width: 16,
                    init: |h, v| unsafe { init_as(h, TasukiHeader::new(v as u8, (v >> 8) as u8)) },
                    read: |h| {
                        let t = unsafe { as_ref::<TasukiHeader>(h) };
                        Some(
                            u32::from(t.lock_word().host_bits())
                                | u32::from(t.aux_host_bits()) << 8,
                        )
                    },
                }
            } else {
                HostBits {
                    width: 0,
                    init: |_, _| unreachable!("a zero-width host value is never written"),
                    read: |_| Some(0),
                }
            }
        }

        /// Writes an unlocked header carrying `v` (`v < 2^width`, and `width > 0`).
        ///
        /// # Safety
        /// `h` is valid for writes, holds no live header, and the runtime's header type is the
        /// one this was made `of`.
        pub unsafe fn init(&self, h: *mut objmon_header, v: u32) {
            debug_assert!(self.width > 0 && v >> self.width == 0);
            // SAFETY: forwarded contract.
            unsafe { (self.init)(h, v) }
        }

        /// The host's value in `h`, `None` while displaced.
        ///
        /// # Safety
        /// `h` is an initialised header of a runtime whose header type this was made `of`.
        pub unsafe fn read(&self, h: *const objmon_header) -> Option<u32> {
            // SAFETY: forwarded contract.
            unsafe { (self.read)(h) }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn mark_packing_round_trips_every_value_and_stays_in_the_host_mask() {
            const MARK_HOST_BITS: u64 = 0x8000_0000_0000_00fc;
            for v in 0..128 {
                let w = mark_from_value(v);
                assert_eq!(w & !MARK_HOST_BITS, 0, "{v:#x} leaves the host bits");
                assert_eq!(mark_to_value(w), v);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Type erasure: one vtable call per operation, then the protocol's own (inlined) paths.
