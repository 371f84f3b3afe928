"""JSON REST and watches against the verification's own API server, as its admin (client certificate).

Objects stay plain dicts, so fields newer than any generated client survive. Watches run on threads that put
`WatchEvent`s on one queue; the replay waits on that queue for the state it needs instead of polling.
"""

from __future__ import annotations

import json
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3

from dra.errors import GpudraError

__all__ = ["Api", "ApiError", "WatchEvent", "Watcher"]

REQUEST_TIMEOUT = 60.0
# The API server ends a watch after --min-request-timeout (30-60 min); the watcher resumes from the last version.
WATCH_SECONDS = 600


class ApiError(GpudraError):
    """An API call failed; carries the HTTP status and what the server said."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        self.status = status
        self.body = body
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event: `kind` is the watched resource's plural (`pods`), `type` ADDED | MODIFIED | DELETED."""

    kind: str
    type: str
    object: dict[str, Any]


class Api:
    """One connection pool to `server`, authenticated by a client certificate and verified against `ca`."""

    def __init__(self, server: str, *, ca: Path, cert: Path, key: Path) -> None:
        self.server = server
        self.pool = urllib3.PoolManager(
            cert_reqs="CERT_REQUIRED", ca_certs=str(ca), cert_file=str(cert), key_file=str(key), maxsize=4
        )

    def request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """One call; `body` is JSON-encoded here. The decoded answer (None when empty); `ApiError` on non-2xx."""
        response = self.pool.request(
            method,
            self.server + path,
            body=None if body is None else json.dumps(body),
            headers={"Content-Type": content_type, "Accept": "application/json"},
            timeout=REQUEST_TIMEOUT,
        )
        if not 200 <= response.status < 300:
            raise ApiError(method, path, response.status, response.data.decode(errors="replace"))
        return json.loads(response.data) if response.data else None

    def create(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = self.request("POST", path, obj)
        return created

    def create_if_absent(self, path: str, obj: dict[str, Any]) -> None:
        """Create `obj` unless one of its name exists (409)."""
        try:
            self.request("POST", path, obj)
        except ApiError as e:
            if e.status != 409:
                raise

    def patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        patched: dict[str, Any] = self.request("PATCH", path, patch, "application/merge-patch+json")
        return patched

    def delete_now(self, path: str) -> None:
        """Delete without a grace period (no kubelet would ever confirm a graceful one); a 404 is fine."""
        try:
            self.request("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})
        except ApiError as e:
            if e.status != 404:
                raise

    def list(self, path: str) -> tuple[list[dict[str, Any]], str]:
        """The items at `path` and the list's resourceVersion (where a watch starts)."""
        answer = self.request("GET", path)
        return list(answer.get("items") or []), str(answer["metadata"]["resourceVersion"])

    def close(self) -> None:
        self.pool.clear()


class Watcher:
    """Watches some collections from given resource versions and puts their events on `events`.

    A watch the server ends is resumed from the last version seen; an ERROR event (e.g. 410 Gone) is put on the
    queue as a `WatchEvent` of type ERROR, for the consumer to fail on with the server's message."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.events: queue.Queue[WatchEvent] = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._responses: list[Any] = []
        self._lock = threading.Lock()

    def watch(self, kind: str, path: str, resource_version: str) -> None:
        thread = threading.Thread(
            target=self._run, args=(kind, path, resource_version), name=f"watch-{kind}", daemon=True
        )
        self._threads.append(thread)
        thread.start()

    def _run(self, kind: str, path: str, version: str) -> None:
        while not self._stop.is_set():
            url = (
                f"{self.api.server}{path}?watch=1&resourceVersion={version}&allowWatchBookmarks=true"
                f"&timeoutSeconds={WATCH_SECONDS}"
            )
            try:
                response = self.api.pool.request(
                    "GET", url, preload_content=False, timeout=urllib3.Timeout(connect=10, read=WATCH_SECONDS + 30)
                )
                with self._lock:
                    self._responses.append(response)
                if response.status != 200:
                    body = response.read().decode(errors="replace")
                    self.events.put(WatchEvent(kind, "ERROR", {"message": f"watch {path}: HTTP {response.status}: "
                                                               f"{body[:300]}"}))  # fmt: skip
                    return
                for line in response:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        self.events.put(WatchEvent(kind, "ERROR", obj))
                        return
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                    if event.get("type") != "BOOKMARK":
                        self.events.put(WatchEvent(kind, str(event["type"]), obj))
                response.release_conn()
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                if self._stop.is_set():
                    return
                self.events.put(WatchEvent(kind, "ERROR", {"message": f"watch {path}: {exc}"}))
                return

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            for response in self._responses:
                try:
                    response.shutdown()
                except (AttributeError, OSError):
                    response.close()
        for thread in self._threads:
            thread.join(timeout=5)
