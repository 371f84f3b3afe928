"""The recommendation arithmetic: properties (vram >= peak x (1 + headroom), monotone in the peak, no recommendation
below the sample floor, the device always holds it) and the device mapping on the catalog."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender import (
    ContainerUsage,
    Settings,
    fitting_device,
    format_bytes,
    parse_duration,
    parse_statistic,
    peak_of,
    recommend,
    vram_for,
)

MIB = 1 << 20
peaks = st.integers(min_value=0, max_value=200_000 * MIB)
headrooms = st.floats(min_value=0, max_value=2, allow_nan=False)


@given(peaks, headrooms)
def test_vram_covers_peak_with_headroom(peak: int, headroom: float) -> None:
    vram = vram_for(peak, headroom)
    assert vram >= peak * (1 + headroom) - 1e-6 * peak and vram >= peak and vram % MIB == 0


@given(peaks, peaks, headrooms)
def test_vram_is_monotone_in_the_peak(a: int, b: int, headroom: float) -> None:
    lo, hi = sorted((a, b))
    assert vram_for(lo, headroom) <= vram_for(hi, headroom)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=80_000), min_size=1, max_size=400),
    st.integers(min_value=1, max_value=300),
    st.sampled_from([None, 0.5, 0.99, 0.999]),
)
def test_recommend_respects_the_floor_and_covers_the_statistic(samples: list[int], floor: int, q: float | None) -> None:
    usage = ContainerUsage()
    usage.add(np.array(samples, dtype=np.float64), pod="p", model_name="NVIDIA H100 80GB HBM3")
    result = recommend("c", usage, Settings(min_samples=floor, quantile=q))
    if len(samples) < floor:
        assert isinstance(result, str) and result.startswith("not enough samples")
        return
    assert not isinstance(result, str)
    peak = peak_of(np.array(samples, dtype=np.float64), q)
    assert peak in samples and result.peak_bytes == peak * MIB
    device = 81_559 * MIB  # the H100's memory: the cap when peak x 1.2 would pass it
    assert result.vram_bytes >= min(result.peak_bytes * 1.2 - 1, device) and result.vram_bytes >= result.peak_bytes
    assert result.vram_bytes <= max(device, result.peak_bytes * 1.2 + MIB)
    assert result.samples == len(samples) and not result.pressure


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=81_559 * MIB))
def test_the_device_holds_the_recommendation(vram: int) -> None:
    text = fitting_device(vram, "NVIDIA H100 80GB HBM3")
    from dra.gpus import get

    h100 = get("H100-SXM5-80GB")
    assert h100.mig is not None
    if text.startswith("MIG "):
        profile = h100.mig.profile(text.split()[1])
        assert profile.memory_bytes >= vram
        smaller = [p for p in h100.mig.base_profiles if p.memory_mib < profile.memory_mib]
        assert all(p.memory_bytes < vram for p in smaller)
    else:
        assert vram > 40448 * MIB  # past the 4g.40gb: a share of the whole GPU


def test_the_device_per_model() -> None:
    assert fitting_device(6 * 1024 * MIB, "NVIDIA A100-SXM4-40GB") == "MIG 1g.10gb of NVIDIA A100-SXM4-40GB"
    assert fitting_device(6 * 1024 * MIB, "NVIDIA L40S") == "shared NVIDIA L40S with 6Gi"
    assert fitting_device(46068 * MIB, "NVIDIA L40S") == "whole NVIDIA L40S"
    assert fitting_device(50 * 1024 * MIB, "NVIDIA L40S").startswith("whole NVIDIA L40S (needs more")
    assert "not in the catalog" in fitting_device(MIB, "Quantum GPU 9000")


def test_pressure_after_a_shrink_grows_and_restarts_count() -> None:
    near_full = ContainerUsage()
    near_full.add(np.full(200, 9900.0), pod="p", granted_mib=9984, mig_profile="1g.10gb",
                  model_name="NVIDIA H100 80GB HBM3")  # fmt: skip
    grown = recommend("c", near_full, Settings())
    assert not isinstance(grown, str) and grown.pressure and grown.vram_bytes >= int(9984 * 1.2) * MIB
    assert grown.device == "MIG 1g.20gb of NVIDIA H100 80GB HBM3"
    # Restarts after a shrink: pressure, sized for the max rather than p99.
    restarted = ContainerUsage()
    restarted.add(np.array([1000.0] * 199 + [4000.0]), pod="p", granted_mib=9984, mig_profile="1g.10gb")
    restarted.restarts = 2
    r = recommend("c", restarted, Settings())
    assert not isinstance(r, str) and r.pressure and r.statistic == "max" and r.peak_bytes == 4000 * MIB
    # Restarts on a whole GPU are not a shrink's pressure; the full GPU used to 96 % is not a shrink either.
    whole = ContainerUsage()
    whole.add(np.full(200, 78000.0), pod="p", granted_mib=81559, model_name="NVIDIA H100 80GB HBM3")
    whole.restarts = 3
    w = recommend("c", whole, Settings())
    assert not isinstance(w, str) and not w.pressure


def test_pressure_grows_from_the_framebuffer_that_filled_not_the_largest_one_seen() -> None:
    # The owner's first pod ran on a whole H100 at 5 GiB, the next on a MIG 1g.10gb that it filled: the ceiling
    # hit is the MIG's 9984 MiB, so the next size is 9984 MiB x 1.2 (a 20 GB profile), not the whole H100.
    usage = ContainerUsage()
    usage.add(np.full(200, 5 * 1024.0), pod="a", granted_mib=81_559, model_name="NVIDIA H100 80GB HBM3")
    usage.add(np.full(200, 9984.0), pod="b", granted_mib=9984, mig_profile="1g.10gb",
              model_name="NVIDIA H100 80GB HBM3")  # fmt: skip
    r = recommend("c", usage, Settings())
    assert not isinstance(r, str) and r.pressure
    assert r.vram_bytes == vram_for(9984 * MIB, 0.2) == 11_981 * MIB
    assert r.device == "MIG 1g.20gb of NVIDIA H100 80GB HBM3"
    assert r.granted_bytes == 81_559 * MIB  # the report still says the largest framebuffer the pods ran with


def test_headroom_never_rules_out_the_gpu_the_pods_ran_on() -> None:
    usage = ContainerUsage()
    usage.add(np.full(200, 75_000.0), pod="p", granted_mib=81_559, model_name="NVIDIA H100 80GB HBM3")
    r = recommend("c", usage, Settings())
    assert not isinstance(r, str)
    assert r.peak_bytes == 75_000 * MIB and r.vram_bytes == 81_559 * MIB  # not 90,000 MiB, which no H100 has
    assert r.device == "whole NVIDIA H100 80GB HBM3"


def test_the_window_prints_as_the_policy_facts_and_the_crd_read_it() -> None:
    usage = ContainerUsage()
    usage.add(np.full(200, 1000.0), pod="p")
    r = recommend("c", usage, Settings(window_seconds=5400))
    assert not isinstance(r, str)
    assert r.status_entry()["window"] == "1h30m"  # once "90m" here while the policy facts said "1h30m"
    assert parse_duration(str(r.status_entry()["window"])) == 5400


def test_parsing() -> None:
    assert parse_duration("168h") == parse_duration("7d") == parse_duration("1w") == 604800
    assert parse_duration(" 1.5h ") == parse_duration("+90m") == 5400
    assert parse_duration("1h30m") == 5400 and parse_duration("30s") == 30
    for bad in ("", "7", "h", "1h 30m", "-1h", "0s"):
        with pytest.raises(ValueError):
            parse_duration(bad)
    assert parse_statistic("max") is None and parse_statistic("p99") == 0.99 and parse_statistic("p99.9") == 0.999
    for bad in ("p100", "p0", "q99", "99"):
        with pytest.raises(ValueError):
            parse_statistic(bad)
    assert [format_bytes(n) for n in (6 << 30, 9984 * MIB, 1500)] == ["6Gi", "9984Mi", "1500"]
