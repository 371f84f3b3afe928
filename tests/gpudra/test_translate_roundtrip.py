"""`gpudra translate -R` edits a rewritten document in place (issue 25, item 6): only the changed lines change,
comments, quoting, block scalars and each sequence's indentation stay, a second run changes nothing, and files
without GPU requests are never touched."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dra.yamlio import load_yaml
from gpudra.commands.translate import translate_directory
from manifest_translation.tree.edits import edited_text, same_data

FIXTURE = Path(__file__).parent / "fixtures" / "roundtrip" / "production-stack-vllm.yaml"
_COMMENT = re.compile(r"(?:^|\s)(#.*)$")


def _comments(text: str) -> Counter[str]:
    return Counter(m.group(1).strip() for line in text.splitlines() if (m := _COMMENT.search(line)))


def _changed_lines(before: str, after: str) -> list[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def _data(text: str) -> list[Any]:
    return [d for d, _ in load_yaml(text) if d is not None]


def test_production_stack_deployment_keeps_its_comments_and_changes_few_lines(tmp_path: Path) -> None:
    original = FIXTURE.read_text()
    (tmp_path / "vllm.yaml").write_text(original)
    (tmp_path / "service.yaml").write_text("# untouched\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    service_before = (tmp_path / "service.yaml").read_bytes()

    report = translate_directory(tmp_path)
    assert report.code == 0, report.stderr
    after = (tmp_path / "vllm.yaml").read_text()

    before_comments, after_comments = _comments(original), _comments(after)
    kept = sum((before_comments & after_comments).values())
    assert kept / sum(before_comments.values()) >= 0.95
    changed = _changed_lines(original, after)
    assert 0 < len(changed) <= 40, changed
    # the GPU request went (its comment with its line), the claim came, nothing else moved
    assert all("nvidia.com/gpu" in line or "limits:" in line for line in changed if line.startswith("-")), changed
    assert "nvidia.com/gpu.product" in after  # the node selector is not a request
    (deployment,) = _data(after)
    spec = deployment["spec"]["template"]["spec"]
    assert spec["resourceClaims"][0]["resourceClaimTemplateName"].startswith("vllm-llama3-deployment-vllm-")
    assert spec["containers"][0]["resources"]["claims"][0]["name"] == spec["resourceClaims"][0]["name"]
    # block scalars stay block scalars, line by line; quoting and the chart's mixed sequence styles stay
    assert "          - |\n            set -eu\n            # fetch the weights once into the PVC\n" in after
    assert "            value: >\n              folded text that a reader of the manifest\n" in after
    assert '          - "--enable-chunked-prefill"\n' in after and '        - name: "vllm"\n' in after
    assert (tmp_path / "service.yaml").read_bytes() == service_before

    again = translate_directory(tmp_path)
    assert again.code == 0 and (tmp_path / "vllm.yaml").read_text() == after


def test_a_multi_document_file_edits_only_the_gpu_document(tmp_path: Path) -> None:
    config = "# settings\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c  # the name\ndata:\n  a: '1'\n"
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  template:\n    spec:\n"
        "      restartPolicy: Never\n      containers:\n      # the only container\n      - name: main\n"
        "        image: cuda:12\n        resources:\n          limits:\n            cpu: 2  # cores\n"
        "            nvidia.com/gpu: 1\n"
    )
    (tmp_path / "stack.yaml").write_text(config + "---\n" + job)
    assert translate_directory(tmp_path).code == 0
    after = (tmp_path / "stack.yaml").read_text()
    assert after.startswith(config + "---\n")
    assert "      # the only container\n      - name: main\n" in after and "cpu: 2  # cores\n" in after
    assert len(_changed_lines(config + "---\n" + job, after)) <= 12  # 4 of them the template's new annotations
    assert "      resourceClaims:\n      - name: gpudra\n" in after  # as its neighbour `containers:` is indented


def _edit(text: str, new: object) -> str | None:
    ((old, node),) = list(load_yaml(text))
    return edited_text(text, node, old, new)


@pytest.mark.parametrize(
    ("text", "new", "expected"),
    [
        # a changed scalar: only its line
        ("a: 1  # one\nb: 2\n", {"a": 3, "b": 2}, "a: 3  # one\nb: 2\n"),
        # a key added after its sibling, in the mapping's indentation
        (
            "m:\n    x: 1\n    # end\nz: 0\n",
            {"m": {"x": 1, "y": [1]}, "z": 0},
            "m:\n    x: 1\n    y:\n    - 1\n    # end\nz: 0\n",
        ),
        # a flow mapping is written again as one key, in flow style, the rest stays
        ("# top\na: {b: 1}\nc: 2  # two\n", {"a": {"b": 2}, "c": 2}, "# top\na: {b: 2}\nc: 2  # two\n"),
        ("a: {b: 1}\n", {"a": {"b": {"c": [1]}}}, "a: {b: {c: [1]}}\n"),
        ("a: []\n", {"a": None, "x": None}, "a: null\nx: null\n"),
        # the first key of an item cannot lose its line alone: the item is written again
        ("l:\n  - a: 1\n    b: 2\n  - a: 3\n", {"l": [{"b": 2}, {"a": 3}]}, "l:\n  - b: 2\n  - a: 3\n"),
        # items removed and inserted in a list of a different length
        ("l:\n- 1\n- 2  # two\n- 3\n", {"l": [1, 3, 4, 5]}, "l:\n- 1\n- 3\n- 4\n- 5\n"),
        # CRLF line ends stay
        ("a:\r\n  b: 1\r\n", {"a": {"b": 1, "c": "x"}}, "a:\r\n  b: 1\r\n  c: x\r\n"),
        # no line break at the end
        ("a: 1", {"a": 1, "b": 2}, "a: 1\nb: 2"),
        # a value a YAML 1.1 reader takes for a boolean is quoted
        ("a: 1\n", {"a": "on"}, "a: 'on'\n"),
    ],
)
def test_edited_text(text: str, new: object, expected: str) -> None:
    assert _edit(text, new) == expected
    assert same_data(_data(expected)[0], new)


def test_an_edit_the_strict_reader_would_read_differently_is_refused() -> None:
    # an anchored mapping shared by an alias: editing one place would change both, so no local edit is made
    text = "a: &x\n  k: 1\nb: *x\n"
    assert _edit(text, {"a": {"k": 2}, "b": {"k": 1}}) is None


def test_same_data_tells_types_apart() -> None:
    assert same_data({"a": [1]}, {"a": [1]})
    assert not same_data({"a": 1}, {"a": True}) and not same_data({"a": 1}, {"a": 1.0})
    assert same_data(float("nan"), float("nan"))


def test_strict_input_checks_still_apply(tmp_path: Path) -> None:
    gpu = "      containers: [{name: a, image: a, resources: {limits: {nvidia.com/gpu: 1}}}]\n"
    duplicate = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  name: k\nspec:\n  template:\n"
    duplicate += "    spec:\n" + gpu
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(6)
    )
    (tmp_path / "dup.yaml").write_text(duplicate)
    (tmp_path / "bomb.yaml").write_text(bomb)
    outcome = translate_directory(tmp_path)
    assert outcome.code == 2
    assert "duplicate key 'name'" in outcome.stderr and "aliases expand to more than" in outcome.stderr
    assert (tmp_path / "dup.yaml").read_text() == duplicate and (tmp_path / "bomb.yaml").read_text() == bomb


_LEAF = st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab: #-\n'\"", max_size=6)
_TREE = st.recursive(
    _LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", max_size=3), inner, max_size=3),
    max_leaves=12,
)  # fmt: skip


def _mutated(data: st.DataObject, value: Any, depth: int = 0) -> Any:
    """`value` with random keys and items removed, added and changed, at any depth."""
    if isinstance(value, dict) and value and depth < 4:
        out = {}
        for key, item in value.items():
            choice = data.draw(st.sampled_from(["keep", "drop", "change", "descend"]))
            if choice != "drop":
                out[key] = data.draw(_TREE) if choice == "change" else _mutated(data, item, depth + 1)
        if data.draw(st.booleans()):
            out[data.draw(st.text("xyz", min_size=1, max_size=3))] = data.draw(_TREE)
        return out
    if isinstance(value, list) and value and depth < 4:
        items = [_mutated(data, item, depth + 1) for item in value if data.draw(st.booleans())]
        return items + data.draw(st.lists(_TREE, max_size=2))
    return data.draw(_TREE) if data.draw(st.booleans()) else value


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text("abc", min_size=1, max_size=3), _TREE, min_size=1, max_size=4), st.data(), st.booleans())
def test_any_edit_of_a_block_document_is_made_in_place(
    old: dict[str, Any], data: st.DataObject, indented: bool
) -> None:
    class Dumper(yaml.SafeDumper):
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            return super().increase_indent(flow, indentless and not indented)

    text = "# head\n" + yaml.dump(old, Dumper=Dumper, sort_keys=False, default_flow_style=False)
    new = _mutated(data, old)
    edited = _edit(text, new)
    if new:  # a document that became empty cannot keep a line; anything else is edited where it changed
        assert edited is not None and edited.startswith("# head\n")
        assert same_data(_data(edited)[0], new)
        if same_data(old, new):
            assert edited == text
