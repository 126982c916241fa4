//! The analysis half of `lines`: runs a workload under valgrind lackey, reads its trace
//! back, attributes every access to a thread and a 64-byte line, and sums the regions
//! (`measure`); names the storing code with `addr2line` (`symbolize`).

use super::*;

/// Whether `valgrind --tool=lackey` runs here.
pub fn lackey_available() -> bool {
    Command::new("valgrind")
        .args(["--tool=lackey", "--help"])
        .output()
        .map(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("trace-mem"))
        .unwrap_or(false)
}

/// What the workload printed about its addresses.
#[derive(Default, Debug)]
pub(crate) struct Layout {
    objects: Vec<(u64, u64)>,
    runtime: Option<(u64, u64)>,
    harness: (u64, u64),
    marks: HashMap<u64, (usize, usize, usize)>,
    stacks: Vec<u64>,
    /// The program's mappings: start, end, file offset.
    maps: Vec<(u64, u64, u64)>,
}

pub(crate) fn hex(s: &str) -> u64 {
    u64::from_str_radix(s, 16).unwrap_or_else(|_| panic!("hex {s}"))
}

impl Layout {
    fn parse(stdout: &str) -> Layout {
        let mut l = Layout::default();
        for line in stdout.lines() {
            // A test harness may print its own words before ours on the line.
            let Some(i) = line.find("lines-") else {
                continue;
            };
            let f: Vec<&str> = line[i..].split_whitespace().collect();
            match f.first().copied() {
                Some("lines-object") => l.objects.push((hex(f[1]), f[2].parse().unwrap())),
                Some("lines-runtime") => l.runtime = Some((hex(f[1]), f[2].parse().unwrap())),
                Some("lines-harness") => l.harness = (hex(f[1]), f[2].parse().unwrap()),
                Some("lines-mark") => {
                    let k = (
                        f[2].parse().unwrap(),
                        f[3].parse().unwrap(),
                        f[4].parse().unwrap(),
                    );
                    l.marks.insert(hex(f[1]), k);
                }
                Some("lines-stack") => l.stacks.push(hex(f[2])),
                Some("lines-map") => l.maps.push((hex(f[1]), hex(f[2]), hex(f[3]))),
                _ => {}
            }
        }
        l
    }

    fn excluded(&self, line: u64) -> bool {
        let (a, n) = self.harness;
        line >= a >> 6 && line <= (a + n - 1) >> 6
    }

    /// The label of a line (see the opening).
    fn label(&self, line: u64) -> &'static str {
        let (lo, hi) = (line << 6, (line << 6) + 63);
        let within = |a: u64, n: u64| a <= hi && a + n > lo;
        if self.objects.iter().any(|&(a, n)| within(a, n)) {
            "header"
        } else if self.runtime.is_some_and(|(a, n)| within(a, n)) {
            "runtime"
        } else if self.maps.iter().any(|&(s, e, _)| lo >= s && lo < e) {
            "static"
        } else if self
            .stacks
            .iter()
            .any(|&s| lo + (4 << 20) >= s && lo <= s + (256 << 10))
        {
            "stack"
        } else {
            "heap"
        }
    }

    /// The address `addr2line` wants for a run-time instruction address.
    fn file_address(&self, ip: u64) -> Option<u64> {
        let base = self.maps.iter().find(|m| m.2 == 0)?.0;
        self.maps
            .iter()
            .any(|&(s, e, _)| ip >= s && ip < e)
            .then(|| ip - base)
    }
}

/// One line's accesses inside one region.
#[derive(Clone, Default)]
pub(crate) struct Touch {
    /// Up to 6 distinct storing instructions (`OBJMON_LINES_ADDRS`).
    store_ips: Vec<u64>,
    loads: u32,
    stores: u32,
    /// The first instruction that stored to it, and that loaded from it.
    store_ip: u64,
    load_ip: u64,
    /// The bytes of the line loaded and stored (bit `i`: byte `i`).
    loaded: u64,
    stored: u64,
}

/// The bytes of line `l` that an access of `n` bytes at `a` covers.
pub(crate) fn byte_mask(l: u64, a: u64, n: u64) -> u64 {
    let lo = a.max(l << 6) - (l << 6);
    let hi = (a + n).min((l + 1) << 6) - (l << 6);
    let ones = |k: u64| if k >= 64 { u64::MAX } else { (1u64 << k) - 1 };
    ones(hi) & !ones(lo)
}

/// One thread's accesses to a line two threads touch: valgrind thread, bytes loaded, bytes
/// stored, first loading and storing instructions, the distinct storing instructions.
pub(crate) type Detail = (usize, u64, u64, u64, u64, Vec<u64>);

/// One region's touches, by line.
pub(crate) type Touches = HashMap<u64, Touch>;

/// The regions of one (thread, role), in order.
pub(crate) type Regions = Vec<Touches>;

/// Everything read from one trace.
pub(crate) struct Trace {
    regions: BTreeMap<(usize, usize), Regions>,
    /// Which valgrind threads touched each line inside regions (bit `tid % 64`), counted
    /// regions only (filled after the warm-up cut).
    touched_by: HashMap<u64, u64>,
    /// The same for stores only.
    written_by: HashMap<u64, u64>,
    /// Lines touched by two threads that never touch a byte the other stores to: false
    /// sharing (two threads' own data placed in one line), not counted as shared.
    falsely: std::collections::HashSet<u64>,
    /// Per line touched by two threads: each thread's bytes loaded and stored and its first
    /// loading and storing instructions (`OBJMON_LINES_ADDRS`).
    detail: HashMap<u64, Vec<Detail>>,
    /// Marks seen from a valgrind thread other than the one the thread's first mark came
    /// from (an attribution error; expected 0).
    misattributed: usize,
}

pub(crate) fn parse_trace(log: &Path, layout: &Layout, warm: usize) -> Trace {
    let f = BufReader::with_capacity(1 << 20, std::fs::File::open(log).expect("lackey log"));
    let mut tid = 0usize;
    let mut ip = 0u64;
    // Per valgrind thread: the open region's (thread, role) and its touches.
    let mut open: HashMap<usize, ((usize, usize), Touches)> = HashMap::new();
    // Per region: the valgrind thread that ran it (for `touched_by`).
    let mut regions: BTreeMap<(usize, usize), Vec<(usize, Touches)>> = BTreeMap::new();
    let mut thread_of: HashMap<usize, usize> = HashMap::new();
    let mut misattributed = 0;
    for line in f.split(b'\n') {
        let line = line.expect("read log");
        match line.first() {
            Some(b'I') => {
                let s = &line[1..];
                let s = std::str::from_utf8(s).unwrap().trim_start();
                ip = u64::from_str_radix(s.split(',').next().unwrap(), 16).unwrap_or(0);
            }
            Some(b' ') if line.len() > 3 => {
                let kind = line[1];
                if !matches!(kind, b'L' | b'S' | b'M') {
                    continue;
                }
                let s = std::str::from_utf8(&line[3..]).unwrap();
                let Some((a, n)) = s.split_once(',') else {
                    continue;
                };
                let a = u64::from_str_radix(a.trim(), 16).unwrap_or(0);
                let n: u64 = n.trim().parse().unwrap_or(1).max(1);
                let store = kind != b'L';
                if store {
                    if let Some(&(t, role, edge)) = layout.marks.get(&a) {
                        let first = *thread_of.entry(t).or_insert(tid);
                        if first != tid {
                            misattributed += 1;
                        }
                        if edge == 0 {
                            open.insert(tid, ((t, role), HashMap::new()));
                        } else if let Some((k, touches)) = open.remove(&tid) {
                            regions.entry(k).or_default().push((tid, touches));
                        }
                        continue;
                    }
                }
                if let Some((_, touches)) = open.get_mut(&tid) {
                    for l in (a >> 6)..=((a + n - 1) >> 6) {
                        if layout.excluded(l) {
                            continue;
                        }
                        let e = touches.entry(l).or_default();
                        let m = byte_mask(l, a, n);
                        if kind != b'S' {
                            if e.loads == 0 {
                                e.load_ip = ip;
                            }
                            e.loads += 1;
                            e.loaded |= m;
                        }
                        if store {
                            e.stored |= m;
                            if e.store_ips.len() < 6 && !e.store_ips.contains(&ip) {
                                e.store_ips.push(ip);
                            }
                            if e.stores == 0 {
                                e.store_ip = ip;
                            }
                            e.stores += 1;
                        }
                    }
                }
            }
            Some(b'-') => {
                // `--PID--   SCHED[n]:  acquired lock (...)`
                let s = String::from_utf8_lossy(&line);
                if let Some(i) = s.find("SCHED[") {
                    if s.contains("acquired lock") {
                        let r = &s[i + 6..];
                        if let Some(j) = r.find(']') {
                            tid = r[..j].parse().unwrap_or(tid);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let mut touched_by: HashMap<u64, u64> = HashMap::new();
    let mut written_by: HashMap<u64, u64> = HashMap::new();
    let mut bytes: HashMap<u64, HashMap<usize, (u64, u64)>> = HashMap::new();
    let mut first_ips: HashMap<(u64, usize), (u64, u64)> = HashMap::new();
    let mut all_store_ips: HashMap<(u64, usize), Vec<u64>> = HashMap::new();
    let mut out = BTreeMap::new();
    for (k, rs) in regions {
        let counted: Vec<_> = rs.into_iter().skip(warm).collect();
        for (tid, touches) in &counted {
            for (&l, t) in touches {
                *touched_by.entry(l).or_default() |= 1 << (tid % 64);
                let b = bytes.entry(l).or_default().entry(*tid).or_default();
                b.0 |= t.loaded;
                b.1 |= t.stored;
                let ips = first_ips.entry((l, *tid)).or_default();
                if ips.0 == 0 {
                    ips.0 = t.load_ip;
                }
                if ips.1 == 0 {
                    ips.1 = t.store_ip;
                }
                let all = all_store_ips.entry((l, *tid)).or_default();
                for &ip in &t.store_ips {
                    if all.len() < 6 && !all.contains(&ip) {
                        all.push(ip);
                    }
                }
                if t.stores > 0 {
                    *written_by.entry(l).or_default() |= 1 << (tid % 64);
                }
            }
        }
        out.insert(k, counted.into_iter().map(|(_, t)| t).collect());
    }
    // Falsely shared: touched by two threads, but no byte one of them stores is touched by
    // another.
    let falsely: std::collections::HashSet<u64> = bytes
        .iter()
        .filter(|(_, per)| per.len() >= 2)
        .filter(|(_, per)| {
            !per.iter().any(|(t, &(_, w))| {
                per.iter()
                    .any(|(u, &(r2, w2))| u != t && (w & (r2 | w2)) != 0)
            })
        })
        .map(|(&l, _)| l)
        .collect();
    let detail = bytes
        .into_iter()
        .filter(|(_, per)| per.len() >= 2)
        .map(|(l, per)| {
            let v = per
                .into_iter()
                .map(|(tid, (r, w))| {
                    let (li, si) = first_ips.get(&(l, tid)).copied().unwrap_or_default();
                    let all = all_store_ips.remove(&(l, tid)).unwrap_or_default();
                    (tid, r, w, li, si, all)
                })
                .collect();
            (l, v)
        })
        .collect();
    Trace {
        regions: out,
        touched_by,
        written_by,
        falsely,
        detail,
        misattributed,
    }
}

/// The figures of one role of one run.
#[derive(Clone, Debug, Default)]
pub struct RoleFigures {
    pub role: String,
    pub regions: usize,
    /// Mean distinct lines per region: written, of them shared; read, of them shared.
    pub written: f64,
    pub written_shared: f64,
    /// Mean distinct lines written per region that another thread touches at other bytes
    /// only (false sharing: placement, not protocol).
    pub written_false: f64,
    pub read: f64,
    pub read_shared: f64,
    /// Mean distinct written lines per region by label.
    pub written_by_label: BTreeMap<&'static str, f64>,
    /// Mean distinct read lines per region by label.
    pub read_by_label: BTreeMap<&'static str, f64>,
    /// Shared lines written: label, in what fraction of the regions, the storing site.
    pub shared_sites: Vec<(String, f64, String)>,
}

/// The figures of one (kind, scenario).
#[derive(Clone, Debug, Default)]
pub struct Figures {
    pub kind: String,
    pub scenario: String,
    pub roles: Vec<RoleFigures>,
    pub misattributed: usize,
}

pub(crate) fn role_name(scenario: &str, role: usize) -> &'static str {
    match (scenario, role) {
        ("handoff", 0) => "release",
        ("handoff", _) => "acquire",
        ("nested", _) => "nested lock+unlock",
        ("alternate", _) => "lock+unlock after the other",
        ("fresh", _) => "first lock+unlock",
        _ => "lock+unlock",
    }
}

/// `addr2line` names for instruction addresses: the innermost frame outside the standard
/// library, as `function (file:line)`.
pub(crate) fn symbolize(exe: &Path, layout: &Layout, ips: &[u64]) -> HashMap<u64, String> {
    let mut names = HashMap::new();
    let wanted: Vec<(u64, u64)> = ips
        .iter()
        .filter_map(|&ip| layout.file_address(ip).map(|a| (ip, a)))
        .collect();
    if wanted.is_empty() {
        return names;
    }
    let out = Command::new("addr2line")
        .arg("-a")
        .arg("-f")
        .arg("-C")
        .arg("-i")
        .arg("-e")
        .arg(exe)
        .args(wanted.iter().map(|(_, a)| format!("{a:#x}")))
        .output();
    let Ok(out) = out else {
        return names;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let by_file: HashMap<u64, u64> = wanted.iter().map(|&(ip, a)| (a, ip)).collect();
    let mut cur: Option<u64> = None;
    let mut frames: Vec<(String, String)> = Vec::new();
    let mut func: Option<String> = None;
    let mut flush = |cur: Option<u64>, frames: &mut Vec<(String, String)>| {
        if let Some(a) = cur {
            let pick = frames
                .iter()
                .find(|(_, f)| {
                    !f.starts_with("/rustc/")
                        && !f.contains("/library/")
                        && !f.ends_with("lines.rs")
                })
                .or(frames.first());
            if let (Some((fun, file)), Some(&ip)) = (pick, by_file.get(&a)) {
                let file = file
                    .rsplit_once("crates/")
                    .map(|(_, f)| f.to_string())
                    .or_else(|| {
                        file.find("/src/")
                            .and_then(|i| file[..i].rsplit('/').next().map(|c| (c, &file[i..])))
                            .map(|(c, rest)| format!("{c}{rest}"))
                    })
                    .unwrap_or_else(|| file.clone());
                let fun = fun.split('<').next().unwrap_or(fun).trim_end_matches("::");
                names.insert(ip, format!("{fun} ({file})"));
            }
        }
        frames.clear();
    };
    for l in text.lines() {
        if let Some(a) = l.strip_prefix("0x") {
            flush(cur, &mut frames);
            cur = u64::from_str_radix(a, 16).ok();
            func = None;
        } else if let Some(f) = func.take() {
            let file = l.split(" (discriminator").next().unwrap_or(l).to_string();
            frames.push((f, file));
        } else {
            func = Some(l.to_string());
        }
    }
    flush(cur, &mut frames);
    names
}

/// Runs `spec` under lackey (`exe` with `exe_args` is the workload program; it must run
/// [`child`] when [`CHILD_ENV`] is set) and counts.
pub fn measure(exe: &Path, exe_args: &[&str], spec: &Spec) -> Result<Figures, String> {
    let dir = std::env::temp_dir();
    let log: PathBuf = dir.join(format!(
        "objmon-lines-{}-{}-{}.log",
        std::process::id(),
        spec.kind,
        spec.scenario
    ));
    let out = Command::new("valgrind")
        .arg("--tool=lackey")
        .arg("--trace-mem=yes")
        .arg("--trace-sched=yes")
        .arg("--fair-sched=yes")
        .arg(format!("--log-file={}", log.display()))
        .arg(exe)
        .args(exe_args)
        .env(CHILD_ENV, spec.to_env())
        .output()
        .map_err(|e| format!("valgrind: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&log);
        return Err(format!(
            "{} {}: the workload failed: {}",
            spec.kind,
            spec.scenario,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let layout = Layout::parse(&String::from_utf8_lossy(&out.stdout));
    if layout.marks.is_empty() {
        let _ = std::fs::remove_file(&log);
        return Err(format!(
            "{} {}: no layout printed",
            spec.kind, spec.scenario
        ));
    }
    let trace = parse_trace(&log, &layout, spec.warm);
    let _ = std::fs::remove_file(&log);
    let shared = |l: &u64| {
        trace.touched_by.get(l).is_some_and(|m| m.count_ones() >= 2) && !trace.falsely.contains(l)
    };
    let falsely = |l: &u64| trace.falsely.contains(l);
    let mut fig = Figures {
        kind: spec.kind.clone(),
        scenario: spec.scenario.clone(),
        misattributed: trace.misattributed,
        ..Figures::default()
    };
    let roles: Vec<usize> = {
        let mut r: Vec<usize> = trace.regions.keys().map(|k| k.1).collect();
        r.sort();
        r.dedup();
        r
    };
    let mut ips = Vec::new();
    let mut per_role = Vec::new();
    for role in roles {
        let rs: Vec<&HashMap<u64, Touch>> = trace
            .regions
            .iter()
            .filter(|(k, _)| k.1 == role)
            .flat_map(|(_, v)| v.iter())
            .collect();
        let n = rs.len().max(1) as f64;
        let mut f = RoleFigures {
            role: role_name(&spec.scenario, role).into(),
            regions: rs.len(),
            ..RoleFigures::default()
        };
        // Shared lines written: how many regions wrote each, and its first storing site.
        let mut sites: BTreeMap<u64, (usize, u64)> = BTreeMap::new();
        for r in &rs {
            for (l, t) in r.iter() {
                if t.stores > 0 {
                    f.written += 1.0;
                    *f.written_by_label.entry(layout.label(*l)).or_default() += 1.0;
                    if shared(l) || falsely(l) {
                        if falsely(l) {
                            f.written_false += 1.0;
                        } else {
                            f.written_shared += 1.0;
                        }
                        let e = sites.entry(*l).or_insert((0, t.store_ip));
                        e.0 += 1;
                    }
                }
                if t.loads > 0 {
                    f.read += 1.0;
                    *f.read_by_label.entry(layout.label(*l)).or_default() += 1.0;
                    if shared(l) {
                        f.read_shared += 1.0;
                    }
                }
            }
        }
        f.written /= n;
        f.written_shared /= n;
        f.written_false /= n;
        f.read /= n;
        f.read_shared /= n;
        for v in f
            .written_by_label
            .values_mut()
            .chain(f.read_by_label.values_mut())
        {
            *v /= n;
        }
        ips.extend(sites.values().map(|s| s.1));
        for l in sites.keys() {
            for d in trace.detail.get(l).into_iter().flatten() {
                ips.extend([d.3, d.4]);
                ips.extend(d.5.iter().copied());
            }
        }
        per_role.push((f, sites, n));
    }
    let names = symbolize(exe, &layout, &ips);
    for (mut f, sites, n) in per_role {
        // Lines of the same kind written by the same code are one entry (each thread's own
        // copy of a per-thread line, say), their shares summed.
        let mut merged: BTreeMap<(String, String), usize> = BTreeMap::new();
        for (l, (count, ip)) in sites {
            if std::env::var_os("OBJMON_LINES_ADDRS").is_some() {
                eprintln!(
                    "{} {} {}: line {:#x} ({}) touched by {:#b}, written by {:#b}, {count}/{n} regions, first store {}",
                    spec.kind,
                    spec.scenario,
                    f.role,
                    l << 6,
                    layout.label(l),
                    trace.touched_by.get(&l).copied().unwrap_or(0),
                    trace.written_by.get(&l).copied().unwrap_or(0),
                    names.get(&ip).cloned().unwrap_or_else(|| format!("{ip:#x}"))
                );
                let name = |ip: u64| {
                    names
                        .get(&ip)
                        .cloned()
                        .unwrap_or_else(|| format!("{ip:#x}"))
                };
                for (tid, r, w, li, si, all) in trace.detail.get(&l).into_iter().flatten() {
                    eprintln!(
                        "    thread {tid}: loads {r:#018x} first at {}, stores {w:#018x} first at {}",
                        name(*li),
                        name(*si)
                    );
                    for ip in all {
                        eprintln!("        stores at {}", name(*ip));
                    }
                }
            }
            let label = match layout.label(l) {
                "header" => "header".to_string(),
                "runtime" => {
                    let off = (l << 6) as i64 - layout.runtime.unwrap().0 as i64;
                    format!("runtime {off:+}")
                }
                other => other.to_string(),
            };
            let both = trace
                .written_by
                .get(&l)
                .is_some_and(|m| m.count_ones() >= 2);
            let label = format!(
                "{label}, {}{}",
                if both {
                    "written by both"
                } else {
                    "read by the other"
                },
                if falsely(&l) { ", FALSE sharing" } else { "" }
            );
            let site = names
                .get(&ip)
                .cloned()
                .unwrap_or_else(|| format!("{ip:#x}"));
            *merged.entry((label, site)).or_default() += count;
        }
        for ((label, site), count) in merged {
            f.shared_sites.push((label, count as f64 / n, site));
        }
        fig.roles.push(f);
    }
    Ok(fig)
}
