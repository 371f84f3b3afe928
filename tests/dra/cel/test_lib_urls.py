"""Unit tests of the Kubernetes URL library (Go net/url semantics), through the registry."""

from __future__ import annotations

from typing import Any

import pytest

from dra.cel.urls import REGISTRY, URL, parse_url
from dra.errors import CelRuntimeError


def url(text: str) -> URL:
    value = REGISTRY.call_global("url", (text,))
    assert isinstance(value, URL)
    return value


def get(name: str, text: str) -> Any:
    return REGISTRY.call_member(name, url(text), ())


@pytest.mark.parametrize(
    ("text", "scheme", "host", "hostname", "port", "path"),
    [
        (
            "https://user:pass@example.com:80/path?query=val#fragment",
            "https",
            "example.com:80",
            "example.com",
            "80",
            "/path",
        ),
        ("/absolute-path", "", "", "", "", "/absolute-path"),
        ("https://example.com/", "https", "example.com", "example.com", "", "/"),
        ("HTTPS://example.com", "https", "example.com", "example.com", "", ""),
        ("https://[::1]:80/", "https", "[::1]:80", "::1", "80", "/"),
        ("https://[::1]/", "https", "[::1]", "::1", "", "/"),
        ("https://127.0.0.1:80/", "https", "127.0.0.1:80", "127.0.0.1", "80", "/"),
        ("https://example.com/path with spaces/", "https", "example.com", "example.com", "", "/path%20with%20spaces/"),
        ("https://example.com/a%2fb", "https", "example.com", "example.com", "", "/a%2fb"),
        ("http://[fe80::1%25en0]:8080/", "http", "[fe80::1%en0]:8080", "fe80::1%en0", "8080", "/"),
        ("https://host:/", "https", "host:", "host", "", "/"),
        ("*", "", "", "", "", "*"),
    ],
)
def test_components(text: str, scheme: str, host: str, hostname: str, port: str, path: str) -> None:
    assert get("getScheme", text) == scheme
    assert get("getHost", text) == host
    assert get("getHostname", text) == hostname
    assert get("getPort", text) == port
    assert get("getEscapedPath", text) == path
    assert REGISTRY.call_global("isURL", (text,)) is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("https://a:b:c/", 'parse "https://a:b:c/": invalid port ":b:c" after host'),
        ("http://::1/", 'parse "http://::1/": invalid port "::1" after host'),
        ("http://[1.2.3.4]/", 'parse "http://[1.2.3.4]/": invalid IP-literal'),
        ("http://a[::1]/", 'parse "http://a[::1]/": invalid IP-literal'),
        ("http://[zz]/", 'parse "http://[zz]/": invalid host: ParseAddr("zz"): unable to parse IP'),
        ("../relative-path", 'parse "../relative-path": invalid URI for request'),
        ("", 'parse "": empty url'),
        (":foo", 'parse ":foo": missing protocol scheme'),
        ("http://a b.com/", 'parse "http://a b.com/": invalid character " " in host name'),
        ("http://%41.com/", 'parse "http://%41.com/": invalid URL escape "%41"'),
        ("/a%zz", 'parse "/a%zz": invalid URL escape "%zz"'),
        ("/a\x7f", 'parse "/a\\x7f": net/url: invalid control character in URL'),
        ("http://[::1/", "parse \"http://[::1/\": missing ']' in host"),
        ("http://a b@c/", 'parse "http://a b@c/": net/url: invalid userinfo'),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        url(text)
    assert err.value.message == "URL parse error during conversion from string: " + message
    assert REGISTRY.call_global("isURL", (text,)) is False


def test_non_http_schemes_keep_the_last_colon_as_the_port() -> None:
    # Go 1.26 is strict about colons only for http and https (database URLs list hosts).
    assert get("getHost", "postgres://a:1,b:2/db") == "a:1,b:2"
    assert get("getPort", "postgres://a:1,b:2/db") == "2"


def test_fragment_is_split_off_by_parse_but_not_by_request_uri() -> None:
    u = url("https://example.com/p#frag ment")
    assert u.fragment == "frag ment"
    assert str(u) == "https://example.com/p#frag%20ment"
    with pytest.raises(CelRuntimeError, match='invalid URL escape "%zz"'):
        url("/p#%zz")


def test_query() -> None:
    assert get("getQuery", "https://example.com/path?k1=a&k2=b&k2=c") == {"k1": ["a"], "k2": ["b", "c"]}
    assert get("getQuery", "https://example.com/path?key with spaces=value with spaces") == {
        "key with spaces": ["value with spaces"]
    }
    assert get("getQuery", "https://example.com/path?") == {}
    assert get("getQuery", "https://example.com/path") == {}
    assert get("getQuery", "/p?a=1+2&b=%41&c&d=%zz&e;f=1&=x") == {"a": ["1 2"], "b": ["A"], "c": [""], "": ["x"]}


def test_equality_is_by_string_form() -> None:
    assert url("https://example.com/a b") == url("https://example.com/a%20b")
    assert url("https://example.com/") != url("https://example.com")
    assert hash(url("HTTP://x/")) == hash(url("http://x/"))
    assert str(parse_url("mailto:a@b")) == "mailto:a@b"
