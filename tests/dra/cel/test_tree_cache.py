"""The parse-tree cache kept between processes (dra.cel.parse.TreeCache): same trees, bounded, private, robust."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from dra.cel.parse import TreeCache, parse

EXPRESSIONS = [
    "1 + 2 * 3",
    'device.attributes["gpu.nvidia.com"].productName.lowerAscii().startsWith("nvidia h100")',
    "object.spec.containers.all(c, !has(c.resources.limits) || c.resources.limits.size() >= 0)",
    "a.`quoted-field` in [1, 2u, 3.0, b'x', null, true]",
]

_PROBE = """
import json, sys
from dra.cel.parse import parse, tree_cache
trees = [parse(e) for e in json.loads(sys.argv[1])]
print(json.dumps({"hits": tree_cache().hits, "trees": [t.pretty() for t in trees],
                  "lines": [[t.meta.line, t.meta.column, t.meta.end_column] for t in trees]}))
"""


def _run(home: Path, *, disabled: bool = False) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "GPUDRA_NO_PARSER_CACHE"}
    env["XDG_CACHE_HOME"] = str(home)
    if disabled:
        env["GPUDRA_NO_PARSER_CACHE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(EXPRESSIONS)], capture_output=True, text=True, env=env, check=True
    )
    result = json.loads(done.stdout)
    assert isinstance(result, dict)
    return result


def _files(home: Path) -> list[Path]:
    return sorted((home / "gpudra").glob("cel-trees-*.pickle"))


def test_a_second_process_reads_the_same_trees_from_the_cache(tmp_path: Path) -> None:
    first = _run(tmp_path)
    assert first["hits"] == 0
    [written] = _files(tmp_path)
    assert stat.S_IMODE(written.stat().st_mode) & 0o077 == 0  # read with pickle: the owner's alone
    second = _run(tmp_path)
    assert second["hits"] == len(EXPRESSIONS)
    assert second["trees"] == first["trees"] == [parse(e).pretty() for e in EXPRESSIONS]
    assert second["lines"] == first["lines"]  # positions kept: error messages point at the same place


def test_a_broken_cache_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    _run(tmp_path)
    [written] = _files(tmp_path)
    written.write_bytes(b"\x80\x05not a pickle at all")
    assert _run(tmp_path)["hits"] == 0
    assert _run(tmp_path)["hits"] == len(EXPRESSIONS)


def test_no_file_when_the_cache_is_turned_off_or_the_directory_is_shared(tmp_path: Path) -> None:
    assert _run(tmp_path, disabled=True)["hits"] == 0
    assert _files(tmp_path) == []
    shared = tmp_path / "shared"
    (shared / "gpudra").mkdir(parents=True)
    (shared / "gpudra").chmod(0o777)
    _run(shared)
    assert _files(shared) == []


def test_entries_are_bounded_and_long_texts_not_kept(tmp_path: Path) -> None:
    cache = TreeCache(tmp_path / "trees.pickle")
    tree = parse("1")
    cache.put("x" * (TreeCache.MAX_TEXT + 1), tree)
    assert cache.get("x" * (TreeCache.MAX_TEXT + 1)) is None
    for i in range(TreeCache.MAX_ENTRIES + 1):
        cache.put(str(i), tree)
    cache.save()
    again = TreeCache(tmp_path / "trees.pickle")
    assert again.get("0") is None  # the oldest half went when the bound was reached
    assert again.get(str(TreeCache.MAX_ENTRIES)) == tree
    assert again.hits == 1


def test_a_tree_too_deep_to_pickle_is_parsed_every_time(tmp_path: Path) -> None:
    cache = TreeCache(tmp_path / "trees.pickle")
    body = "size(a60) > 0"
    for i in range(60, 0, -1):
        body = f"cel.bind(a{i}, a{i - 1} + a{i - 1}, {body})"
    deep = parse(body)
    cache.put(body, deep)  # RecursionError inside pickle: not kept, not raised
    assert cache.get(body) is None
