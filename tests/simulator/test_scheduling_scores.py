"""kube-scheduler's integer score arithmetic, checked against the expected values of its own Go tests
(k8s.io/kubernetes@v1.37.2 pkg/scheduler/framework/plugins/noderesources/*_test.go, helper/normalize_score_test.go)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from simulator.scheduling.scores import (
    balanced_allocation,
    broken_linear,
    default_normalize,
    go_div,
    least_allocated,
    most_allocated,
    prioritized_list_score,
    requested_to_capacity_ratio,
)
from simulator.scheduling.selection import num_feasible_nodes_to_find

W = [1, 1]


def test_least_allocated_matches_the_go_tests() -> None:
    # least_allocated_test.go "nothing scheduled, resources requested, differently sized nodes": 37 and 50
    assert least_allocated([3000, 5000], [4000, 10000], W) == 37
    assert least_allocated([3000, 5000], [6000, 10000], W) == 50
    assert least_allocated([5000, 0], [4000, 10000], W) == 50  # over capacity scores 0 for that resource


def test_most_allocated_matches_the_go_formula() -> None:
    # most_allocated_test.go "nothing scheduled, resources requested, differently sized nodes": 62 and 50
    assert most_allocated([3000, 5000], [4000, 10000], W) == 62
    assert most_allocated([3000, 5000], [6000, 10000], W) == 50
    assert most_allocated([9000, 5000], [6000, 10000], [2, 1]) == (100 * 2 + 50) // 3  # capped at capacity


def test_balanced_allocation_matches_the_go_tests() -> None:
    # balanced_allocation_test.go: 68 / 75, 73 / 74, 62 / 62 (1.37's with-pod minus without-pod form)
    assert balanced_allocation([3000, 5000], [0, 0], [4000, 10000]) == 68
    assert balanced_allocation([3000, 5000], [0, 0], [6000, 10000]) == 75
    assert balanced_allocation([6000, 5000], [3000, 0], [10000, 20000]) == 73
    assert balanced_allocation([6000, 10000], [3000, 5000], [10000, 20000]) == 74
    assert balanced_allocation([6000, 0], [3000, 0], [6000, 10000]) == 62
    assert balanced_allocation([6000, 5000], [3000, 5000], [6000, 10000]) == 62


def test_go_division_truncates_toward_zero() -> None:
    assert go_div(-25, 2) == -12 and go_div(25, 2) == 12 and go_div(-1, 2) == 0
    # the most a pod can unbalance an idle node (CPU to 100 %, memory untouched): 50 + (50 + 50 - 100) / 2
    assert balanced_allocation([10000, 0], [0, 0], [10000, 10000]) == 50


@given(st.integers(-(10**6), 10**6), st.integers(1, 1000))
def test_go_division_is_truncation(a: int, b: int) -> None:
    assert go_div(a, b) == int(a / b)


def test_requested_to_capacity_ratio_follows_the_shape() -> None:
    shape = [(0, 0), (100, 10)]  # bin packing: score rises with utilisation
    assert broken_linear([(0, 0), (100, 100)], 37) == 37
    # Go's math.Round rounds half away from zero (62.5 -> 63), unlike Python's round
    assert requested_to_capacity_ratio([3000, 5000], [4000, 10000], W, shape) == 63
    assert requested_to_capacity_ratio([0, 0], [4000, 10000], W, shape) == 0  # resources scoring 0 are left out


def test_default_normalize_scales_to_100_with_integer_division() -> None:
    assert default_normalize({"a": 8, "b": 1, "c": 0}) == {"a": 100, "b": 12, "c": 0}
    assert default_normalize({"a": 2, "b": 0}, reverse=True) == {"a": 0, "b": 100}
    assert default_normalize({"a": 0, "b": 0}, reverse=True) == {"a": 100, "b": 100}


def test_prioritized_list_score_is_8_minus_the_chosen_index() -> None:
    requests = [
        {"name": "main", "firstAvailable": [{"name": "mig"}, {"name": "shared"}, {"name": "whole"}]},
        {"name": "exact", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
    ]
    assert prioritized_list_score(requests, [{"request": "main/mig"}, {"request": "exact"}]) == 8
    assert prioritized_list_score(requests, [{"request": "main/whole"}]) == 6
    assert prioritized_list_score(requests, [{"request": "exact"}]) == 0


def test_percentage_of_nodes_to_score_is_adaptive_above_100_nodes() -> None:
    assert num_feasible_nodes_to_find(0, 99) == 99
    assert num_feasible_nodes_to_find(0, 1523) == 1523 * 38 // 100  # 50 - 1523/125 = 38 %
    assert num_feasible_nodes_to_find(0, 6000) == 300  # the 5 % floor
    assert num_feasible_nodes_to_find(0, 150) == 100  # never fewer than 100
    assert num_feasible_nodes_to_find(10, 5000) == 500


@given(
    st.sampled_from([0, 1000, 64000, 96000]),
    st.sampled_from([0, 1024, 262144]),
    st.integers(-100, 96000),
    st.integers(-100, 262144),
    st.integers(0, 70000),
    st.integers(0, 300000),
    st.booleans(),
)
def test_the_engines_unrolled_scores_equal_the_plugin_formulas(
    cap_cpu: int, cap_mem: int, free_cpu: int, free_mem: int, cpu: int, mem: int, most: bool
) -> None:
    from dataclasses import replace

    from simulator.scheduling import DEFAULT_PROFILE, FitScoring
    from simulator.scheduling.plugins import cpu_memory_scorer

    profile = replace(DEFAULT_PROFILE, fit=FitScoring("MostAllocated" if most else "LeastAllocated"))
    free_cpu, free_mem = min(free_cpu, cap_cpu), min(free_mem, cap_mem)
    fast = cpu_memory_scorer(profile)(cap_cpu, cap_mem, free_cpu, free_mem, cpu, mem)
    used, cap = [cap_cpu - free_cpu, cap_mem - free_mem], [cap_cpu, cap_mem]
    fit = most_allocated if most else least_allocated
    want = {"NodeResourcesFit": fit([used[0] + (cpu or 100), used[1] + (mem or 200)], cap, W)}
    if cpu or mem:
        want["NodeResourcesBalancedAllocation"] = balanced_allocation([used[0] + cpu, used[1] + mem], used, cap)
    assert fast == want
