#!/usr/bin/env bash
# The Java driver: one JVM per party; stdin/stdout carry the protocol, stderr is for logs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ -f "$here/.build/classpath" ]] || { echo "java/run.sh: run build.sh first" >&2; exit 1; }
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$(cat "$here/.build/classpath")" ConformanceDriver
