"""Issue 38.7: no function in the CLI package takes more than 8 parameters; a command's options are one dataclass
(`gpudra.signature`), not a parameter each."""

from __future__ import annotations

import ast
from pathlib import Path

import gpudra

LIMIT = 8
PACKAGE = Path(gpudra.__file__).parent


def _count(args: ast.arguments) -> int:
    return (
        len(args.posonlyargs)
        + len(args.args)
        + len(args.kwonlyargs)
        + (args.vararg is not None)
        + (args.kwarg is not None)
    )


def over_limit(source: str, name: str) -> list[str]:
    """`name:line function(n)` for every function or lambda of `source` with more than LIMIT parameters."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and _count(node.args) > LIMIT:
            label = node.name if not isinstance(node, ast.Lambda) else "<lambda>"
            found.append(f"{name}:{node.lineno} {label}({_count(node.args)})")
    return found


def test_the_walk_counts_every_kind_of_parameter() -> None:
    source = "def f(a, /, b, *c, d, **e): pass\nasync def g(a, b, c, d, e, f, g, h, i): pass\nh = lambda *a, **k: 0\n"
    assert over_limit(source, "x.py") == ["x.py:2 g(9)"]
    assert _count(ast.parse(source).body[0].args) == 5  # type: ignore[attr-defined]


def test_no_function_in_gpudra_takes_more_than_8_parameters() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 20 and PACKAGE / "commands" / "simulate.py" in files
    offenders = [hit for path in files for hit in over_limit(path.read_text(), str(path.relative_to(PACKAGE)))]
    assert offenders == []
