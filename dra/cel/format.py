"""Kubernetes CEL format library (`library/format.go`): named string formats and their validators.

`format.named(name)` gives an optional `Format`; `format.<name>()` constructs one; `<Format>.validate(s)`
returns `optional.none()` when `s` is valid, else an optional list of the apimachinery / kube-openapi
strfmt messages (`k8s.io/apimachinery/pkg/api/validate/content`, `k8s.io/kube-openapi/pkg/validation/strfmt`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Final

import re2

from dra._names import is_dns1123_subdomain, is_label_value, is_qualified_name
from dra.cel._functions import FunctionRegistry
from dra.cel.urls import URLError, parse_request_uri
from dra.cel.values import Optional

__all__ = ["FORMATS", "Format", "REGISTRY"]

REGISTRY = FunctionRegistry()


@dataclass(frozen=True)
class Format:
    """A named validator; two formats are equal when their names are (upstream `Format.Equal`)."""

    name: str
    validate: Callable[[str], list[str]] = field(compare=False, repr=False)

    cel_type_name: ClassVar[str] = "kubernetes.NamedFormat"

    def __str__(self) -> str:
        return self.name


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # apimachinery RegexError, including its double space before " or ".
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    return msg + " (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{fmt}')"


def _full(pattern: str) -> re2._Regexp:
    return re2.compile("^" + pattern + "$")


_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE: Final = _full(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE: Final = _full(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE: Final = _full(_DNS1035_LABEL_FMT)
_UUID_RE: Final = re2.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_BASE64_RE: Final = re2.compile(r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$")
_DATE_RE: Final = re2.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_TIME_RE: Final = re2.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")

_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character"
)


def _byte_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def _max_len(n: int, unit: str) -> str:
    return f"must be no more than {n} {unit}"


# util/validation (used by the name formats) says "characters"; api/validate/content (label keys and values,
# and the subdomain prefix of a qualified name) says "bytes". Both count bytes.


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > 63:
        errs.append(_max_len(63, "characters"))
    if not _DNS1123_LABEL_RE.search(value):
        if _DNS1123_SUBDOMAIN_RE.search(value):
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > 63:
        errs.append(_max_len(63, "characters"))
    if not _DNS1035_LABEL_RE.search(value):
        errs.append(_regex_error(_DNS1035_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def _mask_trailing_dash(name: str) -> str:
    # apimachinery maskTrailingDash drops the last two characters, not one, before appending "a".
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def _is_date(s: str) -> bool:
    """Go time.Parse("2006-01-02", s)."""
    m = _DATE_RE.search(s)
    if m is None:
        return False
    year, month, day = (int(g) for g in m.groups())
    if not 1 <= month <= 12 or day < 1:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    return day <= days


def _is_datetime(s: str) -> bool:
    """kube-openapi strfmt `IsDateTime`."""
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _TIME_RE.search(parts[1])
    if m is None:
        return False
    return bool(m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59")


def _uri(s: str) -> list[str]:
    try:
        parse_request_uri(s)
    except URLError as err:
        return [str(err)]
    return []


def _check(ok: Callable[[str], bool], message: str) -> Callable[[str], list[str]]:
    return lambda s: [] if ok(s) else [message]


FORMATS: Final[dict[str, Format]] = {
    "dns1123Label": Format("DNS1123Label", is_dns1123_label),
    "dns1123Subdomain": Format("DNS1123Subdomain", is_dns1123_subdomain),
    "dns1035Label": Format("DNS1035Label", is_dns1035_label),
    "qualifiedName": Format("QualifiedName", is_qualified_name),
    "dns1123LabelPrefix": Format("DNS1123LabelPrefix", lambda s: is_dns1123_label(_mask_trailing_dash(s))),
    "dns1123SubdomainPrefix": Format("DNS1123SubdomainPrefix", lambda s: is_dns1123_subdomain(_mask_trailing_dash(s))),
    "dns1035LabelPrefix": Format("DNS1035LabelPrefix", lambda s: is_dns1035_label(_mask_trailing_dash(s))),
    "labelValue": Format("LabelValue", is_label_value),
    "uri": Format("URI", _uri),
    "uuid": Format("uuid", _check(lambda s: _UUID_RE.search(s) is not None, "does not match the UUID format")),
    "byte": Format("byte", _check(lambda s: _BASE64_RE.search(s) is not None, "invalid base64")),
    "date": Format("date", _check(_is_date, "invalid date")),
    "datetime": Format("datetime", _check(_is_datetime, "invalid datetime")),
}


@REGISTRY.function("format.named", str)
def named(name: str) -> Optional:
    found = FORMATS.get(name)
    return Optional.NONE if found is None else Optional.of(found)


def _constructor(fmt: Format) -> Callable[[], Format]:
    return lambda: fmt


for _key, _fmt in FORMATS.items():
    REGISTRY.function(f"format.{_key}")(_constructor(_fmt))


@REGISTRY.member("validate", Format, str)
def validate(fmt: Format, value: str) -> Optional:
    errors = fmt.validate(value)
    return Optional.of(list(errors)) if errors else Optional.NONE
