//! The layer map of `docs/architecture.md`, kept: a lower-layer file of `crates/objmon/src`
//! names (in code, `use crate::…` or an inline `crate::…` path) only modules *below* it, so a
//! lock can be followed from `enter` to the futex in one direction and no lower layer knows
//! the protocols, the runtime, introspection, deflation or the handles.
//!
//! The check reads the sources (comments, doc links included, are skipped: a doc link up is a
//! pointer for the reader, not a dependency). A path of the crate root (`crate::MonitorError`)
//! counts as the module that defines it. An import is not the only way up: Rust allows
//! `impl FatMonitor` in any file of the crate, and calling such a method needs no import, so a
//! second check finds the methods that upper files add to lower types and fails if a lower
//! file calls one (by name: `.name(` or `::name(`; a name a lower file also defines is left
//! out, since the call may be to that one).
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
    "events",           // monitor events: the types, the sink registry, delivery
    "spin",             // contenders' back-off
    "rseq",             // where this thread's `struct rseq` is
    "membarrier",       // the process-wide barrier of the asymmetric Dekkers
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
    // `$crate::` (a macro) and identifiers ending in `crate` are not the crate root.
    for start in word_starts(code, "crate::") {
        let rest = &code[start + "crate::".len()..];
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

/// The source of lower-layer module `file`: `src/{file}.rs` and, if the module has a
/// directory of parts (`src/tasuki/`), every file under it, concatenated.
fn source(file: &str) -> String {
    let p = format!("{}/src/{file}.rs", env!("CARGO_MANIFEST_DIR"));
    let mut src = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    for (_, part) in all_sources()
        .into_iter()
        .filter(|(f, _)| module_of_file(f) == file && f != file)
    {
        src.push('\n');
        src.push_str(&part);
    }
    src
}

/// The module a file under `src` (path without `.rs`) belongs to: its first path segment
/// (`tasuki/suspend` is part of `tasuki`).
fn module_of_file(file: &str) -> &str {
    file.split('/').next().unwrap_or(file)
}

/// Every `.rs` file under `src`, as (path relative to `src` without `.rs`, source).
fn all_sources() -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, base, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(base).unwrap().with_extension("");
                let src = std::fs::read_to_string(&p).unwrap();
                out.push((rel.to_string_lossy().into_owned(), src));
            }
        }
    }
    let base = std::path::PathBuf::from(format!("{}/src", env!("CARGO_MANIFEST_DIR")));
    let mut out = Vec::new();
    walk(&base, &base, &mut out);
    out
}

/// The identifier that starts `s` (empty if none).
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Where `pat` starts in `code` as a word: not just after an identifier character or `$`.
fn word_starts<'a>(code: &'a str, pat: &'a str) -> impl Iterator<Item = usize> + 'a {
    code.match_indices(pat).map(|(i, _)| i).filter(|&i| {
        let prev = code[..i].chars().next_back();
        !prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$')
    })
}

/// The index of the `close` that matches the `open` `s` starts with (nesting counted).
fn closing(s: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// `s` after a leading `<…>` (generics, nested), trimmed.
fn skip_generics(s: &str) -> &str {
    let s = s.trim_start();
    if !s.starts_with('<') {
        return s;
    }
    closing(s, '<', '>').map_or("", |i| s[i + 1..].trim_start())
}

/// Names following `keyword ` at a word start in `code` (comments stripped): `fn` names,
/// `struct` / `enum` names.
fn declared(code: &str, keyword: &str) -> BTreeSet<String> {
    let pat = format!("{keyword} ");
    word_starts(code, &pat)
        .map(|start| ident(code[start + pat.len()..].trim_start()))
        .filter(|name| !name.is_empty())
        .map(String::from)
        .collect()
}

/// The inherent methods (and any `fn` inside them) that `code` adds to one of `types`, as
/// (type, method).
fn methods_added_to(code: &str, types: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for start in word_starts(code, "impl") {
        let rest = &code[start + "impl".len()..];
        if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = skip_generics(rest);
        let ty = ident(rest);
        let after = skip_generics(&rest[ty.len()..]);
        // An inherent impl of a lower type: `impl[<…>] Type[<…>] {` (trait impls have `for`).
        if !types.contains(ty) || !after.starts_with('{') {
            continue;
        }
        let body = &after[..closing(after, '{', '}').unwrap_or(after.len())];
        for m in declared(body, "fn") {
            out.push((ty.to_string(), m));
        }
    }
    out
}

/// A method an upper file adds to a lower type: (type, method, upper file).
type Added = (String, String, String);

/// Calls from the lower file `file` (source `src`) of methods that upper files add to lower
/// types (`added`: (type, method, upper file)), unless a lower file defines the name too
/// (`lower_fns`).
fn upward_calls(
    file: &str,
    src: &str,
    added: &[Added],
    lower_fns: &BTreeSet<String>,
) -> Vec<String> {
    let code = strip_comments(src);
    added
        .iter()
        .filter(|(_, m, _)| !lower_fns.contains(m))
        .filter(|(_, m, _)| {
            [format!(".{m}("), format!("::{m}(")]
                .iter()
                .any(|p| code.contains(p.as_str()))
        })
        .map(|(t, m, upper)| format!("{file}.rs calls {t}::{m}, defined in {upper}.rs"))
        .collect()
}

/// The methods upper files add to lower types, and every `fn` name the lower files define.
fn upper_methods_of_lower_types() -> (Vec<Added>, BTreeSet<String>) {
    let sources = all_sources();
    let lower = |f: &str| LOWER.contains(&module_of_file(f));
    let mut types = BTreeSet::new();
    let mut lower_fns = BTreeSet::new();
    for (_, src) in sources.iter().filter(|(f, _)| lower(f)) {
        let code = strip_comments(src);
        types.extend(declared(&code, "struct"));
        types.extend(declared(&code, "enum"));
        lower_fns.extend(declared(&code, "fn"));
    }
    let mut added = Vec::new();
    for (f, src) in sources.iter().filter(|(f, _)| !lower(f)) {
        for (t, m) in methods_added_to(&strip_comments(src), &types) {
            added.push((t, m, f.clone()));
        }
    }
    (added, lower_fns)
}

/// No lower-layer file calls a method that an upper file adds to a lower type (the path from
/// `enter` to the futex never passes through an upper file).
#[test]
fn lower_layers_call_no_method_defined_above() {
    let (added, lower_fns) = upper_methods_of_lower_types();
    let bad: Vec<String> = LOWER
        .iter()
        .flat_map(|f| upward_calls(f, &source(f), &added, &lower_fns))
        .collect();
    assert!(
        bad.is_empty(),
        "lower layers call methods defined above them (see docs/architecture.md):\n{}",
        bad.join("\n")
    );
}

/// The method check itself: an inherent impl of a lower type in an upper file is found
/// (generics, nested braces), a trait impl is not, and a call is caught unless a lower file
/// defines the name too.
#[test]
fn checker_catches_a_call_of_a_method_defined_above() {
    let types: BTreeSet<String> = ["FatMonitor", "Slot"].map(String::from).into();
    let upper = "impl FatMonitor {\n    pub(crate) fn lock_contended(&self) { if x { y() } }\n    \
                 fn begin_wait(&self) {}\n}\n\
                 impl<'a> Slot<'a> { fn observe(&self) {} }\n\
                 impl Drop for FatMonitor { fn drop(&mut self) {} }\n\
                 impl Other { fn unrelated() {} }\n";
    let found = methods_added_to(upper, &types);
    let names: Vec<&str> = found.iter().map(|(_, m)| m.as_str()).collect();
    assert_eq!(names, ["begin_wait", "lock_contended", "observe"]);
    let added: Vec<Added> = found
        .into_iter()
        .map(|(t, m)| (t, m, "introspect".to_string()))
        .collect();
    let none = BTreeSet::new();
    let calls = "fn enter(&self) { self.lock_contended(); }";
    assert_eq!(upward_calls("monitor", calls, &added, &none).len(), 1);
    let path_call = "fn f(m: &FatMonitor) { FatMonitor::begin_wait(m); }";
    assert_eq!(upward_calls("monitor", path_call, &added, &none).len(), 1);
    let comment = "// self.lock_contended()\nfn f() {}";
    assert!(upward_calls("monitor", comment, &added, &none).is_empty());
    let own: BTreeSet<String> = ["observe".to_string()].into();
    let same_name = "fn f(s: &BlockSlot) { s.observe(1); }";
    assert!(upward_calls("monitor", same_name, &added, &own).is_empty());
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

/// A lower module's directory of parts counts as that module: `tasuki/suspend.rs`'s
/// methods on `TasukiLock` are the system lock's own, and its imports are checked as
/// `tasuki`'s.
#[test]
fn a_lower_modules_parts_are_that_module() {
    assert_eq!(module_of_file("tasuki/suspend"), "tasuki");
    assert!(source("tasuki").contains("unsafe fn suspend("));
    let (added, _) = upper_methods_of_lower_types();
    assert!(
        !added.iter().any(|(_, _, f)| module_of_file(f) == "tasuki"),
        "tasuki's parts counted as an upper layer"
    );
}
