"""Kubernetes CEL IP library (`library/ip.go`) and its `net.IP` value, with Go `net/netip` parsing.

`IP.parse` follows `netip.ParseAddr` and its error texts; the library then rejects zones and IPv4-mapped
IPv6 addresses as upstream does. `str(ip)` is Go's `Addr.String()` (RFC 5952 for IPv6), which is what
CEL's `string(ip)` returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final

from dra.cel._functions import FunctionRegistry
from dra.errors import CelRuntimeError

__all__ = ["AddrParseError", "IP", "REGISTRY", "go_quote", "parse_ip"]

REGISTRY = FunctionRegistry()

_HEX: Final = {c: int(c, 16) for c in "0123456789abcdefABCDEF"}


def go_quote(s: str) -> str:
    """Go strconv.Quote for the strings these messages carry."""
    out = ['"']
    for c in s:
        r = ord(c)
        if c in '"\\':
            out.append("\\" + c)
        elif c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c.isprintable():
            out.append(c)
        elif r < 0x20 or r == 0x7F:
            out.append(f"\\x{r:02x}")
        elif r < 0x10000:
            out.append(f"\\u{r:04x}")
        else:
            out.append(f"\\U{r:08x}")
    out.append('"')
    return "".join(out)


_ESCAPES: Final = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


class AddrParseError(ValueError):
    """`netip.ParseAddr` failed; the message is Go's `ParseAddr("..."): ...`."""

    def __init__(self, text: str, msg: str, at: str = "") -> None:
        self.text = text
        message = f"ParseAddr({go_quote(text)}): {msg}"
        if at:
            message += f" (at {go_quote(at)})"
        super().__init__(message)


@dataclass(frozen=True)
class IP:
    """An IPv4 (`bits == 32`) or IPv6 (`bits == 128`) address; `zone` is kept only for Go-faithful parsing."""

    value: int
    bits: int
    zone: str = ""

    cel_type_name: ClassVar[str] = "net.IP"

    @classmethod
    def parse(cls, text: str) -> IP:
        """Go `netip.ParseAddr`: dotted-quad without leading zeros, or IPv6 with optional embedded IPv4 / zone."""
        for c in text:
            if c == ".":
                return cls(_parse_ipv4_fields(text, text), 32)
            if c == ":":
                return _parse_ipv6(text)
            if c == "%":
                raise AddrParseError(text, "missing IPv6 address")
        raise AddrParseError(text, "unable to parse IP")

    @property
    def family(self) -> int:
        return 4 if self.bits == 32 else 6

    def is_4in6(self) -> bool:
        return self.bits == 128 and self.value >> 32 == 0xFFFF

    def octets(self) -> bytes:
        return self.value.to_bytes(self.bits // 8, "big")

    def is_unspecified(self) -> bool:
        return self.value == 0 and not self.zone

    def is_loopback(self) -> bool:
        if self.bits == 32:
            return self.value >> 24 == 127
        return self.value == 1

    def is_multicast(self) -> bool:
        if self.bits == 32:
            return self.value >> 28 == 0xE
        return self.value >> 120 == 0xFF

    def is_link_local_multicast(self) -> bool:
        if self.bits == 32:
            return self.value >> 8 == 0xE00000  # 224.0.0.0/24
        return (self.value >> 112) & 0xFF0F == 0xFF02

    def is_link_local_unicast(self) -> bool:
        if self.bits == 32:
            return self.value >> 16 == 0xA9FE  # 169.254.0.0/16
        return (self.value >> 112) & 0xFFC0 == 0xFE80

    def is_global_unicast(self) -> bool:
        # Go netip: private IPv4 and IPv6 ULA still count as global unicast.
        if self.bits == 32 and self.value in (0, 0xFFFFFFFF):
            return False
        return not (
            (self.bits == 128 and self.value == 0)
            or self.is_loopback()
            or self.is_multicast()
            or self.is_link_local_unicast()
        )

    def __str__(self) -> str:
        if self.bits == 32:
            return ".".join(str(b) for b in self.octets())
        if self.is_4in6():
            text = "::ffff:" + ".".join(str(b) for b in self.octets()[12:])
        else:
            text = _format_ipv6(self.value)
        return f"{text}%{self.zone}" if self.zone else text


def _parse_ipv4_fields(full: str, s: str) -> int:
    """Go `parseIPv4Fields` over `s` (a suffix of `full`, used in messages)."""
    fields: list[int] = []
    val = 0
    dig_len = 0
    for i, c in enumerate(s):
        if "0" <= c <= "9":
            if dig_len == 1 and val == 0:
                raise AddrParseError(full, "IPv4 field has octet with leading zero")
            val = val * 10 + ord(c) - 48
            dig_len += 1
            if val > 255:
                raise AddrParseError(full, "IPv4 field has value >255")
        elif c == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                raise AddrParseError(full, "IPv4 field must have at least one digit", s[i:])
            if len(fields) == 3:
                raise AddrParseError(full, "IPv4 address too long")
            fields.append(val)
            val = 0
            dig_len = 0
        else:
            raise AddrParseError(full, "unexpected character", s[i:])
    if len(fields) < 3:
        raise AddrParseError(full, "IPv4 address too short")
    fields.append(val)
    return int.from_bytes(bytes(fields), "big")


def _parse_ipv6(full: str) -> IP:
    """Go `parseIPv6`, message for message."""
    s = full
    zone = ""
    if (z := s.find("%")) != -1:
        s, zone = s[:z], s[z + 1 :]
        if not zone:
            raise AddrParseError(full, "zone must be a non-empty string")
    groups: list[int] = []  # 16-bit groups in order; an embedded IPv4 adds two
    ellipsis = -1
    if len(s) >= 2 and s[0] == ":" and s[1] == ":":
        ellipsis = 0
        s = s[2:]
        if not s:
            return IP(0, 128, zone)
    while len(groups) < 8:
        off = 0
        acc = 0
        while off < len(s):
            digit = _HEX.get(s[off])
            if digit is None:
                break
            acc = (acc << 4) + digit
            if off > 3:
                raise AddrParseError(full, "each group must have 4 or less digits", s)
            if acc > 0xFFFF:
                raise AddrParseError(full, "IPv6 field has value >=2^16", s)
            off += 1
        if off == 0:
            raise AddrParseError(full, "each colon-separated field must have at least one digit", s)
        if off < len(s) and s[off] == ".":
            if ellipsis < 0 and len(groups) != 6:
                raise AddrParseError(full, "embedded IPv4 address must replace the final 2 fields of the address", s)
            if len(groups) + 2 > 8:
                raise AddrParseError(full, "too many hex fields to fit an embedded IPv4 at the end of the address", s)
            v4 = _parse_ipv4_fields(full, s)
            groups += [v4 >> 16, v4 & 0xFFFF]
            s = ""
            break
        groups.append(acc)
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise AddrParseError(full, "unexpected character, want colon", s)
        if len(s) == 1:
            raise AddrParseError(full, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise AddrParseError(full, "multiple :: in address", s)
            ellipsis = len(groups)
            s = s[1:]
            if not s:
                break
    if s:
        raise AddrParseError(full, "trailing garbage after address", s)
    if len(groups) < 8:
        if ellipsis < 0:
            raise AddrParseError(full, "address string too short")
        groups = groups[:ellipsis] + [0] * (8 - len(groups)) + groups[ellipsis:]
    elif ellipsis >= 0:
        raise AddrParseError(full, "the :: must expand to at least one field of zeros", s)
    value = 0
    for g in groups:
        value = (value << 16) | g
    return IP(value, 128, zone)


def _format_ipv6(value: int) -> str:
    """RFC 5952 as Go prints it: lowercase, the longest run (first on ties) of two or more zero groups is `::`."""
    groups = [(value >> (112 - 16 * i)) & 0xFFFF for i in range(8)]
    best_start, best_len = -1, 0
    i = 0
    while i < 8:
        if groups[i] == 0:
            j = i
            while j < 8 and groups[j] == 0:
                j += 1
            if j - i > best_len:
                best_start, best_len = i, j - i
            i = j
        else:
            i += 1
    if best_len < 2:
        return ":".join(f"{g:x}" for g in groups)
    head = ":".join(f"{g:x}" for g in groups[:best_start])
    tail = ":".join(f"{g:x}" for g in groups[best_start + best_len :])
    return f"{head}::{tail}"


def parse_ip(text: str) -> IP:
    """Upstream `parseIPAddr`: netip parsing, then no zones and no IPv4-mapped IPv6; raises `CelRuntimeError`."""
    try:
        addr = IP.parse(text)
    except AddrParseError as err:
        raise CelRuntimeError(f"IP Address {go_quote(text)} parse error during conversion from string: {err}") from None
    if addr.zone:
        raise CelRuntimeError(f"IP address {go_quote(text)} with zone value is not allowed")
    if addr.is_4in6():
        raise CelRuntimeError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return addr


@REGISTRY.function("ip", str)
def ip(text: str) -> IP:
    return parse_ip(text)


@REGISTRY.function("isIP", str)
def is_ip(text: str) -> bool:
    try:
        parse_ip(text)
    except CelRuntimeError:
        return False
    return True


@REGISTRY.function("ip.isCanonical", str)
def is_canonical(text: str) -> bool:
    return str(parse_ip(text)) == text


@REGISTRY.function("string", IP)
def ip_to_string(addr: IP) -> str:
    return str(addr)


@REGISTRY.member("family", IP)
def family(addr: IP) -> int:
    return addr.family


@REGISTRY.member("isUnspecified", IP)
def is_unspecified(addr: IP) -> bool:
    return addr.is_unspecified()


@REGISTRY.member("isLoopback", IP)
def is_loopback(addr: IP) -> bool:
    return addr.is_loopback()


@REGISTRY.member("isLinkLocalMulticast", IP)
def is_link_local_multicast(addr: IP) -> bool:
    return addr.is_link_local_multicast()


@REGISTRY.member("isLinkLocalUnicast", IP)
def is_link_local_unicast(addr: IP) -> bool:
    return addr.is_link_local_unicast()


@REGISTRY.member("isGlobalUnicast", IP)
def is_global_unicast(addr: IP) -> bool:
    return addr.is_global_unicast()
