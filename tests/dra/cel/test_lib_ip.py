"""Unit tests of the Kubernetes IP and CIDR libraries (Go netip semantics), through their registries."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.cel import cidr as cidr_lib
from dra.cel import ip as ip_lib
from dra.cel.cidr import CIDR
from dra.cel.ip import IP
from dra.errors import CelRuntimeError


def ip(text: str) -> IP:
    value = ip_lib.REGISTRY.call_global("ip", (text,))
    assert isinstance(value, IP)
    return value


def cidr(text: str) -> CIDR:
    value = cidr_lib.REGISTRY.call_global("cidr", (text,))
    assert isinstance(value, CIDR)
    return value


def ip_member(name: str, receiver: object) -> Any:
    return ip_lib.REGISTRY.call_member(name, receiver, ())


def cidr_member(name: str, receiver: object, *args: object) -> Any:
    return cidr_lib.REGISTRY.call_member(name, receiver, args)


_PARSE = 'IP Address "{0}" parse error during conversion from string: ParseAddr("{0}"): '


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("192.168.0.1.0", _PARSE + "IPv4 address too long"),
        ("192.168.0", _PARSE + "IPv4 address too short"),
        ("192.168.00.1", _PARSE + "IPv4 field has octet with leading zero"),
        ("192.168.256.1", _PARSE + "IPv4 field has value >255"),
        ("192..0.1", _PARSE + 'IPv4 field must have at least one digit (at ".0.1")'),
        ("1.2.3.x", _PARSE + 'unexpected character (at "x")'),
        ("2001:db8:::68", _PARSE + 'each colon-separated field must have at least one digit (at ":68")'),
        ("2001:db8::68::1", _PARSE + 'multiple :: in address (at ":1")'),
        ("12345::", _PARSE + 'each group must have 4 or less digits (at "12345::")'),
        ("1:2:3:4:5:6:7", _PARSE + "address string too short"),
        ("1:2:3:4:5:6:7::8", _PARSE + "the :: must expand to at least one field of zeros"),
        ("1:2:3:4:5:6:7:8:9", _PARSE + 'trailing garbage after address (at "9")'),
        ("1:2:", _PARSE + 'colon must be followed by more characters (at ":")'),
        (
            "1:2:3:4:1.2.3.4",
            _PARSE + 'embedded IPv4 address must replace the final 2 fields of the address (at "1.2.3.4")',
        ),
        ("fe80::1%", _PARSE + "zone must be a non-empty string"),
        ("%eth0", _PARSE + "missing IPv6 address"),
        ("localhost", _PARSE + "unable to parse IP"),
        ("", _PARSE + "unable to parse IP"),
        ("fe80::1%eth0", 'IP address "fe80::1%eth0" with zone value is not allowed'),
        ("::ffff:1.2.3.4", 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
    ],
)
def test_parse_errors_match_go(text: str, message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        ip(text)
    assert err.value.message == message.format(text)
    assert ip_lib.REGISTRY.call_global("isIP", (text,)) is False


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("192.168.0.1", "192.168.0.1"),
        ("2001:DB8::68", "2001:db8::68"),
        ("2001:0db8:0000:0000:0000:0000:0000:0068", "2001:db8::68"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"),
        ("1:0:0:2:0:0:3:4", "1::2:0:0:3:4"),
        ("::1.2.3.4", "::102:304"),
        ("::", "::"),
    ],
)
def test_canonical_string(text: str, canonical: str) -> None:
    assert str(ip(text)) == canonical
    assert ip_lib.REGISTRY.call_global("string", (ip(text),)) == canonical
    assert ip_lib.REGISTRY.call_global("ip.isCanonical", (text,)) is (text == canonical)


def test_is_canonical_errors_on_invalid_input() -> None:
    with pytest.raises(CelRuntimeError, match="IPv4 address too long"):
        ip_lib.REGISTRY.call_global("ip.isCanonical", ("127.0.0.1.0",))


@pytest.mark.parametrize(
    ("text", "family", "unspecified", "loopback", "ll_multicast", "ll_unicast", "global_unicast"),
    [
        ("0.0.0.0", 4, True, False, False, False, False),
        ("127.0.0.1", 4, False, True, False, False, False),
        ("224.0.0.1", 4, False, False, True, False, False),
        ("224.0.1.1", 4, False, False, False, False, False),
        ("169.254.169.254", 4, False, False, False, True, False),
        ("192.168.0.1", 4, False, False, False, False, True),
        ("10.0.0.1", 4, False, False, False, False, True),
        ("255.255.255.255", 4, False, False, False, False, False),
        ("::", 6, True, False, False, False, False),
        ("::1", 6, False, True, False, False, False),
        ("ff02::1", 6, False, False, True, False, False),
        ("ff12::1", 6, False, False, True, False, False),
        ("fd00::1", 6, False, False, False, False, True),
        ("fe80::1", 6, False, False, False, True, False),
        ("febf::1", 6, False, False, False, True, False),
        ("2001:db8::abcd", 6, False, False, False, False, True),
        ("ff00::1", 6, False, False, False, False, False),
    ],
)
def test_predicates(
    text: str,
    family: int,
    unspecified: bool,
    loopback: bool,
    ll_multicast: bool,
    ll_unicast: bool,
    global_unicast: bool,
) -> None:
    addr = ip(text)
    assert ip_member("family", addr) == family
    assert ip_member("isUnspecified", addr) is unspecified
    assert ip_member("isLoopback", addr) is loopback
    assert ip_member("isLinkLocalMulticast", addr) is ll_multicast
    assert ip_member("isLinkLocalUnicast", addr) is ll_unicast
    assert ip_member("isGlobalUnicast", addr) is global_unicast


@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_ipv6_round_trip_against_python(value: int) -> None:
    addr = ipaddress.IPv6Address(value)
    if addr.ipv4_mapped is not None:
        return
    assert ip(addr.exploded).value == value
    assert ip(str(ip(addr.compressed))) == ip(addr.exploded)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_ipv4_round_trip_against_python(value: int) -> None:
    text = str(ipaddress.IPv4Address(value))
    assert str(ip(text)) == text
    assert ip(text).value == value


def test_ip_equality_and_hash() -> None:
    assert ip("2001:db8::68") == ip("2001:DB8:0::68")
    assert hash(ip("::1")) == hash(ip("0::1"))
    assert ip("0.0.0.0") != ip("::")


_CIDR_PARSE = "network address parse error during conversion from string: " * 2 + 'netip.ParsePrefix("{0}"): '


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("192.168.0.0/", _CIDR_PARSE + 'bad bits after slash: ""'),
        ("2001:db8::/", _CIDR_PARSE + 'bad bits after slash: ""'),
        ("192.168.0.0/024", _CIDR_PARSE + 'bad bits after slash: "024"'),
        ("192.168.0.0/+4", _CIDR_PARSE + 'bad bits after slash: "+4"'),
        ("192.168.0.0/33", _CIDR_PARSE + "prefix length out of range"),
        ("2001:db8::/129", _CIDR_PARSE + "prefix length out of range"),
        ("192.168.0.0", _CIDR_PARSE + "no '/'"),
        ("fe80::%eth0/64", _CIDR_PARSE + "IPv6 zones cannot be present in a prefix"),
        ("192.168.0.1.0/24", _CIDR_PARSE + 'ParseAddr("192.168.0.1.0"): IPv4 address too long'),
        (
            "::ffff:1.2.3.4/120",
            'network address parse error during conversion from string: IPv4-mapped IPv6 address "{0}" is not allowed',
        ),
    ],
)
def test_cidr_parse_errors(text: str, message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        cidr(text)
    assert err.value.message == message.format(text)
    assert cidr_lib.REGISTRY.call_global("isCIDR", (text,)) is False


def test_cidr_members() -> None:
    net = cidr("192.168.0.0/24")
    assert cidr_member("containsIP", net, ip("192.168.0.1")) is True
    assert cidr_member("containsIP", net, ip("192.168.1.1")) is False
    assert cidr_member("containsIP", net, "192.168.0.255") is True
    assert cidr_member("containsIP", net, ip("::1")) is False
    with pytest.raises(CelRuntimeError, match="^no such overload$"):
        cidr_member("containsIP", net, "not-an-ip")
    assert cidr_member("containsCIDR", net, cidr("192.168.0.0/25")) is True
    assert cidr_member("containsCIDR", net, cidr("192.168.0.1/32")) is True
    assert cidr_member("containsCIDR", net, cidr("192.168.0.0/23")) is False
    assert cidr_member("containsCIDR", net, cidr("192.169.0.1/32")) is False
    assert cidr_member("containsCIDR", net, "192.168.0.0/25") is True
    with pytest.raises(CelRuntimeError, match="bad bits after slash"):
        cidr_member("containsCIDR", net, "192.168.0.0/")
    assert cidr_member("ip", cidr("192.168.0.1/24")) == ip("192.168.0.1")
    assert str(cidr_member("masked", cidr("192.168.0.1/24"))) == "192.168.0.0/24"
    assert str(cidr_member("masked", cidr("2001:db8:1::/32"))) == "2001:db8::/32"
    assert cidr_member("prefixLength", cidr("2001:db8::/32")) == 32
    assert cidr_lib.REGISTRY.call_global("string", (cidr("10.0.0.0/8"),)) == "10.0.0.0/8"
    assert cidr("192.168.0.1/24") != cidr("192.168.0.0/24")
    assert cidr_member("containsCIDR", cidr("0.0.0.0/0"), cidr("10.0.0.0/8")) is True


@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=0, max_value=32), st.integers(0, 2**32 - 1))
def test_cidr_contains_against_python(base: int, bits: int, probe: int) -> None:
    net = ipaddress.IPv4Network((base, bits), strict=False)
    ours = cidr(f"{ipaddress.IPv4Address(base)}/{bits}")
    assert str(cidr_member("masked", ours)) == str(net)
    assert cidr_member("containsIP", ours, ip(str(ipaddress.IPv4Address(probe)))) is (
        ipaddress.IPv4Address(probe) in net
    )
