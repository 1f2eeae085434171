"""The layering contract: ``core`` (the physics) never imports Qt, OpenGL, pyqtgraph or the studio.

Checked three ways, so that a misconfigured tool cannot hide a violation: import-linter's contract in
pyproject.toml, a scan of every import statement under core/ with ``ast``, and a fresh interpreter that imports
every core module and then looks at what got loaded.
"""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core"
FORBIDDEN = {"PySide6", "PySide2", "PyQt5", "PyQt6", "shiboken6", "shiboken2", "pyqtgraph", "OpenGL", "studio"}


def _lint_imports() -> str:
    script = Path(sys.executable).with_name("lint-imports")
    found = str(script) if script.exists() else shutil.which("lint-imports")
    if found is None:
        pytest.fail("lint-imports (import-linter) is not installed: pip install -e '.[test]'")
    return found


def test_import_linter_contract_holds():
    result = subprocess.run([_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert " 0 broken" in report and "KEPT" in report, report   # the contract really ran


def _imported_modules(tree: ast.AST):
    """(line, absolute top-level module) of every import, and of import_module/__import__ calls on literals."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in ("import_module", "__import__"):
                yield node.lineno, node.args[0].value.split(".")[0]


def test_core_sources_import_nothing_forbidden():
    files = sorted(CORE.rglob("*.py"))
    assert files, f"no Python files under {CORE}"
    violations = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        violations += [f"{path.relative_to(ROOT)}:{line}: imports {name}"
                       for line, name in _imported_modules(tree) if name in FORBIDDEN]
    assert not violations, "core must not import the GUI stack:\n" + "\n".join(violations)


def test_the_scanner_sees_forbidden_imports():
    source = textwrap.dedent("""
        import os, PySide6.QtCore
        from pyqtgraph import opengl
        from .model import Model
        def f():
            import studio.qt.viewport.viewport
            return importlib.import_module("OpenGL.GL")
    """)
    names = {name for _, name in _imported_modules(ast.parse(source))}
    assert {"PySide6", "pyqtgraph", "studio", "OpenGL"} <= names
    assert "model" not in names


def test_importing_core_loads_no_gui_module():
    code = textwrap.dedent(f"""
        import importlib, pkgutil, sys
        import core
        for info in pkgutil.walk_packages(core.__path__, "core."):
            importlib.import_module(info.name)
        print(sorted({{m.split(".")[0] for m in sys.modules}} & set({sorted(FORBIDDEN)!r})))
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout
