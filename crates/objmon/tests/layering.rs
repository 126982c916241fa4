//! The layer map of `docs/architecture.md`, kept: a lower-layer file of `crates/objmon/src`
//! names (in code, `use crate::…` or an inline `crate::…` path) only modules *below* it, so a
//! lock can be followed from `enter` to the futex in one direction and no lower layer knows
//! the protocols, the runtime, introspection, deflation or the handles.
//!
//! The check reads the sources (comments, doc links included, are skipped: a doc link up is a
//! pointer for the reader, not a dependency). A path of the crate root (`crate::MonitorError`)
//! counts as the module that defines it. What it cannot see: a lower type's method *defined*
//! in an upper file and called from a lower one (Rust allows `impl FatMonitor` anywhere in the
//! crate); `docs/architecture.md` lists those that remain.
#![cfg(not(loom))]

use std::collections::BTreeSet;

/// The lower layers, bottom up; each file may name only modules listed before it (its own
/// rank excluded), and never a module not listed here.
const LOWER: &[&str] = &[
    "sync",             // loom shim
    "error",            // MonitorError
    "park",             // futex parker
    "blocking",         // a thread's blocking publication
    "hash_state",       // the identity-hash generator's per-thread state
    "binding",          // header address → runtime claims
    "thread",           // ids, ThreadCore, AttachedThread<S>, Registry<S>
    "spin",             // contenders' back-off
    "sigbarrier",       // the signal barrier: restart one thread's owner section
    "tasuki",           // the system lock
    "monitor",          // the fat monitor
    "profile",          // contention figures
    "monitor_episodes", // the fat monitor's contended enter and wait, published and profiled
    "table",            // monitor index → monitor
    "spin_episode",     // a spinner's blocking episode (its figures go to the table's)
];

/// Known exceptions (file, path prefix, why). Each is a debt, not a rule: remove the entry
/// when the import goes. None today (`thread.rs`'s `hash::HashState` went with the move of
/// the generator to `hash_state.rs`).
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// Items of the crate root and the module that defines each.
const ROOT_ITEMS: &[(&str, &str)] = &[
    ("MonitorError", "error"),
    ("WaitOutcome", "monitor"),
    ("Protocol", "protocol"),
];

/// `src` without comments (line comments, doc comments and block comments); string
/// literals are left alone (a lower layer has none that spell `crate::`).
fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut depth = 0usize;
    for line in src.lines() {
        let mut rest = line;
        loop {
            if depth > 0 {
                match (rest.find("/*"), rest.find("*/")) {
                    (Some(o), Some(c)) if o < c => {
                        depth += 1;
                        rest = &rest[o + 2..];
                    }
                    (_, Some(c)) => {
                        depth -= 1;
                        rest = &rest[c + 2..];
                    }
                    _ => break,
                }
            } else {
                let lc = rest.find("//");
                let bc = rest.find("/*");
                let line_first = match (lc, bc) {
                    (Some(l), Some(b)) => l < b,
                    (Some(_), None) => true,
                    _ => false,
                };
                match (lc, bc) {
                    (Some(l), _) if line_first => {
                        out.push_str(&rest[..l]);
                        break;
                    }
                    (_, Some(b)) => {
                        out.push_str(&rest[..b]);
                        depth += 1;
                        rest = &rest[b + 2..];
                    }
                    _ => {
                        out.push_str(rest);
                        break;
                    }
                }
            }
        }
        out.push('\n');
    }
    out
}

/// Every `crate::` path in `code` (comments stripped), as written from its first segment,
/// with `use crate::{a::b, c}` groups expanded into `a::b` and `c`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut at = 0;
    while let Some(i) = code[at..].find("crate::") {
        let start = at + i;
        at = start + "crate::".len();
        // `$crate::` (a macro) and identifiers ending in `crate` are not the crate root.
        let prev = code[..start].chars().next_back();
        if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[at..];
        if let Some(group) = rest.strip_prefix('{') {
            // A `use crate::{…}` group: split at top-level commas.
            let mut depth = 1;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 || (depth == 1 && c == ',') {
                    let t = item.split_whitespace().collect::<Vec<_>>().join(" ");
                    if !t.is_empty() {
                        paths.push(t);
                    }
                    item.clear();
                    if depth == 0 {
                        break;
                    }
                } else {
                    item.push(c);
                }
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            paths.push(rest[..end].trim_end_matches(':').to_string());
        }
    }
    paths
}

/// The module a path names: its first segment, or the defining module of a root item.
fn module_of(path: &str) -> String {
    let first = path
        .split("::")
        .next()
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or("");
    ROOT_ITEMS
        .iter()
        .find(|(item, _)| *item == first)
        .map_or(first, |(_, m)| m)
        .to_string()
}

/// The upward (or unknown) imports of lower-layer file `file` whose source is `src`.
fn violations(file: &str, src: &str) -> Vec<String> {
    let rank = LOWER
        .iter()
        .position(|m| *m == file)
        .unwrap_or_else(|| panic!("{file} is not a lower layer"));
    let mut bad = BTreeSet::new();
    for path in crate_paths(&strip_comments(src)) {
        let m = module_of(&path);
        let below = LOWER[..rank].contains(&m.as_str());
        let excepted = EXCEPTIONS
            .iter()
            .any(|(f, p, _)| *f == file && path.starts_with(p));
        if !below && m != file && !excepted {
            bad.insert(format!("{file}.rs names crate::{path} (module `{m}`)"));
        }
    }
    bad.into_iter().collect()
}

fn source(file: &str) -> String {
    let p = format!("{}/src/{file}.rs", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Every lower-layer file names only modules below it.
#[test]
fn lower_layers_import_only_downward() {
    let bad: Vec<String> = LOWER
        .iter()
        .flat_map(|f| violations(f, &source(f)))
        .collect();
    assert!(
        bad.is_empty(),
        "upward imports (see the layer map in docs/architecture.md):\n{}",
        bad.join("\n")
    );
}

/// The exceptions are still needed (a stale one would hide a new import of the same path).
#[test]
fn every_exception_is_still_used() {
    for (file, prefix, why) in EXCEPTIONS {
        let used = crate_paths(&strip_comments(&source(file)))
            .iter()
            .any(|p| p.starts_with(prefix));
        assert!(
            used,
            "{file}.rs no longer names {prefix}: drop the exception ({why})"
        );
    }
}

/// The checker itself: each form of an upward import is caught, comments and doc links are
/// not, and a module below is allowed.
#[test]
fn checker_catches_every_form_of_an_upward_import() {
    let cases = [
        "use crate::protocol::Protocol;",
        "use crate::{sync::Ordering, runtime::Runtime};",
        "use crate::{\n    introspect::{BlockSlot, Episode},\n    sync::lock,\n};",
        "fn f(x: &crate::deflate::Marker) {}",
        "fn f() { crate::handle::detach(); }",
        "fn f() -> crate::Protocol {}",
        "use crate::vm::Runtime;",
        "use crate::user::Monitor;",
        "use crate::{introspect as _, sync::lock};",
    ];
    for c in cases {
        assert_eq!(violations("thread", c).len(), 1, "not caught: {c}");
    }
    // A lower layer above the file is caught too.
    assert_eq!(
        violations("tasuki", "use crate::table::MonitorIndex;").len(),
        1
    );
    // The identity-hash side table is an upper layer (it needs the table and revocation).
    assert_eq!(violations("thread", "use crate::hash::fresh;").len(), 1);
    // Allowed: comments, doc links, modules below, the file's own paths.
    let fine = "//! See [`Runtime`](crate::vm::Runtime).\n\
                /// Uses [`Protocol`](crate::protocol::Protocol).\n\
                /* crate::runtime::Runtime */\n\
                use crate::park::Parker;\n\
                use crate::{sync::lock, MonitorError};\n\
                fn f() -> crate::thread::ThreadId { todo!() } // crate::handle\n\
                fn g() -> crate::hash_state::HashState { todo!() }\n";
    assert_eq!(violations("thread", fine), Vec::<String>::new());
}
