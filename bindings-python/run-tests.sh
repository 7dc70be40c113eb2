#!/usr/bin/env bash
# The Python binding's test suite: build the wheel, install it into a venv outside the clone,
# run pytest against real servers (SQLite files, mem://, and every server of tests/services:
# the Redis deployments, etcd, ZooKeeper, PostgreSQL, MariaDB).
#
#   bindings-python/run-tests.sh [PYTEST_ARGS...]
#
# Environment:
#   POLYLOCK_PY_VENV          the test venv (default ~/.cache/polylock/py-venv); reused
#   CARGO_TARGET_DIR          cargo target dir, shared with the rest of the build
#                             (default $POLYLOCK_CARGO_TARGET, else ~/.cache/polylock/target)
#   POLYLOCK_TEST_*_URL       the servers to test against, as `tests/services/services.sh env`
#                             exports them (tests/run-all.sh does): every one exported is tested.
#                             When POLYLOCK_TEST_REDIS_URL is unset, this script starts the
#                             services of tests/services itself (POLYLOCK_PY_SERVICES, default
#                             all of them) and exports theirs.
#   POLYLOCK_PY_SERVICES      the services to start in that case, e.g. "redis postgres"
#   POLYLOCK_CLI              the polylock CLI binary (default: built here, release)
#   POLYLOCK_PY_BENCH=0       skip the benchmark run after the tests (bench/python/bench_redis.py)
#   PYTHON                    the interpreter to make the venv with (default python3)
#   POLYLOCK_PY_OLDEST        a CPython 3.9 to check the abi3 wheel with (default: python3.9 on
#                             the PATH, else pyenv's; the check is skipped, saying so, without one)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
venv="${POLYLOCK_PY_VENV:-$HOME/.cache/polylock/py-venv}"
step() { printf '\n==> %s\n' "$*"; }

step "venv $venv"
[[ -x "$venv/bin/python" ]] || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-dev.txt"

step "build the wheel (release, abi3) and install it"
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
"$venv/bin/maturin" build --release --quiet --manifest-path "$here/Cargo.toml" --interpreter "$venv/bin/python" \
  --out "$wheels"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/*.whl

step "the abi3 wheel in a fresh venv of the oldest CPython it supports (3.9)"
# The wheel is built once, against the test venv's interpreter; abi3 means it loads on 3.9 too.
find_cpython39() {
  local candidate
  # A pyenv shim named python3.9 may exist and fail, hence the check that it runs.
  for candidate in python3.9 "$HOME"/.pyenv/versions/3.9*/bin/python; do
    if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 9))' 2>/dev/null; then
      echo "$candidate"
      return
    fi
  done
}
oldest="${POLYLOCK_PY_OLDEST:-$(find_cpython39)}"
if [[ -n "$oldest" ]]; then
  "$oldest" -m venv "$wheels/venv-oldest"
  "$wheels/venv-oldest/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheels"/*.whl
  "$wheels/venv-oldest/bin/python" "$here/tests/smoke_installed.py" "$wheels"
else
  echo "skipped: no CPython 3.9 on this machine (set POLYLOCK_PY_OLDEST to one)"
fi

step "the polylock CLI (for the CLI contention test)"
if [[ -z "${POLYLOCK_CLI:-}" ]]; then
  cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p polylock-cli
  export POLYLOCK_CLI="$CARGO_TARGET_DIR/release/polylock"
fi

if [[ -z "${POLYLOCK_TEST_REDIS_URL:-}" ]]; then
  step "servers (tests/services): ${POLYLOCK_PY_SERVICES:-all}"
  # Word splitting intended: a list of service names.
  # shellcheck disable=SC2086
  "$root/tests/services/services.sh" start ${POLYLOCK_PY_SERVICES:-} >/dev/null
  eval "$("$root/tests/services/services.sh" env)"
  if [[ -z "${POLYLOCK_TEST_REDIS_URL:-}" ]]; then
    # The interop and bench steps need plain Redis whatever else was asked for.
    "$root/tests/services/services.sh" start redis >/dev/null
    POLYLOCK_TEST_REDIS_URL=$("$root/tests/services/services.sh" url redis)
    export POLYLOCK_TEST_REDIS_URL
  fi
fi

step "pytest"
cd "$here"
# Exit status 5 (no tests collected) is a failure too: a suite that runs nothing proves nothing.
status=0
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" || status=$?
if [[ $status -eq 5 ]]; then
  echo "pytest collected no tests" >&2
fi
if [[ $status -eq 0 && "${POLYLOCK_PY_BENCH:-1}" != 0 ]]; then
  step "bench (figures only, never a failure): bench/python/bench_redis.py"
  "$venv/bin/python" "$root/bench/python/bench_redis.py" --url "$POLYLOCK_TEST_REDIS_URL" --seconds 0.5 ||
    echo "the bench did not finish; figures above are partial" >&2
fi
exit "$status"
