"""Every item of a Kubernetes list, page by page (`limit` and the `continue` token), for both shapes the client
returns: plain dicts (CustomObjectsApi) and models (CoreV1Api)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PAGE", "all_pages"]

PAGE = 500  # objects per page: the API server's own default chunk size for kubectl


def _page_of(page: Any) -> tuple[list[Any], str | None, str]:
    """(items, continue token, resourceVersion) of one page, dict or model."""
    if isinstance(page, dict):
        meta = page.get("metadata") or {}
        return list(page.get("items") or []), meta.get("continue") or None, str(meta.get("resourceVersion") or "")
    meta = getattr(page, "metadata", None)
    token = getattr(meta, "_continue", None) if meta is not None else None
    version = getattr(meta, "resource_version", None) if meta is not None else None
    return list(getattr(page, "items", None) or []), token or None, str(version or "")


def all_pages(fetch: Callable[[str | None], Any], *, max_pages: int = 100_000) -> tuple[list[Any], str]:
    """The items of every page `fetch(continue_token)` returns (the first call gets None), and the last page's
    resourceVersion. A server that keeps answering with a continue token past `max_pages` is an error, not a loop."""
    items: list[Any] = []
    token: str | None = None
    for _ in range(max_pages):
        found, token, version = _page_of(fetch(token))
        items.extend(found)
        if not token:
            return items, version
    raise RuntimeError(f"the list did not end after {max_pages} pages")
