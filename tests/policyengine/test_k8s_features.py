"""Issue 26: `gpudra translate --k8s-version` warns where a claim needs a feature the target version does not
serve by default."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudra.commands.translate import translate_file
from policyengine.k8s_features import claim_features, parse_minor, unserved_features

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHARED = {
    "devices": {
        "requests": [
            {
                "name": "r",
                "firstAvailable": [
                    {
                        "name": "shared",
                        "deviceClassName": "gpu.nvidia.com",
                        "capacity": {"requests": {"memory": "8Gi"}},
                    },
                    {"name": "whole", "deviceClassName": "gpu.nvidia.com"},
                ],
            }
        ]
    }
}
WHOLE = {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}]}}


@pytest.mark.parametrize(("text", "minor"), [("1.35", 35), ("v1.36.2", 36), ("1.37.0-alpha.1", 37)])
def test_versions_are_read(text: str, minor: int) -> None:
    assert parse_minor(text) == minor


@pytest.mark.parametrize("text", ["1", "2.35", "banana", "1.x"])
def test_other_text_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="--k8s-version"):
        parse_minor(text)


def test_features_of_a_claim() -> None:
    assert claim_features(SHARED) == {"resource.k8s.io/v1", "firstAvailable", "capacity"}
    assert claim_features(WHOLE) == {"resource.k8s.io/v1"}


def test_consumable_capacity_is_flagged_before_1_36_only() -> None:
    assert [w for w in unserved_features(SHARED, 35) if "KEP-5075" in w]
    assert unserved_features(SHARED, 36) == [] and unserved_features(WHOLE, 34) == []
    assert any("resource.k8s.io/v1" in w for w in unserved_features(WHOLE, 33))


def test_translate_warns_for_the_target_version() -> None:
    old = translate_file(EXAMPLES / "pod-legacy-vram.yaml", k8s_version="1.35")
    assert old.code == 0 and "needs DRAConsumableCapacity, KEP-5075" in old.stderr and "(target 1.35)" in old.stderr
    new = translate_file(EXAMPLES / "pod-legacy-vram.yaml", k8s_version="1.37")
    assert new.code == 0 and "KEP-5075" not in new.stderr and new.stdout == old.stdout
    bad = translate_file(EXAMPLES / "pod-legacy-vram.yaml", k8s_version="banana")
    assert bad.code == 2 and "--k8s-version" in bad.stderr


def test_a_selector_on_shareable_devices_needs_consumable_capacity_too() -> None:
    """`device.allowMultipleAllocations` is a field of DRAConsumableCapacity: shared-gpu's share selects on it."""
    share = {"name": "shared", "deviceClassName": "gpu.nvidia.com", "count": 1,
             "selectors": [{"cel": {"expression": "device.allowMultipleAllocations"}}]}  # fmt: skip
    spec = {"devices": {"requests": [{"name": "c", "firstAvailable": [share]}]}}
    assert claim_features(spec) == {"resource.k8s.io/v1", "firstAvailable", "capacity"}
    assert unserved_features(spec, 36) == [] and len(unserved_features(spec, 35)) == 1
