"""Trace readers and the generator: fields, skipped rows with reasons, TraceError with file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dra.errors import TraceError
from simulator.traces import GeneratorConfig, generate, load_trace, pod_demand, read_openb_pods
from simulator.vram import VramModel

from .conftest import POD_HEADER, write


def test_openb_reader_fields(pod_csv: Path) -> None:
    work = read_openb_pods(pod_csv)
    assert [p.name for p in work.pods] == ["p0", "p1", "p2", "p3"]
    p0, _, p2, p3 = work.pods
    assert (p0.cpu_milli, p0.memory_mib, p0.num_gpu, p0.gpu_milli) == (4000, 8192, 1, 500)
    assert p0.arrival == 0.0 and p0.duration == 100.0
    assert p0.vram_mib == 8192  # proportional: 500/1000 of the 16 GiB reference
    assert p2.duration is None and p2.vram_mib == 16384 and p2.gpu_request == 2.0
    assert p3.vram_mib == 0 and not p3.is_gpu
    assert p2.priority < p0.priority  # BE below LS
    assert work.summary()["skipped"] == 0


def test_openb_broken_line_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.csv", POD_HEADER + "\np0,1000,1024,1,500,,LS,Running,0,10,0\np1,oops,1,1\n")
    with pytest.raises(TraceError) as info:
        read_openb_pods(path)
    assert info.value.line == 3 and info.value.source == str(path)
    assert f"{path}:3" in str(info.value)


def test_openb_lenient_counts_every_skip(tmp_path: Path) -> None:
    rows = [
        "p0,1000,1024,1,500,,LS,Running,0,10,0",
        "p1,1000,1024,1,1500,,LS,Running,0,10,0",  # share above a GPU
        "p2,1000,1024,0,300,,LS,Running,0,10,0",  # share without GPUs
        "p3,1000,1024,1,500,,LS,Running,50,10,0",  # deleted before created
        "p4,x,1024,1,500,,LS,Running,0,10,0",  # not a number
        "p5,1000",  # wrong field count
    ]
    path = write(tmp_path / "mixed.csv", POD_HEADER + "\n" + "\n".join(rows) + "\n")
    work = read_openb_pods(path, strict=False)
    assert [p.name for p in work.pods] == ["p0"]
    info = work.summary()
    assert info["skipped"] == 5
    reasons = info["skipped_reasons"]
    assert reasons["gpu_milli above 1000"]["count"] == 1
    assert reasons["gpu_milli without num_gpu"]["examples"] == [f"{path}:4"]
    assert reasons["deletion before creation"]["count"] == 1
    assert reasons["malformed line"]["count"] == 2


def test_openb_header_without_times(tmp_path: Path) -> None:
    path = write(tmp_path / "multi.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\na,1000,1024,8,1000\n")
    (pod,) = read_openb_pods(path, vram=VramModel(kind="fixed", fixed_mib=30000)).pods
    assert pod.num_gpu == 8 and pod.duration is None and pod.vram_mib == 30000


def test_openb_missing_column(tmp_path: Path) -> None:
    path = write(tmp_path / "x.csv", "name,cpu_milli\na,1\n")
    with pytest.raises(TraceError, match="lacks columns"):
        read_openb_pods(path)


def _pod(gpus: str | None = None, mig: str | None = None) -> dict[str, object]:
    limits = {}
    if gpus:
        limits["nvidia.com/gpu"] = gpus
    if mig:
        limits[mig] = "1"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}, "limits": limits}},
                {"name": "b", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}],
        },
    }


def test_pod_demand_sums_containers_and_init_max() -> None:
    assert pod_demand(_pod(gpus="2")) == (4000, 3072, 2, 1000, None)
    assert pod_demand(_pod(mig="nvidia.com/mig-3g.40gb")) == (4000, 3072, 1, 428, 40 * 1024)


def test_pod_demand_reads_quantities_as_kubernetes_does() -> None:
    pod = _pod(gpus="1")
    pod["spec"]["containers"][1]["resources"]["requests"]["cpu"] = "1e3k"  # type: ignore[index]
    with pytest.raises(ValueError, match=r"spec\.containers\[1\]\.resources\.requests\[cpu\]: invalid quantity '1e3k'"):
        pod_demand(pod)


def test_jsonl_line_with_a_bad_quantity_names_the_field(tmp_path: Path) -> None:
    pod = _pod(gpus="1")
    pod["spec"]["initContainers"][0]["resources"]["requests"]["memory"] = "1 Gi"  # type: ignore[index]
    path = write(tmp_path / "bad.jsonl", json.dumps({"pod": pod}) + "\n")
    with pytest.raises(TraceError, match=r"bad\.jsonl:1: spec\.initContainers\[0\]\.resources\.requests\[memory\]"):
        load_trace(path)


def test_jsonl_reader(tmp_path: Path) -> None:
    lines = [
        json.dumps({"pod": _pod(gpus="1"), "arrival": 5, "duration": 60, "vram_mib": 6000}),
        "",
        json.dumps(
            {
                "pod": _pod(gpus="1"),
                "arrival": 1,
                "duration": None,
                "gpu_milli": 250,
                "namespace": {"metadata": {"name": "ml", "labels": {"team": "a"}}},
            }
        ),
    ]
    path = write(tmp_path / "t.jsonl", "\n".join(lines) + "\n")
    work = load_trace(path)
    assert work.kind == "jsonl"
    first, second = work.pods
    assert first.arrival == 1 and first.gpu_milli == 250 and first.duration is None
    assert first.namespace_object == {"metadata": {"name": "ml", "labels": {"team": "a"}}}
    assert second.vram_mib == 6000 and second.namespace == "ml" and second.pod is not None


def test_jsonl_bad_line(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", json.dumps({"pod": _pod(gpus="1")}) + "\n{not json\n")
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert info.value.line == 2
    assert load_trace(path, strict=False).skipped["malformed line"] == 1


def test_generator_is_seeded_and_follows_its_classes() -> None:
    a = generate(GeneratorConfig(pods=2000, load=0.9, seed=3), total_gpus=80)
    b = generate(GeneratorConfig(pods=2000, load=0.9, seed=3), total_gpus=80)
    c = generate(GeneratorConfig(pods=2000, seed=4), total_gpus=80)
    assert [(p.name, p.arrival, p.vram_mib) for p in a.pods] == [(p.name, p.arrival, p.vram_mib) for p in b.pods]
    assert [p.arrival for p in a.pods] != [p.arrival for p in c.pods]
    classes = {p.workload_class for p in a.pods}
    assert classes == {"embedding", "small-inference", "llm-serving", "fine-tuning", "training"}
    share = sum(1 for p in a.pods if p.workload_class == "embedding") / len(a.pods)
    assert 0.26 < share < 0.34  # 30% +- sampling noise
    for pod in a.pods:
        if pod.workload_class == "llm-serving":
            assert pod.num_gpu in (2, 4, 8) and pod.gpu_milli == 1000
        if pod.workload_class == "embedding":
            assert pod.is_shared and 1024 <= pod.vram_mib <= 8192
        assert pod.pod is not None and pod.duration is not None and pod.duration >= 60
    offered = sum(p.gpu_request * (p.duration or 0) for p in a.pods) / (a.pods[-1].arrival - a.pods[0].arrival)
    assert 0.7 * 80 < offered / 0.9 < 1.3 * 80  # offered load ~ 0.9 x 80 GPUs


def test_vram_model_kinds() -> None:
    assert VramModel().demand(250) == 4096
    assert VramModel().demand(10) == 1024  # floor
    assert VramModel(kind="fixed", fixed_mib=5000).demand(10) == 5000
    model = VramModel(kind="class")
    assert model.demand(1000, "training", "x") == model.demand(1000, "training", "x")
    assert 56 * 1024 <= model.demand(1000, "training", "x") <= 79 * 1024
    assert VramModel.from_dict({"kind": "fixed", "fixed_mib": 7}).fixed_mib == 7
    with pytest.raises(ValueError, match="kind"):
        VramModel(kind="guess")


FIXTURES = Path(__file__).parent / "fixtures"


def test_real_trace_excerpt_reads_cleanly() -> None:
    from simulator.cluster import read_openb_nodes

    work = read_openb_pods(FIXTURES / "openb_pod_excerpt.csv")
    assert len(work.pods) == 120 and work.summary()["skipped"] == 0
    assert all(0 <= p.gpu_milli <= 1000 for p in work.pods)
    assert any(p.is_shared for p in work.pods) and any(not p.is_gpu for p in work.pods)
    nodes = read_openb_nodes(FIXTURES / "openb_node_excerpt.csv")
    assert len(nodes.nodes) == 49 and all(n.gpu is not None for n in nodes.nodes)
