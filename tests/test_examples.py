"""The README's tour and the bundled examples keep working: each command runs as a user would type it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ALLOC = "examples/allocation"


def gpudra(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpudra", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_translate_prints_the_pod_and_its_template() -> None:
    out = gpudra("translate", "examples/pod-legacy-vram.yaml")
    assert out.returncode == 0, out.stderr
    pod, template = [d for d in yaml.safe_load_all(out.stdout) if d]
    assert pod["kind"] == "Pod" and template["kind"] == "ResourceClaimTemplate"
    assert pod["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == template["metadata"]["name"]


def test_translate_of_a_denied_pod_exits_1_with_the_message() -> None:
    out = gpudra("translate", "examples/pod-mixed.yaml")
    assert out.returncode == 1 and "guardrails" in (out.stderr + out.stdout)


@pytest.mark.parametrize(
    ("slices", "claim", "node", "expected"),
    [
        ("slices-a100-dynamic-mig.yaml", "claim-mig-3g40gb.yaml", "gpu-node-a", ["gpu-0-mig-3g40gb-9-0"]),
        ("slices-h100.yaml", "claim-tp4.yaml", "gpu-node-h", ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]),
    ],
)
def test_allocate_examples(slices: str, claim: str, node: str, expected: list[str]) -> None:
    out = gpudra(
        "allocate",
        "--slices",
        f"{ALLOC}/{slices}",
        "--classes",
        f"{ALLOC}/deviceclasses.yaml",
        "--claim",
        f"{ALLOC}/{claim}",
        "--node",
        node,
        "--json",
    )
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)["allocation"]["devices"]["results"]
    assert [r["device"] for r in results] == expected


def test_allocate_unsatisfiable_exits_1() -> None:
    out = gpudra(
        "allocate",
        "--slices",
        f"{ALLOC}/slices-h100.yaml",
        "--classes",
        f"{ALLOC}/deviceclasses.yaml",
        "--claim",
        f"{ALLOC}/claim-mig-3g40gb.yaml",
        "--node",
        "gpu-node-h",
        "--json",
    )
    assert out.returncode == 1 and "unsatisfiable" in json.loads(out.stdout)


def test_shipped_policies_lint_and_test_clean() -> None:
    assert gpudra("policy", "lint", "policies/").returncode == 0
    out = gpudra("policy", "test", "policies/tests/")
    assert out.returncode == 0 and " 0 failed" in out.stdout


def test_every_file_the_readme_tour_names_is_shipped() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    tour = readme[readme.index("## A tour") :]
    tour = tour[: tour.index("```", tour.index("```bash") + 7)]
    named = set(re.findall(r"(?<![\w/.-])((?:examples|policies|tests)/[\w./-]+)", tour))
    assert named, "the tour names files"
    root = Path(__file__).resolve().parents[1]
    assert sorted(p for p in named if not (root / p).exists()) == []


def test_the_readme_sweep_example_is_the_grid_it_says() -> None:
    from simulator.sweep import load_sweep

    grid = load_sweep("examples/sweep/sweep.yaml")
    assert len(grid.jobs) == 6 and {(j.strategy, j.seed) for j in grid.jobs} == {
        (s, seed) for s in ("device-plugin", "dra-whole", "gpudra") for seed in (0, 1)
    }
    assert {(j.cluster, j.trace, j.protocol) for j in grid.jobs} == {("built-in", "generated", "replay")}
    assert grid.output == Path("examples/sweep/sweep-out") and grid.workers == 2


def test_the_readme_tie_seeds_plan_example_is_what_the_command_prints() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    command = next(line for line in readme.splitlines() if line.startswith("$ gpudra plan") and "--tie-seeds" in line)
    out = gpudra(*command.split()[2:], "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    for name, found in summary["strategies"].items():
        nodes = ", ".join(f"{pool} {n}" for pool, n in found["nodes"].items())
        assert f"│ {name} │ {nodes} │ {found['gpus']} │" in " ".join(readme.split())
        for fewer in found["one_node_fewer"]:
            fewer_nodes = ", ".join(f"{pool} {n}" for pool, n in fewer["nodes"].items())
            met = f"met the target in {fewer['runs_meeting']} of {summary['tie_seeds']} draws"
            assert f"{name} with {fewer_nodes}: {met}" in readme
