#!/usr/bin/env bash
# Print the one version of polylock: the workspace's (Cargo.toml [workspace.package]).
# Every other version field is checked equal to it by tests/release/check_versions.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(awk '/^\[workspace.package\]/ { inside = 1; next } /^\[/ { inside = 0 }
  inside && /^version *=/ { gsub(/.*= *"|".*/, ""); print; exit }' "$root/Cargo.toml")
[[ -n "$version" ]] || { echo "version.sh: no version in [workspace.package] of Cargo.toml" >&2; exit 1; }
echo "$version"
