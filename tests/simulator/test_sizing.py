"""`gpudra simulate --sizing observed:FILE`: the Prometheus dump and recommendation readers (and their errors), the
owner matching, the lookup, the generated workload's owners, and runs where observed sizing lowers VRAM waste."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dra.errors import InputError
from gpudra.cli import app
from recommender import Settings, vram_for
from simulator.comparison import OBSERVED_RUN, SimulationConfig, simulate
from simulator.html_report import write_report
from simulator.sizing import (
    ObservedLookup,
    demo_dump,
    generated_lookup,
    load_observed,
    owner_of_pod_name,
    parse_prometheus_dump,
    parse_sizing,
    strip_annotations,
)
from simulator.traces import GeneratorConfig, generate
from simulator.workload import generated_owner, legacy_pod
from workloads import pod_owner

FIXTURES = Path(__file__).parent / "fixtures"
DUMP = FIXTURES / "dcgm_fb_used_7d.json"
RECOMMENDATIONS = FIXTURES / "gpusizingrecommendations.yaml"
MIB, GIB = 2**20, 2**30


def series(pod: str, values: list[Any], **labels: str) -> dict[str, Any]:
    metric = {"__name__": "DCGM_FI_DEV_FB_USED", "namespace": "team-a", "pod": pod, "container": "main", **labels}
    return {"metric": metric, "values": [[1_700_000_000 + 30 * i, v] for i, v in enumerate(values)]}


def answer(*result: dict[str, Any]) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "matrix", "result": list(result)}}


def write(tmp_path: Path, data: Any, name: str = "dump.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


# -- options and matching ------------------------------------------------------------------------------------------


def test_sizing_option_forms() -> None:
    assert parse_sizing(None).kind == "none" and parse_sizing("none").label == "none"
    assert parse_sizing("observed:generated").path is None
    assert parse_sizing("observed:dump.json").label == "observed:dump.json"
    for bad in ("observed", "observed:", "prometheus:x", "annotations"):
        with pytest.raises(InputError, match="--sizing must be none, observed:FILE or observed:generated"):
            parse_sizing(bad)


@pytest.mark.parametrize(
    ("pod", "owner"),
    [
        ("embed-7c9d8f6b5-x2k4q", ("Deployment", "embed")),
        ("text-embeddings-5d4f8bc9-abcde", ("Deployment", "text-embeddings")),
        ("trainer-0", ("StatefulSet", "trainer")),
        ("ray-head-12", ("StatefulSet", "ray-head")),
        ("finetune-x7k2q", ("Job", "finetune")),
        ("notebook", ("Pod", "notebook")),
    ],
)
def test_series_are_matched_to_owners_by_pod_name(pod: str, owner: tuple[str, str]) -> None:
    assert owner_of_pod_name(pod) == owner


def test_generated_pods_name_their_owners_as_controllers_do() -> None:
    assert generated_owner("embedding-00009", "embedding") == ("Deployment", "embedding-b")
    assert generated_owner("fine-tuning-00016", "fine-tuning") == ("Job", "fine-tuning-a")
    assert generated_owner("training-00003", "training") == ("RayCluster", "training-d")
    assert generated_owner("p0", "trace") is None and generated_owner("embedding-x", "embedding") is None
    for name, klass, owner in (
        ("embedding-00009", "embedding", ("Deployment", "embedding-b")),
        ("llm-serving-00001", "llm-serving", ("Deployment", "llm-serving-b")),
        ("fine-tuning-00016", "fine-tuning", ("Job", "fine-tuning-a")),
        ("training-00003", "training", ("RayCluster", "training-d")),
    ):
        pod = legacy_pod(name, 1000, 1024, 1, klass)
        assert pod_owner(pod) == owner, name
    assert pod_owner(legacy_pod("p0", 1000, 1024, 1, "trace")) is None


# -- the Prometheus dump ---------------------------------------------------------------------------------------------


def test_the_fixture_dump_becomes_recommendations_as_the_recommender_computes_them() -> None:
    lookup = load_observed(DUMP)
    assert lookup.kind == "prometheus" and lookup.series == 32 and len(lookup.entries) == 16
    embed = lookup.observed("default", "Deployment", "embedding-a", "main")
    assert embed is not None and embed.samples == 336 and embed.window_seconds == 167 * 3600
    assert 0.9 * 8 * GIB <= embed.peak_bytes <= 8 * GIB  # the p99 of the pooled samples, never above the max
    assert embed.vram_bytes == vram_for(embed.peak_bytes, Settings().headroom)
    assert str(DUMP) in embed.source_ref
    small = lookup.observed("default", "Deployment", "small-inference-h", "main")
    assert small is not None and small.peak_bytes > 20 * GIB
    assert lookup.observed("default", "Deployment", "embedding-a", "sidecar") is None
    assert (lookup.hits, lookup.misses) == (2, 1)


def test_exported_labels_and_the_sample_floor(tmp_path: Path) -> None:
    labels = {"exported_namespace": "team-b", "exported_pod": "embed-7c9d8f6b5-aaaaa", "exported_container": "main"}
    renamed = {"metric": {"__name__": "DCGM_FI_DEV_FB_USED", **labels}, "values": [[i, "4096"] for i in range(120)]}
    short = series("tiny-7c9d8f6b5-bbbbb", ["100"] * 10)
    lookup = parse_prometheus_dump(answer(renamed, short), "dump.json")
    found = lookup.observed("team-b", "Deployment", "embed", "main")
    assert found is not None and found.peak_bytes == 4096 * MIB
    assert lookup.observed("team-a", "Deployment", "tiny", "main") is None
    assert lookup.skipped == {"fewer than 100 samples": 1}
    assert lookup.describe()["owners"] == 1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("this is not json {", "neither a Prometheus query_range answer nor GPUSizingRecommendation objects"),
        ("{ not: json", "not JSON"),
        ("items: [a\n b: {", "neither JSON nor YAML"),
        ({"status": "error", "errorType": "bad_data", "error": "parse error"}, "not a successful Prometheus"),
        ({"status": "success", "data": {"resultType": "vector", "result": []}}, "matrix result"),
        (answer({"values": [[0, "1"]]}), r"data.result\[0\]: a series needs 'metric'"),
        (answer(series("embed-7c9d8f6b5-x2k4q", ["NaN"])), r"data.result\[0\].values\[0\]: 'NaN' is not a finite"),
        (answer(series("embed-7c9d8f6b5-x2k4q", ["1", "+Inf"])), r"values\[1\]: '\+Inf' is not a finite"),
        (answer(series("embed-7c9d8f6b5-x2k4q", ["-5"])), "is not a finite framebuffer size"),
        (answer(series("embed-7c9d8f6b5-x2k4q", ["lots"])), r'"lots"\] is not a \[timestamp, "number"\] sample'),
        (answer(series("embed-7c9d8f6b5-x2k4q", [])), "non-empty list"),
        (
            answer({"metric": {"namespace": "a", "container": "main"}, "values": [[0, "1"]]}),
            "series without pod label",
        ),  # fmt: skip
        (answer({"metric": {"pod": "p"}, "values": [[0, "1"]]}), "without namespace, container label"),
        (answer(series("embed-7c9d8f6b5-x2k4q", ["1"], __name__="DCGM_FI_DEV_GPU_UTIL")), "is not DCGM_FI_DEV_FB_USED"),
        ("", "empty"),
    ],
)
def test_bad_dumps_are_errors_naming_the_file(tmp_path: Path, data: Any, message: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(InputError, match=message) as info:
        load_observed(path)
    assert str(info.value).startswith(str(path))


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="missing.json: cannot read"):
        load_observed(tmp_path / "missing.json")


# -- recommendation objects ----------------------------------------------------------------------------------------


def test_recommendation_objects_are_read_as_the_webhook_reads_them(tmp_path: Path) -> None:
    lookup = load_observed(RECOMMENDATIONS)
    assert lookup.kind == "recommendations" and len(lookup.entries) == 2
    embed = lookup.observed("default", "Deployment", "embedding-a", "main")
    assert embed is not None and embed.vram_bytes == 9830 * MIB and embed.peak_bytes == 8 * GIB
    assert embed.window_seconds == 168 * 3600 and embed.source_ref.endswith("default/deployment-embedding-a")
    # a JSON list, one bad entry skipped and counted, a duplicate owner counted
    objects = json.loads(json.dumps(__import__("yaml").safe_load(RECOMMENDATIONS.read_text())["items"]))
    objects[1]["status"]["containers"].append({"name": "bad", "vram": "x", "peak": "1", "samples": 1, "window": "1h"})
    objects.append(dict(objects[0], metadata={"name": "other", "namespace": "default"}))
    lookup = load_observed(write(tmp_path, objects, "objects.json"))
    assert len(lookup.entries) == 2 and lookup.skipped == {"bad_quantity": 1, "duplicate_owner": 1}


def test_objects_of_another_kind_are_errors_naming_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", "pods.yaml")
    with pytest.raises(InputError, match=r"pods.yaml: object 0: kind 'Pod' is not GPUSizingRecommendation"):
        load_observed(path)
    broken = write(tmp_path, "kind: GPUSizingRecommendation\nmetadata: {name: x, namespace: y}\n", "broken.yaml")
    with pytest.raises(InputError, match="broken.yaml: object 0: .*targetRef"):
        load_observed(broken)
    bad_yaml = write(tmp_path, "items: [a, b\n", "bad.yaml")
    with pytest.raises(InputError, match="bad.yaml: line"):
        load_observed(bad_yaml)


# -- the generated demo dump and the workload ----------------------------------------------------------------------


def test_the_demo_dump_is_a_prometheus_answer_below_each_pods_need() -> None:
    work = generate(GeneratorConfig(pods=80, seed=3), 80)
    dump = demo_dump(work, seed=3)
    assert dump["status"] == "success" and dump["data"]["resultType"] == "matrix"
    by_pod = {p.name: p for p in work.pods}
    assert len(dump["data"]["result"]) == sum(1 for p in work.pods if p.is_gpu)
    for s in dump["data"]["result"]:
        assert s["metric"]["__name__"] == "DCGM_FI_DEV_FB_USED" and len(s["values"]) == 168
        assert all(math.isfinite(float(v)) for _, v in s["values"])
    lookup = generated_lookup(work, seed=3)
    assert lookup.kind == "generated"
    for pod in work.pods:
        found = lookup.for_pod(pod)
        assert found is not None, pod.name
        owners = [p for p in work.pods if pod_owner(p.as_pod()) == pod_owner(pod.as_pod())]
        assert found.peak_bytes <= max(p.vram_mib for p in owners) * MIB
    assert lookup.for_pod(by_pod[work.pods[0].name]) is not None
    assert any(k[1] == "RayCluster" for k in lookup.entries) or not any(
        p.workload_class == "training" for p in work.pods
    )


def test_unannotated_removes_only_the_vram_annotation() -> None:
    work = generate(GeneratorConfig(pods=60, seed=1), 80)
    annotated = [p for p in work.pods if "annotations" in p.as_pod()["metadata"]]
    assert annotated
    bare = strip_annotations(work)
    assert all("gpudra.io/vram" not in (p.as_pod()["metadata"].get("annotations") or {}) for p in bare.pods)
    assert [p.name for p in bare.pods] == [p.name for p in work.pods]
    assert bare.notes["gpudra.io/vram annotation removed (--unannotated)"] == len(annotated)
    assert all("annotations" in p.as_pod()["metadata"] for p in annotated)  # the original is untouched


def test_lookup_counts() -> None:
    lookup = ObservedLookup("x", "prometheus")
    assert lookup.observed("a", "Deployment", "b", "c") is None and lookup.misses == 1


# -- runs ----------------------------------------------------------------------------------------------------------


def test_observed_sizing_lowers_vram_waste_of_unannotated_pods() -> None:
    result = simulate(SimulationConfig(
        generator=GeneratorConfig(pods=240, seed=5), seed=5, strategies=("dra-whole", "gpudra"),
        sizing=parse_sizing("observed:generated"), unannotated=True,
    ))  # fmt: skip
    summary = result.summary()
    runs = summary["strategies"]
    assert list(runs) == ["dra-whole", "gpudra", OBSERVED_RUN]
    assert summary["input"]["strategies"] == ["dra-whole", "gpudra", OBSERVED_RUN]
    assert summary["input"]["sizing"]["spec"] == "observed:generated" and summary["input"]["sizing"]["unannotated"]
    details = summary["input"]["strategy_details"]
    plain, observed = details["gpudra"]["sizing_sources"], details[OBSERVED_RUN]["sizing_sources"]
    assert "annotation" not in plain and plain.get("observed", 0) == 0
    assert observed["observed"] >= 0.5 * sum(observed.values())
    # annotation-only sizes nothing here (no annotations): its waste is dra-whole's order; observed sizing cuts it
    waste = {name: row["vram_waste_ratio"] for name, row in runs.items()}
    assert waste[OBSERVED_RUN] < 0.8 * waste["gpudra"], waste
    assert waste[OBSERVED_RUN] < 0.8 * waste["dra-whole"], waste
    stats = summary["sizing"]
    assert stats[OBSERVED_RUN]["granted_mib_p50"] < stats["gpudra"]["granted_mib_p50"]
    # right-size never grants a single-GPU pod less than its owner's observed peak (multi-GPU pods are the
    # multi-gpu policy's: whole GPUs of any model, so some land on 48 GB GPUs below their observed use)
    rows = result.sizing[OBSERVED_RUN]["rows"]
    single = [r for r in rows if r["gpus"] == 1 and r["observed_mib"] is not None]
    assert single and all(r["granted_mib"] >= r["observed_mib"] for r in single)


def test_observed_from_the_fixture_file_keeps_annotated_pods_as_they_were(tmp_path: Path) -> None:
    """Annotations win over observed usage: with the annotations kept, only unannotated owners' pods change."""
    result = simulate(SimulationConfig(
        generator=GeneratorConfig(pods=160, seed=2), seed=2, strategies=("gpudra",),
        sizing=parse_sizing(f"observed:{DUMP}"),
    ))  # fmt: skip
    summary = result.summary()
    sources = summary["input"]["strategy_details"][OBSERVED_RUN]["sizing_sources"]
    assert sources.get("annotation", 0) > 0 and sources.get("observed", 0) == 0  # the file covers annotated owners
    assert summary["input"]["sizing"]["kind"] == "prometheus" and summary["input"]["sizing"]["owners"] == 16
    index = write_report(result, tmp_path / "report")
    text = index.read_text()
    assert "Granted vs observed VRAM" in text and (tmp_path / "report" / "sizing.png").stat().st_size > 0
    assert (tmp_path / "report" / f"series-{OBSERVED_RUN}.csv").exists()


def test_cli_names_a_bad_sizing_file(tmp_path: Path) -> None:
    bad = write(tmp_path, answer(series("embed-7c9d8f6b5-x2k4q", ["NaN"])))
    result = CliRunner().invoke(app, ["simulate", "--sizing", f"observed:{bad}", "--json"])
    assert result.exit_code == 2 and str(bad) in result.stderr and "NaN" in result.stderr
    result = CliRunner().invoke(app, ["simulate", "--sizing", "prometheus", "--json"])
    assert result.exit_code == 2 and "--sizing must be" in result.stderr
