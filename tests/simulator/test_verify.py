"""`gpudra simulate --verify-scheduler` without a control plane: finding the binaries (and saying how to get them),
the pods as the webhook admits them, and how disagreements are classified."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from policyengine import load_policies
from simulator.scheduling import Decision
from simulator.traces import GeneratorConfig, generate
from simulator.verify import COMPONENTS, KUBERNETES_VERSION, MissingBinaries, find_components
from simulator.verify.compare import judge, tally
from simulator.verify.objects import Admitted, admit, device_class_objects, extended_resource_claim
from simulator.verify.replay import RealDecision, Step
from simulator.workload import SimPod, legacy_pod
from tests.controlplane import sourcehash


def _bin_dir(directory: Path, names: tuple[str, ...]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        exe = directory / name
        exe.write_text("#!/bin/sh\necho Kubernetes v9.9.9\n")
        exe.chmod(0o755)
    return directory


def test_the_pinned_release_is_the_one_build_sh_builds() -> None:
    assert KUBERNETES_VERSION == sourcehash.kubernetes_version()


def test_k8s_bin_without_the_binaries_names_what_is_missing(tmp_path: Path) -> None:
    directory = _bin_dir(tmp_path / "bin", ("etcd", "kube-apiserver"))
    with pytest.raises(MissingBinaries) as raised:
        find_components(directory)
    message = str(raised.value)
    assert "kube-controller-manager, kube-scheduler not found" in message and str(directory) in message
    assert "etcd," not in message.split("not found")[0]
    with pytest.raises(MissingBinaries, match="not a directory"):
        find_components(tmp_path / "nowhere")


def test_k8s_bin_with_every_binary_gives_their_paths(tmp_path: Path) -> None:
    directory = _bin_dir(tmp_path / "bin", COMPONENTS)
    assert find_components(directory) == {name: directory / name for name in COMPONENTS}


def test_without_a_cache_it_says_how_to_build_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(MissingBinaries) as raised:
        find_components()
    message = str(raised.value)
    assert "bash tests/controlplane/build.sh" in message and "--k8s-bin DIR" in message
    assert str(tmp_path / "gpudra" / "k8s" / KUBERNETES_VERSION / "bin") in message


def test_the_cache_prefers_the_pinned_release_then_the_newest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    root = tmp_path / "gpudra" / "k8s"
    older = _bin_dir(root / "v1.36.9" / "bin", COMPONENTS)
    newer = _bin_dir(root / "v1.38.0" / "bin", COMPONENTS)
    _bin_dir(root / "v1.39.0" / "bin", COMPONENTS[:2])  # incomplete: skipped
    assert find_components()["kube-scheduler"] == newer / "kube-scheduler"
    pinned = _bin_dir(root / KUBERNETES_VERSION / "bin", COMPONENTS)
    assert find_components()["etcd"] == pinned / "etcd"
    assert older.is_dir()


def test_cli_without_binaries_exits_2_before_simulating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["simulate", "--verify-scheduler", "--json"])
    assert result.exit_code == 2
    assert "tests/controlplane/build.sh" in " ".join(result.stderr.split()) and result.stdout == ""
    partial = _bin_dir(tmp_path / "bin", ("kube-scheduler",))
    result = CliRunner().invoke(app, ["simulate", "--verify-scheduler", "--k8s-bin", str(partial)])
    assert result.exit_code == 2
    assert "etcd, kube-apiserver, kube-controller-manager not found" in " ".join(result.stderr.split())


def test_pods_are_admitted_as_the_webhook_translates_them() -> None:
    policies = load_policies()
    work = generate(GeneratorConfig(pods=60, seed=0), 48)
    by_class = {p.workload_class: p for p in work.pods if p.num_gpu >= (2 if p.workload_class == "training" else 1)}
    training = admit(by_class["training"], policies, "training-1", "ns")
    assert training is not None and training.policy == "multi-gpu"
    meta = training.pod["metadata"]
    assert (meta["name"], meta["namespace"]) == ("training-1", "ns") and "ownerReferences" not in meta
    assert training.pod["spec"]["terminationGracePeriodSeconds"] == 0
    (template,) = training.templates
    assert training.pod["spec"]["resourceClaims"] == [
        {"name": "gpudra", "resourceClaimTemplateName": template["metadata"]["name"]}
    ]
    assert template["metadata"]["namespace"] == "ns" and training.claims == (template["spec"]["spec"],)
    container = training.pod["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in (container["resources"].get("limits") or {})
    embedding = admit(by_class["embedding"], policies, "embedding-1", "ns")
    assert embedding is not None and embedding.policy == "right-size"
    assert "firstAvailable" in embedding.claims[0]["devices"]["requests"][0]


def test_a_pod_no_policy_translates_keeps_its_extended_resource_claim(tmp_path: Path) -> None:
    no_policies = load_policies(tmp_path)  # an empty directory: nothing matches
    sim = SimPod("legacy", 1000, 1024, 2, 1000, 0, pod=legacy_pod("legacy", 1000, 1024, 2, "trace"))
    admitted = admit(sim, no_policies, "legacy-1", "ns")
    assert admitted is not None and admitted.templates == () and admitted.policy == "legacy request"
    assert admitted.pod["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    (claim,) = admitted.claims
    (request,) = claim["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": "gpu.nvidia.com", "count": 2}
    assert extended_resource_claim({"spec": {"containers": [{"name": "c"}]}}, device_class_objects()) is None


def test_components_are_executables_not_just_files(tmp_path: Path) -> None:
    directory = _bin_dir(tmp_path / "bin", COMPONENTS)
    os.chmod(directory / "etcd", 0o644)
    with pytest.raises(MissingBinaries, match=r"etcd not found there \(or not executable\)"):
        find_components(directory)


def _decision(
    feasible: set[str], scores: dict[str, int], devices: dict[str, tuple[str, ...]], fit: dict[str, int] | None = None
) -> Decision:
    top = max(scores.values(), default=0)
    tie = frozenset(n for n, s in scores.items() if s == top)
    plugins = {n: {"NodeResourcesFit": (fit or {}).get(n, s), "DynamicResources": 0} for n, s in scores.items()}
    return Decision(
        feasible=frozenset(feasible), scored=frozenset(scores), scores=scores, plugin_scores=plugins, tie_set=tie,
        node=min(tie) if tie else None, devices=devices,
    )  # fmt: skip


def _real(node: str | None, devices: tuple[str, ...] = (), message: str = "") -> RealDecision:
    sim = SimPod("p", 1000, 1024, 1, 1000, 0)
    return RealDecision("p-1", sim, Admitted({}, (), (), "whole-gpu"), node, devices, message)


def test_a_real_node_in_the_tie_set_with_the_same_devices_agrees() -> None:
    model = _decision({"a", "b", "c"}, {"a": 90, "b": 90, "c": 50}, {"b": ("gpu-1", "gpu-0")})
    assert judge(model, _real("b", ("gpu-0", "gpu-1"))) == (True, True, True, [])


def test_a_real_node_outside_the_tie_set_names_the_plugin_that_separated_them() -> None:
    model = _decision({"a", "c"}, {"a": 90, "c": 50}, {"a": ("gpu-0",), "c": ("gpu-3",)}, fit={"a": 70, "c": 30})
    agreed, in_top, same, (found,) = judge(model, _real("c", ("gpu-3",)))
    assert (agreed, in_top, same) == (True, False, True)
    assert found.check == "node" and found.cause == "score: NodeResourcesFit"
    assert found.sim_tie_set == ("a",) and found.scores == {"a": 90, "c": 50}
    assert "70 vs 30" in found.detail
    model = _decision({"a"}, {"a": 90}, {"a": ("gpu-0",)})
    agreed, in_top, same, (found,) = judge(model, _real("z", ("gpu-0",)))
    assert (agreed, in_top, same) == (True, False, False) and found.cause == "real node infeasible in the model"


def test_feasibility_and_device_disagreements_are_each_recorded() -> None:
    nothing = _decision(set(), {}, {})
    agreed, _, _, (found,) = judge(nothing, _real("a", ("gpu-0",)))
    assert not agreed and found.check == "feasibility" and found.cause == "model found no node"
    model = _decision({"a"}, {"a": 10}, {"a": ("gpu-0",)})
    agreed, _, _, (found,) = judge(model, _real(None, message="0/1 nodes are available"))
    assert not agreed and found.cause == "real scheduler found no node" and "0/1 nodes" in found.detail
    assert judge(nothing, _real(None, message="0/1"))[:1] == (True,)
    agreed, in_top, same, (found,) = judge(model, _real("a", ("gpu-1",)))
    assert (agreed, in_top, same) == (True, True, False) and found.check == "devices"
    assert "['gpu-1']" in found.detail and "['gpu-0']" in found.detail


def test_the_tally_counts_feasibility_over_every_decision_and_the_rest_over_bound_ones() -> None:
    model = _decision({"a", "b"}, {"a": 90, "b": 90}, {"a": ("gpu-0",), "b": ("gpu-0",)})
    steps = [Step(model, _real("a", ("gpu-0",))), Step(model, _real("b", ("gpu-7",))), Step(model, _real(None))]
    figures = tally(steps).figures()
    assert (figures["decisions"], figures["bound"], figures["unschedulable"]) == (3, 2, 1)
    assert figures["feasibility_agreement"] == round(2 / 3, 4)
    assert (figures["node_in_top_set"], figures["same_devices"], figures["tied_decisions"]) == (1.0, 0.5, 1.0)
    assert figures["causes"] == {"real scheduler found no node": 1, "devices differ": 1}


def test_real_pending_by_gpus_counts_pods_still_held_at_the_end() -> None:
    from simulator.verify.verification import real_pending_by_gpus

    waits = ((8, 100.0, True), (8, 300.0, False), (1, 0.0, True), (1, 10.0, True))
    assert real_pending_by_gpus(waits) == {"1": 5.0, "8": 200.0}
    assert real_pending_by_gpus(()) == {}
