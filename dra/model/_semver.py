"""The semver 2.0.0 pattern DRA validation applies to `version` attributes (semverRe in validation.go)."""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["is_semver"]

_NUMERIC = r"(0|[1-9]\d*)"
_PRERELEASE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
_SEMVER_RE = re.compile(
    rf"^{_NUMERIC}\.{_NUMERIC}\.{_NUMERIC}(-{_PRERELEASE}(\.{_PRERELEASE})*)?(\+{_BUILD}(\.{_BUILD})*)?\Z",
    re.ASCII,
)


@lru_cache(maxsize=4096)
def is_semver(value: str) -> bool:
    """True for `1.2.3`, `1.0.0-rc.1+build.5`; false for `v1.2.3`, `1.2`, `01.2.3`."""
    return _SEMVER_RE.match(value) is not None
