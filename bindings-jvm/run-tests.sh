#!/usr/bin/env bash
# The JVM binding's test suite: Maven builds the native library with cargo (release), packs it
# into the jar and runs the JUnit 5 suite against mem://, SQLite files, the Redis of
# tests/services (with real Redisson for the interop tests) and any other server whose
# POLYLOCK_TEST_*_URL is set.
#
#   bindings-jvm/run-tests.sh [MAVEN_ARGS...]     e.g. -Dtest=RedissonInteropTest
#
# Environment:
#   CARGO_TARGET_DIR          cargo target dir (default $POLYLOCK_CARGO_TARGET, else ~/.cache/polylock/target)
#   POLYLOCK_TEST_REDIS_URL   the Redis to test against (default: tests/services' redis, started here)
#   POLYLOCK_TEST_{REDIS_CLUSTER,ETCD,ZOOKEEPER,POSTGRES,MARIADB}_URL
#                             also run the lock contract on these when set
# Maven's dependencies (JUnit, Redisson for the tests) are cached in ~/.m2.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${POLYLOCK_CARGO_TARGET:-$HOME/.cache/polylock/target}}"
step() { printf '\n==> %s\n' "$*"; }

command -v mvn >/dev/null || { echo "run-tests.sh: Maven (mvn) is required" >&2; exit 1; }
command -v javac >/dev/null || { echo "run-tests.sh: a JDK (javac) is required" >&2; exit 1; }

if [[ -z "${POLYLOCK_TEST_REDIS_URL:-}" ]]; then
  step "redis (tests/services)"
  "$root/tests/services/services.sh" start redis >/dev/null
  POLYLOCK_TEST_REDIS_URL=$("$root/tests/services/services.sh" url redis)
  export POLYLOCK_TEST_REDIS_URL
fi

step "mvn verify (cargo build, jar, JUnit)"
cd "$here"
mvn -B -q verify "$@"
# Surefire fails the build on zero tests too (failIfNoSpecifiedTests); print the tally.
python3 - "$here/target/surefire-reports" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
total = failed = skipped = 0
for report in glob.glob(sys.argv[1] + "/TEST-*.xml"):
    suite = ET.parse(report).getroot()
    total += int(suite.get("tests", 0))
    failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped += int(suite.get("skipped", 0))
if total == 0:
    sys.exit("run-tests.sh: surefire ran no tests")
print(f"jvm: {total - failed - skipped} passed, {failed} failed, {skipped} skipped")
PY
