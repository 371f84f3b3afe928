"""A policy set that translates nothing (no claim policy that could ever apply) loads without an error, so
`gpudra policy lint` says so: a warning, or an error with `--strict`."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpudra.cli import app
from policyengine import load_policies, shipped_policies_dir, translates_nothing

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_the_shipped_set_translates_and_lints_without_a_warning() -> None:
    assert translates_nothing(load_policies(shipped_policies_dir())) is None
    result = runner.invoke(app, ["policy", "lint", "--strict"])
    assert result.exit_code == 0 and result.stderr == ""


def test_a_set_without_claims_is_a_lint_warning_and_a_strict_error(tmp_path: Path) -> None:
    (tmp_path / "guardrails.yaml").write_text((ROOT / "policies" / "guardrails.yaml").read_text())
    result = runner.invoke(app, ["policy", "lint", str(tmp_path)])
    assert result.exit_code == 0 and result.stderr.startswith("warning: no policy has a claim")
    strict = runner.invoke(app, ["policy", "lint", "--strict", str(tmp_path)])
    assert strict.exit_code == 1 and strict.stderr.startswith("error: no policy has a claim")


def test_claims_behind_an_always_false_condition_translate_nothing(tmp_path: Path) -> None:
    text = (ROOT / "policies" / "whole-gpu.yaml").read_text().replace("expression: gpu.legacy", "expression: 1 > 2")
    (tmp_path / "whole-gpu.yaml").write_text(text)
    reason = translates_nothing(load_policies(tmp_path))
    assert reason is not None and "always false" in reason and "whole-gpu" in reason
    (tmp_path / "off.yaml").write_text(
        (ROOT / "policies" / "whole-gpu.yaml")
        .read_text()
        .replace("name: whole-gpu", "name: later")
        .replace("mode: enforce", "mode: audit")
    )
    assert translates_nothing(load_policies(tmp_path)) is None  # a namespace label can make it enforce
