#!/usr/bin/env bash
# Build the documentation site: docs/ is an mdBook (book.toml, SUMMARY.md and the pages all in
# docs/, so the generated docs/conformance.md is a page without being copied). Installs mdBook
# into ~/.cache/polylock/tools when it is missing (compiles once, a few minutes on 2 cores).
# The site goes to docs/book/ (gitignored).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tools="${POLYLOCK_TOOLS:-$HOME/.cache/polylock/tools}"
export PATH="$tools/bin:$PATH"
if ! command -v mdbook >/dev/null; then
  echo "docs/build.sh: cargo install mdbook --locked --root $tools" >&2
  cargo install mdbook --locked --root "$tools" --quiet
fi
# The error reference is generated from core/src/error.rs: a stale page fails the build.
python3 "$here/gen_errors.py" --check
if [[ -f "$here/conformance.md" ]]; then
  mdbook build "$here"
else
  # docs/conformance.md is written by tests/conformance/tables.py (not by this script): until
  # it exists, build from a copy of docs/ that has a placeholder page in its place.
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$here" && tar --exclude=./book -cf - .) | tar -xf - -C "$work"
  printf '# Conformance matrix\n\nNot generated yet: `tests/conformance/tables.py --matrix matrix.json` writes this page.\n' \
    >"$work/conformance.md"
  mdbook build "$work" --dest-dir "$here/book"
fi
echo "docs/build.sh: site in $here/book/index.html"
