//! Generates include/polylock.h from the sources with cbindgen, so the header can never
//! drift from the ABI. `POLYLOCK_HEADER_OUT` writes it elsewhere instead (check-header.sh
//! uses that to compare a fresh header with the committed one).

use std::path::PathBuf;

fn main() {
    set_soname();
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

/// Give libpolylock.so an ELF SONAME, so programs record the ABI they were linked against
/// (NEEDED libpolylock.so.0.1) rather than the bare development name. Before 1.0 every minor
/// release may change the ABI, so the minor is part of the name; from 1.0 the major alone.
fn set_soname() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os != "linux" {
        return;
    }
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets the package version");
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").expect("cargo sets the package version");
    let abi = if major == "0" { format!("0.{minor}") } else { major };
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpolylock.so.{abi}");
}
