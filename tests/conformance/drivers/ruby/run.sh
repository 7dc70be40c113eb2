#!/usr/bin/env bash
# The Ruby driver, on the gem build.sh installed (no source tree, no development library).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ -d "$here/.build/gems" ]] || { echo "ruby/run.sh: run build.sh first" >&2; exit 1; }
export GEM_HOME="$here/.build/gems"
exec env -u POLYLOCK_NATIVE_LIB ruby "$here/driver.rb"
