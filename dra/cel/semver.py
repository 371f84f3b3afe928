"""Kubernetes CEL semver library (`library/semverlib.go`) and its `kubernetes.Semver` value.

Parsing and precedence follow blang/semver v4 (`Parse`, `Version.Compare`) with its error texts;
`semver(s, true)` / `isSemver(s, true)` apply upstream's `normalizeAndParse`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from dra.cel._functions import FunctionRegistry
from dra.cel.ip import go_quote
from dra.errors import CelRuntimeError

__all__ = ["REGISTRY", "Semver", "SemverError"]

REGISTRY = FunctionRegistry()

_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-0123456789")
_UINT64_MAX = 2**64 - 1
_IDENT = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
# Exactly the strings blang's Parse accepts (up to the uint64 bound, checked after the match).
_VALID = re.compile(
    rf"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-({_IDENT}(?:\.{_IDENT})*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


class SemverError(ValueError):
    """A string that blang/semver rejects; the message is blang's."""


def _contains_only(s: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in s)


def _has_leading_zeroes(s: str) -> bool:
    return len(s) > 1 and s[0] == "0"


def _parse_uint(s: str) -> int:
    # strconv.ParseUint(s, 10, 64); callers have checked that s holds only digits.
    if not s:
        raise SemverError(f'strconv.ParseUint: parsing "{s}": invalid syntax')
    n = int(s)
    if n > _UINT64_MAX:
        raise SemverError(f'strconv.ParseUint: parsing "{s}": value out of range')
    return n


def _version_number(s: str, which: str) -> int:
    if not _contains_only(s, _NUMBERS):
        raise SemverError(f"Invalid character(s) found in {which.lower()} number {go_quote(s)}")
    if _has_leading_zeroes(s):
        raise SemverError(f"{which} number must not contain leading zeroes {go_quote(s)}")
    return _parse_uint(s)


def _prerelease_identifier(s: str) -> int | str:
    if not s:
        raise SemverError("Prerelease is empty")
    if _contains_only(s, _NUMBERS):
        if _has_leading_zeroes(s):
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {go_quote(s)}")
        return _parse_uint(s)
    if _contains_only(s, _ALPHANUM):
        return s
    raise SemverError(f"Invalid character(s) found in prerelease {go_quote(s)}")


def _compare_identifiers(a: int | str, b: int | str) -> int:
    if isinstance(a, int) and isinstance(b, int):
        return (a > b) - (a < b)
    if isinstance(a, int):
        return -1
    if isinstance(b, int):
        return 1
    # Go compares strings bytewise; for ASCII identifiers that is code point order.
    return (a > b) - (a < b)


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Semver:
    """An immutable semantic version; equality and order ignore build metadata (blang `EQ`/`Compare`)."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()
    build: tuple[str, ...] = ()

    cel_type_name = "kubernetes.Semver"

    @classmethod
    def parse(cls, text: str) -> Semver:
        """Strict blang/semver `Parse`; raises `SemverError` with blang's message."""
        m = _VALID.fullmatch(text)
        if m is not None:
            major, minor, patch = int(m[1]), int(m[2]), int(m[3])
            pre = tuple(int(p) if p.isdigit() else p for p in m[4].split(".")) if m[4] else ()
            if max(major, minor, patch, *(p for p in pre if isinstance(p, int))) <= _UINT64_MAX:
                return cls(major, minor, patch, pre, tuple(m[5].split(".")) if m[5] else ())
        return cls._parse_slow(text)

    @classmethod
    def _parse_slow(cls, text: str) -> Semver:
        # blang's step-by-step Parse, which also names what is wrong.
        if not text:
            raise SemverError("Version string empty")
        parts = text.split(".", 2)
        if len(parts) != 3:
            raise SemverError("No Major.Minor.Patch elements found")
        major = _version_number(parts[0], "Major")
        minor = _version_number(parts[1], "Minor")
        patch_str = parts[2]
        build: list[str] = []
        pre: list[str] = []
        if (i := patch_str.find("+")) != -1:
            build = patch_str[i + 1 :].split(".")
            patch_str = patch_str[:i]
        if (i := patch_str.find("-")) != -1:
            pre = patch_str[i + 1 :].split(".")
            patch_str = patch_str[:i]
        patch = _version_number(patch_str, "Patch")
        pre_ids = tuple(_prerelease_identifier(p) for p in pre)
        for b in build:
            if not b:
                raise SemverError("Build meta data is empty")
            if not _contains_only(b, _ALPHANUM):
                raise SemverError(f"Invalid character(s) found in build meta data {go_quote(b)}")
        return cls(major, minor, patch, pre_ids, tuple(build))

    @classmethod
    def parse_normalized(cls, text: str) -> Semver:
        """Upstream `normalizeAndParse`: drop one leading `v`, strip leading zeros, pad to three parts."""
        if text.startswith("v"):
            text = text[1:]
        parts = text.split(".", 2)
        for i, p in enumerate(parts):
            if len(p) > 1:
                p = p.lstrip("0")
                if not p or p[0] not in _NUMBERS:
                    p = "0" + p
                parts[i] = p
        if len(parts) < 3:
            if any(c in parts[-1] for c in "+-"):
                raise SemverError("short version cannot contain PreRelease/Build meta data")
            parts += ["0"] * (3 - len(parts))
        return cls.parse(".".join(parts))

    def compare(self, other: Semver) -> int:
        """blang `Version.Compare`: -1, 0 or 1 by semver precedence."""
        for a, b in ((self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)):
            if a != b:
                return 1 if a > b else -1
        if not self.pre and not other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        for a_id, b_id in zip(self.pre, other.pre, strict=False):
            if c := _compare_identifiers(a_id, b_id):
                return c
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.compare(other) == 0

    def __lt__(self, other: Semver) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.compare(other) < 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(str(p) for p in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def __repr__(self) -> str:
        return f"Semver({str(self)!r})"


def _to_semver(text: str, normalize: bool) -> Semver:
    try:
        return Semver.parse_normalized(text) if normalize else Semver.parse(text)
    except SemverError as err:
        raise CelRuntimeError(str(err)) from None


@REGISTRY.function("semver", str)
def semver(text: str) -> Semver:
    return _to_semver(text, False)


@REGISTRY.function("semver", str, bool)
def semver_normalize(text: str, normalize: bool) -> Semver:
    return _to_semver(text, normalize)


def _is_semver(text: str, normalize: bool) -> bool:
    try:
        Semver.parse_normalized(text) if normalize else Semver.parse(text)
    except SemverError:
        return False
    return True


@REGISTRY.function("isSemver", str)
def is_semver(text: str) -> bool:
    return _is_semver(text, False)


@REGISTRY.function("isSemver", str, bool)
def is_semver_normalize(text: str, normalize: bool) -> bool:
    return _is_semver(text, normalize)


def _int64(n: int) -> int:
    # Upstream returns types.Int(v.Major) from a uint64: values above int64 wrap around.
    return n - 2**64 if n >= 2**63 else n


@REGISTRY.member("major", Semver)
def major(v: Semver) -> int:
    return _int64(v.major)


@REGISTRY.member("minor", Semver)
def minor(v: Semver) -> int:
    return _int64(v.minor)


@REGISTRY.member("patch", Semver)
def patch(v: Semver) -> int:
    return _int64(v.patch)


@REGISTRY.member("isGreaterThan", Semver, Semver)
def is_greater_than(v: Semver, other: Semver) -> bool:
    return v.compare(other) == 1


@REGISTRY.member("isLessThan", Semver, Semver)
def is_less_than(v: Semver, other: Semver) -> bool:
    return v.compare(other) == -1


@REGISTRY.member("compareTo", Semver, Semver)
def compare_to(v: Semver, other: Semver) -> int:
    return v.compare(other)
