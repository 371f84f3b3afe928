"""Cluster specs: YAML pools, the openb node CSV with its model map, and errors with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from dra.errors import TraceError
from simulator.cluster import (
    default_cluster,
    nvlink_groups,
    place_layout,
    read_openb_nodes,
    resolve_gpu,
)
from simulator.cluster_sources import load_cluster

from .conftest import write

SPEC = """\
name: lab
pools:
  - name: hgx
    count: 2
    gpu: H100-SXM5-80GB
    gpus: 8
    cpu: 96
    memory: 1Ti
    mig: dynamic
  - name: pcie
    count: 1
    gpu: A100-PCIE-80GB
    gpus: 4
    mig: [3g.40gb, 3g.40gb]
  - name: cpu
    count: 3
    cpu_milli: 32000
    memory_mib: 65536
"""


def test_yaml_pools(tmp_path: Path) -> None:
    spec = load_cluster(write(tmp_path / "c.yaml", SPEC))
    assert spec.name == "lab" and len(spec.nodes) == 6 and spec.total_gpus == 20
    hgx = spec.nodes[0]
    assert hgx.name == "hgx-000" and hgx.cpu_milli == 96000 and hgx.memory_mib == 1024 * 1024
    assert hgx.mig == "dynamic" and hgx.gpu is not None and hgx.gpu.mig is not None
    pcie = spec.nodes[2]
    assert pcie.mig == "static" and [(pl.profile.name, pl.start) for pl in pcie.layout] == [
        ("3g.40gb", 0),
        ("3g.40gb", 4),
    ]
    assert spec.nodes[5].gpu is None and spec.nodes[5].gpu_count == 0
    assert spec.summary()["gpus"] == 20


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        ("gpu: Z9000\n    gpus: 2", "unknown GPU model 'Z9000'"),
        ("gpu: A100-SXM4-80GB\n    gpus: 1\n    mig: [4g.40gb, 4g.40gb]", "impossible MIG layout"),
        ("gpu: A100-SXM4-80GB\n    gpus: 1\n    mig: [9g.1gb]", "no MIG profile"),
        ("gpu: L40S\n    gpus: 1\n    mig: dynamic", "dynamic MIG on a GPU without MIG"),
        ("gpu: T4\n    gpus: 1\n    colour: red", "unknown keys"),
        ("gpu: A100-SXM4-80GB\n    gpus: 1\n    mig: [1g.10gb+me]", "no MIG profile"),  # +me: placed as its base
        ("gpu: T4\n    gpus: 1\n    cpu: 1e3k", "cpu: invalid quantity '1e3k'"),  # the old reader took it
        ("gpu: T4\n    gpus: 1\n    memory: 2 Gi", "memory: invalid quantity"),
    ],
)
def test_yaml_errors_name_the_pool_line(tmp_path: Path, pool: str, message: str) -> None:
    text = f"pools:\n  - name: ok\n    count: 1\n  - name: bad\n    {pool}\n"
    path = write(tmp_path / "c.yaml", text)
    with pytest.raises(TraceError, match=message) as info:
        load_cluster(path)
    assert info.value.line == 4 and info.value.source == str(path)


def test_openb_nodes_and_model_map(node_csv: Path) -> None:
    spec = read_openb_nodes(node_csv)
    assert [n.gpu_count for n in spec.nodes] == [2, 4, 0]
    assert spec.nodes[0].gpu is not None and spec.nodes[0].gpu.key == "T4"
    assert spec.nodes[1].model_label == "G2" and spec.nodes[1].gpu is not None
    mapped = load_cluster(node_csv, gpu_model_map={"G2": "L40S"})
    assert mapped.nodes[1].gpu is not None and 40 * 1024 < mapped.nodes[1].gpu.memory_mib <= 48 * 1024


def test_openb_unknown_model_line(tmp_path: Path) -> None:
    path = write(tmp_path / "n.csv", "sn,cpu_milli,memory_mib,gpu,model\na,1,1,1,T4\nb,1,1,2,G9\n")
    with pytest.raises(TraceError, match="G9") as info:
        read_openb_nodes(path)
    assert info.value.line == 3


def test_mig_layout_rules() -> None:
    a100 = resolve_gpu("A100-SXM4-80GB")
    assert place_layout(a100, ["4g.40gb", "3g.40gb"]) is not None
    assert place_layout(a100, ["3g.40gb", "2g.20gb", "1g.10gb"]) is not None
    assert place_layout(a100, ["1g.10gb"] * 7) is not None
    assert place_layout(a100, ["1g.10gb"] * 8) is None  # > 7 compute slices
    assert place_layout(a100, ["4g.40gb", "4g.40gb"]) is None  # 4g only starts at 0
    assert place_layout(a100, ["3g.40gb", "3g.40gb", "1g.10gb"]) is None  # 9 memory slices


def test_nvlink_groups() -> None:
    assert nvlink_groups(resolve_gpu("H100-SXM5-80GB"), 8) == (tuple(range(8)),)
    assert nvlink_groups(resolve_gpu("A100-PCIE-80GB"), 4) == ((0, 1), (2, 3))
    assert nvlink_groups(resolve_gpu("L40S"), 2) == ((0,), (1,))


def test_default_cluster() -> None:
    spec = default_cluster()
    assert spec.total_gpus == 80 and {n.mig for n in spec.nodes} == {"dynamic", "static", "none"}


def test_device_plugin_drain_knobs(tmp_path: Path) -> None:
    from simulator.comparison import SimulationConfig, simulate
    from simulator.workload import SimPod, Workload

    pool = "{name: h, count: 1, gpu: H100-SXM5-80GB, gpus: 1, mig: dynamic}"
    text = f"device_plugin: {{drain_seconds: 120}}\npools:\n  - {pool}\n"
    path = write(tmp_path / "c.yaml", text)
    assert load_cluster(path).device_plugin == {"drain_seconds": 120.0}
    work = Workload([SimPod("s", 1000, 1024, 1, 200, 4096, duration=50.0)], "test", "jsonl")
    result = simulate(SimulationConfig(path, work, strategies=["device-plugin"]))
    assert result.summary()["strategies"]["device-plugin"]["drained_node_hours"] == pytest.approx(120 / 3600, abs=1e-3)
    with pytest.raises(TraceError, match="device_plugin"):
        load_cluster(write(tmp_path / "d.yaml", "device_plugin: {drain: 1}\npools: []\n"))


@pytest.mark.parametrize(
    ("name", "key", "mib", "nvlink"),
    [("P100", "P100", 16384, "mesh"), ("t4", "T4", 16384, "none"), ("V100M16", "V100M16", 16384, "mesh"),
     ("V100M32", "V100M32", 32768, "mesh"), ("A10", "A10", 24576, "none"),
     ("V100-SXM2-16GB", "V100M16", 16384, "mesh"), ("Tesla-T4", "T4", 16384, "none"),
     ("NVIDIA T4", "T4", 15360, "none"), ("H100", "H100-SXM5-80GB", 81559, "nvswitch"),
     ("NVIDIA A100 80GB PCIe", "A100-PCIE-80GB", 81920, "pairs")],
)  # fmt: skip
def test_resolve_gpu_pins_the_openb_trace_models(name: str, key: str, mib: int, nvlink: str) -> None:
    model = resolve_gpu(name)
    assert (model.key, model.memory_mib, model.nvlink) == (key, mib, nvlink)


def test_unknown_gpu_model_is_an_input_error() -> None:
    from dra.errors import InputError

    with pytest.raises(InputError, match=r"unknown GPU model 'Z9000' \(known: .*V100M16"):
        resolve_gpu("Z9000")
