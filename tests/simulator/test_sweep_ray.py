"""The sweep's Ray backend: the same grid on a local Ray cluster gives exactly the rows of the process pool."""

from __future__ import annotations

from pathlib import Path

import pytest
import ray  # in the dev extra, so the optional backend is tested wherever the suite runs
import yaml

from simulator.sweep import load_sweep, run_sweep

from .conftest import write


@pytest.mark.slow
def test_ray_backend_equals_process_backend(tmp_path: Path, pod_csv: Path, node_csv: Path) -> None:
    grid = {
        "clusters": [node_csv.name],
        "traces": [pod_csv.name],
        "strategies": ["device-plugin", "gpudra"],
        "seeds": [0, 1],
        "protocol": "replay",
        "workers": 2,
    }
    rows = {}
    for backend in ("process", "ray"):
        config = write(tmp_path / f"{backend}.yaml", yaml.safe_dump({**grid, "backend": backend, "output": backend}))
        rows[backend] = run_sweep(load_sweep(config))
    ray.shutdown()
    assert len(rows["ray"]) == 4
    for ours, theirs in zip(rows["ray"], rows["process"], strict=True):
        assert {k: v for k, v in ours.items() if theirs.get(k) != v and k != "wall_seconds"} == {}
    assert (tmp_path / "ray" / "results.csv").exists()
