"""Fixtures for the simulator tests: small generated openb-format files and cluster specs."""

from __future__ import annotations

from pathlib import Path

import pytest

POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def pod_csv(tmp_path: Path) -> Path:
    rows = [
        "p0,4000,8192,1,500,,LS,Running,0,100,0",
        "p1,4000,8192,1,500,,LS,Running,10,110,10",
        "p2,8000,16384,2,1000,,BE,Running,20,,20",
        "p3,2000,4096,0,0,,BE,Running,30,40,30",
    ]
    return write(tmp_path / "pods.csv", POD_HEADER + "\n" + "\n".join(rows) + "\n")


@pytest.fixture
def node_csv(tmp_path: Path) -> Path:
    rows = ["n0,32000,131072,2,T4", "n1,32000,131072,4,G2", "n2,16000,65536,0,"]
    return write(tmp_path / "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\n" + "\n".join(rows) + "\n")
