"""ResourceSlice generators: the NVIDIA DRA driver's device shapes, the 1.34/1.35 DynamicMIG layouts, limits."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dra.gpus import (
    DRIVER,
    DRIVER_RELEASES,
    NVLINK_GROUP_ATTRIBUTE,
    GPUModel,
    NodeGpus,
    all_models,
    device_classes,
    driver_shape,
    get,
    node_resource_slices,
    slice_limit_errors,
    synthetic_node,
    to_models,
)
from dra.gpus.devices import gpu_uuid
from dra.quantity import Quantity

H100 = get("H100-SXM5-80GB")
A100 = get("A100-SXM4-80GB")


def devices(slices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for s in slices for d in s["spec"].get("devices", [])]


def test_full_gpu_device_is_the_driver_shape() -> None:
    node = synthetic_node(H100, "node-a", 8)
    (only,) = node_resource_slices(node, mig_mode="none")
    assert only["apiVersion"] == "resource.k8s.io/v1" and only["kind"] == "ResourceSlice"
    spec = only["spec"]
    assert spec["driver"] == DRIVER and spec["nodeName"] == "node-a"
    assert spec["pool"] == {"name": "node-a", "generation": 1, "resourceSliceCount": 1}
    gpu0 = spec["devices"][0]
    assert gpu0 == {
        "name": "gpu-0",
        "attributes": {
            "architecture": {"string": "Hopper"},
            "brand": {"string": "Nvidia"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "cudaDriverVersion": {"version": "13.0.0"},
            "driverVersion": {"version": "580.95.5"},
            "productName": {"string": "NVIDIA H100 80GB HBM3"},
            "resource.kubernetes.io/pciBusID": {"string": "0000:10:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
            "type": {"string": "gpu"},
            "uuid": {"string": gpu_uuid("node-a", 0)},
        },
        "capacity": {"memory": {"value": "81559Mi"}},
    }
    assert [d["name"] for d in spec["devices"]] == [f"gpu-{i}" for i in range(8)]


def test_pcie_roots_are_grouped_by_four_and_numa_is_not_published() -> None:
    node = synthetic_node(H100, "node-a", 8)
    published = devices(node_resource_slices(node))
    roots = [d["attributes"]["resource.kubernetes.io/pcieRoot"]["string"] for d in published]
    assert roots[:4] == ["pci0000:00"] * 4 and roots[4:] == ["pci0000:40"] * 4
    # gpudra knows the NUMA node (sysfs) but the driver publishes none for a GPU or MIG device.
    assert [g.numa_node for g in node.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert not any("numa" in name.lower() for d in published for name in d["attributes"])


def test_uuids_are_deterministic_per_node_and_index() -> None:
    a = [d["attributes"]["uuid"]["string"] for d in devices(node_resource_slices(synthetic_node(H100, "n1", 4)))]
    b = [d["attributes"]["uuid"]["string"] for d in devices(node_resource_slices(synthetic_node(H100, "n1", 4)))]
    c = [d["attributes"]["uuid"]["string"] for d in devices(node_resource_slices(synthetic_node(H100, "n2", 4)))]
    assert a == b and not set(a) & set(c) and len(set(a)) == 4
    assert all(u.startswith("GPU-") for u in a)


def test_nvlink_groups_are_published_only_on_request() -> None:
    node = synthetic_node(H100, "n", 8)
    assert not any(NVLINK_GROUP_ATTRIBUTE in d["attributes"] for d in devices(node_resource_slices(node)))
    opted = devices(node_resource_slices(node, gpudra_attributes=True))
    assert {d["attributes"][NVLINK_GROUP_ATTRIBUTE]["string"] for d in opted} == {"nvswitch-0"}


def test_nvlink_groups_follow_the_topology() -> None:
    def groups(model: str, count: int) -> list[str | None]:
        out = []
        for d in devices(node_resource_slices(synthetic_node(get(model), "n", count), gpudra_attributes=True)):
            out.append(d["attributes"].get(NVLINK_GROUP_ATTRIBUTE, {}).get("string"))
        return out

    assert groups("H100-NVL-94GB", 4) == ["pair-0", "pair-0", "pair-1", "pair-1"]
    assert groups("L40S", 4) == [None] * 4
    assert groups("B200-SXM6-180GB", 8) == ["nvswitch-0"] * 8
    assert set(groups("V100-SXM2-16GB", 8)) == {"mesh-0"}


def test_static_mig_devices() -> None:
    layouts = {0: [("3g.40gb", 0), ("3g.40gb", 4)], 1: [("1g.10gb+me", 3)]}
    node = synthetic_node(A100, "dgx", 2, mig_layouts=layouts)
    devs = {d["name"]: d for d in devices(node_resource_slices(node, mig_mode="static"))}
    assert sorted(devs) == ["gpu-0-mig-3g40gb-9-0", "gpu-0-mig-3g40gb-9-4", "gpu-1-mig-1g10gb-me-20-3"]
    mig = devs["gpu-0-mig-3g40gb-9-4"]
    assert mig["attributes"]["type"] == {"string": "mig"}
    assert mig["attributes"]["profile"] == {"string": "3g.40gb"}
    assert mig["attributes"]["parentUUID"] == {"string": gpu_uuid("dgx", 0)}
    assert mig["attributes"]["uuid"]["string"].startswith("MIG-")
    assert NVLINK_GROUP_ATTRIBUTE not in mig["attributes"]
    caps = {k: v["value"] for k, v in mig["capacity"].items()}
    assert caps == {
        "copyEngines": "3",
        "decoders": "2",
        "encoders": "0",
        "jpegEngines": "0",
        "memory": "40192Mi",
        "memorySlice4": "1",
        "memorySlice5": "1",
        "memorySlice6": "1",
        "memorySlice7": "1",
        "multiprocessors": "42",
        "ofaEngines": "0",
    }


def test_static_mode_mixes_whole_gpus_and_mig_devices() -> None:
    node = synthetic_node(A100, "dgx", 3, mig_layouts={1: [("7g.80gb", 0)]})
    names = [d["name"] for d in devices(node_resource_slices(node, mig_mode="static"))]
    assert names == ["gpu-0", "gpu-1-mig-7g80gb-0-0", "gpu-2"]
    assert [d["name"] for d in devices(node_resource_slices(node, mig_mode="none"))] == ["gpu-0", "gpu-1", "gpu-2"]


def _mig_on(model: GPUModel, node: str, count: int) -> NodeGpus:
    """A node whose GPUs have MIG mode on and no MIG device (what DynamicMIG needs on Ampere)."""
    return synthetic_node(model, node, count, mig_layouts={i: [] for i in range(count)})


def test_dynamic_mig_134_one_slice_per_gpu() -> None:
    node = synthetic_node(H100, "hgx", 8)
    slices = node_resource_slices(node, mig_mode="dynamic", k8s_version="1.34")
    assert len(slices) == 8
    per_gpu_devices = 1 + sum(len(p.starts) for p in H100.mig.profiles)  # type: ignore[union-attr]
    for j, s in enumerate(slices):
        spec = s["spec"]
        assert spec["pool"] == {"name": "hgx", "generation": 1, "resourceSliceCount": 8}
        (counter_set,) = spec["sharedCounters"]
        assert counter_set["name"] == f"gpu-{j}-counter-set"
        assert len(spec["devices"]) == per_gpu_devices == 26
        names = [d["name"] for d in spec["devices"]]
        assert names == sorted(names)
        assert all(d["consumesCounters"][0]["counterSet"] == counter_set["name"] for d in spec["devices"])
        whole = next(d for d in spec["devices"] if d["name"] == f"gpu-{j}")
        assert whole["consumesCounters"][0]["counters"] == counter_set["counters"]
    assert slice_limit_errors(slices, "1.34") == []
    assert slice_limit_errors(slices, "1.35")  # the combined layout breaks 1.35's one-of rule


def test_dynamic_counter_set_and_partition_consumption() -> None:
    node = _mig_on(A100, "dgx", 1)
    (s,) = node_resource_slices(node, mig_mode="dynamic", k8s_version="1.34")
    counters = {k: v["value"] for k, v in s["spec"]["sharedCounters"][0]["counters"].items()}
    assert counters == {
        "copy-engines": "7",
        "decoders": "5",
        "encoders": "0",
        "jpeg-engines": "1",
        "memory": "80384Mi",
        **{f"memory-slice-{i}": "1" for i in range(8)},
        "multiprocessors": "98",
        "ofa-engines": "1",
    }
    dev = next(d for d in s["spec"]["devices"] if d["name"] == "gpu-0-mig-2g20gb-14-4")
    consumed = dev["consumesCounters"][0]["counters"]
    assert {k for k in consumed if k.startswith("memory-slice")} == {"memory-slice-4", "memory-slice-5"}
    assert consumed["multiprocessors"] == {"value": "28"} and consumed["memory"] == {"value": "19968Mi"}
    assert "memorySlice4" not in dev["capacity"]  # only static MIG publishes memorySlice capacities
    assert "gpu-0" not in {d["name"] for d in s["spec"]["devices"]}  # Ampere with MIG on: partitions only
    (h,) = node_resource_slices(synthetic_node(H100, "hgx", 1), mig_mode="dynamic", k8s_version="1.34")
    whole = next(d for d in h["spec"]["devices"] if d["name"] == "gpu-0")
    assert whole["capacity"]["memory"] == {"value": "81152Mi"}  # max over profiles, as the driver does


def test_dynamic_mig_135_counters_first_then_devices() -> None:
    node = synthetic_node(H100, "hgx", 8)
    slices = node_resource_slices(node, mig_mode="dynamic", k8s_version="1.35")
    assert len(slices) == 9
    first = slices[0]["spec"]
    assert "devices" not in first and len(first["sharedCounters"]) == 8
    for s in slices[1:]:
        assert "sharedCounters" not in s["spec"] and len(s["spec"]["devices"]) <= 64
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in slices} == {9}
    assert slice_limit_errors(slices, "1.35") == []


def test_dynamic_mig_135_spreads_more_than_eight_counter_sets() -> None:
    node = synthetic_node(H100, "big", 12)
    slices = node_resource_slices(node, mig_mode="dynamic", k8s_version="v1.35.1")
    assert [len(s["spec"].get("sharedCounters", [])) for s in slices[:2]] == [8, 4]
    assert len(slices) == 2 + 12
    assert slice_limit_errors(slices, "1.35") == []


def test_ampere_with_mig_on_announces_only_partitions_in_dynamic_mode() -> None:
    node = synthetic_node(A100, "dgx", 2, mig_layouts={0: [("7g.80gb", 0)]})
    names = [d["name"] for d in devices(node_resource_slices(node, mig_mode="dynamic"))]
    assert "gpu-0" not in names and "gpu-1" in names
    assert "gpu-0-mig-7g80gb-0-0" in names


def test_non_mig_gpus_in_dynamic_mode_are_plain_devices() -> None:
    node = synthetic_node(get("L40S"), "l", 2)
    slices = node_resource_slices(node, mig_mode="dynamic", k8s_version="1.35")
    assert len(slices) == 2 and all("sharedCounters" not in s["spec"] for s in slices)
    assert devices(slices)[0]["capacity"] == {"memory": {"value": "46068Mi"}}


@pytest.mark.parametrize("mode", ["none", "static", "dynamic"])
@pytest.mark.parametrize("version", ["1.34", "1.35"])
def test_every_catalog_model_respects_the_limits(mode: str, version: str) -> None:
    for model in all_models():
        layouts = {0: [(model.mig.profiles[0].name, 0)]} if model.mig else {}
        node = synthetic_node(model, f"node-{model.key.lower()}", 8, mig_layouts=layouts)
        slices = node_resource_slices(node, mig_mode=mode, k8s_version=version)  # type: ignore[arg-type]
        assert slice_limit_errors(slices, version) == [], model.key
        names = [d["name"] for d in devices(slices)]
        assert len(names) == len(set(names))
        if not (mode == "dynamic" and version == "1.34"):  # dra.model validates by 1.35+ rules
            for obj in to_models(slices):
                assert obj.validation_errors() == [], model.key


def test_limit_checker_reports_what_and_where() -> None:
    node = synthetic_node(H100, "dgx", 1)
    (s,) = node_resource_slices(node, mig_mode="dynamic", k8s_version="1.34")
    s["spec"]["devices"] = s["spec"]["devices"] * 5
    s["spec"]["pool"]["resourceSliceCount"] = 2
    errors = slice_limit_errors([s], "1.34")
    assert any("spec.devices: 130 devices, at most 128" in e for e in errors)
    assert any("device names repeated" in e for e in errors)
    assert any("resourceSliceCount [2] but 1 slices" in e for e in errors)
    assert any("device counter entries" in e for e in errors)


def test_generation_is_passed_through() -> None:
    slices = node_resource_slices(synthetic_node(H100, "n", 8), mig_mode="dynamic", generation=7)
    assert {s["spec"]["pool"]["generation"] for s in slices} == {7}


def test_bad_arguments() -> None:
    node = synthetic_node(H100, "n", 1)
    with pytest.raises(ValueError, match="mig_mode"):
        node_resource_slices(node, mig_mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Kubernetes version"):
        node_resource_slices(node, k8s_version="latest")
    with pytest.raises(ValueError, match="invalid"):
        synthetic_node(A100, "n", 1, mig_layouts={0: [("4g.40gb", 0), ("4g.40gb", 0)]})
    with pytest.raises(ValueError, match="does not support MIG"):
        synthetic_node(get("T4"), "n", 1, mig_layouts={0: [("1g.5gb", 0)]})


def test_device_classes() -> None:
    gpu, mig = device_classes()
    assert gpu == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {
            "selectors": [
                {
                    "cel": {
                        "expression": "device.driver == 'gpu.nvidia.com' && "
                        "device.attributes['gpu.nvidia.com'].type == 'gpu'"
                    }
                }
            ],
            "extendedResourceName": "nvidia.com/gpu",
        },
    }
    assert mig["metadata"]["name"] == "mig.nvidia.com" and "extendedResourceName" not in mig["spec"]
    assert "type == 'mig'" in mig["spec"]["selectors"][0]["cel"]["expression"]
    assert "extendedResourceName" not in device_classes("resource.k8s.io/v1beta1")[0]["spec"]


def _consumption(device: dict[str, Any]) -> Counter[str]:
    total: Counter[str] = Counter()
    for c in device.get("consumesCounters", []):
        for name, value in c["counters"].items():
            total[name] += Quantity(value["value"]).as_int()
    return total


MIG_MODELS = [m for m in all_models() if m.mig is not None]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_valid_layouts_fit_the_published_counters(data: st.DataObject) -> None:
    """Soundness of the counter encoding: a layout the checker accepts never overdraws the GPU's counter set;
    on A100 (verified tables) the converse holds too: counters reject exactly the invalid layouts."""
    model = data.draw(st.sampled_from(MIG_MODELS))
    geometry = model.mig
    assert geometry is not None
    layout = data.draw(st.lists(st.sampled_from(geometry.placements()), max_size=8))
    (s,) = node_resource_slices(_mig_on(model, "n", 1), mig_mode="dynamic", k8s_version="1.34")
    capacity = {k: Quantity(v["value"]).as_int() for k, v in s["spec"]["sharedCounters"][0]["counters"].items()}
    by_name = {d["name"]: d for d in s["spec"]["devices"]}
    used: Counter[str] = Counter()
    for pl in layout:
        used += _consumption(by_name[f"gpu-0-mig-{pl.profile.device_name_part}-{pl.profile.gi_profile_id}-{pl.start}"])
    fits = all(used[k] <= capacity[k] for k in used)
    if geometry.is_valid_layout(layout):
        assert fits
    elif model.key.startswith("A100"):
        assert not fits


def test_slices_validate_against_dra_model() -> None:
    node = synthetic_node(A100, "dgx", 8, mig_layouts={0: [("3g.40gb", 0)]})
    for mode in ("none", "static", "dynamic"):
        for version in ("1.34", "1.35"):
            slices = node_resource_slices(node, mig_mode=mode, k8s_version=version)  # type: ignore[arg-type]
            for obj, raw in zip(to_models(slices), slices, strict=True):
                assert obj.to_k8s() == raw
                # dra.model validates by the current (1.35+) rules, which forbid the 1.34 combined layout
                if not (mode == "dynamic" and version == "1.34"):
                    obj.validate_k8s()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_static_mig_slices_publish_exactly_the_layout(data: st.DataObject) -> None:
    model = data.draw(st.sampled_from(MIG_MODELS))
    geometry = model.mig
    assert geometry is not None
    layout = data.draw(st.lists(st.sampled_from(geometry.placements()), max_size=7, unique=True))
    if not geometry.is_valid_layout(layout) or not layout:
        return
    node = synthetic_node(model, "n", 2, mig_layouts={1: layout})
    slices = node_resource_slices(node, mig_mode="static")
    assert slice_limit_errors(slices) == []
    migs = [d for d in devices(slices) if d["attributes"]["type"]["string"] == "mig"]
    assert len(migs) == len(layout)
    held = [int(k.removeprefix("memorySlice")) for d in migs for k in d["capacity"] if k.startswith("memorySlice")]
    assert sorted(held) == sorted(s for pl in layout for s in pl.memory_slices)
    assert {d["attributes"]["profile"]["string"] for d in migs} == {pl.profile.name for pl in layout}


@pytest.mark.parametrize("mig_mode", ["none", "static", "dynamic"])
def test_device_index_names_every_generated_device(mig_mode: str) -> None:
    from dra.gpus import SliceDevice, indexed_node_slices

    node = synthetic_node(A100, "n", 2, mig_layouts={1: [("3g.40gb", 4), ("1g.10gb", 0)]})
    made = indexed_node_slices(node, mig_mode=mig_mode)  # type: ignore[arg-type]
    assert made.slices == node_resource_slices(node, mig_mode=mig_mode)  # type: ignore[arg-type]
    names = [d["name"] for d in devices(made.slices)]
    assert sorted(names) == sorted(made.devices)
    assert made.devices["gpu-0"] == SliceDevice(0)
    for name, entry in made.devices.items():
        assert name.startswith(f"gpu-{entry.gpu}")
        if entry.profile is None:
            assert name == f"gpu-{entry.gpu}" and entry.start == 0
        else:  # the name the driver writes for that profile and start
            profile = entry.profile
            assert name == f"gpu-{entry.gpu}-mig-{profile.device_name_part}-{profile.gi_profile_id}-{entry.start}"
    if mig_mode == "static":
        assert A100.mig is not None
        assert made.devices["gpu-1-mig-3g40gb-9-4"] == SliceDevice(1, A100.mig.profile("3g.40gb"), 4)
        assert "gpu-1" not in made.devices
    if mig_mode == "dynamic":  # every placement of every profile, +me variants included, on GPU 1 (MIG on) only
        assert A100.mig is not None
        assert sum(1 for d in made.devices.values() if d.profile is not None) == len(A100.mig.placements())
        assert {d.gpu for d in made.devices.values() if d.profile is not None} == {1}


@pytest.mark.parametrize(
    ("model", "mig_mode", "layouts"),
    [
        ("H100-SXM5-80GB", "none", None),
        ("H100-SXM5-80GB", "dynamic", None),
        ("A100-SXM4-80GB", "dynamic", None),
        ("A100-PCIE-80GB", "static", {0: [("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)], 2: [("7g.80gb", 0)]}),
        ("L40S", "none", None),
    ],
)
def test_reading_published_slices_back_gives_the_generators_index(
    model: str, mig_mode: str, layouts: dict[int, list[tuple[str, int]]] | None
) -> None:
    """`index_devices` reads what a real cluster publishes (no generator bookkeeping): it must agree with the
    index the generator kept, device by device."""
    from dra.gpus import catalog, index_devices, indexed_node_slices, synthetic_node

    gpu = catalog.get(model)
    node = synthetic_node(gpu, "node-a", 4, mig_layouts=layouts)
    made = indexed_node_slices(node, mig_mode=mig_mode)  # type: ignore[arg-type]
    assert index_devices(made.slices, gpu) == made.devices


def test_a_mig_device_without_a_parent_is_named() -> None:
    from dra.errors import InputError
    from dra.gpus import catalog, index_devices

    orphan = {
        "name": "gpu-0-mig-1g10gb-19-0",
        "attributes": {"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}},
    }
    with pytest.raises(InputError, match="gpu-0-mig-1g10gb-19-0"):
        index_devices([{"spec": {"devices": [orphan]}}], catalog.get("A100-SXM4-80GB"))


# -- driver releases ----------------------------------------------------------------------------------------
def _attribute_sets_hold(slices: list[dict[str, Any]], release: str) -> None:
    shape = driver_shape(release)
    allowed = {"gpu": shape.gpu_attributes(), "mig": shape.mig_attributes(), "vfio": shape.vfio_attributes()}
    for d in devices(slices):
        kind = d["attributes"]["type"]["string"]
        extra = set(d["attributes"]) - allowed[kind]
        assert not extra, f"{d['name']} ({release}) carries {sorted(extra)}, which driver {release} never publishes"
        if kind == "mig":
            caps = {c for c in d["capacity"] if not c.startswith("memorySlice")}
            assert caps == shape.mig_capacities()


@pytest.mark.parametrize("release", DRIVER_RELEASES)
@pytest.mark.parametrize("mode", ["none", "static", "dynamic"])
def test_every_catalog_model_publishes_only_the_releases_attributes(release: str, mode: str) -> None:
    if mode == "dynamic" and not driver_shape(release).dynamic_mig:
        with pytest.raises(ValueError, match="DynamicMIG is not published by NVIDIA DRA driver 25.8"):
            node_resource_slices(synthetic_node(H100, "n", 1), mig_mode="dynamic", driver_release=release)
        return
    for model in all_models():
        layouts = {0: [(model.mig.profiles[0].name, model.mig.profiles[0].starts[0])]} if model.mig else None
        node = synthetic_node(model, "n", 2, mig_layouts=layouts)
        _attribute_sets_hold(node_resource_slices(node, mig_mode=mode, driver_release=release), release)  # type: ignore[arg-type]


def test_release_25_8_names_its_bus_attribute_and_mig_devices_the_old_way() -> None:
    node = synthetic_node(A100, "dgx", 2, mig_layouts={0: [("3g.40gb", 4)]})
    old = {d["name"]: d for d in devices(node_resource_slices(node, driver_release="25.8"))}
    assert sorted(old) == ["gpu-0-mig-9-4-4", "gpu-1"]
    assert old["gpu-1"]["attributes"]["pcieBusID"] == {"string": "0000:18:00.0"}
    assert "resource.kubernetes.io/pciBusID" not in old["gpu-1"]["attributes"]
    assert old["gpu-0-mig-9-4-4"]["attributes"]["pcieBusID"] == {"string": "0000:10:00.0"}
    new = {d["name"] for d in devices(node_resource_slices(node, driver_release="v25.12.0"))}
    assert new == {"gpu-0-mig-3g40gb-9-4", "gpu-1"}
    with pytest.raises(ValueError, match="must be one of 25.8, 25.12"):
        node_resource_slices(node, driver_release="24.1")


def test_addressing_mode_is_published_by_25_12_when_nvml_reports_one() -> None:
    node = synthetic_node(get("GH200-96GB") if any(m.key == "GH200-96GB" for m in all_models()) else H100, "g", 1)
    coherent = dataclasses.replace(node, gpus=(dataclasses.replace(node.gpus[0], addressing_mode="ATS"),))
    (gpu,) = devices(node_resource_slices(coherent))
    assert gpu["attributes"]["addressingMode"] == {"string": "ATS"}
    (old,) = devices(node_resource_slices(coherent, driver_release="25.8"))
    assert "addressingMode" not in old["attributes"]
    (plain,) = devices(node_resource_slices(node))
    assert "addressingMode" not in plain["attributes"]


def test_counter_limits_per_consumption_in_135_per_device_in_134() -> None:
    """1.35 bounds each consumesCounters entry (ResourceSliceMaxCountersPerDeviceCounterConsumption), 1.34 a device's
    total (ResourceSliceMaxCountersPerDevice): two entries of 20 counters are valid in 1.35 only."""
    node = _mig_on(A100, "dgx", 1)
    slices = node_resource_slices(node, mig_mode="dynamic", k8s_version="1.35")
    device = next(d for d in devices(slices) if d.get("consumesCounters"))
    counters = {f"c{i}": {"value": "1"} for i in range(20)}
    device["consumesCounters"] = [{"counterSet": "a", "counters": counters}, {"counterSet": "b", "counters": counters}]
    assert not any("consumesCounters" in e for e in slice_limit_errors(slices, "1.35"))
    assert any(e.endswith(".consumesCounters: 40 counters, at most 32") for e in slice_limit_errors(slices, "1.34"))
    device["consumesCounters"][1]["counters"] = {f"c{i}": {"value": "1"} for i in range(33)}
    assert any(
        e.endswith(".consumesCounters[1].counters: 33 counters, at most 32") for e in slice_limit_errors(slices, "1.35")
    )
