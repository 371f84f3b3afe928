"""`workloads.registry`: every operator module found, its kinds listed in order, and the CRD's owner kinds kept equal
to the records' (the GPUSizingRecommendation CRD's three copies: kustomize base, Helm chart, OLM bundle)."""

from __future__ import annotations

import pkgutil
import re
import types
from pathlib import Path

import pytest

import workloads.kinds
from workloads import KINDS, KNOWN_KINDS, OWNER_KINDS, PASSED_THROUGH_KINDS, kind_named, workload_kind
from workloads.registry import _records

ROOT = Path(__file__).resolve().parents[2]
CRD_COPIES = [
    ROOT / "manifests" / "base" / "crd-gpusizingrecommendation.yaml",
    ROOT / "charts" / "gpudra" / "templates" / "crd-gpusizingrecommendation.yaml",
    ROOT / "bundle" / "manifests" / "gpudra.io_gpusizingrecommendations.yaml",
]


def test_the_kinds_are_listed_built_ins_first_then_by_operator() -> None:
    assert [k.kind for k in KNOWN_KINDS] == [
        *("Pod", "PodTemplate", "ReplicationController", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"),
        *("Job", "CronJob", "RayCluster", "RayService", "RayJob", "RayCronJob"),
        *("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"),
        *("LeaderWorkerSet", "JobSet", "TrainingRuntime", "ClusterTrainingRuntime", "Rollout"),
    ]
    assert [k.kind for k in PASSED_THROUGH_KINDS] == ["TrainJob", "VLLMRuntime"]
    assert len({k.kind for k in KINDS}) == len(KINDS)


def test_every_operator_module_has_its_test_beside_the_others() -> None:
    modules = {m.name for m in pkgutil.iter_modules(workloads.kinds.__path__) if not m.name.startswith("_")}
    tests = {p.stem.removeprefix("test_") for p in (Path(__file__).parent / "kinds").glob("test_*.py")}
    assert modules == tests


def test_a_module_without_its_records_is_refused() -> None:
    with pytest.raises(TypeError, match="must define ORDER"):
        _records(types.ModuleType("workloads.kinds.broken"))
    odd = types.ModuleType("workloads.kinds.odd")
    odd.ORDER, odd.KINDS = 1, ("Pod",)  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="not a WorkloadKind"):
        _records(odd)


def test_a_kind_is_known_in_its_api_groups_only() -> None:
    assert workload_kind({"apiVersion": "apps/v1", "kind": "Deployment"}) is kind_named("Deployment")
    assert workload_kind({"kind": "Deployment"}) is kind_named("Deployment")  # no apiVersion: the kind decides
    assert workload_kind({"apiVersion": "example.com/v1", "kind": "Deployment"}) is None
    assert workload_kind({"apiVersion": "v1", "kind": "Widget"}) is None and kind_named("Widget") is None


def _crd_rules(path: Path) -> tuple[list[str], list[str], dict[str, str]]:
    """The CRD's targetRef.kind list, the kinds its message names, and per kind what its apiVersion rule accepts
    (`== 'v'` as `v`, `startsWith('g/')` as `g/*`)."""
    text = " ".join(path.read_text().split())
    listed = re.search(r"self\.kind in \[([^\]]*)\] message: >- targetRef\.kind must be one of ([^\n]*?) - rule", text)
    assert listed is not None, path
    kinds = re.findall(r"'([^']+)'", listed.group(1))
    named = [k.strip() for k in listed.group(2).split(",")]
    accepted: dict[str, str] = {}
    clauses = re.findall(
        r"self\.kind (?:in \[([^\]]*)\]|== '([^']*)') \? self\.apiVersion(?: == '([^']*)'|\.startsWith\('([^']*)'\))",
        text,
    )
    for several, one, exact, prefix in clauses:
        for kind in re.findall(r"'([^']+)'", several) or [one]:
            accepted[kind] = exact or f"{prefix}*"
    return kinds, named, accepted


@pytest.mark.parametrize("path", CRD_COPIES, ids=lambda p: p.parent.name)
def test_the_crds_owner_kinds_are_the_records_owner_kinds(path: Path) -> None:
    kinds, named, accepted = _crd_rules(path)
    owners = {k.kind: k for k in OWNER_KINDS}
    assert sorted(kinds) == sorted(owners), f"{path}: targetRef.kind enum drifted from workloads.OWNER_KINDS"
    assert sorted(named) == sorted(owners), f"{path}: the rule's message names other kinds"
    for kind, rule in accepted.items():
        resource = owners[kind].resource
        assert resource is not None
        if rule.endswith("*"):
            assert resource.api_version.startswith(rule[:-1]), (path, kind, rule)
        else:
            assert resource.api_version == rule, (path, kind, rule)
    assert set(accepted) == set(owners), f"{path}: an owner kind without an apiVersion rule"
