"""Loading policy files: schema and CEL errors name file:line:column and the expression; bad files stay isolated."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from policyengine import API_VERSION, load_policies, load_policy_text

GOOD = """\
apiVersion: gpudra.io/v1alpha1
kind: GPUClaimPolicy
metadata:
  name: {name}
spec:
  priority: {priority}
  matchConditions:
  - name: legacy
    expression: gpu.legacy
  claim:
    deviceClassName: gpu.nvidia.com
    count:
      expression: legacy['nvidia.com/gpu']
"""


def _policy(name: str = "p", priority: int = 0) -> str:
    return GOOD.format(name=name, priority=priority)


def _errors(text: str) -> list[str]:
    policies, errors = load_policy_text(textwrap.dedent(text), "pol.yaml")
    assert policies == []
    return [str(e) for e in errors]


def test_a_good_policy_compiles_every_expression() -> None:
    policies, errors = load_policy_text(_policy(), "pol.yaml")
    assert errors == []
    [policy] = policies
    assert policy.name == "p" and policy.mode == "enforce" and policy.failure_policy == "Fail"
    assert [name for name, _ in policy.match_conditions] == ["legacy"]
    assert policy.claim is not None
    assert policy.claim.tree["deviceClassName"] == "gpu.nvidia.com"
    count = policy.claim.tree["count"]
    assert count.source == "legacy['nvidia.com/gpu']" and (count.line, count.column) == (13, 19)


def test_cel_compile_error_points_into_a_single_line_expression() -> None:
    [error] = _errors(_policy().replace("expression: gpu.legacy", "expression: gpu.legacy && nope"))
    # "nope" starts at column 31 of line 9: `    expression: gpu.legacy && nope`
    assert error.startswith("pol.yaml:9:31: spec.matchConditions[0].expression: CEL compile error")
    assert "undeclared reference to 'nope'" in error
    assert error.endswith("expression: gpu.legacy && nope")


def test_cel_compile_error_points_into_a_folded_block_expression() -> None:
    text = _policy().replace(
        "    expression: gpu.legacy\n",
        "    expression: >-\n      gpu.legacy &&\n        gpu.total > 0 && missing\n",
    )
    [error] = _errors(text)
    assert error.startswith("pol.yaml:11:"), error
    assert "undeclared reference to 'missing'" in error


def test_a_quoted_expression_counts_the_quote() -> None:
    text = _policy().replace("expression: gpu.legacy", 'expression: "gpu.legacy || bad"')
    [error] = _errors(text)
    assert error.startswith("pol.yaml:9:32:"), error


def test_an_unknown_field_is_named_with_its_position() -> None:
    [error] = _errors(_policy().replace("    deviceClassName:", "    deviceClasName: x\n    deviceClassName:"))
    assert error.startswith("pol.yaml:11:"), error
    assert "spec.claim.deviceClasName" in error and "Extra inputs are not permitted" in error


def test_claim_needs_exactly_one_of_device_class_and_first_available() -> None:
    [error] = _errors(_policy().replace("    deviceClassName: gpu.nvidia.com\n", ""))
    assert "exactly one of deviceClassName" in error and error.startswith("pol.yaml:11:5: spec.claim:")


def test_a_literal_device_selector_is_compiled_in_the_selector_environment() -> None:
    text = _policy().replace(
        "    deviceClassName: gpu.nvidia.com\n",
        "    deviceClassName: gpu.nvidia.com\n    selectors:\n    - device.driver == 'x' &&\n    - object.x\n",
    )
    errors = _errors(text)
    assert len(errors) == 2
    assert errors[0].startswith("pol.yaml:13:") and "device selector does not compile" in errors[0]
    assert errors[1].startswith("pol.yaml:14:") and "undeclared reference to 'object" in errors[1]


def test_wrong_kind_and_bad_yaml_are_errors_not_crashes() -> None:
    [kind] = _errors("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n")
    assert f"expected apiVersion {API_VERSION} and kind GPUClaimPolicy (got v1/Pod)" in kind
    [bad] = _errors("apiVersion: [\n")
    assert bad.startswith("pol.yaml:2:") and "invalid YAML" in bad


def test_names_are_checked() -> None:
    text = _policy().replace("  - name: legacy\n", "  - name: has legacy\n")
    text = text.replace("  claim:\n", "  variables:\n  - name: 1x\n    expression: '1'\n  claim:\n")
    errors = _errors(text)
    assert any("match condition name must be a qualified name (got 'has legacy')" in e for e in errors)
    assert any("variable name must be a C identifier" in e for e in errors)


def test_a_broken_file_does_not_take_the_others_down(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(_policy("a", 1))
    (tmp_path / "b.yaml").write_text(_policy("b").replace("gpu.legacy", "gpu.legacy &&"))
    (tmp_path / "c.yml").write_text(_policy("c", 5) + "---\n" + _policy("a", 9))
    (tmp_path / "notes.txt").write_text("not a policy")
    policies = load_policies(tmp_path)
    assert policies.names() == ["c", "a"]
    messages = [str(e) for e in policies.errors]
    assert len(messages) == 2
    assert messages[0].startswith(f"{tmp_path / 'b.yaml'}:9:")
    assert "duplicate policy name 'a'" in messages[1] and messages[1].startswith(f"{tmp_path / 'c.yml'}:15")


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    policies = load_policies(tmp_path / "nope.yaml")
    assert policies.policies == ()
    assert "cannot read policy file" in str(policies.errors[0])


@pytest.mark.parametrize("field", ["validations", "warnings"])
def test_message_expressions_are_compiled_up_front(field: str) -> None:
    text = _policy() + f"  {field}:\n  - expression: 'true'\n    messageExpression: \"'a' +\"\n"
    [error] = _errors(text)
    assert f"spec.{field}[0].messageExpression" in error and error.startswith("pol.yaml:16:")


def test_the_shipped_directory_is_the_default() -> None:
    policies = load_policies()
    assert policies.errors == ()
    assert policies.names() == ["guardrails", "shared-gpu", "mig-single", "multi-gpu", "right-size", "whole-gpu"]


def test_variable_references_are_checked_at_load_time() -> None:
    text = _policy().replace(
        "  claim:\n",
        "  variables:\n  - {name: a, expression: variables.b}\n  - {name: b, expression: '1'}\n  claim:\n",
    )
    text = text.replace("expression: gpu.legacy", "expression: gpu.legacy && variables.a == 1")
    text = text.replace("expression: legacy['nvidia.com/gpu']", "expression: variables.zz")
    errors = _errors(text)
    assert len(errors) == 3
    assert errors[0].startswith("pol.yaml:9:31:") and "matchConditions run before variables" in errors[0]
    assert "variables.b is defined later" in errors[1]
    assert "no variable named 'zz' (visible here: a, b)" in errors[2]


def test_positions_inside_a_literal_block_scalar() -> None:
    from policyengine._yaml import load_located

    [doc] = load_located("a:\n  b: |\n    first line\n      second\n  c: 1\n")
    positions = doc.positions
    assert positions.at(("a", "b")) == (2, 6)
    assert positions.offset(("a", "b"), 0) == (3, 5)
    assert positions.offset(("a", "b"), len("first line\n") + 2) == (4, 7)
    assert positions.at(("a", "c")) == (5, 6)
    assert positions.at(("a", "missing", 3)) == (2, 3), "an unknown path falls back to its nearest parent"
