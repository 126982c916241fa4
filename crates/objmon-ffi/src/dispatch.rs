//! From the C calls to a protocol: the object-safe runtime and thread traits over
//! `Runtime<P>` / `ThreadHandle<P>`, built for the protocol named at `objmon_runtime_new`, and the
//! status mapping every call shares.

use super::*;

pub(crate) trait DynRuntime: Send + Sync + DynIntrospect {
    fn name(&self) -> &'static str;
    /// The runtime's identity while any handle of it lives (the address of its `Runtime`).
    fn key(&self) -> usize;
    unsafe fn header_init(&self, h: *mut objmon_header);
    fn attach(&self) -> Result<Box<dyn DynThread>, MonitorError>;
    unsafe fn owner_of(&self, h: *const objmon_header) -> Option<ThreadId>;
    fn interrupt(&self, id: ThreadId) -> Result<(), MonitorError>;
    fn stats(&self) -> StatsSnapshot;
    /// `Runtime::report_statistics`.
    fn report_statistics(&self);
    unsafe fn reclaim(&self, h: *mut objmon_header);
    unsafe fn peek_identity_hash(&self, h: *const objmon_header) -> Option<u32>;
    unsafe fn relocate(&self, from: *const objmon_header, to: *const objmon_header);
}

/// The operations of one attached thread. Every `unsafe fn` here acts as the thread: its
/// caller has checked that the calling OS thread attached this handle and (but for
/// `leave_native` and `lock_count`) is not in native (`objmon_thread::check`), and passes a
/// header pointer satisfying the module's contract.
pub(crate) trait DynThread {
    fn id(&self) -> u16;
    unsafe fn enter(&self, h: *const objmon_header) -> Result<(), MonitorError>;
    unsafe fn try_enter(&self, h: *const objmon_header) -> Result<bool, MonitorError>;
    unsafe fn exit(&self, h: *const objmon_header) -> Result<(), MonitorError>;
    unsafe fn wait(
        &self,
        h: *const objmon_header,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, MonitorError>;
    unsafe fn notify(&self, h: *const objmon_header, all: bool) -> Result<(), MonitorError>;
    unsafe fn lock_count(&self, h: *const objmon_header) -> u32;
    fn interrupted(&self) -> bool;
    fn detach(self: Box<Self>);
    unsafe fn identity_hash(&self, h: *const objmon_header) -> Result<u32, MonitorError>;
    unsafe fn poll(&self);
    unsafe fn enter_native(&self);
    unsafe fn leave_native(&self);
}

pub(crate) struct Rt<P: Protocol>(pub(crate) Arc<Runtime<P>>);
/// A thread's handle and the protocol's word for it (`Protocol::handle_word`, computed once
/// at attach), which `enter` / `exit` pass on as a handle's guards do (`Protocol::lock`): the
/// signal bias owners store it instead of the loaded header ± 256.
pub(crate) struct Th<P: Protocol>(pub(crate) ThreadHandle<'static, P>, pub(crate) u64);

/// # Safety
/// `h` points to an `objmon_header` initialised for protocol `P` (the module's contract), so
/// it holds a valid `P::Header` (size and alignment checked at runtime creation).
pub(crate) unsafe fn hdr<'a, P: Protocol>(h: *const objmon_header) -> &'a P::Header {
    // SAFETY: see the function's contract.
    unsafe { &*(h as *const P::Header) }
}

impl<P: Protocol> DynRuntime for Rt<P> {
    fn name(&self) -> &'static str {
        P::NAME
    }
    fn key(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
    unsafe fn header_init(&self, h: *mut objmon_header) {
        // SAFETY: `h` is valid for writes of 8 bytes, 8-aligned (caller's contract), and
        // P::Header fits (checked in `objmon_runtime_new`); it holds no live header yet.
        unsafe { std::ptr::write(h as *mut P::Header, P::Header::default()) }
    }
    fn attach(&self) -> Result<Box<dyn DynThread>, MonitorError> {
        let th = self.0.attach()?;
        let word = P::handle_word(th.context());
        Ok(Box::new(Th(th, word)))
    }
    unsafe fn owner_of(&self, h: *const objmon_header) -> Option<ThreadId> {
        // SAFETY: forwarded contract.
        self.0.owner_of(unsafe { hdr::<P>(h) })
    }
    fn interrupt(&self, id: ThreadId) -> Result<(), MonitorError> {
        self.0.interrupt(id)
    }
    fn stats(&self) -> StatsSnapshot {
        self.0.stats_snapshot()
    }
    fn report_statistics(&self) {
        self.0.report_statistics()
    }
    unsafe fn reclaim(&self, h: *mut objmon_header) {
        // SAFETY: forwarded contract; the host declares the object dead, so nobody else uses
        // the header now and a unique reference is sound.
        self.0.reclaim(unsafe { &mut *(h as *mut P::Header) })
    }
    unsafe fn peek_identity_hash(&self, h: *const objmon_header) -> Option<u32> {
        // SAFETY: forwarded contract.
        self.0.peek_identity_hash(unsafe { hdr::<P>(h) })
    }
    unsafe fn relocate(&self, from: *const objmon_header, to: *const objmon_header) {
        // SAFETY: forwarded contract (`objmon_relocate`: at a safepoint, `to` a verbatim copy
        // of the header at `from`, an initialised header; `from` only compared).
        unsafe { self.0.relocate(from as *const P::Header, hdr::<P>(to)) }
    }
}

// SAFETY (every `unsafe` block in this impl): `self.1` is `P::handle_word` of `self.0`'s
// context (computed at attach, a pure function of the context); `self.0.context()` is the
// calling OS thread's own context, as the `Protocol` operations' contract (rule 1) requires: the caller checked
// that this thread attached the handle (`objmon_thread::check`: a per-OS-thread token stored
// at attach); native transitions come in pairs (rule 2) because `objmon_enter_native` /
// `objmon_leave_native` flip `IN_NATIVE` and refuse a second enter or an unmatched leave, and
// detach is refused in native; `hdr` gets a pointer satisfying the module's header contract
// (rule 3: valid for the call, not moved or freed while held unless reported).
impl<P: Protocol> DynThread for Th<P> {
    fn id(&self) -> u16 {
        self.0.id().get()
    }
    unsafe fn enter(&self, h: *const objmon_header) -> Result<(), MonitorError> {
        unsafe { P::lock(self.0.runtime(), self.0.context(), self.1, hdr::<P>(h)) }.map(|_| ())
    }
    unsafe fn try_enter(&self, h: *const objmon_header) -> Result<bool, MonitorError> {
        unsafe { P::try_enter(self.0.runtime(), self.0.context(), hdr::<P>(h)) }
    }
    unsafe fn exit(&self, h: *const objmon_header) -> Result<(), MonitorError> {
        unsafe {
            P::unlock(
                self.0.runtime(),
                self.0.context(),
                self.1,
                Default::default(),
                hdr::<P>(h),
            )
        }
    }
    unsafe fn wait(
        &self,
        h: *const objmon_header,
        timeout: Option<Duration>,
    ) -> Result<WaitOutcome, MonitorError> {
        self.0.wait(unsafe { hdr::<P>(h) }, timeout)
    }
    unsafe fn notify(&self, h: *const objmon_header, all: bool) -> Result<(), MonitorError> {
        let h = unsafe { hdr::<P>(h) };
        if all {
            self.0.notify_all(h)
        } else {
            self.0.notify(h)
        }
    }
    unsafe fn lock_count(&self, h: *const objmon_header) -> u32 {
        self.0.lock_count(unsafe { hdr::<P>(h) })
    }
    fn interrupted(&self) -> bool {
        self.0.interrupted()
    }
    fn detach(self: Box<Self>) {
        // Unstructured holds are the FFI handle's (released before this); the core handle
        // has none, and no forgotten guard: its id is free for reuse.
        let released = self.0.detach();
        debug_assert_eq!(released, 0);
    }
    unsafe fn identity_hash(&self, h: *const objmon_header) -> Result<u32, MonitorError> {
        self.0.identity_hash(unsafe { hdr::<P>(h) })
    }
    unsafe fn poll(&self) {
        unsafe { P::poll(self.0.runtime(), self.0.context()) }
    }
    unsafe fn enter_native(&self) {
        unsafe { P::enter_native(self.0.runtime(), self.0.context()) }
    }
    unsafe fn leave_native(&self) {
        unsafe { P::leave_native(self.0.runtime(), self.0.context()) }
    }
}

pub(crate) struct Make<'a> {
    pub(crate) name: &'a str,
    pub(crate) config: Config,
    /// The callback sink, when `objmon_config.events` asked for one (also in `config`).
    pub(crate) events: Option<Arc<crate::events::CallbackSink>>,
    pub(crate) out: Option<Result<objmon_runtime, objmon_status>>,
}

impl ProtocolVisitor for Make<'_> {
    fn visit<P: Protocol>(&mut self) {
        if self.out.is_some() || P::NAME != self.name {
            return;
        }
        let size = std::mem::size_of::<P::Header>();
        let fits = size <= std::mem::size_of::<objmon_header>()
            && std::mem::align_of::<P::Header>() <= std::mem::align_of::<objmon_header>();
        // A word of at most 4 bytes leaves bytes 4..8 free for the runtime tag.
        let tag = if size <= 4 { next_tag() } else { 0 };
        self.out = Some(if fits {
            // SAFETY: the -signal flavors' contract (`Runtime::new_unchecked`: every signal
            // handler on an attached thread keeps the barrier signal blocked) is the C host's
            // to keep: `objmon_runtime_new` states it for those names, and a C caller is
            // trusted with every contract of the header. The lightweight protocols' (no header
            // held through a leaked guard moved or freed unreported) is the header's rule for
            // every protocol: C has no guards, and a locked object that moves is reported with
            // `objmon_relocate` (model.md, "Moves"). The other protocols have none.
            let rt = unsafe { Runtime::<P>::new_unchecked(self.config.clone()) };
            Ok(objmon_runtime {
                inner: Box::new(Rt::<P>(rt)),
                tag,
                host: host_bits::HostBits::of::<P::Header>(),
                handles: Arc::default(),
                events: self.events.clone(),
            })
        } else {
            Err(OBJMON_E_UNSUPPORTED)
        });
    }
}

pub(crate) fn guarded(f: impl FnOnce() -> objmon_status) -> objmon_status {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(OBJMON_E_PANIC)
}

pub(crate) fn status(r: Result<(), MonitorError>) -> objmon_status {
    match r {
        Ok(()) => OBJMON_OK,
        Err(e) => e.into(),
    }
}

/// `u32` of a decimal string, at compile time (the version parts Cargo gives as strings).
pub(crate) const fn parse_u32(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut v = 0u32;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "a version part is a decimal number");
        v = v * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    v
}

/// The crate's version, encoded as `objmon_version` returns it.
pub(crate) const VERSION: u32 = {
    let major = parse_u32(env!("CARGO_PKG_VERSION_MAJOR"));
    let minor = parse_u32(env!("CARGO_PKG_VERSION_MINOR"));
    let patch = parse_u32(env!("CARGO_PKG_VERSION_PATCH"));
    assert!(
        major <= 0xff && minor <= 0xff && patch <= 0xff,
        "each part fits a byte"
    );
    (major << 16) | (minor << 8) | patch
};
