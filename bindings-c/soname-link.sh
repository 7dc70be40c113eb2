#!/usr/bin/env bash
# bindings-c/soname-link.sh DIR: make DIR/<soname of libpolylock.so> point at libpolylock.so.
#
# libpolylock.so carries an ELF SONAME (libpolylock.so.0.1 for 0.1.x, see build.rs), so every
# program linked against it asks the loader for that name. Cargo writes only libpolylock.so;
# programs run from the build tree (ctest, bench) need the SONAME link beside it, as an
# installed library has (install.sh).
set -euo pipefail
dir="${1:?usage: soname-link.sh DIR}"
soname="$(readelf -d "$dir/libpolylock.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[[ -n "$soname" ]] || { echo "soname-link.sh: $dir/libpolylock.so has no SONAME" >&2; exit 1; }
ln -sfn libpolylock.so "$dir/$soname"
printf '%s\n' "$soname"
