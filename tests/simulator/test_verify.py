"""`gpudra simulate --verify-scheduler` without a control plane: finding the binaries (and saying how to get them),
the pods as the webhook admits them, and how disagreements are classified."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpudra.cli import app
from simulator.traces import GeneratorConfig, generate
from simulator.verify import COMPONENTS, KUBERNETES_VERSION, MissingBinaries, find_components
from simulator.verify.objects import admit, device_class_objects, extended_resource_claim
from simulator.workload import SimPod, legacy_pod
from tests.controlplane import sourcehash
from webhook.policy import load_policies


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
