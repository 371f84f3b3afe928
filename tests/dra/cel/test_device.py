"""The DRA `device` variable: domains, defaults, types, errors; and the selector cache."""

from __future__ import annotations

import pytest

from dra.cel import Environment, SelectorCache, device_key, device_value
from dra.cel.semver import Semver
from dra.errors import CelCompileError, CelRuntimeError
from dra.quantity import Quantity

DEVICE = {
    "name": "gpu-0",
    "attributes": {
        "productName": {"string": "NVIDIA A100-SXM4-80GB"},
        "index": {"int": 0},
        "mig": {"bool": False},
        "driverVersion": {"version": "550.54.15"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
        "ids": {"ints": [1, 2]},
    },
    "capacity": {"memory": {"value": "80Gi"}, "example.com/slots": {"value": "4"}},
}


def test_domains_and_types() -> None:
    v = device_value("gpu.nvidia.com", DEVICE)
    assert v["driver"] == "gpu.nvidia.com"
    nvidia = v["attributes"]["gpu.nvidia.com"]
    assert nvidia["productName"] == "NVIDIA A100-SXM4-80GB" and nvidia["index"] == 0 and nvidia["mig"] is False
    assert nvidia["driverVersion"] == Semver.parse("550.54.15") and nvidia["ids"] == [1, 2]
    assert v["attributes"]["resource.kubernetes.io"] == {"pcieRoot": "pci0000:00"}
    assert v["capacity"]["gpu.nvidia.com"]["memory"] == Quantity.parse("80Gi")
    assert v["capacity"]["example.com"]["slots"] == Quantity.parse("4")
    assert v["allowMultipleAllocations"] is False
    assert v["attributes"]["unknown.example.com"] == {}


def test_model_device_is_accepted() -> None:
    from dra.model import Device

    assert device_value("d", Device.from_k8s(DEVICE)) == device_value("d", DEVICE)


@pytest.mark.parametrize(
    ("attr", "message"),
    [
        ({"int": 1, "string": "x"}, "exactly one"),
        ({"version": "v1"}, "invalid version"),
        ({"int": "1"}, "int expected"),
    ],
)
def test_bad_attributes(attr: dict[str, object], message: str) -> None:
    with pytest.raises(CelRuntimeError, match=message):
        device_value("d", {"attributes": {"a": attr}})


def test_selector_errors_and_absent_domains() -> None:
    env = Environment.dra_selector()
    device = {"device": device_value("gpu.nvidia.com", DEVICE)}
    assert env.compile('device.attributes["x.example.com"].size() == 0').matches(device) is True
    with pytest.raises(CelRuntimeError, match="no such key: nope"):
        env.compile('device.attributes["gpu.nvidia.com"].nope == 1').matches(device)
    with pytest.raises(CelRuntimeError, match="could not be converted to bool"):
        env.compile('device.attributes["gpu.nvidia.com"].index').matches(device)
    with pytest.raises(CelCompileError, match="not string"):
        env.compile("device.driver")


def test_cache_evaluates_identical_devices_once() -> None:
    env = Environment.dra_selector()
    program = env.compile('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0')
    cache = SelectorCache()
    a = device_value("gpu.nvidia.com", DEVICE)
    b = device_value("gpu.nvidia.com", {**DEVICE, "name": "gpu-1"})  # only the name differs
    c = device_value("gpu.nvidia.com", {**DEVICE, "capacity": {"memory": {"value": "20Gi"}}})
    assert device_key(a) == device_key(b) != device_key(c)
    assert cache.evaluate(program, device_key(a), a) is True
    assert cache.evaluate(program, device_key(b), b) is True
    assert cache.evaluate(program, device_key(c), c) is False
    assert (cache.hits, cache.misses, len(cache)) == (1, 2, 2)
    assert cache.key(a) == cache.key(b) != cache.key(c)


def test_cache_keeps_bool_int_and_float_apart() -> None:
    one = device_value("d", {"attributes": {"x": {"int": 1}}})
    true = device_value("d", {"attributes": {"x": {"bool": True}}})
    assert device_key(one) != device_key(true)


def test_cache_replays_errors() -> None:
    program = Environment.dra_selector().compile('device.attributes["d"].missing == 1')
    cache = SelectorCache(max_entries=1)
    value = device_value("d", {})
    for _ in range(2):
        with pytest.raises(CelRuntimeError, match="no such key"):
            cache.evaluate(program, device_key(value), value)
    assert cache.hits == 1
