//! Gives the shared library the SONAME it is installed under (`libobjmon.so.MAJOR`, see
//! `cargo xtask install`), on ELF targets. The library cargo leaves in `target/` is named
//! `libobjmon_ffi.so`: link a program against an installed tree (or the static library), not
//! against that file, whose SONAME names the installed one.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let elf = matches!(
        os.as_str(),
        "linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly" | "illumos"
    );
    if elf {
        let major = env!("CARGO_PKG_VERSION_MAJOR");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libobjmon.so.{major}");
    }
}
