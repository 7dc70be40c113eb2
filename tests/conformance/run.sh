#!/usr/bin/env bash
# The conformance kit: every scenario on every surface and backend it applies to.
#
#   tests/conformance/run.sh [--surfaces a,b] [--backends a,b] [--scenarios a,b] [--full] [--out FILE]
#
# Builds each surface's driver (drivers/<surface>/build.sh: quick when the binding's own
# stage already built it), then runs orchestrate.py, which prints the matrix, writes it as
# JSON with --out, and exits non-zero on any failed cell. Without --backends: sqlite and
# every server whose POLYLOCK_TEST_<SERVER>_URL is set (`eval "$(tests/services/services.sh
# env)"`). Each scenario runs on every surface on its home backend (sqlite, or the first
# server that offers what it needs); without --full the other servers run it on a rotation
# of surfaces, so every surface meets every server; --full runs every surface everywhere.
# See PROTOCOL.md for the protocol and the scenario format.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"

surfaces=""
args=("$@")
while [[ $# -gt 0 ]]; do
  case "$1" in
    --surfaces) surfaces="${2:?--surfaces needs a list}"; shift ;;
    --surfaces=*) surfaces="${1#*=}" ;;
  esac
  shift
done
if [[ -z $surfaces ]]; then
  surfaces=$(cd "$here/drivers" && for d in */; do [[ -x "$d/run.sh" ]] && printf '%s,' "${d%/}"; done)
  surfaces="${surfaces%,}"
fi

IFS=',' read -r -a list <<<"$surfaces"
for surface in "${list[@]}"; do
  build="$here/drivers/$surface/build.sh"
  [[ -x $build ]] || { echo "run.sh: no driver build for '$surface' ($build)" >&2; exit 2; }
  started=$(date +%s)
  "$build" >&2
  echo "conformance: $surface driver ready ($(( $(date +%s) - started )) s)" >&2
done

exec python3 "$here/orchestrate.py" "${args[@]}"
