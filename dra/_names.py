"""Name formats Kubernetes validates (k8s.io/apimachinery/pkg/api/validate/content and util/validation).

Each `is_*` function returns the upstream messages for a bad value (an empty list when it is valid).
"""

from __future__ import annotations

import re
import uuid

__all__ = [
    "is_c_identifier",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_label_value",
    "is_qualified_name",
    "is_uuid",
    "regex_error",
]

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_LABEL_RE = re.compile(f"^{_LABEL_FMT}$")
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character"
)
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN_FMT}$")
_SUBDOMAIN_CASELESS_RE = re.compile(f"^{_SUBDOMAIN_FMT}$", re.IGNORECASE)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character"
)
_SUBDOMAIN_CASELESS_MSG = (
    "an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start and end with an "
    "alphanumeric character"
)
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER_RE = re.compile(f"^{_C_IDENTIFIER_FMT}$")
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_'"
)
_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_KEY_RE = re.compile(f"^{_KEY_FMT}$")
_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_VALUE_FMT = f"({_KEY_FMT})?"
_VALUE_RE = re.compile(f"^{_VALUE_FMT}$")
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character"
)


def regex_error(msg: str, regex: str, *examples: str) -> str:
    """content.RegexError."""
    if not examples:
        return f"{msg} (regex used for validation is '{regex}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{regex}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} bytes"


def _fullmatch(pattern: re.Pattern[str], value: str) -> bool:
    # Go's `$` does not match before a trailing newline, Python's does: also require no newline.
    return "\n" not in value and pattern.match(value) is not None


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value.encode()) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _fullmatch(_LABEL_RE, value):
        if _fullmatch(_SUBDOMAIN_RE, value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str, *, caseless: bool = False) -> list[str]:
    errs = []
    if len(value.encode()) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if caseless:
        if not _fullmatch(_SUBDOMAIN_CASELESS_RE, value):
            errs.append(regex_error(_SUBDOMAIN_CASELESS_MSG, _SUBDOMAIN_FMT, "Example.com"))
    elif not _fullmatch(_SUBDOMAIN_RE, value):
        errs.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def is_c_identifier(value: str) -> list[str]:
    if _fullmatch(_C_IDENTIFIER_RE, value):
        return []
    return [regex_error(_C_IDENTIFIER_MSG, _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")]


def is_qualified_name(value: str) -> list[str]:
    """content.IsQualifiedName (= IsLabelKey): `[prefix/]name`, prefix a DNS subdomain, name ≤ 63."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + regex_error(_KEY_MSG, _KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part " + max_len_error(63))
    if not _fullmatch(_KEY_RE, name):
        errs.append("name part " + regex_error(_KEY_MSG, _KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_label_value(value: str) -> list[str]:
    errs = []
    if len(value.encode()) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _fullmatch(_VALUE_RE, value):
        errs.append(regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_uuid(value: str) -> list[str]:
    """The DRA `validateUID` rule: a UUID in RFC 4122 normalized (lowercase, 36 character) form."""
    try:
        uuid.UUID(value)
    except ValueError:
        return [f"error validating uid: invalid UUID format: {value!r}"]
    if len(value) != 36 or value != value.lower():
        return [
            "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase "
            "hexadecimal characters"
        ]
    return []
