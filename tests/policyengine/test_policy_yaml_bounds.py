"""Policy files are read by dra.yamlio's strict reader: an alias bomb, a file above a ConfigMap's size and a
duplicate key are load errors naming the file (and the key and line), so `gpudra policy lint` fails on them."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from gpudra.cli import app
from policyengine import load_policies
from policyengine.loader import MAX_POLICY_BYTES
from tests.dra.test_yamlio import BOMB

ROOT = Path(__file__).resolve().parents[2]
WHOLE_GPU = (ROOT / "policies" / "whole-gpu.yaml").read_text()
runner = CliRunner()


def test_an_alias_bomb_in_a_policy_file_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(WHOLE_GPU + "---\n" + BOMB)
    policies = load_policies(tmp_path)
    assert len(policies.errors) == 1 and not policies.policies
    error = policies.errors[0]
    assert error.file == str(tmp_path / "bomb.yaml") and "aliases expand to more than" in str(error)


def test_a_52_mb_policy_file_is_refused_by_its_size(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    padding = "# " + "x" * 1022 + "\n"
    with big.open("w") as handle:
        handle.write(WHOLE_GPU)
        for _ in range(52 * 1024):
            handle.write(padding)
    assert big.stat().st_size > 52 * 2**20
    policies = load_policies(tmp_path)
    assert not policies.policies and len(policies.errors) == 1
    assert f"more than the {MAX_POLICY_BYTES}" in str(policies.errors[0])


def test_a_duplicate_key_fails_lint_naming_the_key_and_line(tmp_path: Path) -> None:
    policy = tmp_path / "dup.yaml"
    policy.write_text(WHOLE_GPU.replace("  mode: enforce\n", "  mode: enforce\n  mode: audit\n", 1))
    line = next(i for i, text in enumerate(policy.read_text().splitlines(), 1) if text == "  mode: audit")
    result = runner.invoke(app, ["policy", "lint", str(policy)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {policy}:{line}:") and "duplicate key 'mode'" in result.stderr


def test_translate_refuses_an_alias_bomb_naming_the_file(tmp_path: Path) -> None:
    pod = tmp_path / "bomb.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        + BOMB.replace("\n", "\n  ").replace("a: &a", "x:\n  a: &a", 1)
    )
    result = runner.invoke(app, ["translate", str(pod)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {pod}:") and "aliases expand to more than" in result.stderr


def test_a_file_of_the_limit_loads_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    padding = MAX_POLICY_BYTES - len(WHOLE_GPU.encode())
    (tmp_path / "full.yaml").write_text(WHOLE_GPU + "#" * (padding - 1) + "\n")
    assert (tmp_path / "full.yaml").stat().st_size == MAX_POLICY_BYTES
    loaded = load_policies(tmp_path)
    assert loaded.names() == ["whole-gpu"] and not loaded.errors
    (tmp_path / "full.yaml").write_text(WHOLE_GPU + "#" * padding + "\n")
    refused = load_policies(tmp_path)
    assert not refused.policies and f"more than the {MAX_POLICY_BYTES}" in str(refused.errors[0])


def test_the_policy_file_size_is_one_number_in_code_and_docs() -> None:
    from webhook.policy_store import DIGEST_READ_LIMIT

    text = (ROOT / "docs" / "webhook-reliability.md").read_text()
    [row] = [line for line in text.splitlines() if line.startswith("| policy files")]
    units = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
    sizes = [int(number) * units[unit] for number, unit in re.findall(r"([0-9]+) (KiB|MiB|GiB)", row)]
    assert sizes == [MAX_POLICY_BYTES] and "per policy file (`MAX_POLICY_BYTES`" in row
    assert DIGEST_READ_LIMIT == MAX_POLICY_BYTES
