"""Every shipped policy test file passes, and every shipped policy has one (CI runs `gpudra policy test`'s runner)."""

from __future__ import annotations

from pathlib import Path

import pytest

from policyengine import load_policies
from policyengine.testing import find_test_files, run_test_file

HERE = Path(__file__).resolve().parent
TEST_FILES = sorted(find_test_files([HERE]))


def test_the_shipped_policies_load_without_errors() -> None:
    policies = load_policies(HERE.parent)
    assert [str(e) for e in policies.errors] == []
    assert policies.names() == ["guardrails", "shared-gpu", "mig-single", "multi-gpu", "right-size", "whole-gpu"]


def test_every_shipped_policy_has_a_test_file() -> None:
    policies = load_policies(HERE.parent)
    assert {f.stem for f in TEST_FILES} >= set(policies.names())


@pytest.mark.parametrize("path", TEST_FILES, ids=[p.name for p in TEST_FILES])
def test_policy_test_file_passes(path: Path) -> None:
    result = run_test_file(path)
    report = "\n".join(
        [*result.errors, *(f"{c.name}:\n{chr(10).join(c.failures)}" for c in result.cases if not c.passed)]
    )
    assert result.passed, report
    assert result.cases, "a test file without cases checks nothing"
