"""A real Prometheus for the tests: a TSDB backfilled with `promtool tsdb create-blocks-from openmetrics` from
samples in the NVIDIA DCGM exporter's format (its metric names, HELP texts and labels), served by `prometheus`.

Both binaries come from Debian's `prometheus` package (2.42.0; `.ci/run` installs it). Where they are missing (a
developer's machine) the tests that need them skip, naming them. Every server started is stopped by the fixture.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from tests.controlplane.binaries import MissingBinaries
from tests.controlplane.fixtures import missing_binaries

__all__ = ["DcgmDevice", "PrometheusServer", "backfill", "openmetrics", "prometheus_factory", "require_binaries"]

STEP = 30.0
H100 = "NVIDIA H100 80GB HBM3"
H100_MIB = 81559
# HELP texts exactly as dcgm-exporter's etc/default-counters.csv has them.
HELP = {
    "DCGM_FI_DEV_FB_USED": "Framebuffer memory used (in MiB).",
    "DCGM_FI_DEV_FB_FREE": "Framebuffer memory free (in MiB).",
    "DCGM_FI_DEV_FB_RESERVED": "Framebuffer memory reserved (in MiB).",
}
RESERVED_MIB = 500.0


def require_binaries() -> tuple[str, str]:
    """The paths of `prometheus` and `promtool`, or the test skipped naming the missing ones (failed under
    GPUDRA_REQUIRE_BINARIES=1: tests/controlplane/fixtures.py)."""
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        missing = [name for name, path in (("prometheus", prometheus), ("promtool", promtool)) if path is None]
        missing_binaries(MissingBinaries(
            f"{', '.join(missing)} not installed: `apt-get install prometheus` (Debian's package; .ci/run installs it)"
        ))  # fmt: skip
    return prometheus, promtool


@dataclass
class DcgmDevice:
    """One pod's container on one GPU (or MIG instance), with its framebuffer use over time (MiB)."""

    namespace: str
    pod: str
    container: str
    used_mib: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]  # timestamps -> MiB
    total_mib: float = H100_MIB
    model_name: str = H100
    gpu: int = 0
    uuid: str = "GPU-5fd3b4c2-6a0e-4f7b-9d0c-2b8e1a7c9f01"
    hostname: str = "gpu-node-1"
    mig_profile: str = ""
    mig_instance: str = ""
    reserved_mib: float = RESERVED_MIB
    history_seconds: float | None = None  # how far back its series go (default: the whole backfill)
    extra_labels: dict[str, str] = field(default_factory=dict)

    def labels(self) -> dict[str, str]:
        # render_metrics.go's order: gpu, UUID, pci_bus_id, device, modelName, [GPU_I_PROFILE, GPU_I_ID], hostname,
        # then the Kubernetes labels the --kubernetes mode adds.
        labels = {
            "gpu": str(self.gpu),
            "UUID": self.uuid,
            "pci_bus_id": f"00000000:{0x18 + self.gpu:02X}:00.0",
            "device": f"nvidia{self.gpu}",
            "modelName": self.model_name,
        }
        if self.mig_profile:
            labels |= {"GPU_I_PROFILE": self.mig_profile, "GPU_I_ID": self.mig_instance or "1"}
        labels |= {"hostname": self.hostname, "container": self.container, "namespace": self.namespace}
        labels |= {"pod": self.pod, **self.extra_labels}
        return labels


def _label_text(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def openmetrics(devices: Sequence[DcgmDevice], *, end: float, seconds: float, step: float = STEP) -> str:
    """The OpenMetrics text of FB used/free/reserved for every device, one sample every `step` s until `end`."""
    end = float(int(end))  # whole seconds, as written: a range query from end - seconds then sees every sample
    times = np.arange(end - seconds, end + step / 2, step)
    stamps = [f"{t:.0f}" for t in times]
    out: list[str] = []
    for metric in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED"):
        out.append(f"# HELP {metric} {HELP[metric]}\n# TYPE {metric} gauge\n")
        for device in devices:
            keep = times >= end - (device.history_seconds or seconds) - step / 2
            used = np.minimum(device.used_mib(times[keep]), device.total_mib - device.reserved_mib)
            if metric == "DCGM_FI_DEV_FB_USED":
                values = used
            elif metric == "DCGM_FI_DEV_FB_FREE":
                values = device.total_mib - device.reserved_mib - used
            else:
                values = np.full_like(used, device.reserved_mib)
            head = f"{metric}{{{_label_text(device.labels())}}} "
            kept = [t for t, k in zip(stamps, keep, strict=True) if k]
            out.extend(f"{head}{v:.0f} {t}\n" for v, t in zip(values, kept, strict=True))
    out.append("# EOF\n")
    return "".join(out)


def backfill(promtool: str, text: str, workdir: Path) -> Path:
    """Blocks in `workdir/data` from the OpenMetrics `text` (promtool tsdb create-blocks-from openmetrics)."""
    source = workdir / "dcgm.om"
    source.write_text(text)
    data = workdir / "data"
    data.mkdir(exist_ok=True)
    out = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h", str(source), str(data)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, f"promtool failed: {out.stderr[-2000:]}"
    source.unlink()
    return data


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrometheusServer:
    """`prometheus` on 127.0.0.1:<free port> over a TSDB directory; `stop()` and `start()` again on the same port."""

    def __init__(self, binary: str, data: Path, workdir: Path) -> None:
        self.binary, self.data, self.workdir = binary, data, workdir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = workdir / "prometheus.yml"
        self.config.write_text("global:\n  scrape_interval: 30s\nscrape_configs: []\n")
        self.log = workdir / "prometheus.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        assert self.process is None
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [self.binary, f"--config.file={self.config}", f"--storage.tsdb.path={self.data}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=30d",
                 "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"prometheus exited {self.process.returncode}: {self.log.read_text()[-2000:]}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            time.sleep(0.2)
        raise AssertionError(f"prometheus not ready within {timeout:g}s: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def prometheus_factory(tmp_path: Path) -> Iterator[Callable[..., PrometheusServer]]:
    """`make(devices, end=None, seconds=7 days)`: a running Prometheus holding those devices' DCGM series."""
    prometheus, promtool = require_binaries()
    servers: list[PrometheusServer] = []

    def make(
        devices: Sequence[DcgmDevice], *, end: float | None = None, seconds: float = 7 * 86400.0
    ) -> PrometheusServer:
        workdir = tmp_path / f"prometheus-{len(servers)}"
        workdir.mkdir()
        stop_at = float(int(end if end is not None else time.time() - 60))
        data = backfill(promtool, openmetrics(devices, end=stop_at, seconds=seconds), workdir)
        server = PrometheusServer(prometheus, data, workdir)
        servers.append(server)
        server.start()
        return server

    yield make
    for server in servers:
        server.stop()
