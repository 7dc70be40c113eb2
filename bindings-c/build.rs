//! Generates include/polylock.h from the sources with cbindgen, so the header can never
//! drift from the ABI. `POLYLOCK_HEADER_OUT` writes it elsewhere instead (check-header.sh
//! uses that to compare a fresh header with the committed one).

use std::path::PathBuf;

fn main() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=POLYLOCK_HEADER_OUT");
    let target = match std::env::var_os("POLYLOCK_HEADER_OUT") {
        Some(path) => PathBuf::from(path),
        None => crate_dir.join("include").join("polylock.h"),
    };
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("bindings-c/cbindgen.toml is valid");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src").join("lib.rs"))
        .generate()
        .expect("cbindgen can read bindings-c/src");
    // `write_to_file` leaves the file alone when nothing changed, so CMake does not rebuild.
    bindings.write_to_file(target);
}
