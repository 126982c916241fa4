//! The space figures: header lock bits, header and monitor sizes, monitors alive after
//! contention ([`Space`]), and the memory-per-object section.

use crate::doc::Block;
use crate::subject::{self};
use objmon::vm::{Protocol, ProtocolVisitor};
use std::time::Duration;

/// Space figures of one protocol.
pub struct Space {
    /// Protocol name.
    pub name: &'static str,
    /// `Protocol::HEADER_LOCK_BITS`.
    pub lock_bits: u32,
    /// `size_of::<P::Header>()`.
    pub header_bytes: usize,
    /// `MonitorTable::monitor_bytes()`.
    pub monitor_bytes: usize,
    /// Live monitors right after a contended phase ended, objects still alive.
    pub live_after: usize,
    /// Live monitors after every object was reclaimed.
    pub live_after_reclaim: usize,
}

/// Measures [`Space`] for every protocol: 4 threads on 64 objects for `time`.
pub fn space(time: Duration) -> Vec<Space> {
    struct V(Vec<Space>, Duration);
    impl ProtocolVisitor for V {
        fn visit<P: Protocol>(&mut self) {
            let (live_after, live_after_reclaim) =
                crate::bench::live_after_contention::<subject::Proto<P>>(4, 64, self.1)
                    .unwrap_or((0, 0));
            self.0.push(Space {
                name: P::NAME,
                lock_bits: P::HEADER_LOCK_BITS,
                header_bytes: std::mem::size_of::<P::Header>(),
                monitor_bytes: objmon::lab::fat_monitor_bytes(),
                live_after,
                live_after_reclaim,
            });
        }
    }
    let mut v = V(Vec::new(), time);
    objmon::vm::visit_all(&mut v);
    v.0
}

pub(super) fn space_section(d: &mut Vec<Block>, space: &[Space]) {
    d.push(Block::H(2, "Space per protocol".into()));
    d.push(Block::P(
        "Header lock bits (Protocol::HEADER_LOCK_BITS) and the bytes of the header type; bytes \
         per inflated monitor (MonitorTable::monitor_bytes(), queues' heap blocks not counted); \
         live fat monitors right after a contended phase (4 threads on 64 objects, critical \
         sections that yield) has ended with the objects still alive, and after every object \
         was reclaimed by the GC hook."
            .into(),
    ));
    let rows = space
        .iter()
        .map(|s| {
            vec![
                s.name.to_string(),
                s.lock_bits.to_string(),
                s.header_bytes.to_string(),
                s.monitor_bytes.to_string(),
                s.live_after.to_string(),
                s.live_after_reclaim.to_string(),
            ]
        })
        .collect();
    d.push(Block::Table(
        vec![
            "protocol".into(),
            "header lock bits".into(),
            "header bytes".into(),
            "bytes per monitor".into(),
            "live monitors after contention".into(),
            "after reclaim".into(),
        ],
        rows,
    ));
}

pub(super) fn memory_section(d: &mut Vec<Block>, memory: &[crate::memory::MemRow]) {
    d.push(Block::H(2, "Memory per object".into()));
    d.push(Block::P(
        "Resident memory a program pays per lockable u64 value, as the growth of the resident \
         set of a fresh process holding n of them in a Vec (n: 200,000 quick, 1,000,000 full): \
         once allocated, after one lock + unlock of each, and (monitors: wait needs a fat \
         monitor) after a zero-timeout wait on each. `monitor` is objmon::Monitor<u64> with \
         the default protocol."
            .into(),
    ));
    let b = |x: f64| format!("{x:.1}");
    let rows = memory
        .iter()
        .map(|m| {
            vec![
                m.kind.clone(),
                m.size_of.to_string(),
                b(m.allocated),
                b(m.locked_once),
                m.waited_once.map_or("—".into(), b),
            ]
        })
        .collect();
    d.push(Block::Table(
        vec![
            "kind".into(),
            "size_of".into(),
            "bytes/object allocated".into(),
            "after one lock".into(),
            "after one wait".into(),
        ],
        rows,
    ));
}
