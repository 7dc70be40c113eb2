//! `uniffi-bindgen generate --language ruby --out-dir DIR libpolylock_uniffi.so`: the generator
//! of the exact uniffi version the library was built with.
fn main() {
    uniffi::uniffi_bindgen_main()
}
