#!/usr/bin/env bash
# The JVM binding's test suite: Maven builds the native library with cargo (release), packs it
# into the jar and runs the JUnit 5 suite against mem://, SQLite files, the Redis of
# tests/services (with real Redisson for the interop tests) and any other server whose
# POLYLOCK_TEST_*_URL is set; then, in the same reactor (frameworks/pom.xml), the framework
# modules shedlock/, spring-integration/ and spring-boot-starter/ (real ShedLock, Spring
# Integration and Spring Boot; ShedLock's JDBC provider on PostgreSQL and MariaDB when set).
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

step "mvn verify (cargo build, jar, JUnit; the ShedLock, Spring Integration and Spring Boot modules)"
cd "$here"
# One reactor: the binding's pom.xml unchanged, then the modules that depend on its jar. A -Dtest=
# filter may match no test of some module; the tally below still fails when none ran at all.
mvn -B -q -f frameworks/pom.xml verify -Dsurefire.failIfNoSpecifiedTests=false "$@"
python3 - "$here" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
root = sys.argv[1]
total = failed = skipped = 0
for module in ["", "shedlock/", "spring-integration/", "spring-boot-starter/"]:
    n = f = s = 0
    for report in glob.glob(f"{root}/{module}target/surefire-reports/TEST-*.xml"):
        suite = ET.parse(report).getroot()
        n += int(suite.get("tests", 0))
        f += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        s += int(suite.get("skipped", 0))
    if module:
        print(f"jvm {module.rstrip('/')}: {n - f - s} passed, {f} failed, {s} skipped")
    total, failed, skipped = total + n, failed + f, skipped + s
if total == 0:
    sys.exit("run-tests.sh: surefire ran no tests")
print(f"jvm: {total - failed - skipped} passed, {failed} failed, {skipped} skipped")
PY
