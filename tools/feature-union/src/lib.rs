//! Intentionally empty: this crate exists for its Cargo.toml, which gives core's dependencies
//! one feature set whichever workspace member cargo builds (see generate.py beside it).
