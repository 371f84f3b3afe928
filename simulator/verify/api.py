"""JSON REST and watches against the verification's own API server, as its admin (client certificate).

Objects stay plain dicts, so fields newer than any generated client survive. A watched collection is a
`Collection` kept by the one list+watch loop (`kubeapi.ListWatch`) over a `PathListWatch`; every change notifies
one condition, on which the replay waits for the state it needs instead of polling.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import urllib3

from dra.errors import GpudraError
from kubeapi import ListWatchError

__all__ = ["Api", "ApiError", "Collection", "PathListWatch"]

REQUEST_TIMEOUT = 60.0
# The API server ends a watch after --min-request-timeout (30-60 min); the watcher resumes from the last version.
WATCH_SECONDS = 600


class ApiError(GpudraError):
    """An API call failed; carries the HTTP status and what the server said."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        self.status = status
        self.body = body
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")


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


class PathListWatch:
    """The `kubeapi.ListWatchSource` of the collection at `path` (`/api/v1/namespaces/default/pods`) through `api`:
    failures raise `ListWatchError` with the HTTP status when the server answered."""

    def __init__(self, api: Api, path: str) -> None:
        self.api = api
        self.path = path
        self._response: Any = None

    def list(self) -> tuple[list[dict[str, Any]], str]:
        try:
            return self.api.list(self.path)
        except ApiError as exc:
            raise ListWatchError(str(exc), exc.status) from exc
        except (urllib3.exceptions.HTTPError, OSError, ValueError, KeyError) as exc:
            raise ListWatchError(f"GET {self.path}: {type(exc).__name__}: {exc}") from exc

    def watch(self, resource_version: str) -> Iterator[tuple[str, dict[str, Any]]]:
        url = (
            f"{self.api.server}{self.path}?watch=1&resourceVersion={resource_version}&allowWatchBookmarks=true"
            f"&timeoutSeconds={WATCH_SECONDS}"
        )
        try:
            response = self.api.pool.request(
                "GET", url, preload_content=False, timeout=urllib3.Timeout(connect=10, read=WATCH_SECONDS + 30)
            )
            self._response = response
            if response.status != 200:
                body = response.read().decode(errors="replace")
                raise ListWatchError(f"watch {self.path}: HTTP {response.status}: {body[:300]}", response.status)
            for line in response:
                if line.strip():
                    event = json.loads(line)
                    yield str(event.get("type")), event.get("object") or {}
            response.release_conn()
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            raise ListWatchError(f"watch {self.path}: {type(exc).__name__}: {exc}") from exc
        finally:
            self._response = None

    def interrupt(self) -> None:
        """End a running watch (used when the loop stops)."""
        response = self._response
        if response is not None:
            try:
                response.shutdown()
            except (AttributeError, OSError):
                response.close()


class Collection(Mapping[str, dict[str, Any]]):
    """The objects of one watched collection by name: the `kubeapi.ListWatchCache` of a `PathListWatch`. Every
    change is made holding `changed` and notifies it, so that a reader waiting on it sees each state."""

    def __init__(self, changed: threading.Condition) -> None:
        self.changed = changed
        self._objects: dict[str, dict[str, Any]] = {}
        self.seen = 0  # objects that appeared (a name new to the collection), deletions and relists included

    def __getitem__(self, name: str) -> dict[str, Any]:
        return self._objects[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._objects)

    def __len__(self) -> int:
        return len(self._objects)

    def replace(self, items: list[dict[str, Any]]) -> None:
        with self.changed:
            objects = {str(i["metadata"]["name"]): i for i in items}
            self.seen += len(objects.keys() - self._objects.keys())
            self._objects = objects
            self.changed.notify_all()

    def apply(self, event: str, obj: dict[str, Any]) -> None:
        name = str(obj["metadata"]["name"])
        with self.changed:
            if event == "DELETED":
                self._objects.pop(name, None)
            else:
                self.seen += name not in self._objects
                self._objects[name] = obj
            self.changed.notify_all()

    def absent(self) -> None:
        self.replace([])
