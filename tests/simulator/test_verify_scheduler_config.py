"""`gpudra simulate --verify --scheduler-config`: the file handed to the real kube-scheduler is read by dra.yamlio,
so it is the same mapping the model read (a duplicate key is refused naming its line, not silently the last)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dra.errors import InputError
from simulator.verify.verification import _read_config

CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def test_the_configuration_is_one_strict_mapping(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(CONFIG + "parallelism: 4\n")
    assert _read_config(path)["parallelism"] == 4
    path.write_text(CONFIG + "parallelism: 4\nparallelism: 8\n")
    with pytest.raises(InputError, match=r"sched.yaml:4: invalid YAML: found duplicate key 'parallelism'"):
        _read_config(path)
    path.write_text(CONFIG + "---\n" + CONFIG)
    with pytest.raises(InputError, match="must be one mapping"):
        _read_config(path)
