"""Every third-party module the packages import is a declared dependency of the distribution (or of an extra)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        specs += extra
    return {re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in specs}


def _packages() -> list[str]:
    found = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    return [name.rstrip("*") for name in found]


def test_every_third_party_import_is_declared() -> None:
    ours = set(_packages())
    distributions = packages_distributions()
    declared = _declared()
    missing: dict[str, str] = {}
    for package in ours:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in ours or top == "__future__":
                        continue
                    owners = {d.lower().replace("_", "-") for d in distributions.get(top, [])}
                    if not owners & declared:
                        missing[top] = str(path.relative_to(ROOT))
    assert missing == {}, f"imported but not declared in pyproject.toml: {missing}"
