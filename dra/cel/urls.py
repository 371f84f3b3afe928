"""Kubernetes CEL URL library (`library/urls.go`) and its `kubernetes.URL` value, over a port of Go `net/url`.

`url(s)` needs `url.ParseRequestURI(s)` (an absolute URI or path) and keeps `url.Parse(s)` (which splits off a
`#fragment`). Rules and error texts are Go 1.26's, the Go Kubernetes is built with (bracketed hosts must be IPv6
literals, colons in http(s) hosts are strict): `parse "x": invalid URI for request`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar, Final

from dra.cel._functions import FunctionRegistry
from dra.cel.ip import IP, AddrParseError, go_quote
from dra.errors import CelRuntimeError

__all__ = ["REGISTRY", "URL", "URLError", "parse_request_uri", "parse_url"]

REGISTRY = FunctionRegistry()


class _Mode(Enum):
    PATH = 1
    PATH_SEGMENT = 2
    HOST = 3
    ZONE = 4
    USER_PASSWORD = 5
    QUERY_COMPONENT = 6
    FRAGMENT = 7


class URLError(ValueError):
    """A string Go's net/url rejects; the message is Go's `parse "..." : ...` text."""


class _Fail(Exception):
    """An inner parse error before it is wrapped as `parse "<input>": <msg>`."""


_HEXDIGITS: Final = frozenset(b"0123456789abcdefABCDEF")
_ALNUM: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _should_escape(c: int, mode: _Mode) -> bool:
    """Go `shouldEscape` (RFC 3986 §2 as net/url applies it)."""
    if c in _ALNUM:
        return False
    ch = chr(c)
    if mode in (_Mode.HOST, _Mode.ZONE) and ch in "!$&'()*+,;=:[]<>\"":
        return False
    if ch in "-_.~":
        return False
    if ch in "$&+,/:;=?@":
        if mode is _Mode.PATH:
            return ch == "?"
        if mode is _Mode.PATH_SEGMENT:
            return ch in "/;,?"
        if mode is _Mode.USER_PASSWORD:
            return ch in "@/?:"
        if mode is _Mode.QUERY_COMPONENT:
            return True
        if mode is _Mode.FRAGMENT:
            return False
    if mode is _Mode.FRAGMENT and ch in "!()*":
        return False
    return True


def _unhex(c: int) -> int:
    return int(chr(c), 16)


def _unescape(s: bytes, mode: _Mode) -> bytes:
    """Go `unescape`: validate %XX sequences (and host bytes), then decode; `+` is a space in query components."""
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == 0x25:  # '%'
            if i + 2 >= n or s[i + 1] not in _HEXDIGITS or s[i + 2] not in _HEXDIGITS:
                raise _Fail(f"invalid URL escape {go_quote(_text(s[i : i + 3]))}")
            if mode is _Mode.HOST and _unhex(s[i + 1]) < 8 and s[i : i + 3] != b"%25":
                raise _Fail(f"invalid URL escape {go_quote(_text(s[i : i + 3]))}")
            if mode is _Mode.ZONE:
                v = _unhex(s[i + 1]) << 4 | _unhex(s[i + 2])
                if s[i : i + 3] != b"%25" and v != 0x20 and _should_escape(v, _Mode.HOST):
                    raise _Fail(f"invalid URL escape {go_quote(_text(s[i : i + 3]))}")
            i += 3
        else:
            if mode in (_Mode.HOST, _Mode.ZONE) and c < 0x80 and _should_escape(c, mode):
                raise _Fail(f"invalid character {go_quote(chr(c))} in host name")
            i += 1
    out = bytearray()
    i = 0
    while i < n:
        c = s[i]
        if c == 0x25:
            out.append(_unhex(s[i + 1]) << 4 | _unhex(s[i + 2]))
            i += 3
        elif c == 0x2B and mode is _Mode.QUERY_COMPONENT:  # '+'
            out.append(0x20)
            i += 1
        else:
            out.append(c)
            i += 1
    return bytes(out)


def _escape(s: bytes, mode: _Mode) -> bytes:
    out = bytearray()
    for c in s:
        if _should_escape(c, mode):
            if c == 0x20 and mode is _Mode.QUERY_COMPONENT:
                out.append(0x2B)
            else:
                out += b"%%%02X" % c
        else:
            out.append(c)
    return bytes(out)


def _valid_encoded(s: bytes, mode: _Mode) -> bool:
    for c in s:
        if chr(c) in "!$&'()*+,;=:@[]%":
            continue
        if _should_escape(c, mode):
            return False
    return True


def _valid_optional_port(port: bytes) -> bool:
    if not port:
        return True
    return port[:1] == b":" and all(0x30 <= c <= 0x39 for c in port[1:])


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _get_scheme(raw: bytes) -> tuple[bytes, bytes]:
    for i, c in enumerate(raw):
        if 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A:
            continue
        if 0x30 <= c <= 0x39 or c in b"+-.":
            if i == 0:
                return b"", raw
            continue
        if c == 0x3A:  # ':'
            if i == 0:
                raise _Fail("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return b"", raw
    return b"", raw


def _parse_host(scheme: bytes, host: bytes) -> bytes:
    """Go 1.26 `parseHost`: a bracketed host must be an IPv6 literal (checked by netip); for http and https,
    colons are strict (`urlstrictcolons=1`, Go 1.26's default, which Kubernetes builds with): the first colon
    starts the port. Other schemes (database host lists) keep the last colon."""
    if (open_ := host.rfind(b"[")) != -1:
        if open_ > 0:
            raise _Fail("invalid IP-literal")
        close = host.rfind(b"]")
        if close < 0:
            raise _Fail("missing ']' in host")
        colon_port = host[close + 1 :]
        if not _valid_optional_port(colon_port):
            raise _Fail(f"invalid port {go_quote(_text(colon_port))} after host")
        colon_port = _unescape(colon_port, _Mode.HOST)
        hostname = host[1:close]
        zone = hostname.find(b"%25")
        if zone >= 0:
            literal = _unescape(hostname[:zone], _Mode.HOST) + _unescape(hostname[zone:], _Mode.ZONE)
        else:
            literal = _unescape(hostname, _Mode.HOST)
        try:
            addr = IP.parse(_text(literal))
        except AddrParseError as err:
            raise _Fail(f"invalid host: {err}") from None
        if addr.bits == 32:
            raise _Fail("invalid IP-literal")
        return b"[" + literal + b"]" + colon_port
    if (i := host.find(b":")) != -1:
        if scheme not in (b"http", b"https"):
            i = host.rfind(b":")
        colon_port = host[i:]
        if not _valid_optional_port(colon_port):
            raise _Fail(f"invalid port {go_quote(_text(colon_port))} after host")
    return _unescape(host, _Mode.HOST)


def _valid_userinfo(s: bytes) -> bool:
    for c in s:
        if c in _ALNUM or chr(c) in "-._:~!$&'()*+,;=%@":
            continue
        return False
    return True


@dataclass(frozen=True)
class URL:
    """A parsed URL (Go `url.URL`'s fields); equality compares the re-serialised string, as upstream."""

    scheme: str = ""
    opaque: str = ""
    user: tuple[str, str | None] | None = None
    host: str = ""
    path: str = ""
    raw_path: str = ""
    omit_host: bool = False
    force_query: bool = False
    raw_query: str = ""
    fragment: str = ""
    raw_fragment: str = field(default="", compare=False)

    cel_type_name: ClassVar[str] = "kubernetes.URL"

    def escaped_path(self) -> str:
        if self.raw_path and _valid_encoded(self.raw_path.encode(), _Mode.PATH):
            try:
                if _text(_unescape(self.raw_path.encode(), _Mode.PATH)) == self.path:
                    return self.raw_path
            except _Fail:
                pass
        if self.path == "*":
            return "*"
        return _text(_escape(self.path.encode(), _Mode.PATH))

    def escaped_fragment(self) -> str:
        if self.raw_fragment and _valid_encoded(self.raw_fragment.encode(), _Mode.FRAGMENT):
            try:
                if _text(_unescape(self.raw_fragment.encode(), _Mode.FRAGMENT)) == self.fragment:
                    return self.raw_fragment
            except _Fail:
                pass
        return _text(_escape(self.fragment.encode(), _Mode.FRAGMENT))

    def _split_host_port(self) -> tuple[str, str]:
        host, port = self.host, ""
        colon = host.rfind(":")
        if colon != -1 and _valid_optional_port(host[colon:].encode()):
            host, port = host[:colon], host[colon + 1 :]
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        return host, port

    def hostname(self) -> str:
        return self._split_host_port()[0]

    def port(self) -> str:
        return self._split_host_port()[1]

    def query(self) -> dict[str, list[str]]:
        """Go `url.ParseQuery(RawQuery)` with errors ignored: malformed pairs are skipped."""
        values: dict[str, list[str]] = {}
        query = self.raw_query.encode()
        while query:
            key, _, query = query.partition(b"&")
            if b";" in key or not key:
                continue
            k, _, v = key.partition(b"=")
            try:
                uk = _text(_unescape(k, _Mode.QUERY_COMPONENT))
                uv = _text(_unescape(v, _Mode.QUERY_COMPONENT))
            except _Fail:
                continue
            values.setdefault(uk, []).append(uv)
        return values

    def __str__(self) -> str:
        """Go `URL.String()`."""
        out = ""
        if self.scheme:
            out += self.scheme + ":"
        if self.opaque:
            out += self.opaque
        else:
            if self.scheme or self.host or self.user is not None:
                if self.omit_host and not self.host and self.user is None:
                    pass
                else:
                    if self.host or self.path or self.user is not None:
                        out += "//"
                    if self.user is not None:
                        name, password = self.user
                        out += _text(_escape(name.encode(), _Mode.USER_PASSWORD))
                        if password is not None:
                            out += ":" + _text(_escape(password.encode(), _Mode.USER_PASSWORD))
                        out += "@"
                    if self.host:
                        out += _text(_escape(self.host.encode(), _Mode.HOST))
            path = self.escaped_path()
            if self.omit_host and not self.host and self.user is None and path.startswith("//"):
                # A path starting "//" with no authority would read back as one.
                out += "%2F"
                path = path[1:]
            if path and path[0] != "/" and self.host:
                out += "/"
            if not out:
                segment = path.partition("/")[0]
                if ":" in segment:
                    out += "./"
            out += path
        if self.force_query or self.raw_query:
            out += "?" + self.raw_query
        if self.fragment:
            out += "#" + self.escaped_fragment()
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, URL):
            return NotImplemented
        return str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


def _parse(raw: bytes, via_request: bool) -> URL:
    """Go `url.parse(rawURL, viaRequest)` (fragment already split off by the caller)."""
    if any(c < 0x20 or c == 0x7F for c in raw):
        raise _Fail("net/url: invalid control character in URL")
    if not raw and via_request:
        raise _Fail("empty url")
    if raw == b"*":
        return URL(path="*")
    scheme, rest = _get_scheme(raw)
    scheme = scheme.lower()
    force_query = False
    raw_query = b""
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        force_query = True
        rest = rest[:-1]
    else:
        rest, _, raw_query = rest.partition(b"?")
    if not rest.startswith(b"/"):
        if scheme:
            return URL(scheme=_text(scheme), opaque=_text(rest), force_query=force_query, raw_query=_text(raw_query))
        if via_request:
            raise _Fail("invalid URI for request")
        if b":" in rest.partition(b"/")[0]:
            raise _Fail("first path segment in URL cannot contain colon")
    user: tuple[str, str | None] | None = None
    host = b""
    omit_host = False
    if (scheme or (not via_request and not rest.startswith(b"///"))) and rest.startswith(b"//"):
        authority, rest = rest[2:], b""
        if (i := authority.find(b"/")) >= 0:
            authority, rest = authority[:i], authority[i:]
        user, host = _parse_authority(scheme, authority)
    elif scheme and rest.startswith(b"/"):
        omit_host = True
    path = _unescape(rest, _Mode.PATH)
    raw_path = b"" if _escape(path, _Mode.PATH) == rest else rest
    return URL(
        scheme=_text(scheme),
        user=user,
        host=_text(host),
        path=_text(path),
        raw_path=_text(raw_path),
        omit_host=omit_host,
        force_query=force_query,
        raw_query=_text(raw_query),
    )


def _parse_authority(scheme: bytes, authority: bytes) -> tuple[tuple[str, str | None] | None, bytes]:
    i = authority.rfind(b"@")
    host = _parse_host(scheme, authority if i < 0 else authority[i + 1 :])
    if i < 0:
        return None, host
    userinfo = authority[:i]
    if not _valid_userinfo(userinfo):
        raise _Fail("net/url: invalid userinfo")
    if b":" not in userinfo:
        return (_text(_unescape(userinfo, _Mode.USER_PASSWORD)), None), host
    name, _, password = userinfo.partition(b":")
    return (_text(_unescape(name, _Mode.USER_PASSWORD)), _text(_unescape(password, _Mode.USER_PASSWORD))), host


def parse_request_uri(text: str) -> URL:
    """Go `url.ParseRequestURI`; raises `URLError`."""
    try:
        return _parse(text.encode("utf-8", "surrogatepass"), True)
    except _Fail as err:
        raise URLError(f"parse {go_quote(text)}: {err}") from None


def parse_url(text: str) -> URL:
    """Go `url.Parse` (splits off the fragment); raises `URLError`."""
    raw = text.encode("utf-8", "surrogatepass")
    base, sep, frag = raw.partition(b"#")
    try:
        url = _parse(base, False)
    except _Fail as err:
        raise URLError(f"parse {go_quote(_text(base))}: {err}") from None
    if not sep or not frag:
        return url
    try:
        fragment = _unescape(frag, _Mode.FRAGMENT)
    except _Fail as err:
        raise URLError(f"parse {go_quote(text)}: {err}") from None
    escaped = _escape(fragment, _Mode.FRAGMENT)
    return URL(
        scheme=url.scheme,
        opaque=url.opaque,
        user=url.user,
        host=url.host,
        path=url.path,
        raw_path=url.raw_path,
        omit_host=url.omit_host,
        force_query=url.force_query,
        raw_query=url.raw_query,
        fragment=_text(fragment),
        raw_fragment="" if escaped == frag else _text(frag),
    )


@REGISTRY.function("url", str)
def url(text: str) -> URL:
    try:
        parse_request_uri(text)
        return parse_url(text)
    except URLError as err:
        raise CelRuntimeError(f"URL parse error during conversion from string: {err}") from None


@REGISTRY.function("isURL", str)
def is_url(text: str) -> bool:
    try:
        parse_request_uri(text)
    except URLError:
        return False
    return True


@REGISTRY.member("getScheme", URL)
def get_scheme(u: URL) -> str:
    return u.scheme


@REGISTRY.member("getHost", URL)
def get_host(u: URL) -> str:
    return u.host


@REGISTRY.member("getHostname", URL)
def get_hostname(u: URL) -> str:
    return u.hostname()


@REGISTRY.member("getPort", URL)
def get_port(u: URL) -> str:
    return u.port()


@REGISTRY.member("getEscapedPath", URL)
def get_escaped_path(u: URL) -> str:
    return u.escaped_path()


@REGISTRY.member("getQuery", URL)
def get_query(u: URL) -> dict[str, list[str]]:
    return u.query()
