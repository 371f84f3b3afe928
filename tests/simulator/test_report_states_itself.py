"""Issue 42 item 2: the report states itself. Per GPU model and per pod size figures, no waits under the FGD protocol
(null / n/a, never 0), the demand the protocol submitted, what `unallocated_gpus` counts, the assumptions, and every
strategy on every plot or a caption saying why not. The HTML is parsed, and checked against summary.json."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from simulator.breakdown import GroupLedger, pod_size, vram_bucket
from simulator.comparison import SimulationConfig, simulate
from simulator.driver import simulated_driver
from simulator.html_report import write_report
from simulator.traces import GeneratorConfig
from simulator.workload import SimPod

FIXTURES = Path(__file__).parent / "fixtures"


class _Page(HTMLParser):
    """Elements with an id: their text; tables: rows of cells, each cell (data-key or None, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.text: dict[str, str] = {}
        self.tables: dict[str, list[list[tuple[str | None, str]]]] = {}
        self._open: list[tuple[str, str | None]] = []  # (tag, id) of open elements
        self._table: list[list[tuple[str | None, str]]] | None = None
        self._cell: tuple[str | None, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in ("img", "meta"):
            return
        self._open.append((tag, found.get("id")))
        if found.get("id"):
            self.text.setdefault(str(found["id"]), "")
        if tag == "table":
            self._table = self.tables.setdefault(self._section() or "?", [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th"):
            self._cell = (found.get("data-key"), [])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table:
            self._table[-1].append((self._cell[0], "".join(self._cell[1]).strip()))
            self._cell = None
        if tag == "table":
            self._table = None
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        for _, ident in self._open:
            if ident:
                self.text[ident] += data
        if self._cell is not None:
            self._cell[1].append(data)

    def _section(self) -> str | None:
        return next((ident for _, ident in reversed(self._open) if ident), None)


def _report(tmp_path: Path, config: SimulationConfig) -> tuple[_Page, dict[str, Any]]:
    index = write_report(simulate(config), tmp_path / "r")
    page = _Page()
    page.feed(index.read_text())
    return page, json.loads((tmp_path / "r" / "summary.json").read_text())


def _cells(rows: list[list[tuple[str | None, str]]], key: str) -> dict[str, str]:
    """Summary table: strategy -> the cell of `key`."""
    return {row[0][1]: next(text for k, text in row if k == key) for row in rows[1:]}


@pytest.fixture(scope="module")
def fgd_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[_Page, dict[str, Any]]:
    config = SimulationConfig(
        cluster=FIXTURES / "openb_node_excerpt.csv",
        trace=FIXTURES / "openb_pod_excerpt.csv",
        strategies=("device-plugin", "dra-whole", "gpudra", "fgd"),
        driver=simulated_driver("ConsumableShares"),
    )
    return _report(tmp_path_factory.mktemp("fgd"), config)


def test_fgd_waits_are_not_applicable_not_zero(fgd_report: tuple[_Page, dict[str, Any]]) -> None:
    page, summary = fgd_report
    for row in summary["strategies"].values():
        assert row["mean_pending_seconds"] is None and row["pending_by_gpus"] is None
        for size in row.get("by_pod_size", {}).values():
            assert size["mean_pending_seconds"] is None
    table = page.tables["summary"]
    assert set(_cells(table, "mean_pending_seconds").values()) == {"n/a"}
    assert set(_cells(table, "pending_by_gpus").values()) == {"n/a"}
    assert "no time" in page.text["time"] and "never 0" in page.text["time"]


def test_fgd_demand_inflation_is_stated(fgd_report: tuple[_Page, dict[str, Any]]) -> None:
    page, summary = fgd_report
    demand = summary["explanations"]["demand"]
    assert demand["workload_pods"] == summary["input"]["workload"]["pods"] == 120
    for row in summary["strategies"].values():  # what "submitted" means: placed + pending
        assert row["pods_placed"] + row["pods_pending"] == demand["submitted_pods"]
    assert demand["submitted_pods"] > demand["workload_pods"]
    assert demand["ratio"] == round(demand["submitted_pods"] / 120, 3)
    assert f"{demand['submitted_pods']:,} pods were submitted" in page.text["demand"]
    assert "120 pods of the workload" in page.text["demand"] and "1.3x" in page.text["demand"]


def test_unallocated_gpus_are_explained_where_sharing_leaves_gpus_partly_used(
    fgd_report: tuple[_Page, dict[str, Any]],
) -> None:
    page, summary = fgd_report
    plugin, gpudra = summary["strategies"]["device-plugin"], summary["strategies"]["gpudra"]
    # the case the explanation is for: more unallocated GPU compute and a higher allocation at once
    assert gpudra["unallocated_gpus"] > plugin["unallocated_gpus"]
    assert gpudra["gpu_allocation_ratio"] > plugin["gpu_allocation_ratio"]
    assert gpudra["gpus_partly_held"] > 0 and plugin["gpus_partly_held"] == 0
    assert "not a count of idle GPUs" in page.text["unallocated"]
    assert f"gpudra: {gpudra['gpus_unused']} unused, {gpudra['gpus_partly_held']} partly held" in page.text["occupancy"]
    assert "gpus_unused" not in summary["strategies"]["fgd"]  # the peer simulator records no GPU occupancy


def test_assumptions_are_on_the_page_and_in_the_json(fgd_report: tuple[_Page, dict[str, Any]]) -> None:
    page, summary = fgd_report
    found = summary["assumptions"]
    assert found["gpu_model_mapping"]["labels"] == {"G2": "A100-SXM4-80GB", "G3": "H100-SXM5-80GB"}
    assert found["gpu_model_mapping"]["undisclosed"] == ["G2", "G3"]
    mapping = page.text["assume-gpu-model-mapping"]
    assert "G2 -> A100-SXM4-80GB" in mapping and "assumption" in mapping and "does not disclose" in mapping
    assert found["vram_model"]["kind"] == "proportional" and "16384 MiB" in page.text["assume-vram-model"]
    assert "ConsumableShares" in page.text["assume-driver"] and found["driver"]["gates"] == ["ConsumableShares"]
    assert "kube-scheduler v1.37.2 defaults" in page.text["assume-scheduler"]
    assert page.text["assume-allocator-mode"].endswith("upstream") and found["allocator_mode"] == "upstream"


def test_breakdowns_on_the_page_match_the_json_and_add_up(fgd_report: tuple[_Page, dict[str, Any]]) -> None:
    page, summary = fgd_report
    strategies = summary["strategies"]
    gpus = summary["input"]["cluster"]["gpus"]
    for name in ("device-plugin", "dra-whole", "gpudra"):
        row = strategies[name]
        models = row["by_gpu_model"]
        assert set(models) == set(summary["input"]["cluster"]["gpu_models"])
        requested = sum(m["gpu_allocation_ratio"] * m["gpus"] for m in models.values())
        assert requested == pytest.approx(row["gpu_allocation_ratio"] * gpus, abs=1e-3)
        sizes = row["by_pod_size"]
        assert sum(s["gpu_allocation_ratio"] for s in sizes.values()) == pytest.approx(row["gpu_allocation_ratio"])
        assert all(s["pods_placed"] + s["pods_never_placed"] == s["pods"] for s in sizes.values())
        assert sum(s["pods_never_placed"] for s in sizes.values()) <= row["pods_pending"]
    shown = {(r[0][1], r[1][1]): dict(r[2:]) for r in page.tables["by-gpu-model"][1:]}
    for name in ("device-plugin", "gpudra"):
        for model, values in strategies[name]["by_gpu_model"].items():
            assert shown[(name, model)]["gpu_allocation_ratio"] == str(values["gpu_allocation_ratio"])
    sized = {(r[0][1], r[1][1]): dict(r[2:]) for r in page.tables["by-pod-size"][1:]}
    assert {key for key in sized if key[0] == "gpudra"} == {("gpudra", s) for s in strategies["gpudra"]["by_pod_size"]}
    assert all(values["mean_pending_seconds"] == "n/a" for values in sized.values())
    assert "Not recorded for fgd" in page.text["by-gpu-model"]


def test_every_strategy_is_on_every_plot_or_the_caption_says_why(fgd_report: tuple[_Page, dict[str, Any]]) -> None:
    page, _ = fgd_report
    assert "fgd is not on this plot" in page.text["plot-vram_waste"] and "no VRAM" in page.text["plot-vram_waste"]
    assert "fgd" not in page.text.get("plot-allocation", "")  # drawn there: nothing to say
    # device-plugin, dra-whole and gpudra agree on the excerpt's allocation: said, each in its own style
    assert "dra-whole's curve is identical to device-plugin's" in page.text["plot-allocation"]


def test_replay_report_keeps_waits_and_time_weights_the_breakdowns(tmp_path: Path) -> None:
    config = SimulationConfig(strategies=("device-plugin", "gpudra"), generator=GeneratorConfig(pods=150, seed=3))
    page, summary = _report(tmp_path, config)
    assert "demand" not in summary["explanations"] and "demand" not in page.text
    gpus = summary["input"]["cluster"]["gpus"]
    for row in summary["strategies"].values():
        assert isinstance(row["mean_pending_seconds"], float) and isinstance(row["pending_by_gpus"], dict)
        models = row["by_gpu_model"].values()
        requested = sum(m["gpu_allocation_ratio"] * m["gpus"] for m in models)
        assert requested == pytest.approx(row["gpu_allocation_ratio"] * gpus, abs=1e-3)
        sizes = row["by_pod_size"].values()
        assert sum(s["gpu_allocation_ratio"] for s in sizes) == pytest.approx(row["gpu_allocation_ratio"], abs=1e-5)
        assert sum(s["pods"] for s in sizes) == summary["input"]["workload"]["gpu_pods"]
        assert all(s["mean_pending_seconds"] is not None for s in sizes)
        assert "gpus_unused" not in row  # the end of a replay is an empty cluster: not reported
    assert "n/a" not in set(_cells(page.tables["summary"], "mean_pending_seconds").values())


def test_group_ledger_weights_each_state_until_the_next_within_the_window() -> None:
    ledger = GroupLedger(window=(10.0, 30.0))
    ledger.advance(0.0, {"t": {"a": [4, 0, 0, 0]}})  # before the window: does not count
    ledger.advance(20.0, {"t": {"a": [2, 0, 0, 0], "b": [10, 0, 0, 0]}})  # a=4 over [10, 20]
    ledger.advance(25.0, {"t": {"a": [0, 0, 0, 0]}})  # a=2, b=10 over [20, 25]; then a=0 to 30
    means = ledger.means("t", final=False)
    assert means["a"][0] == pytest.approx((4 * 10 + 2 * 5) / 20)
    assert means["b"][0] == pytest.approx(10 * 5 / 20)
    assert ledger.means("t", final=True) == {"a": (0.0, 0.0, 0.0, 0.0)}


def test_pod_sizes() -> None:
    assert vram_bucket(8 * 1024) == "0-8 GiB" and vram_bucket(8 * 1024 + 1) == "8-16 GiB"
    assert vram_bucket(81 * 1024) == ">80 GiB"
    share = SimPod("s", 1000, 1024, 1, 300, 5000)
    assert pod_size(share) == ("<1", "0-8 GiB")
    assert pod_size(SimPod("w", 1000, 1024, 8, 1000, 70 * 1024)) == ("8", "48-80 GiB")
    assert pod_size(SimPod("c", 1000, 1024, 0, 0, 0)) == ("0", "-")
