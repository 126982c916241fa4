//! `include/objmon.h` as a contract the library keeps: the protocol names it lists are exactly
//! those `objmon_runtime_new` accepts (tried through the C ABI), and every status it names is
//! one of `objmon_status`'s, each function returning `objmon_status` saying which it returns.

use objmon_ffi::*;
use std::collections::BTreeSet;
use std::ffi::{CStr, CString};

fn header() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/include/objmon.h");
    std::fs::read_to_string(path).expect("include/objmon.h")
}

/// The opening comment's lines without their ` * ` prefix.
fn comment_lines(h: &str) -> Vec<String> {
    h.lines()
        .map(|l| {
            let l = l.trim_start();
            l.strip_prefix("* ")
                .or_else(|| l.strip_prefix('*'))
                .unwrap_or(l)
                .to_string()
        })
        .collect()
}

/// The paragraph starting with `title` in the opening comment (up to the next empty line).
fn paragraph(lines: &[String], title: &str) -> String {
    let start = lines
        .iter()
        .position(|l| l.starts_with(title))
        .unwrap_or_else(|| panic!("objmon.h has no paragraph {title:?}"));
    lines[start..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `code span` of `text`.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

fn is_protocol_name(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
}

/// The names of PROTOCOL NAMES, in order.
fn listed_protocols(h: &str) -> Vec<String> {
    let lines = comment_lines(h);
    let p = paragraph(&lines, "PROTOCOL NAMES.");
    // The names are the indented lines after the paragraph's prose.
    p.lines()
        .filter(|l| l.starts_with("  "))
        .flat_map(code_spans)
        .map(str::to_string)
        .collect()
}

/// `objmon_runtime_new(name)`'s status (the runtime freed again).
fn try_runtime(name: &str) -> objmon_status {
    let n = CString::new(name).unwrap();
    let mut rt = std::ptr::null_mut();
    // SAFETY: a NUL-terminated name, NULL config, a valid out pointer. The -signal names'
    // contract: this test process installs no signal handler on its attached threads (it
    // attaches none).
    let s = unsafe { objmon_runtime_new(n.as_ptr(), std::ptr::null(), &mut rt) };
    if s == objmon_status::OBJMON_OK {
        // SAFETY: made just above, used no more.
        assert_eq!(unsafe { objmon_runtime_free(rt) }, objmon_status::OBJMON_OK);
    }
    s
}

/// What the library lists through `objmon_protocol_count` / `objmon_protocol_name`.
fn library_protocols() -> Vec<String> {
    (0..objmon_protocol_count())
        .map(|i| {
            let p = objmon_protocol_name(i);
            assert!(!p.is_null(), "objmon_protocol_name({i}) is NULL");
            // SAFETY: a static NUL-terminated string.
            unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn the_header_lists_exactly_the_protocols_the_library_accepts() {
    let h = header();
    let listed = listed_protocols(&h);
    assert!(listed.len() >= 10, "PROTOCOL NAMES parsed as {listed:?}");
    for name in &listed {
        assert_eq!(
            try_runtime(name),
            objmon_status::OBJMON_OK,
            "objmon.h lists {name:?}, which objmon_runtime_new refuses"
        );
    }
    assert_eq!(
        listed,
        library_protocols(),
        "PROTOCOL NAMES and objmon_protocol_name disagree (names or order)"
    );
    assert!(
        h.contains(&format!("accepts exactly these {} names", listed.len())),
        "PROTOCOL NAMES gives a count other than {}",
        listed.len()
    );
    assert_eq!(objmon_protocol_name(listed.len()), std::ptr::null());

    // Names that are not the catalog's: protocols the core defines but does not list
    // (`fable-seed`, `lightweight-seed-table`), case and spacing variants, the empty string.
    for name in [
        "fable-seed",
        "lightweight-seed-table",
        "Thin",
        "thin ",
        " thin",
        "",
    ] {
        assert_eq!(
            try_runtime(name),
            objmon_status::OBJMON_E_UNKNOWN_PROTOCOL,
            "{name:?}"
        );
    }
    assert!(!listed.iter().any(|n| n == "fable-seed"));
}

#[test]
fn the_protocol_guide_names_only_accepted_protocols_and_all_of_them() {
    let h = header();
    let lines = comment_lines(&h);
    let guide = paragraph(&lines, "WHICH PROTOCOL");
    let listed: BTreeSet<String> = listed_protocols(&h).into_iter().collect();
    // Each bullet opens with the names it is about, up to its first colon.
    let mut covered = BTreeSet::new();
    for bullet in guide.split("\n- ").skip(1) {
        let head = &bullet[..bullet
            .find(':')
            .expect("a bullet names protocols, then ':'")];
        for name in code_spans(head) {
            assert!(
                listed.contains(name),
                "WHICH PROTOCOL describes {name:?}, which objmon_runtime_new refuses"
            );
            assert!(covered.insert(name.to_string()), "{name:?} described twice");
        }
    }
    assert_eq!(covered, listed, "WHICH PROTOCOL leaves protocols out");

    // Every protocol-like name the side effects mention is accepted too.
    let effects = paragraph(&lines, "PROCESS-WIDE SIDE EFFECTS.");
    for name in code_spans(&effects) {
        if is_protocol_name(name) && (name.contains("biased") || name.contains("fable")) {
            assert!(listed.contains(name), "side effects of unknown {name:?}");
        }
    }
}

/// The enumerators of `objmon_status` in the header, with their values.
fn status_enum(h: &str) -> Vec<(String, i32)> {
    let start = h
        .find("typedef enum objmon_status {")
        .expect("objmon_status");
    let body = &h[start..start + h[start..].find('}').unwrap()];
    body.lines()
        .filter_map(|l| {
            let (name, value) = l.trim().trim_end_matches(',').split_once(" = ")?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// Each function declared as returning `objmon_status`, with its doc comment.
fn status_functions(h: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = h.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.strip_prefix("enum objmon_status objmon_") else {
            continue;
        };
        let name = format!("objmon_{}", &rest[..rest.find('(').unwrap()]);
        let mut j = i;
        while !lines[j - 1].trim_start().starts_with("/**") {
            j -= 1;
        }
        out.push((name, lines[j - 1..i].join("\n")));
    }
    out
}

#[test]
fn every_status_the_header_names_is_an_objmon_status() {
    let h = header();
    let statuses = status_enum(&h);
    let names: BTreeSet<&str> = statuses.iter().map(|(n, _)| n.as_str()).collect();
    // The header's enum is the Rust enum, value for value (and strerror knows each).
    for (name, value) in &statuses {
        let m = objmon_strerror(*value);
        // SAFETY: a static NUL-terminated string.
        let m = unsafe { CStr::from_ptr(m) }.to_str().unwrap();
        assert_ne!(m, "unknown status", "{name} = {value} has no message");
    }
    assert_eq!(
        statuses.last().map(|s| s.1),
        Some(objmon_status::OBJMON_E_EVENTS_OFF as i32)
    );
    assert_eq!(statuses.len(), statuses.last().unwrap().1 as usize + 1);

    // Any OBJMON_E_* anywhere in the header is one of them (no stale or misspelled status).
    for (i, _) in h.match_indices("OBJMON_E_") {
        let word: String = h[i..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || *c == '_')
            .collect();
        assert!(
            names.contains(word.trim_end_matches('_')),
            "objmon.h names {word}, which objmon_status does not have"
        );
    }
}

#[test]
fn every_status_function_documents_its_statuses() {
    let h = header();
    let statuses = status_enum(&h);
    let names: BTreeSet<&str> = statuses.iter().map(|(n, _)| n.as_str()).collect();
    let functions = status_functions(&h);
    assert!(functions.len() >= 25, "found only {functions:?}");
    let mut used = BTreeSet::new();
    for (f, doc) in &functions {
        let at = doc
            .find("Statuses: ")
            .unwrap_or_else(|| panic!("{f} does not say which statuses it returns"));
        let text: String = doc[at..]
            .lines()
            .map(|l| l.trim_start().trim_start_matches('*').trim())
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let listed: Vec<&str> = code_spans(&text)
            .into_iter()
            .filter(|s| s.starts_with("OBJMON_"))
            .collect();
        for s in &listed {
            assert!(names.contains(s), "{f} documents {s}, not an objmon_status");
            used.insert(s.to_string());
        }
        for must in ["OBJMON_OK", "OBJMON_E_PANIC"] {
            assert!(listed.contains(&must), "{f}'s statuses lack {must}");
        }
    }
    // Every status is returned by some function.
    for n in &names {
        assert!(used.contains(*n), "no function documents returning {n}");
    }
}

/// A few documented statuses, observed: what NULL arguments, an unknown name, a negative
/// timeout and a leave without enter answer.
#[test]
fn documented_statuses_are_what_the_calls_return() {
    use objmon_status::*;
    let null: *mut objmon_header = std::ptr::null_mut();
    // SAFETY (every call): NULL where the contract allows it to be detected, else valid.
    unsafe {
        assert_eq!(
            objmon_runtime_new(std::ptr::null(), std::ptr::null(), std::ptr::null_mut()),
            OBJMON_E_NULL
        );
        assert_eq!(objmon_runtime_free(std::ptr::null_mut()), OBJMON_E_NULL);
        assert_eq!(objmon_header_init(std::ptr::null(), null), OBJMON_E_NULL);
        assert_eq!(objmon_poll(std::ptr::null()), OBJMON_E_NULL);
        assert_eq!(objmon_interrupt(std::ptr::null(), 1), OBJMON_E_NULL);
        assert_eq!(
            objmon_wait(std::ptr::null(), null, -1, std::ptr::null_mut()),
            OBJMON_E_INVALID_TIMEOUT
        );
    }
    let n = CString::new("thin").unwrap();
    let mut rt = std::ptr::null_mut();
    let mut t = std::ptr::null_mut();
    // SAFETY: valid arguments; the runtime and the handle are used on this thread only.
    unsafe {
        assert_eq!(
            objmon_runtime_new(n.as_ptr(), std::ptr::null(), &mut rt),
            OBJMON_OK
        );
        assert_eq!(objmon_interrupt(rt, 0), OBJMON_E_NO_SUCH_THREAD);
        assert_eq!(objmon_thread_attach(rt, &mut t), OBJMON_OK);
        assert_eq!(objmon_leave_native(t), OBJMON_E_NOT_IN_NATIVE);
        assert_eq!(objmon_enter_native(t), OBJMON_OK);
        assert_eq!(objmon_enter_native(t), OBJMON_E_IN_NATIVE);
        assert_eq!(objmon_leave_native(t), OBJMON_OK);
        let mut h = std::mem::zeroed::<objmon_header>();
        assert_eq!(objmon_header_init(rt, &mut h), OBJMON_OK);
        assert_eq!(objmon_exit(t, &mut h), OBJMON_E_ILLEGAL_MONITOR_STATE);
        assert_eq!(objmon_notify(t, &mut h), OBJMON_E_ILLEGAL_MONITOR_STATE);
        assert_eq!(objmon_thread_detach(t, std::ptr::null_mut()), OBJMON_OK);
        assert_eq!(objmon_runtime_free(rt), OBJMON_OK);
    }
}
