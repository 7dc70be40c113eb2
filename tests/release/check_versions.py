"""One version for the whole of polylock: every place that states one must state the
workspace's (Cargo.toml [workspace.package]). Run by release/build.sh before it builds and by
tests/release/run-tests.sh; exits non-zero, naming each place that differs.

    python3 tests/release/check_versions.py [ROOT]

The bindings' runtime attributes (polylock.__version__, the Node package's `version`,
Polylock.VERSION in Java, polylock_version() in C, Polylock::VERSION in Ruby, polylock.Version
in Go, `polylock --version`) are checked against the same number by the install test, from
the installed artifacts.
"""

import json
import re
import sys
import tomllib
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])


def read(path: str) -> str:
    return (root / path).read_text(encoding="utf-8")


def only(pattern: str, text: str, what: str) -> str:
    found = re.findall(pattern, text, re.MULTILINE)
    if len(found) != 1:
        raise ValueError(f"{what}: expected one match of {pattern!r}, found {len(found)}")
    return found[0]


workspace = tomllib.loads(read("Cargo.toml"))
version = workspace["workspace"]["package"]["version"]
checks: list[tuple[str, object]] = []


def check(place: str, get) -> None:
    try:
        checks.append((place, get()))
    except (OSError, KeyError, ValueError) as err:
        checks.append((place, err))


# Every crate of the workspace takes the workspace's version, and Cargo.lock agrees.
for member in workspace["workspace"]["members"]:
    manifest = tomllib.loads(read(f"{member}/Cargo.toml"))["package"]
    name = manifest["name"]
    check(f"{member}/Cargo.toml", lambda m=manifest: version if m.get("version") == {"workspace": True} else m.get("version"))
    lock = tomllib.loads(read("Cargo.lock"))
    check(f"Cargo.lock ({name})", lambda n=name, l=lock: next(p["version"] for p in l["package"] if p["name"] == n and "source" not in p))


def pyproject() -> str:
    project = tomllib.loads(read("bindings-python/pyproject.toml"))["project"]
    # maturin takes a dynamic version from the crate, which takes the workspace's.
    return version if "version" in project.get("dynamic", []) else project["version"]


check("bindings-python/pyproject.toml", pyproject)
for package in ("bindings-node", "bindings-wasm"):
    check(f"{package}/package.json", lambda p=package: json.loads(read(f"{p}/package.json"))["version"])
    check(f"{package}/package-lock.json", lambda p=package: json.loads(read(f"{p}/package-lock.json"))["version"])
    check(f"{package}/package-lock.json (packages[''])", lambda p=package: json.loads(read(f"{p}/package-lock.json"))["packages"][""]["version"])
check("bindings-jvm/pom.xml", lambda: only(r"^  <version>([^<]+)</version>", read("bindings-jvm/pom.xml"), "pom.xml"))
check(
    "bindings-jvm Polylock.VERSION",
    lambda: only(r'String VERSION = "([^"]+)"', read("bindings-jvm/src/main/java/io/polylock/Polylock.java"), "Polylock.java"),
)
check("bindings-uniffi/ruby/lib/polylock/version.rb", lambda: only(r"VERSION = '([^']+)'", read("bindings-uniffi/ruby/lib/polylock/version.rb"), "version.rb"))
check("bindings-go/version.go", lambda: only(r'^const Version = "([^"]+)"', read("bindings-go/version.go"), "version.go"))
check("CHANGELOG.md (latest release)", lambda: re.findall(r"^## \[(\d[^\]]*)\]", read("CHANGELOG.md"), re.MULTILINE)[0])

failed = [(place, got) for place, got in checks if got != version]
for place, got in checks:
    print(f"{'ok  ' if got == version else 'FAIL'} {place}: {got}")
print(f"versions: {len(checks) - len(failed)} passed, {len(failed)} failed (workspace version {version})")
sys.exit(1 if failed else 0)
