"""VFIO (PassthroughSupport) devices and the compute-domain plugin's IMEX slices, held to the driver's source.

Sources: cmd/gpu-kubelet-plugin/deviceinfo.go (VfioDeviceInfo.GetDevice), nvlib.go (enumerateGpuVfioDevices,
getVfioDeviceInfo), pkg/featuregates; cmd/compute-domain-kubelet-plugin/{deviceinfo,nvlib,driver}.go; the chart's
deviceclass-vfio-gpu.yaml and deviceclass-compute-domain-*.yaml.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest

from dra.gpus import (
    COMPUTE_DOMAIN_DRIVER,
    DRIVER,
    NodeGpus,
    VfioFacts,
    compute_domain_device_classes,
    compute_domain_slices,
    device_classes,
    driver_shape,
    get,
    indexed_node_slices,
    node_resource_slices,
    slice_limit_errors,
    synthetic_node,
    to_models,
    vfio_device_uuid,
)

# A fixture of an A100-SXM4-40GB's sysfs facts (BAR0 16 MiB 32-bit; BAR1 64 GiB, BAR3 32 MiB 64-bit; typical values).
A100_FACTS = VfioFacts(
    vendor_id=0x10DE,
    device_id=0x20B0,
    device_name="GA100 [A100 SXM4 40GB]",
    numa_node=1,
    resources=((0xE2000000, 0xE2FFFFFF, 0x40200), (0, 0, 0), (0x38000000000, 0x38FFFFFFFFF, 0x14220C))
    + ((0, 0, 0), (0x39FFE000000, 0x39FFFFFFFFF, 0x14220C), (0, 0, 0), (0, 0, 0)),
    iommu_fd=False,
)


def _recorded(count: int = 4, **layouts: Any) -> NodeGpus:
    node = synthetic_node(get("A100-SXM4-40GB"), "pt-0", count, **layouts)
    return dataclasses.replace(node, gpus=tuple(dataclasses.replace(g, vfio=A100_FACTS) for g in node.gpus))


def _devices(slices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for s in slices for d in s["spec"].get("devices", [])}


def test_vfio_device_is_exactly_the_drivers() -> None:
    node = _recorded()
    gpu = node.gpus[2]
    device = _devices(node_resource_slices(node, passthrough=True, driver_release="0.4"))["gpu-vfio-2"]
    assert device == {
        "name": "gpu-vfio-2",
        "attributes": {
            "deviceID": {"string": "0x20b0"},
            "iommuFDEnabled": {"bool": False},
            "numa": {"int": 1},
            "productName": {"string": "GA100 [A100 SXM4 40GB]"},
            "resource.kubernetes.io/pciBusID": {"string": gpu.pci_bus_id},
            "resource.kubernetes.io/pcieRoot": {"string": gpu.pcie_root},
            "type": {"string": "vfio"},
            "uuid": {"string": str(uuid.uuid5(uuid.NAMESPACE_DNS, gpu.pci_bus_id))},
            "vendorID": {"string": "0x10de"},
        },
        "capacity": {"addressableMemory": {"value": "128Gi"}},
    }
    assert set(device["attributes"]) == driver_shape("0.4").vfio_attributes()


def test_vfio_uuid_is_the_drivers_sha1_of_the_pci_address() -> None:
    # uuid.NewSHA1(uuid.NameSpaceDNS, []byte("0000:18:00.0")): a name-based v5 UUID in the DNS namespace.
    value = vfio_device_uuid("0000:18:00.0")
    assert value == str(uuid.uuid5(uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8"), "0000:18:00.0"))
    assert uuid.UUID(value).version == 5


def test_gpus_keep_their_devices_and_each_gets_a_vfio_sibling_in_one_slice() -> None:
    node = _recorded(4)
    plain = node_resource_slices(node)
    slices = node_resource_slices(node, passthrough=True, driver_release="0.4")
    assert len(slices) == 1 and not slice_limit_errors(slices)
    names = sorted(_devices(slices))
    assert names == [f"gpu-{i}" for i in range(4)] + [f"gpu-vfio-{i}" for i in range(4)]
    assert {k: v for k, v in _devices(slices).items() if not k.startswith("gpu-vfio")} == _devices(plain)
    to_models(slices)  # valid resource.k8s.io/v1


def test_a_gpu_with_static_mig_devices_gets_no_vfio_device_but_keeps_its_pci_index() -> None:
    node = _recorded(4, mig_layouts={1: [("3g.20gb", 0), ("3g.20gb", 4)]})
    indexed = indexed_node_slices(node, passthrough=True, driver_release="0.4")
    names = set(_devices(indexed.slices))
    assert {"gpu-vfio-0", "gpu-vfio-2", "gpu-vfio-3"} <= names and "gpu-vfio-1" not in names
    assert not any(n.startswith("gpu-vfio") for n in indexed.devices)  # the index holds GPU and MIG devices


def test_mig_mode_enabled_without_instances_still_gets_a_vfio_device() -> None:
    node = _recorded(2)
    node = dataclasses.replace(node, gpus=(dataclasses.replace(node.gpus[0], mig_enabled=True), node.gpus[1]))
    names = set(_devices(node_resource_slices(node, passthrough=True, driver_release="0.4")))
    assert "gpu-0" not in names and "gpu-vfio-0" in names  # vfioEnabled = len(migdevs) == 0


def test_passthrough_is_opt_in() -> None:
    assert not any("vfio" in n for n in _devices(node_resource_slices(_recorded())))


def test_driver_25_8_refuses_passthrough() -> None:
    with pytest.raises(ValueError, match=r"25\.8 publishes no VFIO devices: it has no PassthroughSupport"):
        node_resource_slices(_recorded(), driver_release="25.8", passthrough=True)
    assert driver_shape("25.8").vfio_attributes() == frozenset()


def test_driver_25_12_refuses_passthrough_naming_its_bug() -> None:
    with pytest.raises(ValueError, match=r"25\.12 publishes no VFIO devices: .*3b96cd74.*release 0\.4"):
        node_resource_slices(_recorded(), passthrough=True, driver_release="25.12")


def test_dynamic_mig_and_passthrough_are_mutually_exclusive() -> None:
    with pytest.raises(ValueError, match="mutually exclusive"):
        node_resource_slices(_recorded(), mig_mode="dynamic", passthrough=True, driver_release="0.4")


def test_a_catalog_node_has_no_vfio_facts_and_the_error_names_them() -> None:
    node = synthetic_node(get("H100-SXM5-80GB"), "catalog-0", 2)
    with pytest.raises(ValueError) as err:
        node_resource_slices(node, passthrough=True, driver_release="0.4")
    message = str(err.value)
    assert "catalog-0" in message and "gpu-0" in message and "gpu-1" in message
    for fact in ("vendor_id", "device_id", "device_name", "numa_node", "resources", "iommu_fd"):
        assert fact in message


def test_partly_recorded_facts_name_only_what_is_missing() -> None:
    node = _recorded(2)
    partial = dataclasses.replace(A100_FACTS, device_name=None)
    node = dataclasses.replace(node, gpus=(node.gpus[0], dataclasses.replace(node.gpus[1], vfio=partial)))
    with pytest.raises(ValueError, match=r"gpu-1: device_name \(") as err:
        node_resource_slices(node, passthrough=True, driver_release="0.4")
    assert "gpu-0" not in str(err.value)


def test_vfio_device_class_only_when_asked() -> None:
    assert [c["metadata"]["name"] for c in device_classes()] == ["gpu.nvidia.com", "mig.nvidia.com"]
    vfio = device_classes(vfio=True)[-1]
    assert vfio == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "vfio.gpu.nvidia.com"},
        "spec": {
            "selectors": [
                {"cel": {"expression": f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'vfio'"}}
            ]
        },
    }
    to_models(device_classes(vfio=True))


# -- IMEX / ComputeDomain ---------------------------------------------------------------------------------
def test_compute_domain_slice_is_channel_0_and_daemon_0() -> None:
    (s,) = compute_domain_slices("gb200-0", imex_capable=True)
    assert s["spec"] == {
        "driver": "compute-domain.nvidia.com",
        "nodeName": "gb200-0",
        "pool": {"name": "gb200-0", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {"name": "channel-0", "attributes": {"id": {"int": 0}, "type": {"string": "channel"}}},
            {"name": "daemon-0", "attributes": {"id": {"int": 0}, "type": {"string": "daemon"}}},
        ],
    }
    assert not slice_limit_errors([s])
    to_models([s])


def test_compute_domain_slices_are_opt_in() -> None:
    assert compute_domain_slices("h100-0", imex_capable=False) == []
    with pytest.raises(ValueError, match="node_name"):
        compute_domain_slices("", imex_capable=True)


def test_compute_domain_device_classes_are_the_charts() -> None:
    classes = {
        c["metadata"]["name"]: c["spec"]["selectors"][0]["cel"]["expression"] for c in compute_domain_device_classes()
    }
    attr = f"device.attributes['{COMPUTE_DOMAIN_DRIVER}']"
    assert classes == {
        "compute-domain-default-channel.nvidia.com": f"device.driver == '{COMPUTE_DOMAIN_DRIVER}' && {attr}.type == "
        f"'channel' && {attr}.id == 0",
        "compute-domain-daemon.nvidia.com": f"device.driver == '{COMPUTE_DOMAIN_DRIVER}' && {attr}.type == 'daemon'",
    }
    to_models(compute_domain_device_classes())
