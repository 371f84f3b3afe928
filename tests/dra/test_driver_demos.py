"""The NVIDIA DRA driver's v1 demos allocate on driver-exact slices; the two it no longer supports fail as they would.

Each claim below is our own compact reproduction of one demo's ResourceClaim / ResourceClaimTemplate spec (the
facts that matter to allocation: requests, device classes, selectors, constraints, opaque config), citing the
demo in github.com/NVIDIA/k8s-dra-driver-gpu (HEAD). Where several pods or containers share a claim, one
allocation is enough. Slices come from `dra.gpus` exactly as the driver publishes them:

* an 8-GPU H100 node for the GPU demos, an A100-40GB with a static MIG layout for gpu-test4;
* a passthrough node (PassthroughSupport) whose GPUs carry VFIO facts recorded here as a fixture;
* an IMEX-capable node with the compute-domain plugin's slice for the ComputeDomain channel.

Not supported by the current driver, asserted to fail the way they would on a cluster:

* gpu-test6 selects on `device.attributes['gpu.nvidia.com'].index`, published by 25.3 and earlier, not since:
  the CEL selector fails with "no such key: index".
* imex-test1 asks for DeviceClass `imex.nvidia.com`, which the chart no longer ships (ComputeDomains replaced
  it): the device class is not found.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dra.allocator import AllocationError, Allocator, FeatureSet
from dra.gpus import (
    COMPUTE_DOMAIN_DRIVER,
    DRIVER,
    NodeGpus,
    VfioFacts,
    compute_domain_device_classes,
    compute_domain_slices,
    device_classes,
    get,
    node_resource_slices,
    synthetic_node,
)

GPU_CONFIG = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"}
MPS = {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": "10Gi"}}
TIME_SLICING = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}


def _request(name: str, device_class: str, *selectors: str) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, "exactly": exactly}


def _config(driver: str, requests: list[str], parameters: dict[str, Any]) -> dict[str, Any]:
    return {"requests": requests, "opaque": {"driver": driver, "parameters": parameters}}


def _spec(requests: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"devices": {"requests": requests, **extra}}


def _mig(profile: str) -> str:
    return f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"


SINGLE_GPU = _spec([_request("gpu", "gpu.nvidia.com")])
VFIO_GPU = _spec([_request("gpu", "vfio.gpu.nvidia.com")])

# demo -> (node kind, claim spec); every one of these allocates.
SUPPORTED: dict[str, tuple[str, dict[str, Any]]] = {
    # demo/specs/quickstart/v1/gpu-test1.yaml: ResourceClaimTemplate single-gpu, one per pod (two pods).
    "gpu-test1": ("gpus", SINGLE_GPU),
    # demo/specs/quickstart/v1/gpu-test2.yaml: the same template, one claim shared by two containers.
    "gpu-test2": ("gpus", SINGLE_GPU),
    # demo/specs/quickstart/v1/gpu-test3.yaml: ResourceClaim single-gpu shared by two pods.
    "gpu-test3": ("gpus", SINGLE_GPU),
    # demo/specs/quickstart/v1/gpu-test4.yaml: four MIG devices of one GPU (matchAttribute parentUUID).
    "gpu-test4": (
        "mig",
        _spec(
            [
                _request("mig-1g-5gb-0", "mig.nvidia.com", _mig("1g.5gb")),
                _request("mig-1g-5gb-1", "mig.nvidia.com", _mig("1g.5gb")),
                _request("mig-2g-10gb", "mig.nvidia.com", _mig("2g.10gb")),
                _request("mig-3g-20gb", "mig.nvidia.com", _mig("3g.20gb")),
            ],
            constraints=[{"requests": [], "matchAttribute": "gpu.nvidia.com/parentUUID"}],
        ),
    ),
    # demo/specs/quickstart/v1/gpu-test5.yaml: a time-sliced and an MPS-shared GPU in one claim.
    "gpu-test5": (
        "gpus",
        _spec(
            [_request("ts-gpu", "gpu.nvidia.com"), _request("mps-gpu", "gpu.nvidia.com")],
            config=[
                _config(DRIVER, ["ts-gpu"], {**GPU_CONFIG, "sharing": TIME_SLICING}),
                _config(DRIVER, ["mps-gpu"], {**GPU_CONFIG, "sharing": MPS}),
            ],
        ),
    ),
    # demo/specs/quickstart/v1/gpu-test-mps.yaml: one MPS-shared GPU, two containers.
    "gpu-test-mps": (
        "gpus",
        _spec(
            [_request("mps-gpu", "gpu.nvidia.com")],
            config=[_config(DRIVER, ["mps-gpu"], {**GPU_CONFIG, "sharing": MPS})],
        ),
    ),
    # demo/specs/quickstart/v1/gpu-test-vfiopci.yaml: one GPU of DeviceClass vfio.gpu.nvidia.com.
    "gpu-test-vfiopci": ("passthrough", VFIO_GPU),
    # demo/specs/quickstart/v1/gpu-test-vfio-config.yaml: the same with a VfioDeviceConfig (legacy IOMMU backend).
    "gpu-test-vfio-config": (
        "passthrough",
        _spec(
            [_request("gpu", "vfio.gpu.nvidia.com")],
            config=[
                _config(
                    DRIVER,
                    ["gpu"],
                    {
                        "apiVersion": "resource.nvidia.com/v1beta1",
                        "kind": "VfioDeviceConfig",
                        "iommu": {"backendPolicy": "LegacyOnly", "enableAPIDevice": True},
                    },
                )
            ],
        ),
    ),
    # demo/specs/imex/channel-injection.yaml: the ComputeDomain's channel template, as the compute-domain
    # controller creates it (templates/compute-domain-workload-claim-template.tmpl.yaml, resourceclaimtemplate.go:
    # deviceClassName compute-domain-default-channel.nvidia.com, ComputeDomainChannelConfig, allocationMode Single).
    "channel-injection": (
        "imex",
        _spec(
            [_request("channel", "compute-domain-default-channel.nvidia.com")],
            config=[
                _config(
                    COMPUTE_DOMAIN_DRIVER,
                    ["channel"],
                    {
                        "apiVersion": "resource.nvidia.com/v1beta1",
                        "kind": "ComputeDomainChannelConfig",
                        "domainID": "00000000-0000-0000-0000-00000000cd01",
                        "allocationMode": "Single",
                    },
                )
            ],
        ),
    ),
    # The same ComputeDomain's daemon template (templates/compute-domain-daemon-claim-template.tmpl.yaml), which
    # the controller's IMEX daemon pod on the node claims.
    "channel-injection-daemon": (
        "imex",
        _spec(
            [_request("daemon", "compute-domain-daemon.nvidia.com")],
            config=[
                _config(
                    COMPUTE_DOMAIN_DRIVER,
                    ["daemon"],
                    {
                        "apiVersion": "resource.nvidia.com/v1beta1",
                        "kind": "ComputeDomainDaemonConfig",
                        "domainID": "00000000-0000-0000-0000-00000000cd01",
                    },
                )
            ],
        ),
    ),
}

_INDEX = "device.attributes['gpu.nvidia.com'].index"
# demo/specs/quickstart/v1/gpu-test6.yaml: A100s of even index, time-sliced.
GPU_TEST6 = _spec(
    [
        _request(
            "gpu",
            "gpu.nvidia.com",
            "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a100.*$') && ("
            + " || ".join(f"{_INDEX} == {i}" for i in (0, 2, 4, 6))
            + ")",
        )
    ],
    config=[_config(DRIVER, ["gpu"], {**GPU_CONFIG, "sharing": TIME_SLICING})],
)
# demo/specs/quickstart/v1/imex-test1.yaml: per deployment a ResourceClaim of DeviceClass imex.nvidia.com (and a
# whole-GPU template beside it).
IMEX_TEST1 = _spec([_request("channel", "imex.nvidia.com")])

# The passthrough node's fixture, in the form `gpudra inventory` records: sysfs facts of an H100 SXM5 (10de:2330;
# BAR0 16 MiB, BAR1 128 GiB and BAR3 32 MiB 64-bit prefetchable; values typical of the device, not read from a
# machine here), with IOMMUFD available.
H100_VFIO = VfioFacts(
    vendor_id=0x10DE,
    device_id=0x2330,
    device_name="GH100 [H100 SXM5 80GB]",
    numa_node=0,
    resources=(
        (0xE2000000, 0xE2FFFFFF, 0x40200),
        (0, 0, 0),
        (0x200000000000, 0x201FFFFFFFFF, 0x14220C),
        (0, 0, 0),
        (0x202000000000, 0x202001FFFFFF, 0x14220C),
        (0, 0, 0),
        (0, 0, 0),
    ),
    iommu_fd=True,
)


def _passthrough_node() -> NodeGpus:
    node = synthetic_node(get("H100-SXM5-80GB"), "passthrough-0", 8)
    return dataclasses.replace(node, gpus=tuple(dataclasses.replace(g, vfio=H100_VFIO) for g in node.gpus))


def _node(kind: str) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(node name, slices, device classes) of a node of `kind`, all exactly as the driver and chart publish them."""
    if kind == "gpus":
        node = synthetic_node(get("H100-SXM5-80GB"), "hgx-0", 8)
        return node.node_name, node_resource_slices(node), device_classes()
    if kind == "mig":
        # The layout gpu-test4 needs: 3g.20gb, 2g.10gb and two 1g.5gb on one A100-40GB (all seven slices).
        layout = [("3g.20gb", 4), ("2g.10gb", 2), ("1g.5gb", 0), ("1g.5gb", 1)]
        node = synthetic_node(get("A100-SXM4-40GB"), "a100-mig-0", 8, mig_layouts={0: layout})
        return node.node_name, node_resource_slices(node, mig_mode="static"), device_classes()
    if kind == "passthrough":
        node = _passthrough_node()
        return (
            node.node_name,
            node_resource_slices(node, passthrough=True, driver_release="0.4"),
            device_classes(vfio=True),
        )
    if kind == "imex":
        node = synthetic_node(get("H100-SXM5-80GB"), "imex-0", 4)
        slices = node_resource_slices(node) + compute_domain_slices(node.node_name, imex_capable=True)
        return node.node_name, slices, device_classes() + compute_domain_device_classes()
    raise AssertionError(kind)


def _allocate(kind: str, spec: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    name, slices, classes = _node(kind)
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "demo", "namespace": "demo", "uid": "uid-demo"},
        "spec": spec,
    }
    allocator = Allocator(slices=slices, classes=classes, allocated=[], features=FeatureSet.latest())
    (result,) = allocator.allocate([claim], node={"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    devices = {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}
    return list(result["devices"]["results"]), devices


@pytest.mark.parametrize("demo", sorted(SUPPORTED))
def test_supported_demo_allocates_on_driver_exact_slices(demo: str) -> None:
    kind, spec = SUPPORTED[demo]
    results, devices = _allocate(kind, spec)
    requests = [r["name"] for r in spec["devices"]["requests"]]
    assert sorted(r["request"] for r in results) == sorted(requests)
    assert len({r["device"] for r in results}) == len(results)
    wanted_driver = COMPUTE_DOMAIN_DRIVER if kind == "imex" else DRIVER
    assert {r["driver"] for r in results} == {wanted_driver}
    if "config" in spec["devices"]:
        assert all(c["opaque"]["driver"] == wanted_driver for c in spec["devices"]["config"])
    types = {devices[r["device"]]["attributes"]["type"]["string"] for r in results}
    expected = {"gpus": {"gpu"}, "mig": {"mig"}, "passthrough": {"vfio"}}.get(kind, {requests[0]})
    assert types == expected


def test_gpu_test4_takes_four_mig_devices_of_one_gpu() -> None:
    results, devices = _allocate("mig", SUPPORTED["gpu-test4"][1])
    profiles = {r["request"]: devices[r["device"]]["attributes"]["profile"]["string"] for r in results}
    assert profiles == {
        "mig-1g-5gb-0": "1g.5gb",
        "mig-1g-5gb-1": "1g.5gb",
        "mig-2g-10gb": "2g.10gb",
        "mig-3g-20gb": "3g.20gb",
    }
    assert len({devices[r["device"]]["attributes"]["parentUUID"]["string"] for r in results}) == 1


def test_the_vfio_demo_gets_the_drivers_vfio_device() -> None:
    results, devices = _allocate("passthrough", VFIO_GPU)
    (result,) = results
    device = devices[result["device"]]
    assert result["device"].startswith("gpu-vfio-")
    assert device["attributes"]["iommuFDEnabled"] == {"bool": True}
    assert device["capacity"] == {"addressableMemory": {"value": "256Gi"}}  # 128 GiB + 32 MiB, next power of 2


def test_the_vfio_demos_need_the_passthrough_node() -> None:
    with pytest.raises(AllocationError, match=r"vfio\.gpu\.nvidia\.com.*not found"):
        _allocate("gpus", VFIO_GPU)  # no vfio class without passthrough: gpudra never adds it silently


def test_gpu_test6_selects_on_index_which_the_driver_stopped_publishing_after_25_3() -> None:
    # The demo's node would be A100s; on an 8 x A100 node the productName matches and `index` is the failure.
    name = "a100-0"
    node = synthetic_node(get("A100-SXM4-80GB"), name, 8)
    slices = node_resource_slices(node)
    assert not any("index" in d["attributes"] for s in slices for d in s["spec"]["devices"])
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "a100", "namespace": "gpu-test6", "uid": "uid-a100"},
        "spec": GPU_TEST6,
    }
    allocator = Allocator(slices=slices, classes=device_classes(), allocated=[], features=FeatureSet.latest())
    with pytest.raises(AllocationError, match=r"no such key: index"):
        allocator.allocate([claim], node={"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})


def test_imex_test1_uses_a_device_class_the_chart_no_longer_ships() -> None:
    _, _, classes = _node("imex")
    assert "imex.nvidia.com" not in {c["metadata"]["name"] for c in classes}
    with pytest.raises(AllocationError, match=r"imex\.nvidia\.com.*not found"):
        _allocate("imex", IMEX_TEST1)
