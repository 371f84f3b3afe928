"""Kubernetes CEL CIDR library (`library/cidr.go`) and its `net.CIDR` value, with Go `netip.ParsePrefix`.

Host bits are allowed (`cidr("192.168.0.1/24")` parses; `.masked()` clears them). Parse errors carry
upstream's doubled prefix `network address parse error during conversion from string: ` (it is added twice
there), which the upstream tests compare verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final

from dra.cel._functions import FunctionRegistry
from dra.cel.ip import IP, AddrParseError, go_quote, parse_ip
from dra.errors import CelRuntimeError

__all__ = ["CIDR", "PrefixParseError", "REGISTRY", "parse_cidr"]

REGISTRY = FunctionRegistry()

_PREFIX: Final = "network address parse error during conversion from string: "


class PrefixParseError(ValueError):
    """`netip.ParsePrefix` failed; the message is Go's `netip.ParsePrefix("..."): ...`."""

    def __init__(self, text: str, msg: str) -> None:
        super().__init__(f"netip.ParsePrefix({go_quote(text)}): {msg}")


@dataclass(frozen=True)
class CIDR:
    """An address and a prefix length; equality compares both as given (not masked), as Go's Prefix does."""

    addr: IP
    prefix_length: int

    cel_type_name: ClassVar[str] = "net.CIDR"

    @classmethod
    def parse(cls, text: str) -> CIDR:
        """Go `netip.ParsePrefix`."""
        slash = text.rfind("/")
        if slash < 0:
            raise PrefixParseError(text, "no '/'")
        try:
            addr = IP.parse(text[:slash])
        except AddrParseError as err:
            raise PrefixParseError(text, str(err)) from None
        if addr.bits == 128 and addr.zone:
            raise PrefixParseError(text, "IPv6 zones cannot be present in a prefix")
        bits_text = text[slash + 1 :]
        bad_bits = f"bad bits after slash: {go_quote(bits_text)}"
        if len(bits_text) > 1 and not ("1" <= bits_text[0] <= "9"):
            raise PrefixParseError(text, bad_bits)
        # strconv.Atoi: digits only here (a sign passed the check above only alone), within int64.
        if not bits_text or not all("0" <= c <= "9" for c in bits_text) or int(bits_text) >= 2**63:
            raise PrefixParseError(text, bad_bits)
        bits = int(bits_text)
        if not 0 <= bits <= addr.bits:
            raise PrefixParseError(text, "prefix length out of range")
        return cls(addr, bits)

    def _mask(self) -> int:
        width = self.addr.bits
        return ((1 << width) - 1) ^ ((1 << (width - self.prefix_length)) - 1)

    def masked(self) -> CIDR:
        return CIDR(IP(self.addr.value & self._mask(), self.addr.bits), self.prefix_length)

    def contains_ip(self, addr: IP) -> bool:
        if addr.zone or addr.bits != self.addr.bits:
            return False
        return (addr.value ^ self.addr.value) & self._mask() == 0

    def contains_cidr(self, other: CIDR) -> bool:
        """Upstream: `Overlaps(other) && Bits() <= other.Bits()`."""
        if other.addr.bits != self.addr.bits or self.prefix_length > other.prefix_length:
            return False
        return self.contains_ip(other.addr)

    def __str__(self) -> str:
        return f"{self.addr}/{self.prefix_length}"


def parse_cidr(text: str) -> CIDR:
    """Upstream `stringToCIDR` ∘ `parseCIDR`; raises `CelRuntimeError` with upstream's text."""
    try:
        prefix = CIDR.parse(text)
    except PrefixParseError as err:
        raise CelRuntimeError(f"{_PREFIX}{_PREFIX}{err}") from None
    if prefix.addr.is_4in6():
        raise CelRuntimeError(f"{_PREFIX}IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return prefix


@REGISTRY.function("cidr", str)
def cidr(text: str) -> CIDR:
    return parse_cidr(text)


@REGISTRY.function("isCIDR", str)
def is_cidr(text: str) -> bool:
    try:
        parse_cidr(text)
    except CelRuntimeError:
        return False
    return True


@REGISTRY.function("string", CIDR)
def cidr_to_string(prefix: CIDR) -> str:
    return str(prefix)


@REGISTRY.member("containsIP", CIDR, IP)
def contains_ip(prefix: CIDR, addr: IP) -> bool:
    return prefix.contains_ip(addr)


@REGISTRY.member("containsIP", CIDR, str)
def contains_ip_string(prefix: CIDR, text: str) -> bool:
    try:
        addr = parse_ip(text)
    except CelRuntimeError:
        # Upstream passes the receiver, not the parse error, to MaybeNoSuchOverloadErr here.
        raise CelRuntimeError("no such overload") from None
    return prefix.contains_ip(addr)


@REGISTRY.member("containsCIDR", CIDR, CIDR)
def contains_cidr(prefix: CIDR, other: CIDR) -> bool:
    return prefix.contains_cidr(other)


@REGISTRY.member("containsCIDR", CIDR, str)
def contains_cidr_string(prefix: CIDR, text: str) -> bool:
    return prefix.contains_cidr(parse_cidr(text))


@REGISTRY.member("ip", CIDR)
def cidr_ip(prefix: CIDR) -> IP:
    return prefix.addr


@REGISTRY.member("masked", CIDR)
def masked(prefix: CIDR) -> CIDR:
    return prefix.masked()


@REGISTRY.member("prefixLength", CIDR)
def prefix_length(prefix: CIDR) -> int:
    return prefix.prefix_length
