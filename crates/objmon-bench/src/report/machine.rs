//! The machine a report ran on (CPU, cores, OS, compiler) and its load average.

/// Machine and run description lines.
pub struct Machine {
    /// Lines for the report.
    pub lines: Vec<String>,
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn cmd_out(cmd: &str, args: &[&str]) -> Option<String> {
    let o = std::process::Command::new(cmd).args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Describes this machine (CPU, cores, kernel, toolchain, load).
pub fn machine() -> Machine {
    let cpu = read("/proc/cpuinfo")
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut lines = vec![
        format!("CPU: {cpu}, {cores} hardware threads available to this process"),
        format!(
            "OS: {} {}",
            std::env::consts::OS,
            read("/proc/sys/kernel/osrelease").unwrap_or_default()
        ),
    ];
    if let Some(v) = cmd_out("rustc", &["--version"]) {
        lines.push(format!("Rust: {v} (release profile, codegen-units = 1)"));
    }
    if let Some(m) = read("/proc/meminfo").and_then(|m| m.lines().next().map(str::to_string)) {
        lines.push(m.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    if let Some(c) = cmd_out("git", &["rev-parse", "--short", "HEAD"]) {
        lines.push(format!("objmon commit: {c}"));
    }
    Machine { lines }
}

/// Load average now (1, 5, 15 minutes), if the OS says.
pub fn loadavg() -> Option<String> {
    read("/proc/loadavg").map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}
