"""The structure a maintainer keeps: DESIGN.md "Layers", checked on every run.

- import-linter's layers contract in pyproject.toml (a module imports only from its layer or below);
- no import cycle between the project's modules;
- no function-level import of a project module (such imports hide cycles and layer breaks).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agent", "runtime", "workflows", "hooks", "activities", "core")


def test_layers_contract_is_kept() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    run = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 kept, 0 broken" in run.stdout


def test_no_import_cycles_between_modules() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    cycles = sorted(
        {
            tuple(sorted((module, imported)))
            for module in graph.modules
            for imported in graph.find_modules_directly_imported_by(module)
            if graph.chain_exists(imported, module)
        }
    )
    assert cycles == []


def _function_level_project_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in (*PACKAGES, "worker"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} from {node.module}")
            elif isinstance(node, ast.Import):
                found += [
                    f"{path.relative_to(ROOT)}:{node.lineno} import {alias.name}"
                    for alias in node.names
                    if alias.name.split(".")[0] in (*PACKAGES, "worker")
                ]
    return found


def test_no_function_level_imports_of_project_modules() -> None:
    sources = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")] + [ROOT / "worker.py"]
    found = [line for path in sources for line in _function_level_project_imports(path)]
    assert found == []


def test_a_broken_layer_is_reported(tmp_path: Path) -> None:
    """The contract can fail: a core module importing the facade breaks it.

    The break is made in a copy of the packages and pyproject.toml, never in the source tree;
    lint-imports puts its working directory first on ``sys.path``, so it reads the copy."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "core" / "_layer_probe.py").write_text("import agent  # a layer break\n")
    lint = Path(sys.executable).parent / "lint-imports"
    run = subprocess.run([str(lint), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "core._layer_probe -> agent" in run.stdout, run.stdout
