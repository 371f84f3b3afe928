"""dra.yamlio, the one strict YAML reader: alias bombs, recursive aliases and oversized inputs are refused with an
error naming the file and line; ordinary anchors still read; every YAML reader of gpudra goes through it."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dra.documents import parse_yaml, read_documents
from dra.errors import InputError
from dra.yamlio import MAX_ALIAS_NODES, load_yaml, read_source

# 9 levels of 9 aliases: about 387 million strings once expanded, from 342 bytes (the bomb was 512).
BOMB = (
    "\n".join(
        [
            'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
            *(f"{b}: &{b} [{','.join(['*' + a] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi", strict=True)),
        ]
    )
    + "\n"
)


def test_the_bomb_is_small() -> None:
    assert len(BOMB.encode()) <= 512


def test_an_alias_bomb_is_refused_naming_the_limit_and_the_line() -> None:
    with pytest.raises(InputError) as caught:
        read_documents(BOMB)
    assert f"aliases expand to more than {MAX_ALIAS_NODES} nodes" in caught.value.message
    assert caught.value.source == "<string>" and caught.value.line == 1


def test_an_alias_bomb_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    with pytest.raises(InputError) as caught:
        parse_yaml(path)
    assert caught.value.source == str(path) and "aliases expand" in caught.value.message


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(InputError) as caught:
        parse_yaml("a: &a [1, *a]\n")
    assert "refers to itself" in caught.value.message and caught.value.line == 1


def test_anchors_for_shared_snippets_still_read() -> None:
    text = "base: &base {cpu: 1, memory: 1Gi}\none: *base\ntwo: *base\nmerged: {<<: *base, gpu: 1}\n"
    (data,) = parse_yaml(text)
    assert data["one"] == data["two"] == {"cpu": 1, "memory": "1Gi"}
    assert data["merged"] == {"cpu": 1, "memory": "1Gi", "gpu": 1}


def test_aliases_up_to_the_limit_read_and_one_node_more_is_refused() -> None:
    # An anchored list of n scalars is n + 1 nodes; each alias to it adds that many.
    per_alias = 100
    items = ", ".join(["x"] * (per_alias - 1))
    fits = MAX_ALIAS_NODES // per_alias
    text = f"a: &a [{items}]\n" + "".join(f"k{i}: *a\n" for i in range(fits))
    (data,) = parse_yaml(text)
    assert len(data) == fits + 1
    with pytest.raises(InputError, match="aliases expand"):
        parse_yaml(text + "one_more: [*a]\n" + "extra: *a\n")


def test_a_duplicate_key_names_the_key_and_its_line() -> None:
    with pytest.raises(InputError) as caught:
        parse_yaml("spec:\n  mode: enforce\n  priority: 1\n  mode: audit\n")
    assert "duplicate key 'mode'" in caught.value.message and caught.value.line == 4


def test_a_file_above_the_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("a: " + "x" * 5000 + "\n")
    with pytest.raises(InputError) as caught:
        read_source(path, max_bytes=4096)
    assert "more than the 4096" in caught.value.message and caught.value.source == str(path)
    assert read_source(path, max_bytes=8192)[0].startswith("a: x")


def test_reading_a_small_file_costs_its_size_not_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "small.yaml"
    path.write_text("a: 1\n" * 100)
    tracemalloc.start()
    try:
        text, _ = read_source(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text == "a: 1\n" * 100 and peak < 64 * 1024  # a read of the limit (64 MiB) would allocate all of it


def test_text_above_the_cap_is_refused() -> None:
    with pytest.raises(InputError, match="more than the 100 allowed"):
        list(load_yaml("a: " + "x" * 200, max_bytes=100))


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(st.characters(codec="ascii"), max_size=12),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=4),
        max_leaves=20,
    )
)
def test_documents_without_aliases_read_as_pyyaml_reads_them(data: object) -> None:
    text = yaml.safe_dump(data)
    assert [value for value, _node in load_yaml(text)] == [yaml.safe_load(text)]
