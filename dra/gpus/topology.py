"""GPU-to-GPU NVLink topology of one node, and the NVLink groups gpudra publishes as `gpu.gpudra.io/nvlinkGroup`.

A topology is a symmetric map of direct NVLink link counts between GPU indices (the `NV#` of `nvidia-smi topo -m`),
plus whether the GPUs sit on an NVSwitch fabric. It is built from a catalog topology kind (`nvswitch`, `pairs`,
`mesh`, `none`) or from NVML's peer map (`dra.inventory`). A group is a connected component of NVLink peers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["DGX1_HYBRID_CUBE_MESH", "NVLINK_GROUP_ATTRIBUTE", "NvlinkKind", "NvlinkTopology"]

NvlinkKind = Literal["nvswitch", "pairs", "mesh", "none"]

NVLINK_GROUP_ATTRIBUTE = "gpu.gpudra.io/nvlinkGroup"

# DGX-1 with V100 (hybrid cube-mesh, 6 NVLink2 links per GPU): the `nvidia-smi topo -m` matrix commonly published
# for DGX-1V, NV1/NV2 between the listed pairs and SYS elsewhere. UNVERIFIED against a capture of ours.
DGX1_HYBRID_CUBE_MESH: dict[tuple[int, int], int] = {
    (0, 1): 1, (0, 2): 1, (0, 3): 2, (0, 4): 2,
    (1, 2): 2, (1, 3): 1, (1, 5): 2,
    (2, 3): 2, (2, 6): 1,
    (3, 7): 1,
    (4, 5): 1, (4, 6): 1, (4, 7): 2,
    (5, 6): 2, (5, 7): 1,
    (6, 7): 2,
}  # fmt: skip


@dataclass(frozen=True)
class NvlinkTopology:
    """Direct NVLink links between the GPUs of one node (indices 0..count-1)."""

    count: int
    links: Mapping[tuple[int, int], int] = field(default_factory=dict)  # (i, j) with i < j -> NVLink count
    nvswitch: bool = False

    @staticmethod
    def build(kind: NvlinkKind, count: int, links_per_pair: int = 0) -> NvlinkTopology:
        """The topology of `count` GPUs of a catalog kind; `links_per_pair` is the NV# of a connected pair."""
        n = links_per_pair or 1
        if kind == "nvswitch":
            pairs = {(i, j): n for i in range(count) for j in range(i + 1, count)}
            return NvlinkTopology(count, pairs, nvswitch=True)
        if kind == "pairs":
            return NvlinkTopology(count, {(i, i + 1): n for i in range(0, count - 1, 2)})
        if kind == "mesh":
            # The cube-mesh is defined for 8 GPUs; a node with fewer keeps the links among the ones present.
            return NvlinkTopology(count, {p: c for p, c in DGX1_HYBRID_CUBE_MESH.items() if p[1] < count})
        return NvlinkTopology(count)

    @staticmethod
    def from_peer_links(count: int, links: Iterable[tuple[int, int, int]], nvswitch: bool = False) -> NvlinkTopology:
        """From (i, j, link count) triples, as `dra.inventory` derives them from NVML; order of i, j is free."""
        out: dict[tuple[int, int], int] = {}
        for i, j, c in links:
            if i == j or c <= 0:
                continue
            key = (min(i, j), max(i, j))
            out[key] = max(out.get(key, 0), c)
        return NvlinkTopology(count, out, nvswitch=nvswitch)

    def link_count(self, i: int, j: int) -> int:
        """NVLink links between GPUs i and j (0: none)."""
        return self.links.get((min(i, j), max(i, j)), 0)

    def peers(self, i: int) -> list[int]:
        """The GPUs with a direct NVLink link to GPU i, ascending."""
        return sorted({b if a == i else a for (a, b) in self.links if i in (a, b)})

    def groups(self) -> list[list[int]]:
        """Connected components of GPUs with at least one NVLink peer, ordered by their lowest index."""
        parent = list(range(self.count))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a, b in self.links:
            parent[find(a)] = find(b)
        linked = {g for pair in self.links for g in pair}
        components: dict[int, list[int]] = {}
        for i in range(self.count):
            if i in linked:
                components.setdefault(find(i), []).append(i)
        return sorted(components.values(), key=lambda g: g[0])

    def group_values(self) -> dict[int, str]:
        """GPU index -> the `gpu.gpudra.io/nvlinkGroup` value; GPUs without NVLink get none.

        Values are `nvswitch-<k>` on an NVSwitch fabric, `pair-<k>` for a bridged pair, `mesh-<k>` for a larger
        component of direct links (DGX-1), k counting groups from the lowest GPU index, unique within the node."""
        out: dict[int, str] = {}
        for k, group in enumerate(self.groups()):
            if self.nvswitch:
                label = "nvswitch"
            elif len(group) == 2:
                label = "pair"
            else:
                label = "mesh"
            for i in group:
                out[i] = f"{label}-{k}"
        return out

    def fully_connected(self, gpus: Iterable[int]) -> bool:
        """True when every pair in `gpus` has a direct NVLink path (any subset on NVSwitch)."""
        chosen = sorted(set(gpus))
        return all(self.link_count(a, b) > 0 for x, a in enumerate(chosen) for b in chosen[x + 1 :])
