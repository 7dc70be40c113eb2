//! core build-depends on protoc-bin-vendored only so that cargo fetches it before any build
//! script runs: tools/vendored-protoc (PROTOC in .cargo/config.toml) runs that binary when
//! etcd-client's build script compiles etcd's protobufs, so no system protoc is needed.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Err(err) = protoc_bin_vendored::protoc_bin_path() {
        println!("cargo:warning={err}; etcd-client's build then needs a protoc on PATH or in PROTOC");
    }
}
