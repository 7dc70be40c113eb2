#!/usr/bin/env bash
# Run every example of the documentation: each fenced code block of docs/**/*.md, README.md,
# bindings-*/README.md, cli/README.md and core/README.md whose tag is a language runs as
# pasted, each in a fresh temporary folder (so `sqlite://polylock.db`, the default URL, is a
# new database there), with the bindings already built by their run-tests.sh:
#   python            the venv ${POLYLOCK_PY_VENV:-~/.cache/polylock/py-venv}
#   js / javascript   node; ESM when the block has `import`/top-level `await`, else CommonJS
#                     (```mjs / ```cjs force one); `polylock` resolves to bindings-node
#   java              single-file `java Example.java` on the jar and its Maven runtime classpath
#   go                `go run` in a module that replaces the polylock module by bindings-go
#   ruby              the gem installed by tests/conformance/drivers/ruby/build.sh
#   c, cpp            cc / c++ against libpolylock in $CARGO_TARGET_DIR/release
#   rust              a scratch crate (path dependency on core/ and id/, the shared target dir)
#   sh / bash         bash -euo pipefail with the `polylock` CLI on PATH; ```console runs `$ ` lines
# Conventions in a block:
#   `needs: redis` (in a comment, or needs=redis in the info string): runs with POLYLOCK_URL
#       set to $POLYLOCK_TEST_REDIS_URL (eval "$(tests/services/services.sh env)" gives it)
#   `norun="why"` in the info string, or a first comment `# norun: why` / `// norun: why`:
#       shown, not run (the reason is required)
#   ```text (or xml, yaml, toml, json, ...) for output, layouts and grammars: not run.
# An untagged block fails: say what it is. A binding that is not built fails, naming the
# command that builds it. Arguments select files (a path fragment) or languages.
# Prints one line per block and `N passed, N failed`; exits 1 on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ -z "${POLYLOCK_TEST_REDIS_URL:-}" && -x "$here/../tests/services/services.sh" ]]; then
  eval "$("$here/../tests/services/services.sh" env 2>/dev/null || true)"
fi
exec python3 "$here/run_examples.py" "$@"
