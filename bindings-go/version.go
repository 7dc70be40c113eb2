package polylock

// Version is polylock's version, the same in every language (the workspace's, in the root
// Cargo.toml); tests/release/check_versions.py keeps them equal.
const Version = "0.1.0"
