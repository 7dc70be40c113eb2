#!/usr/bin/env python3
"""Run every tagged code block of the docs, README.md and the bindings' READMEs.

See docs/run-examples.sh (the entry point) for the conventions. One line per block, then
`N passed, N failed`; exit 1 on any failure. A language whose binding is not built fails
naming the build command: it is never skipped.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR") or os.environ.get("POLYLOCK_CARGO_TARGET")
              or Path.home() / ".cache/polylock/target")
RELEASE = TARGET / "release"
VENV = Path(os.environ.get("POLYLOCK_PY_VENV") or Path.home() / ".cache/polylock/py-venv")
GEM_HOME = ROOT / "tests/conformance/drivers/ruby/.build/gems"
TIMEOUT = int(os.environ.get("POLYLOCK_EXAMPLE_TIMEOUT", "240"))
# Blocks run this many at a time (most of a block's time is one process starting or compiling
# on one core); those that share something run one after another in a lane of their own.
JOBS = int(os.environ.get("POLYLOCK_EXAMPLE_JOBS", "2"))

LANGS = {
    "python": "python", "py": "python",
    "js": "node", "javascript": "node", "mjs": "node", "cjs": "node",
    "java": "java", "go": "go", "ruby": "ruby", "rb": "ruby",
    "c": "c", "cpp": "cpp", "c++": "cpp", "rust": "rust", "rs": "rust",
    "sh": "shell", "bash": "shell", "shell": "shell", "console": "shell",
}
# Tags of blocks that are data, not programs: never run, never an error.
DATA = {"text", "html", "xml", "yaml", "yml", "toml", "json", "ini", "diff", "promql", "sql", "dockerfile",
        "ts", "typescript", "protobuf", "gemfile", "cmake", "make"}
NORUN = re.compile(r"(?:^|\s)norun(?:=\"?([^\"]*)\"?)?|^\s*(?:#|//)\s*norun:\s*(.+)$", re.M)
# Blocks whose text must stay as it is (so no norun in their info string), shown and not run.
KEPT = {
    ("README.md", "cargo run --release -p polylock-cli -- demo"):
        "the repository's own two commands (the demo and the whole test run): CI runs both",
}
NEEDS = re.compile(r"needs[:=]\s*\"?(redis)\b")


class Block:
    def __init__(self, path, line, info, code):
        self.path, self.line, self.info, self.code = path, line, info, code
        self.tag = info.split()[0].lower() if info.split() else ""
        self.lang = LANGS.get(self.tag)

    @property
    def where(self):
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def sources():
    files = sorted(p for p in (ROOT / "docs").rglob("*.md") if p.relative_to(ROOT / "docs").parts[0] not in ("book",) or False)
    files.append(ROOT / "README.md")
    files += sorted(ROOT.glob("bindings-*/README.md"))
    files += [p for p in (ROOT / "cli/README.md", ROOT / "core/README.md", ROOT / "CONTRIBUTING.md") if p.exists()]
    return files


def blocks(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})(.*)$", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).strip()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not re.match(r"^\s*" + fence[0] + "{%d,}\\s*$" % len(fence), lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        yield Block(path, start, info, "\n".join(body) + "\n")


def run(cmd, cwd, env, timeout=TIMEOUT, stdin=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, input=stdin, text=True)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or "") + f"\n(timed out after {timeout} s)"


class Missing(Exception):
    """A binding that is not built: the message names the command that builds it."""


_cache = {}
_cache_lock = threading.Lock()


def once(key, fn):
    with _cache_lock:
        if key not in _cache:
            try:
                _cache[key] = fn()
            except Missing as e:
                _cache[key] = e
    if isinstance(_cache[key], Missing):
        raise _cache[key]
    return _cache[key]


def java_classpath():
    jars = sorted((ROOT / "bindings-jvm/target").glob("polylock-*.jar"))
    jars = [j for j in jars if not re.search(r"-(sources|javadoc|tests)\.jar$", j.name)]
    if not jars:
        raise Missing("the Java jar is not built: run bindings-jvm/run-tests.sh (mvn package)")
    out = ROOT / "bindings-jvm/target/docs-classpath.txt"
    if not out.exists() or out.stat().st_mtime < (ROOT / "bindings-jvm/pom.xml").stat().st_mtime:
        code, log = run(["mvn", "-q", "-f", str(ROOT / "bindings-jvm/pom.xml"), "dependency:build-classpath",
                         "-Dmdep.includeScope=runtime", f"-Dmdep.outputFile={out}"], ROOT, os.environ.copy(), 300)
        if code:
            raise Missing("mvn dependency:build-classpath failed in bindings-jvm (run bindings-jvm/run-tests.sh):\n" + log)
    return f"{jars[-1]}:{out.read_text().strip()}"


def rust_crate():
    crate = TARGET / "docs-examples"
    if not (RELEASE / "libpolylock.rlib").exists() and not list((RELEASE / "deps").glob("libpolylock-*.rlib")):
        raise Missing("the Rust core is not built: run cargo build --release -p polylock")
    (crate / "src/bin").mkdir(parents=True, exist_ok=True)
    (crate / "Cargo.toml").write_text(f"""[package]
name = "polylock-docs-examples"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
polylock = {{ path = "{ROOT / 'core'}" }}
polylock-id = {{ path = "{ROOT / 'id'}" }}
# The workspace's one feature set for core's dependencies (tools/feature-union): with any
# other (tokio's "full", say) cargo would compile core and its dependencies again.
polylock-feature-union = {{ path = "{ROOT / 'tools/feature-union'}" }}
tokio = {{ version = "1", features = ["macros", "rt-multi-thread"] }}

# The workspace's release profile, so the build above is reused rather than made again.
[profile.release]
debug = "line-tables-only"

[workspace]
""")
    shutil.copy(ROOT / "Cargo.lock", crate / "Cargo.lock")
    for old in (crate / "src/bin").glob("*.rs"):
        old.unlink()
    return crate


def node_dir(tmp, code):
    pkg = ROOT / "bindings-node"
    if not list(pkg.glob("*.node")):
        raise Missing("the Node addon is not built: run bindings-node/run-tests.sh")
    (tmp / "node_modules").mkdir(exist_ok=True)
    (tmp / "node_modules/polylock").symlink_to(pkg)
    wasm = ROOT / "bindings-wasm"
    if "polylock-wasm" in code:
        if not (wasm / "pkg/node/polylock_wasm_bg.wasm").exists():
            raise Missing("the WebAssembly package is not built: run bindings-wasm/build.sh")
        (tmp / "node_modules/polylock-wasm").symlink_to(wasm)


def is_esm(code):
    return bool(re.search(r"^\s*(import\s|export\s)", code, re.M)) or "await " in code and "require(" not in code


def execute(block, tmp, env):
    """Run one block in the fresh folder tmp; return (code, output)."""
    code, lang = block.code, block.lang
    if lang == "python":
        py = VENV / "bin/python"
        if not py.exists():
            raise Missing(f"the Python venv {VENV} is missing: run bindings-python/run-tests.sh")
        (tmp / "example.py").write_text(code)
        return run([str(py), "example.py"], tmp, env)
    if lang == "node":
        node_dir(tmp, code)
        name = "example.mjs" if block.tag == "mjs" or (block.tag != "cjs" and is_esm(code)) else "example.cjs"
        (tmp / name).write_text(code)
        return run(["node", name], tmp, env)
    if lang == "java":
        cp = once("java", java_classpath)
        m = re.search(r"public\s+(?:final\s+)?class\s+(\w+)", code)
        name = (m.group(1) if m else "Example") + ".java"
        (tmp / name).write_text(code)
        return run(["java", "-cp", cp, name], tmp, env)
    if lang == "go":
        if not (RELEASE / "libpolylock.a").exists():
            raise Missing("the C static library is not built: run bindings-c/run-tests.sh (used by bindings-go)")
        (tmp / "go.mod").write_text("module example.invalid/docs\n\ngo 1.22\n\n"
                                    "require example.invalid/polylock/bindings-go v0.0.0\n"
                                    f"replace example.invalid/polylock/bindings-go => {ROOT / 'bindings-go'}\n")
        (tmp / "main.go").write_text(code)
        genv = dict(env, CGO_ENABLED="1", CGO_LDFLAGS=f"-L{RELEASE}", CGO_CFLAGS=f"-I{ROOT / 'bindings-c/include'}",
                    GOFLAGS="-mod=mod", PATH=f"/usr/local/go/bin:{env['PATH']}")
        return run(["go", "run", "."], tmp, genv)
    if lang == "ruby":
        if not list(GEM_HOME.glob("gems/polylock-*")):
            raise Missing("the Ruby gem is not installed: run tests/conformance/drivers/ruby/build.sh "
                          "(packs and installs bindings-uniffi's gem)")
        (tmp / "example.rb").write_text(code)
        default = subprocess.run(["ruby", "-e", 'print Gem.default_path.join(":")'], stdout=subprocess.PIPE,
                                 text=True).stdout  # Debian's ruby-ffi, the gem's dependency
        return run(["ruby", "example.rb"], tmp, dict(env, GEM_HOME=str(GEM_HOME), GEM_PATH=f"{GEM_HOME}:{default}"))
    if lang in ("c", "cpp"):
        if not (RELEASE / "libpolylock.so").exists():
            raise Missing("the C library is not built: run bindings-c/run-tests.sh")
        src = tmp / ("example.c" if lang == "c" else "example.cpp")
        src.write_text(code)
        cc = ["cc", "-std=c11"] if lang == "c" else ["c++", "-std=c++17"]
        c, out = run(cc + [str(src), f"-I{ROOT / 'bindings-c/include'}", f"-L{RELEASE}", "-lpolylock",
                           f"-Wl,-rpath,{RELEASE}", "-pthread", "-o", "example"], tmp, env)
        if c:
            return c, out
        return run(["./example"], tmp, env)
    if lang == "rust":
        crate = once("rust", rust_crate)
        stem = f"ex_{abs(hash(block.where)) % 10**8}"
        (crate / "src/bin" / f"{stem}.rs").write_text(code)
        c, out = run(["cargo", "run", "--release", "--quiet", "--offline", "--manifest-path", str(crate / "Cargo.toml"),
                      "--bin", stem], tmp, dict(env, CARGO_TARGET_DIR=str(TARGET),
                                              PROTOC=env.get("PROTOC") or str(ROOT / "tools/vendored-protoc")), 900)
        (crate / "src/bin" / f"{stem}.rs").unlink()
        return c, out
    if lang == "shell":
        if not (RELEASE / "polylock").exists():
            raise Missing("the CLI is not built: run cargo build --release -p polylock-cli")
        script = code
        if block.tag == "console":  # `$ command` lines run; the rest is output
            script = "\n".join(l[2:] for l in code.splitlines() if l.startswith("$ "))
        (tmp / "example.sh").write_text("set -euo pipefail\n" + script)
        return run(["bash", "example.sh"], tmp, dict(env, PATH=f"{RELEASE}:{env['PATH']}"))
    raise AssertionError(lang)


def shares_something(block, env):
    """Whether the block must not run beside another: Rust blocks share one scratch crate and
    its cargo lock, Redis blocks one server (and its key names), shell blocks the fixed port of
    `polylock serve-metrics`."""
    return block.lang in ("rust", "shell") or "POLYLOCK_URL" in env


def main():
    only = sys.argv[1:]  # optional: path fragments to select files, or languages
    redis = os.environ.get("POLYLOCK_TEST_REDIS_URL")
    base = {k: v for k, v in os.environ.items() if not k.startswith("POLYLOCK_URL")}
    lock = threading.Lock()
    totals = {"passed": 0, "failed": 0}
    per_lang = {}

    def report(block, ok, line, out=None):
        with lock:
            totals["passed" if ok else "failed"] += 1
            if block.lang is not None:
                per_lang.setdefault(block.lang, [0, 0])[0 if ok else 1] += 1
            print(line)
            if out is not None:
                print("     | " + "\n     | ".join(out.strip().splitlines()[-25:]))
            sys.stdout.flush()

    def run_block(block, env):
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="polylock-example-") as tmp:
            try:
                code, out = execute(block, Path(tmp), env)
            except Missing as e:
                code, out = 1, f"not built: {e}"
        took = time.monotonic() - start
        if code == 0:
            report(block, True, f"ok   {block.where} [{block.lang}] {took:.1f}s")
        else:
            report(block, False, f"FAIL {block.where} [{block.lang}] exit {code} {took:.1f}s", out)

    serial, apart = [], []
    for path in sources():
        rel = str(path.relative_to(ROOT))
        for block in blocks(path):
            if only and not any(o in rel or o == block.lang for o in only):
                continue
            if block.lang is None:
                if block.tag not in DATA:
                    report(block, False, f"FAIL {block.where} [{block.tag or 'untagged'}] tag it with its language, or ```text")
                continue
            kept = [r for (f, text), r in KEPT.items() if rel == f and text in block.code]
            if kept:
                print(f"norun {block.where} [{block.lang}] {kept[0]}")
                continue
            m = NORUN.search(block.info) or NORUN.search(block.code)
            if m:
                reason = (m.group(1) or m.group(2) or "").strip()
                if not reason:
                    report(block, False, f"FAIL {block.where} [{block.lang}] norun without a reason (norun=\"why\")")
                else:
                    print(f"norun {block.where} [{block.lang}] {reason}")
                continue
            env = dict(base)
            needs = NEEDS.search(block.info) or NEEDS.search(block.code)
            if needs:
                if not redis:
                    report(block, False, f"FAIL {block.where} [{block.lang}] needs Redis: eval \"$(tests/services/services.sh env)\" "
                           "(tests/services/services.sh start redis)")
                    continue
                env["POLYLOCK_URL"] = redis
            (serial if shares_something(block, env) else apart).append((block, env))
    # The lane of blocks that share something first: it is the longest, and the other
    # worker(s) take the independent blocks beside it.
    with ThreadPoolExecutor(max_workers=max(1, JOBS)) as pool:
        futures = [pool.submit(lambda: [run_block(b, e) for b, e in serial])]
        futures += [pool.submit(run_block, b, e) for b, e in apart]
        for future in futures:
            future.result()
    print("per language: " + ", ".join(f"{k} {v[0]} passed/{v[1]} failed" for k, v in sorted(per_lang.items())))
    print(f"{totals['passed']} passed, {totals['failed']} failed")
    return 1 if totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
