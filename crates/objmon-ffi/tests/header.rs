//! The committed C header must be exactly what cbindgen generates from the code.
//! To refresh it after an intended API change: `OBJMON_BLESS=1 cargo test -p objmon-ffi --test header`.

use std::path::Path;

#[test]
fn header_is_in_sync() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).unwrap();
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen parses the crate")
        .write(&mut generated);
    let generated = String::from_utf8(generated).unwrap();
    let path = dir.join("include/objmon.h");
    if std::env::var_os("OBJMON_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/objmon.h is stale; run OBJMON_BLESS=1 cargo test -p objmon-ffi --test header"
    );
}
