//! The project's tasks, run as `cargo xtask TASK` (an alias in `.cargo/config.toml`).
//!
//! `cargo xtask fuzz --minutes N [--protocol P]... [--seed S] [--expect-find]` runs the
//! adversarial fuzzer of the safe API (`crates/objmon-fuzz`, `docs/fuzzing.md`) for N minutes
//! per protocol, every protocol of the catalog unless named, in release: in processes of 20 s
//! per protocol with successive seeds (from S, default 1), since a process retires thread ids
//! for good; it prints the cases run per protocol.
//!
//! `cargo xtask install --prefix DIR [--no-build]` builds the C library in release and installs
//! it as a C library installs (ELF targets: Linux and the BSDs):
//!
//! ```text
//! DIR/include/objmon.h
//! DIR/lib/libobjmon.a                        static, debug info stripped
//! DIR/lib/libobjmon.so.MAJOR.MINOR.PATCH     shared, SONAME libobjmon.so.MAJOR, stripped
//! DIR/lib/libobjmon.so.MAJOR -> libobjmon.so.MAJOR.MINOR.PATCH
//! DIR/lib/libobjmon.so -> libobjmon.so.MAJOR
//! DIR/lib/pkgconfig/objmon.pc                pkg-config --cflags --libs objmon
//! DIR/lib/cmake/objmon/objmonConfig.cmake    find_package(objmon): objmon::objmon (shared),
//! DIR/lib/cmake/objmon/objmonConfigVersion.cmake           objmon::objmon_static
//! ```
//!
//! Every file is written beside its destination and renamed into place, so that a program
//! running from an installed `libobjmon.so` is never handed a half-written one. The release
//! profile keeps debug info (for perf and callgrind); the installed copies are stripped with
//! `strip` (or `$STRIP`): `--strip-debug` for the archive, `--strip-unneeded` for the shared
//! library. A program linked through `objmon.pc` or `objmon::objmon` gets `DIR/lib` in its
//! `RUNPATH` (`-Wl,-rpath`), so that it starts without `LD_LIBRARY_PATH` or `ldconfig` wherever
//! DIR is (README, "From C and C++"). `.ci/install_test.sh` builds the C toy VM against an
//! installed tree and runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// What the static library needs from the system, from
/// `cargo rustc --release -p objmon-ffi --lib -- --print native-static-libs` on Linux (glibc):
/// `-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc`, without the `-lc` every C compiler adds.
const STATIC_LIBS: &[&str] = &["gcc_s", "util", "rt", "pthread", "m", "dl"];

/// A version `MAJOR.MINOR.PATCH`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Version {
    major: u32,
    minor: u32,
    patch: u32,
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl Version {
    /// The `version = "x.y.z"` of a manifest's `[package]` table.
    fn of_manifest(toml: &str) -> Result<Version, String> {
        let mut in_package = false;
        for line in toml.lines().map(str::trim) {
            if line.starts_with('[') {
                in_package = line == "[package]";
            } else if in_package {
                if let Some(rest) = line.strip_prefix("version") {
                    let v = rest.trim_start().trim_start_matches('=').trim();
                    return Version::parse(v.trim_matches('"'));
                }
            }
        }
        Err("no version in [package]".into())
    }

    /// `x.y.z` (a pre-release or build suffix is refused: the SONAME has no room for it).
    fn parse(s: &str) -> Result<Version, String> {
        let parts: Vec<u32> = s
            .split('.')
            .map(|p| p.parse().map_err(|_| format!("version {s:?} is not x.y.z")))
            .collect::<Result<_, _>>()?;
        match parts[..] {
            [major, minor, patch] => Ok(Version {
                major,
                minor,
                patch,
            }),
            _ => Err(format!("version {s:?} is not x.y.z")),
        }
    }
}

/// `objmon.pc` for an installation under `prefix`.
fn pkg_config(prefix: &Path, v: Version) -> String {
    let private: Vec<String> = STATIC_LIBS.iter().map(|l| format!("-l{l}")).collect();
    format!(
        "prefix={prefix}\n\
         libdir=${{prefix}}/lib\n\
         includedir=${{prefix}}/include\n\
         \n\
         Name: objmon\n\
         Description: Object monitors (synchronized, wait/notify, JNI MonitorEnter) for C and C++ language runtimes\n\
         Version: {v}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -lobjmon\n\
         Libs.private: {private}\n",
        prefix = prefix.display(),
        private = private.join(" "),
    )
}

/// `objmonConfig.cmake`: the imported targets, found relative to the file itself (so the tree
/// may be moved after installation).
fn cmake_config(v: Version) -> String {
    format!(
        r#"# objmon {v}, installed by `cargo xtask install`. Imported targets:
#   objmon::objmon         the shared library (libobjmon.so.{major}) and objmon.h
#   objmon::objmon_static  the static library (libobjmon.a), with the system libraries it needs
get_filename_component(_objmon_prefix "${{CMAKE_CURRENT_LIST_DIR}}/../../.." ABSOLUTE)
if(NOT TARGET objmon::objmon)
  add_library(objmon::objmon SHARED IMPORTED)
  set_target_properties(objmon::objmon PROPERTIES
    IMPORTED_LOCATION "${{_objmon_prefix}}/lib/libobjmon.so.{v}"
    IMPORTED_SONAME "libobjmon.so.{major}"
    INTERFACE_INCLUDE_DIRECTORIES "${{_objmon_prefix}}/include"
    INTERFACE_LINK_OPTIONS "LINKER:-rpath,${{_objmon_prefix}}/lib")
endif()
if(NOT TARGET objmon::objmon_static)
  add_library(objmon::objmon_static STATIC IMPORTED)
  set_target_properties(objmon::objmon_static PROPERTIES
    IMPORTED_LOCATION "${{_objmon_prefix}}/lib/libobjmon.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "${{_objmon_prefix}}/include"
    INTERFACE_LINK_LIBRARIES "{libs}")
endif()
unset(_objmon_prefix)
"#,
        major = v.major,
        libs = STATIC_LIBS.join(";"),
    )
}

/// `objmonConfigVersion.cmake`: compatible when the version asked for is at most this one
/// with the same major and, while the major is 0, the same minor (Cargo's semver rule); 64-bit
/// only.
fn cmake_config_version(v: Version) -> String {
    format!(
        r#"# objmon {v}: find_package(objmon X.Y) accepts it for X.Y <= {v}, same major and, while
# the major is 0, same minor (0.x minor releases may break the ABI, as Cargo's semver says).
set(PACKAGE_VERSION "{v}")
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION
       OR NOT PACKAGE_FIND_VERSION_MAJOR EQUAL {major}
       OR ({major} EQUAL 0 AND NOT PACKAGE_FIND_VERSION_MINOR EQUAL {minor}))
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
if(NOT "${{CMAKE_SIZEOF_VOID_P}}" STREQUAL "" AND NOT CMAKE_SIZEOF_VOID_P EQUAL 8)
  set(PACKAGE_VERSION "${{PACKAGE_VERSION}} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
"#,
        major = v.major,
        minor = v.minor,
    )
}

/// The arguments of `install`.
struct Install {
    prefix: PathBuf,
    build: bool,
}

const USAGE: &str = "usage: cargo xtask install --prefix DIR [--no-build]\n\
    \n  Builds objmon-ffi in release (unless --no-build) and installs libobjmon.{a,so}, objmon.h,\n  \
    lib/pkgconfig/objmon.pc and lib/cmake/objmon/ under DIR.\n\
    \n       cargo xtask fuzz --minutes N [--protocol P]... [--seed S] [--expect-find]\n\
    \n  Fuzzes the safe API for N minutes per protocol (every protocol unless named), printing\n  \
    the cases run per protocol and each finding with its minimal case as a regression test;\n  \
    fails if anything was found (with --expect-find: if some protocol found nothing).";

/// `cargo xtask fuzz`'s arguments, passed on to the `objmon-fuzz` binary.
#[derive(Debug, PartialEq)]
struct Fuzz {
    minutes: f64,
    /// Arguments for `objmon-fuzz` besides the budget.
    pass: Vec<String>,
}

enum Task {
    Install(Install),
    Fuzz(Fuzz),
}

fn parse_task(args: &[String]) -> Result<Task, String> {
    match args.first().map(String::as_str) {
        Some("fuzz") => parse_fuzz(&args[1..]).map(Task::Fuzz),
        _ => parse_args(args).map(Task::Install),
    }
}

fn parse_fuzz(args: &[String]) -> Result<Fuzz, String> {
    let mut minutes = None;
    let mut pass = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--minutes" => {
                let m = it.next().ok_or("--minutes needs a number")?;
                minutes = Some(
                    m.parse::<f64>()
                        .map_err(|_| format!("--minutes {m:?}: not a number"))?,
                );
            }
            "--protocol" | "--seed" | "--surface" => {
                let v = it.next().ok_or(format!("{a} needs a value"))?;
                pass.extend([a.clone(), v.clone()]);
            }
            "--expect-find"
            | "--signals-everywhere"
            | "--moves-everywhere"
            | "--no-moves"
            | "--lenient-moved" => pass.push(a.clone()),
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let minutes = minutes.ok_or("--minutes N is required")?;
    if minutes.is_nan() || minutes <= 0.0 {
        return Err("--minutes must be positive".into());
    }
    Ok(Fuzz { minutes, pass })
}

/// Seconds of one `objmon-fuzz` process per protocol. Thread ids retired by forgotten guards
/// are never reused in a process (32767 in all), and a fast protocol runs ~45,000 cases a
/// minute, a quarter of them retiring an id: so a long run is many short processes, each
/// with the next seed, and their case counts are added up per protocol.
const CHUNK_SECONDS: f64 = 20.0;

fn fuzz(f: Fuzz) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let bin = build_fuzzer(&cargo)?;
    let (mut pass, mut seed) = (Vec::new(), 1u64);
    let mut it = f.pass.iter();
    while let Some(a) = it.next() {
        if a == "--seed" {
            let v = it.next().ok_or("--seed needs a number")?;
            seed = v
                .parse()
                .map_err(|_| format!("--seed {v:?}: not a number"))?;
        } else {
            pass.push(a.clone());
        }
    }
    let mut left = f.minutes * 60.0;
    let mut cases: Vec<(String, u64)> = Vec::new();
    while left > 0.0 {
        let secs = left.min(CHUNK_SECONDS);
        left -= secs;
        let out = Command::new(&bin)
            .arg("--seconds")
            .arg(format!("{secs}"))
            .arg("--seed")
            .arg(seed.to_string())
            .args(&pass)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        print!("{text}");
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        for line in text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            if let [name, n, "cases", ..] = w[..] {
                if let Ok(n) = n.parse::<u64>() {
                    match cases.iter_mut().find(|(p, _)| p == name) {
                        Some((_, c)) => *c += n,
                        None => cases.push((name.to_string(), n)),
                    }
                }
            }
        }
        if !out.status.success() {
            return Err(format!("objmon-fuzz --seed {seed} found something (above)"));
        }
        seed += 1;
    }
    println!("cases run per protocol, {} min each:", f.minutes);
    for (p, n) in &cases {
        println!("  {p:<18} {n}");
    }
    Ok(())
}

/// Builds the fuzzer in release and answers where cargo put its executable (it knows the
/// target directory, whatever `CARGO_TARGET_DIR` or `build.target-dir` say): the
/// `executable` of the `objmon-fuzz` binary's `compiler-artifact` message.
fn build_fuzzer(cargo: &std::ffi::OsStr) -> Result<PathBuf, String> {
    let out = Command::new(cargo)
        .args([
            "build",
            "--release",
            "-p",
            "objmon-fuzz",
            "--bin",
            "objmon-fuzz",
        ])
        .args(["--message-format", "json-render-diagnostics"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {cargo:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo build -p objmon-fuzz failed ({})",
            out.status
        ));
    }
    fuzzer_executable(&String::from_utf8_lossy(&out.stdout))
        .ok_or_else(|| "cargo build -p objmon-fuzz named no objmon-fuzz executable".into())
}

/// The `executable` path of the `objmon-fuzz` binary in cargo's JSON messages (one object per
/// line). std only, so a small scan: the line of a `compiler-artifact` whose target is the
/// binary `objmon-fuzz`, its `"executable":"…"` field, JSON escapes undone.
fn fuzzer_executable(messages: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter(|l| l.contains(r#""reason":"compiler-artifact""#))
        .filter(|l| l.contains(r#""kind":["bin"]"#) && l.contains(r#""name":"objmon-fuzz""#))
        .find_map(|l| {
            let rest = &l[l.find(r#""executable":""#)? + r#""executable":""#.len()..];
            let mut path = String::new();
            let mut chars = rest.chars();
            loop {
                match chars.next()? {
                    '"' => return Some(PathBuf::from(path)),
                    '\\' => match chars.next()? {
                        'u' => {
                            let hex: String = chars.by_ref().take(4).collect();
                            path.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                        }
                        'n' => path.push('\n'),
                        't' => path.push('\t'),
                        c => path.push(c), // \" \\ \/
                    },
                    c => path.push(c),
                }
            }
        })
}

fn parse_args(args: &[String]) -> Result<Install, String> {
    let mut it = args.iter();
    match it.next().map(String::as_str) {
        Some("install") => {}
        Some("-h" | "--help") | None => return Err(String::new()),
        Some(other) => return Err(format!("unknown task {other:?}")),
    }
    let mut prefix = None;
    let mut build = true;
    while let Some(a) = it.next() {
        match a.as_str() {
            "--prefix" => {
                let dir = it.next().ok_or("--prefix needs a directory")?;
                prefix = Some(PathBuf::from(dir));
            }
            s if s.starts_with("--prefix=") => prefix = Some(PathBuf::from(&s[9..])),
            "--no-build" => build = false,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let prefix = prefix.ok_or("--prefix DIR is required")?;
    if prefix.as_os_str().is_empty() {
        return Err("--prefix is empty".into());
    }
    Ok(Install { prefix, build })
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed ({status})"))
    }
}

/// Writes `to` through a temporary file beside it, renamed into place.
fn put(to: &Path, fill: impl FnOnce(&Path) -> Result<(), String>) -> Result<(), String> {
    let name = to.file_name().ok_or("no file name")?.to_string_lossy();
    let tmp = to.with_file_name(format!(".{name}.xtask-tmp"));
    let _ = std::fs::remove_file(&tmp);
    fill(&tmp)?;
    std::fs::rename(&tmp, to).map_err(|e| format!("{}: {e}", to.display()))
}

fn write(to: &Path, text: &str) -> Result<(), String> {
    put(to, |tmp| {
        std::fs::write(tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))
    })
}

/// Copies `from` to `to`, stripped with `strip_flag`.
fn install_stripped(from: &Path, to: &Path, strip_flag: &str) -> Result<(), String> {
    let strip = std::env::var("STRIP").unwrap_or_else(|_| "strip".into());
    put(to, |tmp| {
        std::fs::copy(from, tmp).map_err(|e| format!("{}: {e}", from.display()))?;
        run(Command::new(&strip).arg(strip_flag).arg(tmp))
    })
}

/// Points `link` at `target` (a relative name), replacing what was there.
fn symlink(target: &str, link: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        put(link, |tmp| {
            std::os::unix::fs::symlink(target, tmp).map_err(|e| format!("{}: {e}", tmp.display()))
        })
    }
    #[cfg(not(unix))]
    {
        let _ = (target, link);
        Err("symbolic links need a Unix system".into())
    }
}

fn size(p: &Path) -> String {
    std::fs::metadata(p).map_or("?".into(), |m| {
        format!("{:.2} MB", m.len() as f64 / 1_000_000.0)
    })
}

fn install(args: Install) -> Result<(), String> {
    if !cfg!(unix) || cfg!(target_os = "macos") {
        return Err("install knows ELF systems (Linux, the BSDs) only".into());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask has no parent directory")?
        .to_path_buf();
    let ffi = root.join("crates/objmon-ffi");
    let manifest = std::fs::read_to_string(ffi.join("Cargo.toml")).map_err(|e| e.to_string())?;
    let v = Version::of_manifest(&manifest)?;

    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => cwd.join(t), // as cargo reads it: relative to where it was run
        None => root.join("target"),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    if args.build {
        run(Command::new(&cargo)
            .current_dir(&root)
            .args([
                "build",
                "--release",
                "-p",
                "objmon-ffi",
                "--lib",
                "--target-dir",
            ])
            .arg(&target))?;
    }
    let built = target.join("release");
    let (a, so) = (
        built.join("libobjmon_ffi.a"),
        built.join("libobjmon_ffi.so"),
    );
    for f in [&a, &so] {
        if !f.exists() {
            return Err(format!("{} is not built (drop --no-build)", f.display()));
        }
    }

    let prefix = cwd.join(args.prefix); // unchanged if absolute
    let (lib, include) = (prefix.join("lib"), prefix.join("include"));
    let (pc_dir, cmake_dir) = (lib.join("pkgconfig"), lib.join("cmake/objmon"));
    for d in [&lib, &include, &pc_dir, &cmake_dir] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }

    let real = format!("libobjmon.so.{v}");
    let soname = format!("libobjmon.so.{}", v.major);
    install_stripped(&a, &lib.join("libobjmon.a"), "--strip-debug")?;
    install_stripped(&so, &lib.join(&real), "--strip-unneeded")?;
    symlink(&real, &lib.join(&soname))?;
    symlink(&soname, &lib.join("libobjmon.so"))?;
    put(&include.join("objmon.h"), |tmp| {
        std::fs::copy(ffi.join("include/objmon.h"), tmp)
            .map(drop)
            .map_err(|e| e.to_string())
    })?;
    write(&pc_dir.join("objmon.pc"), &pkg_config(&prefix, v))?;
    write(&cmake_dir.join("objmonConfig.cmake"), &cmake_config(v))?;
    write(
        &cmake_dir.join("objmonConfigVersion.cmake"),
        &cmake_config_version(v),
    )?;

    println!("installed objmon {v} under {}:", prefix.display());
    for (f, what) in [
        (include.join("objmon.h"), String::new()),
        (lib.join("libobjmon.a"), size(&lib.join("libobjmon.a"))),
        (lib.join(&real), size(&lib.join(&real))),
        (lib.join(&soname), format!("-> {real}")),
        (lib.join("libobjmon.so"), format!("-> {soname}")),
        (pc_dir.join("objmon.pc"), String::new()),
        (cmake_dir.join("objmonConfig.cmake"), String::new()),
        (cmake_dir.join("objmonConfigVersion.cmake"), String::new()),
    ] {
        println!("  {}  {what}", f.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = match parse_task(&args) {
        Ok(t) => t,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("xtask: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // A task's own failure (a finding, a failed build) is not a usage error.
    let result = match task {
        Task::Install(i) => install(i),
        Task::Fuzz(f) => fuzz(f),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_comes_from_the_package_table() {
        let toml = "[package]\nname = \"x\"\nversion = \"1.22.333\"\n[dependencies]\n\
                    version = \"9.9.9\"\n";
        assert_eq!(
            Version::of_manifest(toml),
            Ok(Version {
                major: 1,
                minor: 22,
                patch: 333
            })
        );
        assert!(Version::parse("1.2.3-rc1").is_err());
        assert!(Version::parse("1.2").is_err());
    }

    #[test]
    fn the_ffi_crate_has_a_version_the_installer_reads() {
        let ffi = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/objmon-ffi/Cargo.toml");
        Version::of_manifest(&std::fs::read_to_string(ffi).unwrap()).unwrap();
    }

    #[test]
    fn arguments() {
        let a = |s: &str| parse_args(&s.split(' ').map(String::from).collect::<Vec<_>>());
        let i = a("install --prefix /opt/x --no-build").unwrap();
        assert_eq!(i.prefix, Path::new("/opt/x"));
        assert!(!i.build);
        assert!(a("install --prefix=/opt/y").unwrap().build);
        assert!(a("install").is_err());
        assert!(a("install --prefix").is_err());
        assert!(a("uninstall --prefix /x").is_err());
        assert_eq!(a("--help").err().as_deref(), Some(""));
    }

    #[test]
    fn fuzz_arguments() {
        let a = |s: &str| parse_fuzz(&s.split(' ').map(String::from).collect::<Vec<_>>());
        let f = a("--minutes 2 --protocol thin --expect-find").unwrap();
        assert_eq!(f.minutes, 2.0);
        assert_eq!(f.pass, ["--protocol", "thin", "--expect-find"]);
        assert!(a("--protocol thin").is_err());
        assert!(a("--minutes x").is_err());
        assert!(a("--minutes 0").is_err());
        assert!(a("--minutes 1 --bogus").is_err());
    }

    #[test]
    fn the_fuzzer_is_found_where_cargo_says() {
        let msgs = concat!(
            r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"objmon"},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","target":{"kind":["lib"],"crate_types":["lib"],"name":"objmon_fuzz"},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w#objmon-fuzz@0.1.0","target":{"kind":["bin"],"crate_types":["bin"],"name":"objmon-fuzz"},"filenames":["/t/x/release/objmon-fuzz"],"executable":"/t/my \"dir\"\\release/objmon-fuzz","fresh":true}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(
            fuzzer_executable(msgs),
            Some(PathBuf::from(r#"/t/my "dir"\release/objmon-fuzz"#))
        );
        assert_eq!(
            fuzzer_executable(r#"{"reason":"build-finished","success":true}"#),
            None
        );
    }

    #[test]
    fn pkg_config_names_the_library_and_what_the_archive_needs() {
        let v = Version::parse("0.1.0").unwrap();
        let pc = pkg_config(Path::new("/opt/objmon"), v);
        assert!(pc.contains("prefix=/opt/objmon\n"));
        assert!(pc.contains("Libs: -L${libdir} -Wl,-rpath,${libdir} -lobjmon\n"));
        assert!(pc.contains("Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl\n"));
        assert!(pc.contains("Version: 0.1.0\n"));
    }
}
