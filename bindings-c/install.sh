#!/usr/bin/env bash
# Install the C binding: bindings-c/install.sh [PREFIX]   (default /usr/local)
#
# Copies libpolylock.so (as libpolylock.so.VERSION with SONAME and development links) and libpolylock.a (from the cargo release dir) to PREFIX/lib and
# polylock.h / polylock.hpp to PREFIX/include, and writes a pkg-config file
# (PREFIX/lib/pkgconfig/polylock.pc) and a CMake package (PREFIX/lib/cmake/polylock/) with
# the imported target polylock::polylock. Build first (cargo build --release -p polylock-c),
# or set POLYLOCK_INSTALL_BUILD=1 to have this script build.
#
#   CARGO_TARGET_DIR / POLYLOCK_CARGO_TARGET   cargo target dir (default ~/.cache/polylock/target)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="${1:-/usr/local}"
target="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
release="$target/release"

if [[ "${POLYLOCK_INSTALL_BUILD:-0}" == 1 ]]; then
    CARGO_TARGET_DIR="$target" cargo build --release -p polylock-c --manifest-path "$here/Cargo.toml"
fi
for lib in libpolylock.so libpolylock.a; do
    [[ -f "$release/$lib" ]] || { echo "install.sh: $release/$lib missing; run cargo build --release -p polylock-c" >&2; exit 1; }
done

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$here/../Cargo.toml" | head -n1)"
[[ -n "$version" ]] || { echo "install.sh: cannot read the workspace version" >&2; exit 1; }
# What libpolylock.a needs besides libc (cargo rustc -p polylock-c --release --
# --print native-static-libs on x86_64 Linux glibc).
static_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl"

libdir="$prefix/lib"
includedir="$prefix/include"
install -d "$libdir" "$includedir" "$libdir/pkgconfig" "$libdir/cmake/polylock"
# The usual shared-library trio: the file named by version, the SONAME link the loader
# resolves (see build.rs), and the development link the linker finds with -lpolylock.
soname="$(readelf -d "$release/libpolylock.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[[ -n "$soname" ]] || { echo "install.sh: $release/libpolylock.so has no SONAME; rebuild it" >&2; exit 1; }
install -m 0755 "$release/libpolylock.so" "$libdir/libpolylock.so.$version"
ln -sfn "libpolylock.so.$version" "$libdir/$soname"
ln -sfn "$soname" "$libdir/libpolylock.so"
install -m 0644 "$release/libpolylock.a" "$libdir/libpolylock.a"
install -m 0644 "$here/include/polylock.h" "$here/include/polylock.hpp" "$includedir/"

cat >"$libdir/pkgconfig/polylock.pc" <<PC
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: polylock
Description: Distributed locks and IDs for C and C++
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lpolylock
Libs.private: $static_libs
PC

cat >"$libdir/cmake/polylock/polylockConfig.cmake" <<'CMAKE'
# polylock's CMake package: find_package(polylock) gives the imported targets
#   polylock::polylock         libpolylock.so (the default)
#   polylock::polylock_static  libpolylock.a with what it needs (threads, dl, m, rt, util)
# Set POLYLOCK_USE_STATIC to ON before find_package to make polylock::polylock the static one.
include(CMakeFindDependencyMacro)
find_dependency(Threads)

get_filename_component(_polylock_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(polylock_INCLUDE_DIR "${_polylock_prefix}/include")
set(polylock_LIBRARY "${_polylock_prefix}/lib/libpolylock.so")
set(polylock_STATIC_LIBRARY "${_polylock_prefix}/lib/libpolylock.a")

if(NOT TARGET polylock::polylock_shared)
    add_library(polylock::polylock_shared SHARED IMPORTED)
    set_target_properties(polylock::polylock_shared PROPERTIES
        IMPORTED_LOCATION "${polylock_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${polylock_INCLUDE_DIR}")
endif()
if(NOT TARGET polylock::polylock_static)
    add_library(polylock::polylock_static STATIC IMPORTED)
    set_target_properties(polylock::polylock_static PROPERTIES
        IMPORTED_LOCATION "${polylock_STATIC_LIBRARY}"
        IMPORTED_LINK_INTERFACE_LANGUAGES "C"
        INTERFACE_INCLUDE_DIRECTORIES "${polylock_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "Threads::Threads;gcc_s;util;rt;dl;m")
endif()
if(NOT TARGET polylock::polylock)
    add_library(polylock::polylock INTERFACE IMPORTED)
    if(POLYLOCK_USE_STATIC)
        set_target_properties(polylock::polylock PROPERTIES INTERFACE_LINK_LIBRARIES polylock::polylock_static)
    else()
        set_target_properties(polylock::polylock PROPERTIES INTERFACE_LINK_LIBRARIES polylock::polylock_shared)
    endif()
endif()
set(polylock_FOUND TRUE)
unset(_polylock_prefix)
CMAKE

cat >"$libdir/cmake/polylock/polylockConfigVersion.cmake" <<CMAKE
# Compatible when the major version matches (0.x: when major and minor match) and the
# installed version is at least the one asked for.
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION)
    string(REPLACE "." ";" _have "\${PACKAGE_VERSION}")
    list(GET _have 0 _have_major)
    list(GET _have 1 _have_minor)
    if(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION
       OR NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL _have_major
       OR (_have_major STREQUAL "0" AND NOT PACKAGE_FIND_VERSION_MINOR STREQUAL _have_minor))
        set(PACKAGE_VERSION_COMPATIBLE FALSE)
    else()
        set(PACKAGE_VERSION_COMPATIBLE TRUE)
        if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
            set(PACKAGE_VERSION_EXACT TRUE)
        endif()
    endif()
else()
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
    set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64-bit)")
    set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
CMAKE

echo "installed polylock $version to $prefix"
