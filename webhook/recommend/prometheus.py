"""A small client of the Prometheus HTTP API (`/api/v1/query`, `/api/v1/query_range`, `/-/ready`), stdlib only.

Every answer is distrusted: the body is read up to a size cap, must be JSON of the documented shape
(`{"status": "success", "data": {"resultType": ..., "result": [...]}}`), and each sample must be a finite,
non-negative number. What does not hold is logged and counted (`on_problem(what, reason, count)`), never raised past the
caller as anything but `PrometheusError`, whose `kind` names what failed (unreachable, timeout, http, too_large,
bad_json, error_status, bad_shape). Bad samples and bad series are dropped, not fatal.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dra.errors import GpudraError

__all__ = ["MAX_POINTS_PER_SERIES", "PrometheusClient", "PrometheusError", "Series"]

log = logging.getLogger("gpudra.recommend.prometheus")

# Prometheus refuses a range query that would return more than 11,000 points per series
# (web/api/v1/api.go: "exceeded maximum resolution of 11,000 points per timeseries"); stay under it.
MAX_POINTS_PER_SERIES = 11_000
_CHUNK_POINTS = 10_000
_READ_CHUNK = 1 << 20

Problem = Callable[[str, str, int], None]  # (what: "sample" | "series", reason, how many)


class PrometheusError(GpudraError):
    """Prometheus could not answer a query; `kind` says how it failed."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Series:
    """One series: its labels (with `__name__` when Prometheus kept it) and its samples, oldest first."""

    labels: dict[str, str]
    timestamps: npt.NDArray[np.float64]
    values: npt.NDArray[np.float64]


def _ignore(what: str, reason: str, count: int) -> None:
    del what, reason, count


class PrometheusClient:
    """Queries one Prometheus server (`url` is its base, e.g. http://prometheus:9090)."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 30.0,
        max_bytes: int = 256 * 1024 * 1024,
        on_problem: Problem | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"Prometheus URL {url!r}: expected http(s)://host[:port][/prefix]")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.on_problem: Problem = on_problem or _ignore

    # -- transport ------------------------------------------------------------------------------------------
    def _get(self, path: str, params: dict[str, str] | None = None) -> tuple[int, bytes]:
        query = "?" + urllib.parse.urlencode(params) if params else ""
        request = urllib.request.Request(self.url + path + query, headers={"Accept": "application/json"})
        try:
            response = urllib.request.urlopen(request, timeout=self.timeout)  # noqa: S310 (http(s) checked above)
            status = int(response.status)
        except urllib.error.HTTPError as exc:  # an error status still carries Prometheus's JSON error body
            response, status = exc, exc.code
        except TimeoutError as exc:
            raise PrometheusError("timeout", f"Prometheus {self.url} did not answer within {self.timeout:g}s") from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            kind = "timeout" if isinstance(reason, TimeoutError) else "unreachable"
            raise PrometheusError(kind, f"Prometheus {self.url} unreachable: {reason}") from exc
        try:
            with response:
                body = self._read_capped(response)
        except TimeoutError as exc:
            raise PrometheusError("timeout", f"Prometheus {self.url}: answer stalled past {self.timeout:g}s") from exc
        except OSError as exc:
            raise PrometheusError("unreachable", f"Prometheus {self.url}: connection lost mid-answer: {exc}") from exc
        return status, body

    def _read_capped(self, response: Any) -> bytes:
        parts: list[bytes] = []
        size = 0
        while True:
            chunk = response.read(_READ_CHUNK)
            if not chunk:
                return b"".join(parts)
            size += len(chunk)
            if size > self.max_bytes:
                raise PrometheusError(
                    "too_large", f"Prometheus {self.url}: answer larger than {self.max_bytes} bytes, not read further"
                )
            parts.append(chunk)

    def _api(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        status, body = self._get(path, params)
        try:
            doc = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            snippet = body[:80].decode("utf-8", errors="replace")
            raise PrometheusError(
                "bad_json", f"Prometheus {self.url}{path}: HTTP {status}, not JSON ({exc}): {snippet!r}"
            ) from exc
        if not isinstance(doc, dict):
            raise PrometheusError("bad_shape", f"Prometheus {self.url}{path}: expected a JSON object")
        if doc.get("status") != "success":
            raise PrometheusError(
                "error_status",
                f"Prometheus {self.url}{path}: HTTP {status}, {doc.get('errorType') or 'error'}: "
                f"{str(doc.get('error') or doc.get('status'))[:500]}",
            )
        if not 200 <= status < 300:
            raise PrometheusError("http", f"Prometheus {self.url}{path}: HTTP {status}")
        for warning in doc.get("warnings") or []:
            log.warning("Prometheus %s%s warns: %s", self.url, path, warning)
        data = doc.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("result"), list):
            raise PrometheusError("bad_shape", f"Prometheus {self.url}{path}: no data.result list in the answer")
        return data

    # -- parsing --------------------------------------------------------------------------------------------
    def _samples(self, pairs: Any) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
        if not isinstance(pairs, list):
            return None
        try:
            if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
                raise ValueError("not [time, value] pairs")
            times = np.array([p[0] for p in pairs], dtype=np.float64)
            values = np.array([p[1] if isinstance(p[1], str) else "x" for p in pairs], dtype=np.float64)
        except (TypeError, ValueError):
            return self._samples_slowly(pairs)
        return self._keep_good(times, values)

    def _samples_slowly(self, pairs: list[Any]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        times: list[float] = []
        values: list[float] = []
        bad = 0
        for pair in pairs:
            try:
                t, v = pair
                if not isinstance(v, str) or isinstance(t, bool):
                    raise TypeError(v)
                times.append(float(t))
                values.append(float(v))
            except (TypeError, ValueError):
                bad += 1
        if bad:
            self._report("sample", "unparseable", bad)
        return self._keep_good(np.array(times, dtype=np.float64), np.array(values, dtype=np.float64))

    def _keep_good(
        self, times: npt.NDArray[np.float64], values: npt.NDArray[np.float64]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        finite = np.isfinite(values) & np.isfinite(times)
        if finite.all() and (values.size == 0 or values.min() >= 0):
            return times, values
        nan = int(np.isnan(values).sum())
        inf = int(np.isinf(values).sum())
        negative = int((values[finite] < 0).sum())
        bad_time = int((~np.isfinite(times) & np.isfinite(values)).sum())
        for reason, count in (("nan", nan), ("inf", inf), ("negative", negative), ("unparseable", bad_time)):
            if count:
                self._report("sample", reason, count)
        keep = finite & (values >= 0)
        return times[keep], values[keep]

    def _report(self, what: str, reason: str, count: int = 1) -> None:
        log.warning("Prometheus %s: dropped %d %s(s): %s", self.url, count, what, reason)
        self.on_problem(what, reason, count)

    def _series(self, data: dict[str, Any]) -> list[Series]:
        kind = data.get("resultType")
        out: list[Series] = []
        if kind in ("scalar", "string"):
            raise PrometheusError("bad_shape", f"Prometheus {self.url}: expected a vector or matrix, got {kind}")
        if kind not in ("vector", "matrix"):
            raise PrometheusError("bad_shape", f"Prometheus {self.url}: unknown resultType {kind!r}")
        for item in data["result"]:
            labels = item.get("metric") if isinstance(item, dict) else None
            if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
                self._report("series", "bad labels")
                continue
            samples = self._samples(item.get("values") if kind == "matrix" else [item.get("value")])
            if samples is None:
                self._report("series", "bad samples")
                continue
            out.append(Series({str(k): v for k, v in labels.items()}, samples[0], samples[1]))
        return out

    # -- the API --------------------------------------------------------------------------------------------
    def ready(self) -> tuple[bool, str]:
        """Whether `/-/ready` answers 200, and what was seen."""
        try:
            status, body = self._get("/-/ready")
        except PrometheusError as exc:
            return False, str(exc)
        return status == 200, f"HTTP {status}: {body[:200].decode('utf-8', errors='replace').strip()}"

    def query(self, promql: str, *, at: float | None = None) -> list[Series]:
        """An instant query: a vector (one sample per series) or, for a range selector, a matrix of raw samples."""
        params = {"query": promql, "timeout": f"{self.timeout:g}s"}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return self._series(self._api("/api/v1/query", params))

    def query_range(self, promql: str, *, start: float, end: float, step: float) -> list[Series]:
        """A range query from `start` to `end` (Unix seconds) every `step` seconds, split into requests of at most
        10,000 points per series (Prometheus's limit is 11,000) and put back together by label set."""
        if step <= 0 or end < start:
            raise ValueError(f"query_range: need step > 0 and end >= start (got {start}, {end}, {step})")
        merged: dict[frozenset[tuple[str, str]], list[Series]] = {}
        for lo, hi in _chunks(start, end, step):
            params = {
                "query": promql,
                "start": f"{lo:.3f}",
                "end": f"{hi:.3f}",
                "step": f"{step:g}",
                "timeout": f"{self.timeout:g}s",
            }
            data = self._api("/api/v1/query_range", params)
            if data.get("resultType") != "matrix":
                raise PrometheusError(
                    "bad_shape", f"Prometheus {self.url}: a range query answered {data.get('resultType')!r}"
                )
            for series in self._series(data):
                merged.setdefault(frozenset(series.labels.items()), []).append(series)
        return [_concat(parts) for parts in merged.values()]


def _chunks(start: float, end: float, step: float) -> Iterable[tuple[float, float]]:
    span = step * (_CHUNK_POINTS - 1)
    lo = start
    while lo <= end:
        hi = min(end, lo + span)
        yield lo, hi
        lo = hi + step


def _concat(parts: list[Series]) -> Series:
    if len(parts) == 1:
        return parts[0]
    times = np.concatenate([p.timestamps for p in parts])
    values = np.concatenate([p.values for p in parts])
    order = np.argsort(times, kind="stable")
    times, values = times[order], values[order]
    if times.size > 1:  # a sample on a chunk boundary appears once
        keep = np.concatenate([[True], np.diff(times) > 0])
        times, values = times[keep], values[keep]
    return Series(parts[0].labels, times, values)
