"""MIG geometry: the placement tables, the documented layout rules, and properties of the layout checker."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dra.gpus import Placement, catalog
from dra.gpus.mig import MigGeometry

A100 = catalog.get("A100-SXM4-80GB").mig
H100 = catalog.get("H100-SXM5-80GB").mig
assert A100 is not None and H100 is not None
GEOMETRIES = sorted({m.mig.name: m.mig for m in catalog.all_models() if m.mig is not None}.items())


def test_a100_80gb_profile_table() -> None:
    rows = {p.name: (p.gi_profile_id, p.compute_slices, p.memory_slices, p.starts, p.max_count) for p in A100.profiles}
    assert rows == {
        "1g.10gb": (19, 1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
        "1g.10gb+me": (20, 1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
        "1g.20gb": (15, 1, 2, (0, 2, 4, 6), 4),
        "2g.20gb": (14, 2, 2, (0, 2, 4), 3),
        "3g.40gb": (9, 3, 4, (0, 4), 2),
        "4g.40gb": (5, 4, 4, (0,), 1),
        "7g.80gb": (0, 7, 8, (0,), 1),
    }


@pytest.mark.parametrize(
    ("model", "names"),
    [
        ("A100-SXM4-40GB", ["1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]),
        ("H100-NVL-94GB", ["1g.12gb", "1g.12gb+me", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"]),
        ("H200-SXM5-141GB", ["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"]),
        ("B200-SXM6-180GB", ["1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"]),
    ],
)
def test_profile_names_per_memory_size(model: str, names: list[str]) -> None:
    geometry = catalog.get(model).mig
    assert geometry is not None
    assert [p.name for p in geometry.profiles] == names
    assert [p.gi_profile_id for p in geometry.profiles] == [19, 20, 15, 14, 9, 5, 0]


def test_documented_layouts() -> None:
    assert A100.is_valid_layout([("4g.40gb", 0), ("3g.40gb", 4)])
    assert A100.is_valid_layout([("3g.40gb", 0), ("3g.40gb", 4)])
    assert A100.is_valid_layout([("4g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)])
    assert A100.is_valid_layout([("1g.20gb", s) for s in (0, 2, 4, 6)])
    assert not A100.is_valid_layout([("4g.40gb", 0), ("4g.40gb", 0)])
    # 4g can only start at 0, so a second 4g has nowhere to go
    assert [pl.start for pl in A100.addable([("4g.40gb", 0)], "4g.40gb")] == []
    assert [str(pl) for pl in A100.addable([("4g.40gb", 0)], "3g.40gb")] == ["3g.40gb@4"]


def test_seven_1g_leave_memory_slice_7_idle() -> None:
    layout = [("1g.10gb", s) for s in range(7)]
    assert A100.is_valid_layout(layout)
    assert A100.free_memory_runs(layout) == [(7, 1)]
    assert A100.free_compute_slices(layout) == 0
    assert A100.addable(layout, "1g.10gb") == []


def test_layout_errors_say_why() -> None:
    errors = A100.layout_errors([("4g.40gb", 0), ("3g.40gb", 0)])
    assert any("memory slice 0 is already used by 4g.40gb@0" in e for e in errors)
    assert A100.layout_errors([("4g.40gb", 4)]) == ["4g.40gb@4: start 4 is not a valid start (valid: (0,))"]
    assert any("at most 7" in e for e in A100.layout_errors([("1g.10gb", s % 7) for s in range(8)]))
    assert any("+me" in e for e in A100.layout_errors([("1g.10gb+me", 0), ("1g.10gb+me", 1)]))


def test_unknown_profile_and_bad_placement() -> None:
    with pytest.raises(KeyError, match="5g.50gb"):
        A100.profile("5g.50gb")
    with pytest.raises(ValueError, match="valid starts"):
        A100.placement("3g.40gb", 2)
    assert A100.profile("MIG 3g.40gb").gi_profile_id == 9
    assert A100.profile(15).name == "1g.20gb"


def test_smallest_profile_for_vram() -> None:
    gib = 1024**3
    assert A100.smallest_profile_for(5 * gib).name == "1g.10gb"  # type: ignore[union-attr]
    assert A100.smallest_profile_for(15 * gib).name == "1g.20gb"  # type: ignore[union-attr]
    assert A100.smallest_profile_for(15 * gib, compute_slices=2).name == "2g.20gb"  # type: ignore[union-attr]
    assert A100.smallest_profile_for(30 * gib).name == "3g.40gb"  # type: ignore[union-attr]
    assert A100.smallest_profile_for(70 * gib).name == "7g.80gb"  # type: ignore[union-attr]
    assert A100.smallest_profile_for(90 * gib) is None
    assert A100.smallest_profile_for(1, media_extensions=True).name == "1g.10gb"  # type: ignore[union-attr]


def test_enumerate_layouts_counts() -> None:
    every = A100.enumerate_layouts()
    assert () in every
    assert len(every) == len(set(every))
    assert all(A100.is_valid_layout(layout) for layout in every)
    maximal = A100.enumerate_layouts(maximal_only=True)
    assert all(layout in every for layout in maximal)
    assert (Placement(0, A100.profile("7g.80gb")),) in maximal
    # nothing can be added to a maximal layout
    for layout in maximal:
        assert not any(A100.is_valid_layout([*layout, pl]) for pl in A100.placements() if pl not in layout)


def test_max_capacities_is_the_7g_profile_on_a100() -> None:
    caps = A100.max_capacities()
    assert caps["multiprocessors"] == 98 and caps["memory"] == 80384 * 1024 * 1024
    assert caps["ofaEngines"] == 1 and caps["jpegEngines"] == 1


def test_device_name_part() -> None:
    assert A100.profile("1g.10gb+me").device_name_part == "1g10gb-me"
    assert A100.profile("3g.40gb").device_name_part == "3g40gb"


def _layouts(geometry: MigGeometry) -> st.SearchStrategy[list[Placement]]:
    return st.lists(st.sampled_from(geometry.placements()), max_size=9)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_accepted_layouts_never_overlap_and_fit_the_compute_slices(data: st.DataObject) -> None:
    _, geometry = data.draw(st.sampled_from(GEOMETRIES))
    layout = data.draw(_layouts(geometry))
    if geometry.is_valid_layout(layout):
        used = [s for pl in layout for s in pl.memory_slices]
        assert len(used) == len(set(used))
        assert all(0 <= s < geometry.memory_slices for s in used)
        assert sum(pl.profile.compute_slices for pl in layout) <= geometry.compute_slices
        for pl in layout:
            assert sum(1 for other in layout if other.profile.name == pl.profile.name) <= pl.profile.max_count
        runs = geometry.free_memory_runs(layout)
        assert sum(length for _, length in runs) == geometry.memory_slices - len(used)
    else:
        assert geometry.layout_errors(layout)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_valid_layouts_stay_valid_when_a_placement_is_removed(data: st.DataObject) -> None:
    _, geometry = data.draw(st.sampled_from(GEOMETRIES))
    layout = data.draw(_layouts(geometry))
    if geometry.is_valid_layout(layout) and layout:
        k = data.draw(st.integers(0, len(layout) - 1))
        assert geometry.is_valid_layout(layout[:k] + layout[k + 1 :])


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_addable_agrees_with_the_checker(data: st.DataObject) -> None:
    _, geometry = data.draw(st.sampled_from(GEOMETRIES))
    layout = data.draw(_layouts(geometry))
    if not geometry.is_valid_layout(layout):
        return
    profile = data.draw(st.sampled_from(geometry.profiles))
    addable = {pl.start for pl in geometry.addable(layout, profile.name)}
    for start in profile.starts:
        assert (start in addable) == geometry.is_valid_layout([*layout, Placement(start, profile)])


def test_place_puts_the_largest_first_at_the_lowest_free_start() -> None:
    p = A100.profile
    layout = A100.place([p("1g.10gb"), p("3g.40gb"), p("2g.20gb")])
    assert layout is not None and [str(pl) for pl in layout] == ["3g.40gb@0", "2g.20gb@4", "1g.10gb@6"]
    assert A100.is_valid_layout(layout)
    assert A100.place([p("1g.10gb")] * 7) is not None
    assert A100.place([p("1g.10gb")] * 8) is None  # 8 compute slices
    assert A100.place([p("4g.40gb"), p("4g.40gb")]) is None  # 4g only starts at 0
    assert A100.place([p("3g.40gb"), p("3g.40gb"), p("1g.10gb")]) is None  # 9 memory slices
    assert A100.place([p("1g.10gb+me"), p("1g.10gb+me")]) is None  # one media-extension instance at most
    assert A100.place([]) == ()


def test_base_profiles_leave_out_media_extensions() -> None:
    assert [p.name for p in A100.base_profiles] == [p.name for p in A100.profiles if "+me" not in p.name]
    assert A100.base_profiles and all(not p.media_extensions for p in A100.base_profiles)
    assert A100.profile("3g.40gb").compute_milli == 428 and A100.profile("7g.80gb").compute_milli == 1000
