"""Unit tests of the Kubernetes format library (apimachinery / strfmt validators), through the registry."""

from __future__ import annotations

import pytest

from dra.cel.format import FORMATS, REGISTRY, Format
from dra.cel.values import Optional

_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
    "and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
    "'[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def validate(name: str, value: str) -> list[str] | None:
    fmt = REGISTRY.call_global(f"format.{name}", ())
    assert isinstance(fmt, Format)
    result = REGISTRY.call_member("validate", fmt, (value,))
    assert isinstance(result, Optional)
    return result.value() if result.has_value() else None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("dns1123Label", "my-label-name"),
        ("dns1123Subdomain", "apiextensions.k8s.io"),
        ("dns1035Label", "my-label-name"),
        ("qualifiedName", "apiextensions.k8s.io/v1beta1"),
        ("qualifiedName", "my.name"),
        ("dns1123LabelPrefix", "my-label-prefix-"),
        ("dns1123SubdomainPrefix", "mysubdomain.prefix.-"),
        ("dns1035LabelPrefix", "my-label-prefix-"),
        ("labelValue", "my-cool-label-Value"),
        ("labelValue", ""),
        ("uri", "http://example.com"),
        ("uri", "/absolute"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000"),
        ("uuid", "123E4567E89B12D3A456426614174000"),
        ("byte", "aGVsbG8="),
        ("date", "2021-01-01"),
        ("date", "2024-02-29"),
        ("datetime", "2021-01-01T00:00:00Z"),
        ("datetime", "2021-01-01t23:59:59.123+02:00"),
    ],
)
def test_valid_values(name: str, value: str) -> None:
    assert validate(name, value) is None


@pytest.mark.parametrize(
    ("name", "value", "messages"),
    [
        ("dns1123Label", "contains a space", [_LABEL]),
        ("dns1123Label", "a.b", ["must not contain dots"]),
        ("dns1123Label", "a" * 64, ["must be no more than 63 characters"]),
        ("dns1123Subdomain", "contains a space", [_SUBDOMAIN]),
        ("dns1035Label", "contains a space", [_DNS1035]),
        ("dns1035Label", "1abc", [_DNS1035]),
        ("qualifiedName", "contains a space", [_NAME_PART]),
        ("qualifiedName", "/name", ["prefix part must be non-empty"]),
        ("qualifiedName", "example.com/", ["name part must be non-empty", _NAME_PART]),
        ("qualifiedName", "x/" + "a" * 64, ["name part must be no more than 63 bytes"]),
        ("qualifiedName", "Bad_Prefix/name", ["prefix part " + _SUBDOMAIN]),
        ("dns1123LabelPrefix", "contains a space-", [_LABEL]),
        ("dns1123SubdomainPrefix", "contains a space-", [_SUBDOMAIN]),
        ("dns1035LabelPrefix", "contains a space-", [_DNS1035]),
        ("labelValue", "my-cool-label-Value!!\n\n!!!", [_LABEL_VALUE]),
        ("uri", "../relative", ['parse "../relative": invalid URI for request']),
        ("uuid", "123e4567-e89b-12d3-a456", ["does not match the UUID format"]),
        ("byte", "aGVsbG8", ["invalid base64"]),
        ("byte", "", ["invalid base64"]),
        ("date", "2020-01-32", ["invalid date"]),
        ("date", "2023-02-29", ["invalid date"]),
        ("date", "20-01-01", ["invalid date"]),
        ("datetime", "2020-01-32T00:00:00Z", ["invalid datetime"]),
        ("datetime", "2020-01-01T24:00:00Z", ["invalid datetime"]),
        ("datetime", "2020-01-01 00:00:00Z", ["invalid datetime"]),
    ],
)
def test_invalid_values(name: str, value: str, messages: list[str]) -> None:
    assert validate(name, value) == messages


def test_prefix_formats_mask_the_last_two_characters() -> None:
    # apimachinery's maskTrailingDash replaces the final two characters with "a".
    assert validate("dns1123LabelPrefix", "a.-") is None
    assert validate("dns1123LabelPrefix", "-") == [_LABEL]


def test_named_lookup_and_equality() -> None:
    found = REGISTRY.call_global("format.named", ("dns1123Label",))
    assert isinstance(found, Optional) and found.value() == REGISTRY.call_global("format.dns1123Label", ())
    assert not REGISTRY.call_global("format.named", ("unknown",)).has_value()
    assert FORMATS["uri"] != FORMATS["uuid"]
    assert str(FORMATS["dns1123Label"]) == "DNS1123Label"
    assert set(FORMATS) == {
        "dns1123Label",
        "dns1123Subdomain",
        "dns1035Label",
        "qualifiedName",
        "dns1123LabelPrefix",
        "dns1123SubdomainPrefix",
        "dns1035LabelPrefix",
        "labelValue",
        "uri",
        "uuid",
        "byte",
        "date",
        "datetime",
    }
