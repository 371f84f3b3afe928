"""A small client of the Prometheus HTTP API (`/api/v1/query`, `/api/v1/query_range`, `/-/ready`), stdlib only.

Every answer is distrusted. Each request has one deadline, `timeout` seconds for all of it (connect, headers, body:
a server that drips a byte a second is cut off at the deadline, not kept alive by each byte); the body is read up to
`max_bytes` and parsed in bounded memory (`answer.read_answer`); a redirect is followed only to the same scheme, host
and port, at most 3 times, and a redirect elsewhere is refused (a Prometheus URL that moved is configured, not
followed). The answer must be JSON of the documented shape (`{"status": "success", "data": {"resultType": ...,
"result": [...]}}`), and each sample a finite, non-negative number. What does not hold is logged and counted
(`on_problem(what, reason, count)`), never raised past the caller as anything but `PrometheusError`, whose `kind`
names what failed (unreachable, timeout, http, redirect, too_large, bad_json, error_status, bad_shape). Bad samples
and bad series are dropped, not fatal.
"""

from __future__ import annotations

import http.client
import logging
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dra.errors import GpudraError

from .answer import Answer, AnswerError, AnswerSeries, read_answer

__all__ = ["MAX_POINTS_PER_SERIES", "MAX_REDIRECTS", "PrometheusClient", "PrometheusError", "Series"]

log = logging.getLogger("gpudra.recommend.prometheus")

# Prometheus refuses a range query that would return more than 11,000 points per series
# (web/api/v1/api.go: "exceeded maximum resolution of 11,000 points per timeseries"); stay under it.
MAX_POINTS_PER_SERIES = 11_000
MAX_REDIRECTS = 3
_CHUNK_POINTS = 10_000
_READ_CHUNK = 1 << 16

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


def _origin(url: urllib.parse.SplitResult) -> tuple[str, str, int]:
    port = url.port or (443 if url.scheme == "https" else 80)
    return url.scheme, (url.hostname or "").lower(), port


class _Deadline:
    """Closes the connection's socket when the request's time is up, wherever it is blocked (connect, headers,
    body); `expired` says that this is why a read failed."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self.expired = False
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        return max(0.001, self.at - time.monotonic())

    def watch(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._conn = conn

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sock = self._conn.sock if self._conn is not None else None
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cancel(self) -> None:
        self._timer.cancel()


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
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"Prometheus URL {url!r}: expected http(s)://host[:port][/prefix]")
        self.url = url.rstrip("/")
        self._base = parsed
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.on_problem: Problem = on_problem or _ignore

    # -- transport ------------------------------------------------------------------------------------------
    def _get(self, path: str, params: dict[str, str] | None = None) -> tuple[int, bytearray]:
        """GET `path` under the base URL within one deadline of `timeout` seconds: (status, body)."""
        query = "?" + urllib.parse.urlencode(params) if params else ""
        target = urllib.parse.urlsplit(self.url + path + query)
        deadline = _Deadline(self.timeout)
        try:
            for _ in range(MAX_REDIRECTS + 1):
                status, location, body = self._exchange(target, deadline)
                if location is None:
                    return status, body
                target = self._redirect(target, status, location)
            raise PrometheusError("redirect", f"Prometheus {self.url}{path}: more than {MAX_REDIRECTS} redirects")
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            if deadline.expired or isinstance(exc, TimeoutError):
                raise PrometheusError(
                    "timeout", f"Prometheus {self.url} did not answer in full within {self.timeout:g}s"
                ) from exc
            raise PrometheusError("unreachable", f"Prometheus {self.url} unreachable: {exc}") from exc
        finally:
            deadline.cancel()

    def _redirect(self, current: urllib.parse.SplitResult, status: int, location: str) -> urllib.parse.SplitResult:
        to = urllib.parse.urlsplit(urllib.parse.urljoin(current.geturl(), location))
        if _origin(to) != _origin(self._base):
            raise PrometheusError(
                "redirect",
                f"Prometheus {self.url}: HTTP {status} redirects to {to.scheme}://{to.netloc}, another host; not "
                "followed (set --prometheus to the address that answers)",
            )
        return to

    def _exchange(self, target: urllib.parse.SplitResult, deadline: _Deadline) -> tuple[int, str | None, bytearray]:
        host, port = target.hostname or "", _origin(target)[2]
        conn: http.client.HTTPConnection
        if target.scheme == "https":
            conn = http.client.HTTPSConnection(
                host, port, timeout=deadline.left(), context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(host, port, timeout=deadline.left())
        deadline.watch(conn)
        response: http.client.HTTPResponse | None = None
        try:
            conn.connect()
            path = (target.path or "/") + (f"?{target.query}" if target.query else "")
            conn.request("GET", path, headers={"Accept": "application/json", "Accept-Encoding": "identity"})
            response = conn.getresponse()
            location = response.getheader("Location")
            if response.status in (301, 302, 303, 307, 308) and location:
                return response.status, location, bytearray()
            return response.status, None, self._read_capped(response, conn, deadline)
        finally:
            if response is not None:
                response.close()
            conn.close()

    def _read_capped(
        self, response: http.client.HTTPResponse, conn: http.client.HTTPConnection, deadline: _Deadline
    ) -> bytearray:
        body = bytearray()
        while True:
            if conn.sock is not None:
                conn.sock.settimeout(deadline.left())
            chunk = response.read1(_READ_CHUNK)  # what one receive brings, so the deadline is checked between
            if not chunk:
                if deadline.expired:
                    raise TimeoutError("deadline")
                return body
            if len(body) + len(chunk) > self.max_bytes:
                raise PrometheusError(
                    "too_large", f"Prometheus {self.url}: answer larger than {self.max_bytes} bytes, not read further"
                )
            body += chunk
            if time.monotonic() >= deadline.at:
                raise TimeoutError("deadline")

    def _api(self, path: str, params: dict[str, str]) -> Answer:
        status, body = self._get(path, params)
        try:
            doc = read_answer(body)
        except AnswerError as exc:
            raise PrometheusError(exc.kind, f"Prometheus {self.url}{path}: HTTP {status}, {exc}") from exc
        if doc.status != "success":
            raise PrometheusError(
                "error_status",
                f"Prometheus {self.url}{path}: HTTP {status}, {doc.error_type or 'error'}: "
                f"{str(doc.error or doc.status)[:500]}",
            )
        if not 200 <= status < 300:
            raise PrometheusError("http", f"Prometheus {self.url}{path}: HTTP {status}")
        for warning in doc.warnings:
            log.warning("Prometheus %s%s warns: %s", self.url, path, str(warning)[:500])
        if not doc.data_is_object or doc.result is None:
            raise PrometheusError("bad_shape", f"Prometheus {self.url}{path}: no data.result list in the answer")
        return doc

    # -- parsing --------------------------------------------------------------------------------------------
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

    def _one(self, item: AnswerSeries) -> Series | None:
        if item.labels is None:
            self._report("series", "bad labels")
            return None
        if not item.samples_ok:
            self._report("series", "bad samples")
            return None
        if item.unparseable:
            self._report("sample", "unparseable", item.unparseable)
        times = np.frombuffer(item.times, dtype=np.float64) if item.times else np.zeros(0)
        values = np.frombuffer(item.values, dtype=np.float64) if item.values else np.zeros(0)
        kept = self._keep_good(times, values)
        return Series(item.labels, kept[0], kept[1])

    def _series(self, doc: Answer) -> list[Series]:
        kind = doc.result_type
        if kind in ("scalar", "string"):
            raise PrometheusError("bad_shape", f"Prometheus {self.url}: expected a vector or matrix, got {kind}")
        if kind not in ("vector", "matrix"):
            raise PrometheusError("bad_shape", f"Prometheus {self.url}: unknown resultType {kind!r}")
        out: list[Series] = []
        for item in doc.result or []:
            one = self._one(item)
            if one is not None:
                out.append(one)
        return out

    # -- the API --------------------------------------------------------------------------------------------
    def ready(self) -> tuple[bool, str]:
        """Whether `/-/ready` answers 200, and what was seen."""
        try:
            status, body = self._get("/-/ready")
        except PrometheusError as exc:
            return False, str(exc)
        return status == 200, f"HTTP {status}: {bytes(body[:200]).decode('utf-8', errors='replace').strip()}"

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
            if data.result_type != "matrix":
                raise PrometheusError(
                    "bad_shape", f"Prometheus {self.url}: a range query answered {data.result_type!r}"
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
