"""The MIG profile tables of the catalog's MIG-capable GPUs (data only; `dra.gpus.mig` holds the rules).

Sources, per column:
- names, GI profile ids, slice counts, instance counts and valid starts: NVIDIA MIG User Guide, "Supported MIG
  Profiles" (A100 table, and the note giving the 80GB names), `nvidia-smi mig -lgipp` captures on A100 and H100
  (identical placement tables), the H200 names from NVIDIA mig-parted's default config; B200 from the DRA
  driver's partitions.go comment ("3g.90gb consumes 4 out of 8 memory slices") and NVIDIA go-nvml's
  `pkg/nvml/mock/gpus/b200.go` (names, counts). See ../shared/reference/dra.md §5.
- memory MiB (NVML `memorySizeMB`) and engine counts: A100 from go-nvml's `mock/gpus/a100.go`, whose MiB figures
  are the ones `nvidia-smi mig -lgip` prints (4.75 GiB = 4864 MiB for 1g.5gb, 39.25 GiB = 40192 MiB for
  7g.40gb); engine counts per the MIG User Guide A100 table. UNVERIFIED: every H100, H100-94GB, H200 and B200
  MiB figure (H100's as public lgip output shows, the others scaled from it by total memory) and the
  Hopper/Blackwell engine counts.
"""

from __future__ import annotations

from dra.gpus.mig import MigGeometry, MigProfile

__all__ = ["GEOMETRIES"]

# GI profile id -> (compute slices, memory slices, valid starts, max instances); shared by A100, H100, H200, B200.
_SHAPE: dict[int, tuple[int, int, tuple[int, ...], int]] = {
    19: (1, 1, (0, 1, 2, 3, 4, 5, 6), 7),
    20: (1, 1, (0, 1, 2, 3, 4, 5, 6), 1),
    15: (1, 2, (0, 2, 4, 6), 4),
    14: (2, 2, (0, 2, 4), 3),
    9: (3, 4, (0, 4), 2),
    5: (4, 4, (0,), 1),
    0: (7, 8, (0,), 1),
}

# The A30's own table: 4 compute and 4 memory slices, and other GI profile ids (`nvidia-smi mig -lgipp` on an A30:
# 14 and 21 at {0,1,2,3}:1, 5 and 6 at {0,2}:2, 0 at {0}:4).
_SHAPE_4_SLICES: dict[int, tuple[int, int, tuple[int, ...], int]] = {
    14: (1, 1, (0, 1, 2, 3), 4),
    21: (1, 1, (0, 1, 2, 3), 1),
    5: (2, 2, (0, 2), 2),
    6: (2, 2, (0, 2), 1),
    0: (4, 4, (0,), 1),
}

# One row per profile: GI id, name, memory MiB, SMs, copy engines, decoders, encoders, jpeg, ofa.
_Row = tuple[int, str, int, int, int, int, int, int, int]


def _geometry(name: str, rows: list[_Row], slices: int = 7) -> MigGeometry:
    """The geometry of a board with `slices` compute slices (7: eight memory slices; 4: four, the A30's)."""
    shapes = _SHAPE if slices == 7 else _SHAPE_4_SLICES
    profiles = []
    for gi, pname, mib, sms, ce, dec, enc, jpg, ofa in rows:
        compute, memory, starts, count = shapes[gi]
        profiles.append(
            MigProfile(
                name=pname,
                gi_profile_id=gi,
                compute_slices=compute,
                memory_slices=memory,
                starts=starts,
                memory_mib=mib,
                max_count=count,
                multiprocessors=sms,
                copy_engines=ce,
                decoders=dec,
                encoders=enc,
                jpeg_engines=jpg,
                ofa_engines=ofa,
                gpu_compute_slices=slices,
            )
        )
    if slices == 7:
        return MigGeometry(name=name, profiles=tuple(profiles))
    return MigGeometry(name=name, profiles=tuple(profiles), compute_slices=slices, memory_slices=slices)


# A100: 14 SMs per compute slice, 98 in a 7g instance (108 on the die); MIG User Guide engine counts.
A100_40GB = _geometry(
    "A100-40GB",
    [
        (19, "1g.5gb", 4864, 14, 1, 0, 0, 0, 0),
        (20, "1g.5gb+me", 4864, 14, 1, 1, 0, 1, 1),
        (15, "1g.10gb", 9856, 14, 1, 1, 0, 0, 0),
        (14, "2g.10gb", 9856, 28, 2, 1, 0, 0, 0),
        (9, "3g.20gb", 19968, 42, 3, 2, 0, 0, 0),
        (5, "4g.20gb", 19968, 56, 4, 2, 0, 0, 0),
        (0, "7g.40gb", 40192, 98, 7, 5, 0, 1, 1),
    ],
)
A100_80GB = _geometry(
    "A100-80GB",
    [
        (19, "1g.10gb", 9856, 14, 1, 0, 0, 0, 0),
        (20, "1g.10gb+me", 9856, 14, 1, 1, 0, 1, 1),
        (15, "1g.20gb", 19968, 14, 1, 1, 0, 0, 0),
        (14, "2g.20gb", 19968, 28, 2, 1, 0, 0, 0),
        (9, "3g.40gb", 40192, 42, 3, 2, 0, 0, 0),
        (5, "4g.40gb", 40192, 56, 4, 2, 0, 0, 0),
        (0, "7g.80gb", 80384, 98, 7, 5, 0, 1, 1),
    ],
)

# A30 24GB: an `nvidia-smi` capture on an A30 (driver 535.183.01): `mig -lgip` SM/DEC/ENC/CE/JPEG/OFA per profile
# (NVML reports one decoder in 1g.6gb, where the MIG User Guide's table says none), MIG devices of 5952 MiB
# (1g) and 11968 MiB (2g); the 4g's 24000 MiB is lgip's 23.44 GiB (UNVERIFIED as a device).
A30_24GB = _geometry(
    "A30-24GB",
    [
        (14, "1g.6gb", 5952, 14, 1, 1, 0, 0, 0),
        (21, "1g.6gb+me", 5952, 14, 1, 1, 0, 1, 1),
        (5, "2g.12gb", 11968, 28, 2, 2, 0, 0, 0),
        (6, "2g.12gb+me", 11968, 28, 2, 2, 0, 1, 1),
        (0, "4g.24gb", 24000, 56, 4, 4, 0, 1, 1),
    ],
    slices=4,
)


# H100 80GB HBM3 profile sizes in MiB as public `nvidia-smi mig -lgip` output shows them (9.75, 19.62, 39.50 and
# 79.25 GiB) - UNVERIFIED by a capture of ours. Other Hopper/Blackwell boards scale these by their total memory,
# so that no profile claims more than the GPU has (a nominal "GB x 1024" 7g would exceed NVML's total).
_H100_TOTAL_MIB = 81559
_H100_MIB = {19: 9984, 20: 9984, 15: 20096, 14: 20096, 9: 40448, 5: 40448, 0: 81152}


def _scaled_mib(gi: int, total_mib: int) -> int:
    return _H100_MIB[gi] * total_mib // _H100_TOTAL_MIB // 32 * 32


def _hopper(
    name: str, total_mib: int, sizes: tuple[int, int, int, int], sms: tuple[int, int, int, int, int]
) -> MigGeometry:
    """Hopper tables differ in profile names (GB of 1g/1g-2slice/3g-4g/7g), memory and SM counts. UNVERIFIED
    engine counts: 1 NVDEC + 1 JPEG per compute slice, one OFA in the 7g and +me profiles, no NVENC."""
    g1, g1x2, g3, g7 = sizes
    s1, s2, s3, s4, s7 = sms
    m = {gi: _scaled_mib(gi, total_mib) for gi in _H100_MIB}
    return _geometry(
        name,
        [
            (19, f"1g.{g1}gb", m[19], s1, 1, 1, 0, 1, 0),
            (20, f"1g.{g1}gb+me", m[20], s1, 1, 1, 0, 1, 1),
            (15, f"1g.{g1x2}gb", m[15], s1, 1, 1, 0, 1, 0),
            (14, f"2g.{g1x2}gb", m[14], s2, 2, 2, 0, 2, 0),
            (9, f"3g.{g3}gb", m[9], s3, 3, 3, 0, 3, 0),
            (5, f"4g.{g3}gb", m[5], s4, 4, 4, 0, 4, 0),
            (0, f"7g.{g7}gb", m[0], s7, 7, 7, 0, 7, 1),
        ],
    )


H100_80GB = _hopper("H100-80GB", 81559, (10, 20, 40, 80), (16, 32, 60, 64, 132))
H100_PCIE_80GB = _hopper("H100-PCIe-80GB", 81559, (10, 20, 40, 80), (14, 28, 42, 56, 114))
H100_94GB = _hopper("H100-94GB", 95830, (12, 24, 47, 94), (16, 32, 60, 64, 132))
H200_141GB = _hopper("H200-141GB", 143771, (18, 35, 71, 141), (16, 32, 60, 64, 132))

# B200: names and engine counts from go-nvml's mock (NVIDIA test data, not a hardware capture) - UNVERIFIED;
# memory scaled from the H100 table like the Hopper boards (the mock's round 184320 MiB exceeds NVML's total).
_B200_TOTAL_MIB = 183359
B200_180GB = _geometry(
    "B200-180GB",
    [
        (19, "1g.23gb", _scaled_mib(19, _B200_TOTAL_MIB), 18, 1, 1, 0, 0, 0),
        (20, "1g.23gb+me", _scaled_mib(20, _B200_TOTAL_MIB), 18, 1, 1, 1, 1, 1),
        (15, "1g.45gb", _scaled_mib(15, _B200_TOTAL_MIB), 18, 1, 1, 0, 0, 0),
        (14, "2g.45gb", _scaled_mib(14, _B200_TOTAL_MIB), 36, 2, 2, 1, 1, 1),
        (9, "3g.90gb", _scaled_mib(9, _B200_TOTAL_MIB), 54, 3, 3, 2, 2, 2),
        (5, "4g.90gb", _scaled_mib(5, _B200_TOTAL_MIB), 72, 4, 4, 2, 2, 2),
        (0, "7g.180gb", _scaled_mib(0, _B200_TOTAL_MIB), 126, 7, 7, 4, 4, 4),
    ],
)

GEOMETRIES: dict[str, MigGeometry] = {
    g.name: g for g in (A100_40GB, A100_80GB, A30_24GB, H100_80GB, H100_PCIE_80GB, H100_94GB, H200_141GB, B200_180GB)
}
