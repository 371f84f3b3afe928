"""mig-parted configs: strict parsing, NVML-order placements, the static slices they publish, the simulator pool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dra.allocator import Unsatisfiable, allocate
from dra.errors import InputError, TraceError
from dra.gpus import catalog, device_classes, node_resource_slices, synthetic_node
from dra.gpus.mig_parted import (
    DeviceId,
    apply_mig_config,
    gpu_device_id,
    load_mig_parted,
    mig_layouts,
    nvml_placements,
    parse_mig_parted,
)
from simulator.cluster_sources import load_cluster

# The GPU Operator's default configs for A100-40GB, A100-80GB and H100-80GB, as NVIDIA mig-parted's
# deployments/systemd/config-default.yaml declares them (the device-filter lists shortened to the boards here).
STANDARD = """\
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-enabled:
    - devices: all
      mig-enabled: true
      mig-devices: {}
  all-1g.5gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 7
  all-2g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "2g.10gb": 3
  all-3g.20gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.20gb": 2
  all-7g.40gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "7g.40gb": 1
  all-1g.10gb:
    # H100-80GB, A100-80GB
    - device-filter: ["0x233010DE", "0x233110DE", "0x20B210DE", "0x20B510DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
    # A100-40GB
    - device-filter: ["0x20B010DE", "0x20B110DE", "0x20F110DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 4
  all-2g.20gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "2g.20gb": 3
  all-3g.40gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
  all-7g.80gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "7g.80gb": 1
  all-balanced:
    # H100-80GB, A100-80GB
    - device-filter: ["0x233010DE", "0x233110DE", "0x20B210DE", "0x20B510DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 2
        "2g.20gb": 1
        "3g.40gb": 1
    # A100-40GB
    - device-filter: ["0x20B010DE", "0x20B110DE", "0x20F110DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 2
        "2g.10gb": 1
        "3g.20gb": 1
    # B200 (never matches the boards here; its profiles are not theirs)
    - device-filter: ["0x290110DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.23gb": 2
        "2g.45gb": 1
        "3g.90gb": 1
  custom:
    - devices: [0, 1]
      mig-enabled: true
      mig-devices: {"3g.40gb": 2}
    - devices: [2, 3]
      mig-enabled: false
"""

# (config, model) -> the placements (profile@start) NVML gives them when mig-parted creates them in its order.
SEVEN_1G = [f"1g.10gb@{s}" for s in range(7)]
EXPECTED: dict[tuple[str, str], list[str]] = {
    ("all-1g.5gb", "A100-SXM4-40GB"): [f"1g.5gb@{s}" for s in range(7)],
    ("all-1g.10gb", "A100-SXM4-40GB"): ["1g.10gb@0", "1g.10gb@2", "1g.10gb@4", "1g.10gb@6"],
    ("all-2g.10gb", "A100-SXM4-40GB"): ["2g.10gb@0", "2g.10gb@2", "2g.10gb@4"],
    ("all-3g.20gb", "A100-SXM4-40GB"): ["3g.20gb@0", "3g.20gb@4"],
    ("all-7g.40gb", "A100-SXM4-40GB"): ["7g.40gb@0"],
    ("all-balanced", "A100-SXM4-40GB"): ["1g.5gb@0", "1g.5gb@1", "2g.10gb@2", "3g.20gb@4"],
    ("all-1g.10gb", "A100-SXM4-80GB"): SEVEN_1G,
    ("all-2g.20gb", "A100-SXM4-80GB"): ["2g.20gb@0", "2g.20gb@2", "2g.20gb@4"],
    ("all-3g.40gb", "A100-SXM4-80GB"): ["3g.40gb@0", "3g.40gb@4"],
    ("all-7g.80gb", "A100-SXM4-80GB"): ["7g.80gb@0"],
    ("all-balanced", "A100-SXM4-80GB"): ["1g.10gb@0", "1g.10gb@1", "2g.20gb@2", "3g.40gb@4"],
    ("all-1g.10gb", "H100-SXM5-80GB"): SEVEN_1G,
    ("all-2g.20gb", "H100-SXM5-80GB"): ["2g.20gb@0", "2g.20gb@2", "2g.20gb@4"],
    ("all-3g.40gb", "H100-SXM5-80GB"): ["3g.40gb@0", "3g.40gb@4"],
    ("all-7g.80gb", "H100-SXM5-80GB"): ["7g.80gb@0"],
    ("all-balanced", "H100-SXM5-80GB"): ["1g.10gb@0", "1g.10gb@1", "2g.20gb@2", "3g.40gb@4"],
    ("all-balanced", "A100-PCIE-80GB"): ["1g.10gb@0", "1g.10gb@1", "2g.20gb@2", "3g.40gb@4"],
}


@pytest.fixture(scope="module")
def standard() -> Any:
    return parse_mig_parted(STANDARD, "default-mig-parted-config.yaml")


def layout_names(node: Any, index: int = 0) -> list[str]:
    return [str(p) for p in mig_layouts(node)[index]]


@pytest.mark.parametrize(("config", "model"), sorted(EXPECTED))
def test_standard_configs_give_nvml_placements(standard: Any, config: str, model: str) -> None:
    gpu = catalog.get(model)
    assert gpu.mig is not None
    node = apply_mig_config(synthetic_node(gpu, "n", 4), standard, config)
    layouts = mig_layouts(node)
    assert sorted(layouts) == [0, 1, 2, 3]  # every GPU of the node, MIG mode on
    for index in range(4):
        assert layout_names(node, index) == EXPECTED[config, model]
        assert gpu.mig.layout_errors(layouts[index]) == []
    instances = node.gpus[0].mig_instances
    assert [m.gi_id for m in sorted(instances, key=lambda m: m.gi_id)] == list(range(1, len(instances) + 1))
    assert len({m.uuid for g in node.gpus for m in g.mig_instances}) == 4 * len(instances)


def test_creation_order_and_gi_ids_follow_mig_parted(standard: Any) -> None:
    node = apply_mig_config(synthetic_node(catalog.get("H100-SXM5-80GB"), "n", 1), standard, "all-balanced")
    by_gi = sorted(node.gpus[0].mig_instances, key=lambda m: m.gi_id)
    # largest first, each at the highest free start: 3g@4, then 2g@2, then 1g@1 and 1g@0
    assert [(m.profile, m.start) for m in by_gi] == [("3g.40gb", 4), ("2g.20gb", 2), ("1g.10gb", 1), ("1g.10gb", 0)]


def test_disabled_enabled_and_per_device_entries(standard: Any) -> None:
    gpu = catalog.get("A100-SXM4-80GB")
    off = apply_mig_config(synthetic_node(gpu, "n", 2), standard, "all-disabled")
    assert not any(g.mig_enabled for g in off.gpus) and mig_layouts(off) == {}
    empty = apply_mig_config(synthetic_node(gpu, "n", 2), standard, "all-enabled")
    assert mig_layouts(empty) == {0: (), 1: ()}
    custom = apply_mig_config(synthetic_node(gpu, "n", 6), standard, "custom")
    assert sorted(mig_layouts(custom)) == [0, 1]
    assert layout_names(custom, 1) == ["3g.40gb@0", "3g.40gb@4"]
    assert [g.mig_enabled for g in custom.gpus] == [True, True, False, False, False, False]  # 4, 5: untouched
    # a node that already had MIG on: an entry with mig-enabled false turns it off
    again = apply_mig_config(custom, standard, "all-disabled")
    assert mig_layouts(again) == {}


def test_device_ids_and_filters(standard: Any) -> None:
    h100 = synthetic_node(catalog.get("H100-SXM5-80GB"), "n", 1).gpus[0]
    assert gpu_device_id(h100) == DeviceId(0x2330, 0x10DE)
    assert str(DeviceId.parse("0x233010DE")) == "0x233010DE"
    # an explicit device ID overrides the table: the A100-40GB entry of all-1g.10gb now applies to an 80GB board
    node = synthetic_node(catalog.get("A100-SXM4-80GB"), "n", 1)
    forced = apply_mig_config(node, standard, "all-1g.10gb", device_ids={0: DeviceId(0x20B0, 0x10DE)})
    # (1g.10gb is the 1-slice profile on 80GB boards: four of them take the four highest starts)
    assert layout_names(forced) == ["1g.10gb@3", "1g.10gb@4", "1g.10gb@5", "1g.10gb@6"]
    # ... and a GPU whose device ID nobody knows cannot be matched against a filter
    l40s = synthetic_node(catalog.get("L40S"), "n", 1)
    with pytest.raises(
        InputError, match=r"all-1g.10gb\[0\]: GPU 0 \(NVIDIA L40S\): the GPU's PCI device ID is unknown"
    ):
        apply_mig_config(l40s, standard, "all-1g.10gb")


def test_static_slices_allocate_a_claim_for_each_profile(standard: Any) -> None:
    node = apply_mig_config(synthetic_node(catalog.get("H100-SXM5-80GB"), "node-a", 2), standard, "all-balanced")
    slices = node_resource_slices(node, mig_mode="static")
    names = sorted(d["name"] for s in slices for d in s["spec"].get("devices", []))
    assert names == sorted(
        f"gpu-{g}-mig-{p}" for g in (0, 1) for p in ("1g10gb-19-0", "1g10gb-19-1", "2g20gb-14-2", "3g40gb-9-4")
    )
    for profile in ("1g.10gb", "2g.20gb", "3g.40gb"):
        selector = {"cel": {"expression": f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"}}
        request = {"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com", "selectors": [selector]}}
        claim = {"metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": [request]}}}
        (allocation,) = allocate([claim], node="node-a", slices=slices, classes=device_classes())
        (result,) = allocation["devices"]["results"]
        assert result["device"].startswith("gpu-0-mig-" + profile.replace(".", ""))
    # three 3g.40gb claims do not fit two GPUs with one each
    selector = {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"}}
    request = {"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com", "selectors": [selector], "count": 3}}
    claim = {"metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {"requests": [request]}}}
    with pytest.raises(Unsatisfiable):
        allocate([claim], node="node-a", slices=slices, classes=device_classes())


BAD_CONFIGS = [
    ("version: v2\nmig-configs: {a: [{devices: all, mig-enabled: false}]}\n", r"x.yaml:1: version must be 'v1'"),
    ("version: v1\nmig-configs: {}\n", "mig-configs must be a non-empty mapping"),
    (
        "version: v1\nextra: 1\nmig-configs: {a: [{devices: all, mig-enabled: false}]}\n",
        r"x.yaml:2: unexpected field 'extra'",
    ),
    ("version: v1\nmig-configs:\n  a: []\n", r"x.yaml:3: mig-configs.a: at least one entry"),
    (
        "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n    - devices: all\n"
        "      mig-enable: true\n",
        r"x.yaml:7: mig-configs.a\[1\]: unexpected field 'mig-enable'",
    ),
    (
        "version: v1\nmig-configs:\n  a:\n    - mig-enabled: false\n",
        r"mig-configs.a\[0\]: missing required field 'devices'",
    ),
    (
        "version: v1\nmig-configs:\n  a:\n    - devices: some\n      mig-enabled: false\n",
        "devices must be 'all' or a list",
    ),
    (
        "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n",
        "missing required field 'mig-devices'",
    ),
    (
        "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: false\n"
        "      mig-devices: {1g.10gb: 1}\n",
        "MIG devices included when 'mig-enabled' is false",
    ),
    (
        "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
        "      mig-devices: {1g.10gb: 0}\n",
        "all counts are 0",
    ),
    (
        "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {10gb: 1}\n",
        r"x.yaml:6: mig-configs.a\[0\]: mig-devices: '10gb' is not a MIG profile",
    ),
    (
        "version: v1\nmig-configs:\n  a:\n    - devices: all\n      mig-enabled: true\n"
        "      mig-devices: {1g.10gb: -1}\n",
        "count of 1g.10gb must be an integer >= 0",
    ),
    (
        "version: v1\nmig-configs:\n  a:\n    - device-filter: 0x233010DE\n      devices: all\n"
        "      mig-enabled: false\n",
        r"x.yaml:4: .*quote the IDs",
    ),
    (
        "version: v1\nmig-configs:\n  a:\n    - device-filter: '0x2330:0x10DE'\n      devices: all\n"
        "      mig-enabled: false\n",
        "subsystem filters are not supported",
    ),
    (
        "version: v1\nmig-configs:\n  a: [{devices: all, mig-enabled: false}]\n  a: []\n",
        r"x.yaml:4: invalid YAML: found duplicate key .a.",
    ),
    ("- just a list\n", "must be a mapping"),
]


@pytest.mark.parametrize(("text", "message"), BAD_CONFIGS)
def test_bad_configs_are_refused_naming_where(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_mig_parted(text, "x.yaml")


APPLY_ERRORS = [
    (
        "A100-SXM4-40GB",
        {"3g.40gb": 1},
        r"c.yaml:4: mig-configs.c\[0\]: GPU 0 \(NVIDIA A100-SXM4-40GB\): MIG profile '3g.40gb'",
    ),
    ("A100-SXM4-80GB", {"1g.10gb": 8}, r"8 x 1g.10gb, at most 7; 8 compute slices, the GPU has 7"),
    ("A100-SXM4-80GB", {"4g.40gb": 1, "2g.20gb": 2}, "8 compute slices"),
    (
        "A100-SXM4-80GB",
        {"1g.10gb+me": 1, "1g.20gb": 4},
        r"no start of 1g.20gb .* 1g.10gb\+me@6 \(memory slices 6\); free memory slices: 7",
    ),
    (
        "A100-SXM4-40GB",
        {"3g.20gb": 2, "1g.5gb": 1},
        r"3g.20gb@0 \(memory slices 0-3\), 3g.20gb@4 \(memory slices 4-7\)",
    ),
    ("L40S", {"1g.10gb": 1}, r"GPU 0 \(NVIDIA L40S\) is not MIG-capable"),
    ("A100-SXM4-80GB", {"1c.3g.40gb": 1}, "compute-instance profiles smaller than their GPU instance are not modelled"),
]


@pytest.mark.parametrize(("model", "devices", "message"), APPLY_ERRORS)
def test_configs_that_do_not_fit_the_gpu(model: str, devices: dict[str, int], message: str) -> None:
    body = ", ".join(f'"{p}": {n}' for p, n in devices.items())
    text = (
        f"version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {{{body}}}\n"
    )
    config = parse_mig_parted(text, "c.yaml")
    with pytest.raises(InputError, match=message):
        apply_mig_config(synthetic_node(catalog.get(model), "n", 1), config, "c")


def test_compute_instance_prefix_equal_to_the_gi_is_the_gi_profile() -> None:
    geometry = catalog.get("A100-SXM4-80GB").mig
    assert geometry is not None
    assert [str(p) for p in nvml_placements(geometry, [("3c.3g.40gb", 2)])] == ["3g.40gb@0", "3g.40gb@4"]


def test_unknown_config_name_and_files(tmp_path: Path, standard: Any) -> None:
    node = synthetic_node(catalog.get("H100-SXM5-80GB"), "n", 1)
    with pytest.raises(KeyError, match="no mig-config 'all-1g.5gbb' .*all-1g.5gb"):
        apply_mig_config(node, standard, "all-1g.5gbb")
    with pytest.raises(InputError, match="cannot read mig-parted config"):
        load_mig_parted(tmp_path / "missing.yaml")
    # the GPU Operator's ConfigMap form
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "default-mig-parted-config"}}
    path = tmp_path / "cm.yaml"
    path.write_text(yaml.safe_dump({**config_map, "data": {"config.yaml": STANDARD}}))
    assert "all-balanced" in load_mig_parted(path).names()


def test_a_simulator_pool_selects_a_mig_parted_config(tmp_path: Path) -> None:
    (tmp_path / "mig.yaml").write_text(STANDARD)
    spec = tmp_path / "cluster.yaml"
    spec.write_text(
        "pools:\n"
        "  - {name: h100, count: 2, gpu: H100-SXM5-80GB, gpus: 4, mig_config: {file: mig.yaml, name: all-balanced}}\n"
        "  - {name: a100, count: 1, gpu: A100-SXM4-80GB, gpus: 2, mig_config: {file: mig.yaml, name: all-disabled}}\n"
    )
    cluster = load_cluster(spec)
    h100 = [n for n in cluster.nodes if n.pool == "h100"]
    assert len(h100) == 2 and all(n.mig == "static" for n in h100)
    assert [str(p) for p in h100[0].layout] == ["1g.10gb@0", "1g.10gb@1", "2g.20gb@2", "3g.40gb@4"]
    assert [n.mig for n in cluster.nodes if n.pool == "a100"] == ["none"]


@pytest.mark.parametrize(
    ("pool", "message"),
    [
        (
            "{gpu: A100-SXM4-80GB, gpus: 4, mig_config: {file: mig.yaml, name: custom}}",
            "does not give every GPU the same",
        ),
        ("{gpu: A100-SXM4-80GB, gpus: 4, mig: dynamic, mig_config: {file: mig.yaml, name: custom}}", "not both"),
        (
            "{gpu: A100-SXM4-80GB, gpus: 4, mig_config: {file: mig.yaml}}",
            r"mig_config takes \{file: PATH, name: CONFIG\}",
        ),
        ("{gpu: A100-SXM4-80GB, gpus: 4, mig_config: {file: mig.yaml, name: all-3g.20gb}}", "MIG profile '3g.20gb'"),
    ],
)
def test_simulator_pool_errors_name_the_pool(tmp_path: Path, pool: str, message: str) -> None:
    (tmp_path / "mig.yaml").write_text(STANDARD)
    spec = tmp_path / "cluster.yaml"
    spec.write_text(f"pools:\n  - {pool}\n")
    with pytest.raises(TraceError, match=message) as info:
        load_cluster(spec)
    assert "pools[0]" in str(info.value) and info.value.line == 2


def test_public_face_is_sorted_and_documented() -> None:
    import inspect

    import dra.gpus.mig_parted as module

    assert module.__all__ == sorted(module.__all__)
    for public in module.__all__:
        obj = getattr(module, public)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert obj.__doc__ and obj.__doc__.strip(), public


GEOMETRIES = sorted({m.mig.name: m.mig for m in catalog.all_models() if m.mig is not None}.items())


@settings(max_examples=300, deadline=None)
@given(
    geometry=st.sampled_from([g for _, g in GEOMETRIES]),
    picks=st.lists(st.tuples(st.integers(0, 6), st.integers(1, 4)), min_size=1, max_size=5),
)
def test_accepted_layouts_never_share_a_memory_slice(geometry: Any, picks: list[tuple[int, int]]) -> None:
    counts: dict[str, int] = {}
    for which, n in picks:
        name = geometry.profiles[which % len(geometry.profiles)].name  # the A30 has 5 profiles, the others 7
        counts[name] = counts.get(name, 0) + n
    try:
        layout = nvml_placements(geometry, list(counts.items()))
    except ValueError as exc:
        # refused only when no valid layout of these profiles exists at all
        assert geometry.place([geometry.profile(p) for p, n in counts.items() for _ in range(n)]) is None, exc
        return
    held = [s for pl in layout for s in pl.memory_slices]
    assert len(held) == len(set(held)) and all(0 <= s < geometry.memory_slices for s in held)
    assert all(pl.start in pl.profile.starts for pl in layout)
    assert geometry.layout_errors(layout) == []
    assert sorted(pl.profile.name for pl in layout) == sorted(p for p, n in counts.items() for _ in range(n))


def test_read_by_the_one_strict_yaml_reader() -> None:
    """Timestamps stay text (a config named by date is that name), alias expansion is bounded, one document only,
    and lines survive anchors and merge keys."""
    dated = parse_mig_parted("version: v1\nmig-configs:\n  2024-01-01:\n    - devices: all\n      mig-enabled: false\n")
    assert dated.names() == ["2024-01-01"]
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in zip("abcdef", "bcdefg", strict=True)
    )
    with pytest.raises(InputError, match="aliases expand to more than"):
        parse_mig_parted(bomb, "x.yaml")
    with pytest.raises(InputError, match=r"x.yaml:3: invalid YAML: expected a single document"):
        parse_mig_parted("version: v1\n---\nversion: v1\n", "x.yaml")
    shared = (
        "version: v1\n"
        "mig-configs:\n"
        "  ok:\n"
        "    - <<: &base {devices: all, mig-enabled: true}\n"
        "      mig-devices: {}\n"
        "  bad:\n"
        "    - <<: *base\n"
        "      mig-devices: {1g.5gb: many}\n"
    )
    assert parse_mig_parted(shared.replace("many", "7")).names() == ["bad", "ok"]
    with pytest.raises(InputError, match=r"x.yaml:8: .*integer"):
        parse_mig_parted(shared, "x.yaml")
