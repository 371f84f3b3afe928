"""Catalog facts: NVML names, memory, architecture, compute capability, NVLink kind and MIG support per model."""

from __future__ import annotations

import pytest

from dra.gpus import catalog

MIB = 1024 * 1024


@pytest.mark.parametrize(
    ("key", "product", "arch", "cc", "nvlink", "mig"),
    [
        ("A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", "Ampere", "8.0", "nvswitch", "A100-40GB"),
        ("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", "Ampere", "8.0", "nvswitch", "A100-80GB"),
        ("A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB", "Ampere", "8.0", "pairs", "A100-40GB"),
        ("A100-PCIE-80GB", "NVIDIA A100 80GB PCIe", "Ampere", "8.0", "pairs", "A100-80GB"),
        ("H100-SXM5-80GB", "NVIDIA H100 80GB HBM3", "Hopper", "9.0", "nvswitch", "H100-80GB"),
        ("H100-PCIE-80GB", "NVIDIA H100 PCIe", "Hopper", "9.0", "pairs", "H100-PCIe-80GB"),
        ("H100-NVL-94GB", "NVIDIA H100 NVL", "Hopper", "9.0", "pairs", "H100-94GB"),
        ("H200-SXM5-141GB", "NVIDIA H200", "Hopper", "9.0", "nvswitch", "H200-141GB"),
        ("B200-SXM6-180GB", "NVIDIA B200", "Blackwell", "10.0", "nvswitch", "B200-180GB"),
        ("L40S", "NVIDIA L40S", "Ada Lovelace", "8.9", "none", None),
        ("L4", "NVIDIA L4", "Ada Lovelace", "8.9", "none", None),
        ("A10", "NVIDIA A10", "Ampere", "8.6", "none", None),
        ("T4", "Tesla T4", "Turing", "7.5", "none", None),
        ("P100-PCIE-16GB", "Tesla P100-PCIE-16GB", "Pascal", "6.0", "none", None),
        ("V100-SXM2-16GB", "Tesla V100-SXM2-16GB", "Volta", "7.0", "mesh", None),
        ("V100-SXM2-32GB", "Tesla V100-SXM2-32GB", "Volta", "7.0", "mesh", None),
        ("V100-PCIE-16GB", "Tesla V100-PCIE-16GB", "Volta", "7.0", "none", None),
    ],
)
def test_model_facts(key: str, product: str, arch: str, cc: str, nvlink: str, mig: str | None) -> None:
    model = catalog.get(key)
    assert model.product_name == product
    assert model.architecture == arch
    assert model.compute_capability == cc
    assert model.cuda_compute_capability == cc + ".0"
    assert model.nvlink == nvlink
    assert (model.mig.name if model.mig else None) == mig
    assert catalog.get(product) is model  # NVML product name look-up


def test_h100_memory_is_the_nvml_total() -> None:
    model = catalog.get("NVIDIA H100 80GB HBM3")
    assert model.memory_bytes == 81559 * MIB
    assert model.memory_verified


def test_memory_sizes_are_ordered_as_the_products() -> None:
    mem = {m.key: m.memory_bytes for m in catalog.all_models()}
    assert mem["A100-SXM4-40GB"] < mem["A100-SXM4-80GB"] < mem["H100-NVL-94GB"] < mem["H200-SXM5-141GB"]
    assert mem["H200-SXM5-141GB"] < mem["B200-SXM6-180GB"]
    assert mem["T4"] < mem["L4"] < mem["L40S"]
    for model in catalog.all_models():
        nominal_gb = model.memory_bytes / 1e9
        assert 14 < nominal_gb < 200, model.key


def test_every_mig_capable_model_is_ampere_or_later_datacenter() -> None:
    for model in catalog.all_models():
        if model.mig is not None:
            assert model.architecture in ("Ampere", "Hopper", "Blackwell")
            # no profile claims more memory than the GPU has
            assert model.mig.profile(0).memory_bytes <= model.memory_bytes


def test_lookup_is_case_and_space_insensitive_and_knows_trace_names() -> None:
    assert catalog.get("  nvidia   a100-sxm4-80gb ").key == "A100-SXM4-80GB"
    assert catalog.get("V100M16").key == "V100-SXM2-16GB"
    assert catalog.get("V100M32").key == "V100-SXM2-32GB"
    assert catalog.get("P100").key == "P100-PCIE-16GB"
    assert catalog.get("NVIDIA H200 141GB HBM3e").key == "H200-SXM5-141GB"
    assert catalog.find("G2") is None


def test_unknown_model_error_names_the_input_and_the_choices() -> None:
    with pytest.raises(KeyError) as info:
        catalog.get("RTX 9090")
    assert "RTX 9090" in info.value.args[0]
    assert "H100-SXM5-80GB" in info.value.args[0]


def test_keys_and_names_are_unique() -> None:
    names = [n.lower() for m in catalog.all_models() for n in (m.key, m.product_name, *m.aliases)]
    assert len(names) == len(set(names))


def test_topology_kind_per_model() -> None:
    hgx = catalog.get("H100-SXM5-80GB").topology()
    assert hgx.count == 8 and hgx.nvswitch and hgx.fully_connected(range(8))
    assert catalog.get("H100-NVL-94GB").topology(4).groups() == [[0, 1], [2, 3]]
    assert catalog.get("L40S").topology().groups() == []
    assert catalog.get("V100-SXM2-32GB").topology().groups() == [list(range(8))]


@pytest.mark.parametrize(
    ("label", "mib", "nvlink"),
    [("P100", 16384, "mesh"), ("T4", 16384, "none"), ("V100M16", 16384, "mesh"), ("V100M32", 32768, "mesh"),
     ("A10", 24576, "none")],
)  # fmt: skip
def test_openb_trace_models_keep_their_pinned_figures(label: str, mib: int, nvlink: str) -> None:
    model = catalog.trace_model(label)
    assert model is not None and model.key == label
    assert model.memory_mib == mib and model.nvlink == nvlink and model.mig is None
    assert catalog.trace_model(label.lower()) is model
    assert model in catalog.trace_models() and model not in catalog.all_models()


def test_trace_models_leave_the_real_entries_alone() -> None:
    assert catalog.get("T4").memory_mib == 15360 and catalog.get("A10").memory_mib == 23028
    assert catalog.get("P100").key == "P100-PCIE-16GB" and catalog.get("V100M16").key == "V100-SXM2-16GB"
    assert catalog.trace_model("H100") is None and catalog.trace_model("P100-PCIE-16GB") is None


def test_an_unknown_model_is_in_the_one_error_family() -> None:
    from dra.errors import GpudraError, InputError

    with pytest.raises(GpudraError) as info:
        catalog.get("H900")
    assert isinstance(info.value, InputError) and isinstance(info.value, KeyError)
    assert str(info.value).startswith("unknown GPU model 'H900'")  # not quoted as a bare KeyError would be
