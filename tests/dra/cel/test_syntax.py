"""Our parse tree (dra.cel.syntax) against lark's own: the same shape, tokens and positions, kept through pickle,
and built without recursion; a process whose trees all come from the cache never imports lark."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dra.cel import Environment
from dra.cel.parse import _parser, parse
from dra.cel.syntax import Token, Tree, from_lark

EXPRESSIONS = [
    "1 + 2 * 3",
    'device.attributes["gpu.nvidia.com"].productName.lowerAscii().startsWith("nvidia h100")',
    "object.spec.containers.all(c, !has(c.resources.limits) || c.resources.limits.size() >= 0)",
    "a.`quoted-field` in [1, 2u, 3.0, b'x', null, true]",
    "a.?b.orValue({?'k': v}) ? [?y] : {}",
    'cel.bind(x, \'in\' + """multi\nline""", x.size())\n  > 2',
]


def _lark_tree(text: str) -> Any:
    return _parser().parse(text)


def _shape(tree: Any) -> Any:
    """Rules, token types and texts and every position, from either kind of tree."""
    if hasattr(tree, "children"):
        meta = tree.meta
        where = None if meta.empty else (meta.line, meta.column, meta.end_line, meta.end_column, meta.start_pos)
        return (str(tree.data), where, [_shape(child) for child in tree.children])
    return (tree.type, str(tree), tree.line, tree.column, tree.end_column, tree.start_pos, tree.end_pos)


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_the_tree_is_lark_s_tree_copied(text: str) -> None:
    ours = parse(text)
    lark = _lark_tree(text)
    assert isinstance(ours, Tree)
    assert _shape(ours) == _shape(lark)
    assert ours.pretty() == lark.pretty()
    assert [str(t.data) for t in ours.iter_subtrees()] == [str(t.data) for t in lark.iter_subtrees()]
    pick = lambda v: isinstance(v, Token | str) and getattr(v, "type", "") != "IDENT"  # noqa: E731
    assert list(ours.scan_values(pick)) == list(lark.scan_values(pick))
    assert [id(t) for t in ours.find_data("primary")] == [id(t) for t in ours.iter_subtrees() if t.data == "primary"]


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_pickle_keeps_everything(text: str) -> None:
    tree = parse(text)
    again = pickle.loads(pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL))
    assert again == tree and _shape(again) == _shape(tree)
    token = next(tree.scan_values(lambda v: True))
    assert pickle.loads(pickle.dumps(token)).type == token.type


def test_tokens_compare_as_lark_s_do() -> None:
    a, b = Token("IDENT", "in"), Token("IN", "in")
    assert a == "in" and b == "in" and a != b and hash(a) == hash("in")
    assert a.value == "in" and repr(a) == "Token('IDENT', 'in')"


def test_a_deeply_nested_expression_is_copied_without_recursion() -> None:
    deep = "(" * 400 + "1" + ")" * 400
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        tree = from_lark(_lark_tree(deep))  # lark's tree is built without recursion too
    finally:
        sys.setrecursionlimit(limit)
    assert sum(1 for _ in tree.iter_subtrees()) > 400


def test_errors_still_point_at_the_place() -> None:
    with pytest.raises(Exception) as caught:
        Environment.admission().compile("object.spec +\n  ")
    assert "<input>:" in str(caught.value)
    with pytest.raises(Exception) as caught:
        Environment.admission().compile("1 + 'a'.size(1, 2)")
    assert "<input>:1:" in str(caught.value)


_PROBE = """
import json, sys
from dra.cel import Environment
env = Environment.admission()
values = [env.evaluate(e) for e in json.loads(sys.argv[1])]
print(json.dumps({"lark": "lark" in sys.modules, "values": values}))
"""


def test_a_process_whose_trees_are_all_cached_never_imports_lark(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GPUDRA_NO_PARSER_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    texts = json.dumps(["1 + 2 * 3", "'ab'.size() == 2", "[1, 2].map(x, x * 2)"])

    def run() -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, texts], capture_output=True, text=True, env=env, check=True
        )
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    first, second = run(), run()
    assert first["lark"] is True and second["lark"] is False
    assert first["values"] == second["values"] == [7, True, [2, 4]]
