"""The hand-written stubs of the native module cover everything it exports."""

from __future__ import annotations

import ast
from pathlib import Path

import polylock
from polylock import _polylock

STUB = Path(__file__).resolve().parent.parent / "python" / "polylock" / "_polylock.pyi"


def stub_names():
    tree = ast.parse(STUB.read_text())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = {
                item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = None
    return names


def public(names):
    return {name for name in names if not name.startswith("_") or name == "__version__"}


def test_every_native_name_has_a_stub():
    stubs = stub_names()
    for name in public(dir(_polylock)):
        assert name in stubs, f"_polylock.{name} is missing from {STUB.name}"
        value = getattr(_polylock, name)
        if isinstance(value, type):
            for member in public(vars(value)):
                assert member in stubs[name], f"_polylock.{name}.{member} is missing from {STUB.name}"


def test_package_ships_py_typed():
    assert (Path(polylock.__file__).parent / "py.typed").exists()
    assert (Path(polylock.__file__).parent / "_polylock.pyi").exists()
