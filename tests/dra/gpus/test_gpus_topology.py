"""NVLink topology: groups from catalog kinds and from peer links, and their attribute values."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dra.gpus import NvlinkTopology
from dra.gpus.topology import DGX1_HYBRID_CUBE_MESH


def test_nvswitch_is_one_group_all_to_all() -> None:
    topo = NvlinkTopology.build("nvswitch", 8, 18)
    assert topo.groups() == [list(range(8))]
    assert set(topo.group_values().values()) == {"nvswitch-0"}
    assert topo.link_count(3, 6) == 18 and topo.fully_connected([1, 5, 7])


def test_pairs_each_their_own_group() -> None:
    topo = NvlinkTopology.build("pairs", 8, 12)
    assert topo.groups() == [[0, 1], [2, 3], [4, 5], [6, 7]]
    values = topo.group_values()
    assert values[0] == values[1] == "pair-0" and values[6] == values[7] == "pair-3"
    assert len(set(values.values())) == 4
    assert not topo.fully_connected([0, 2])


def test_odd_pair_count_leaves_the_last_gpu_alone() -> None:
    topo = NvlinkTopology.build("pairs", 3, 12)
    assert topo.groups() == [[0, 1]]
    assert 2 not in topo.group_values()


def test_dgx1_mesh_is_connected_but_not_complete() -> None:
    topo = NvlinkTopology.build("mesh", 8)
    assert topo.groups() == [list(range(8))]
    assert topo.group_values()[5] == "mesh-0"
    assert topo.fully_connected([0, 1, 2, 3])
    assert not topo.fully_connected([0, 5])
    # six NVLink2 links per GPU in the hybrid cube-mesh
    assert all(sum(topo.link_count(i, j) for j in range(8) if j != i) == 6 for i in range(8))
    assert len(DGX1_HYBRID_CUBE_MESH) == 16


def test_pcie_only_has_no_group() -> None:
    topo = NvlinkTopology.build("none", 4)
    assert topo.groups() == [] and topo.group_values() == {}


def test_from_peer_links_is_symmetric_and_ignores_self_links() -> None:
    topo = NvlinkTopology.from_peer_links(4, [(1, 0, 4), (0, 1, 4), (2, 2, 3), (3, 2, 2)])
    assert topo.links == {(0, 1): 4, (2, 3): 2}
    assert topo.group_values() == {0: "pair-0", 1: "pair-0", 2: "pair-1", 3: "pair-1"}


@given(st.integers(1, 12), st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11), st.integers(1, 18))))
def test_groups_partition_the_linked_gpus(count: int, triples: list[tuple[int, int, int]]) -> None:
    triples = [(i, j, c) for i, j, c in triples if i < count and j < count]
    topo = NvlinkTopology.from_peer_links(count, triples)
    values = topo.group_values()
    linked = {g for i, j, _ in triples if i != j for g in (i, j)}
    assert set(values) == linked
    for i, j, _ in triples:
        if i != j:
            assert values[i] == values[j]
    members = [g for group in topo.groups() for g in group]
    assert len(members) == len(set(members))
