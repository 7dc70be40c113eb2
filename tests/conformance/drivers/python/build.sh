#!/usr/bin/env bash
# Build the Python binding into the venv bindings-python/run-tests.sh uses (same venv, same
# maturin wheel build and install), only when it is missing or older than its sources.
# Shared by the python and python-asyncio drivers (the driver itself is a plain script).
#
# Environment: POLYLOCK_PY_VENV (default ~/.cache/polylock/py-venv), CARGO_TARGET_DIR
# (default $POLYLOCK_CARGO_TARGET, else ~/.cache/polylock/target), PYTHON (for a new venv).
set -euo pipefail

root=$(cd "$(dirname "$0")/../../../.." && pwd)
binding="$root/bindings-python"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
venv="${POLYLOCK_PY_VENV:-$HOME/.cache/polylock/py-venv}"

if [[ ! -x "$venv/bin/python" ]]; then
  "${PYTHON:-python3}" -m venv "$venv"
fi
if [[ ! -x "$venv/bin/maturin" ]]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$binding/requirements-dev.txt"
fi

# The installed native module, if any (run-tests.sh installs the wheel, not an editable copy).
installed=$("$venv/bin/python" - <<'PY' 2>/dev/null || true
import importlib.util, pathlib
spec = importlib.util.find_spec("polylock._polylock")
print(spec.origin if spec and spec.origin else "")
PY
)
stale=yes
if [[ -n "$installed" && -f "$installed" ]]; then
  # Stale when any source of the wheel (the binding, the core, the ID crate, the lock file)
  # is newer than the installed module.
  newer=$(find "$binding/src" "$binding/python" "$binding/Cargo.toml" "$binding/pyproject.toml" \
    "$root/core/src" "$root/core/Cargo.toml" "$root/id/src" "$root/id/Cargo.toml" "$root/Cargo.lock" "$root/Cargo.toml" \
    "$root/tools/feature-union/Cargo.toml" \
    -newer "$installed" -type f -print -quit 2>/dev/null || true)
  [[ -z "$newer" ]] && stale=no
fi

if [[ $stale == yes ]]; then
  echo "python driver: building and installing the polylock wheel into $venv" >&2
  wheels=$(mktemp -d)
  trap 'rm -rf "$wheels"' EXIT
  "$venv/bin/maturin" build --release --quiet --manifest-path "$binding/Cargo.toml" --interpreter "$venv/bin/python" \
    --out "$wheels" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/*.whl >&2
fi
