"""Unit tests of the Kubernetes semver CEL library, called through its registry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dra.cel.semver import REGISTRY, Semver, SemverError
from dra.errors import CelRuntimeError


def call(name: str, *args: object) -> object:
    return REGISTRY.call_global(name, args)


def member(name: str, receiver: object, *args: object) -> object:
    return REGISTRY.call_member(name, receiver, args)


def test_parse_fields_and_canonical_string() -> None:
    v = call("semver", "1.2.3-beta.1+build.1")
    assert isinstance(v, Semver)
    assert (v.major, v.minor, v.patch, v.pre, v.build) == (1, 2, 3, ("beta", 1), ("build", "1"))
    assert str(v) == "1.2.3-beta.1+build.1"
    assert [member(m, v) for m in ("major", "minor", "patch")] == [1, 2, 3]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Version string empty"),
        ("v1.0", "No Major.Minor.Patch elements found"),
        ("1.1", "No Major.Minor.Patch elements found"),
        ("v1.0.0", 'Invalid character(s) found in major number "v1"'),
        ("01.1.1", 'Major number must not contain leading zeroes "01"'),
        ("1. 0.0", 'Invalid character(s) found in minor number " 0"'),
        ("1.01.0", 'Minor number must not contain leading zeroes "01"'),
        ("1.0.0 ", 'Invalid character(s) found in patch number "0 "'),
        ("1.0.00", 'Patch number must not contain leading zeroes "00"'),
        ("1..0", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("99999999999999999999.0.0", 'strconv.ParseUint: parsing "99999999999999999999": value out of range'),
        ("1.0.0-", "Prerelease is empty"),
        ("1.0.0-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.0.0-a_b", 'Invalid character(s) found in prerelease "a_b"'),
        ("1.0.0+", "Build meta data is empty"),
        ("1.0.0+a.", "Build meta data is empty"),
        ("1.0.0+a/b", 'Invalid character(s) found in build meta data "a/b"'),
    ],
)
def test_strict_parse_errors_use_blang_messages(text: str, message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        call("semver", text)
    assert err.value.message == message
    assert call("isSemver", text) is False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("v1.0.0", "1.0.0"),
        ("01.01.01", "1.1.1"),
        ("1", "1.0.0"),
        ("1.1", "1.1.0"),
        ("v01.01", "1.1.0"),
        ("00.000.0000", "0.0.0"),
        ("1.2.03-beta", "1.2.3-beta"),
        ("1.2.0-beta", "1.2.0-beta"),
        ("1.2.00-beta", "1.2.0-beta"),
    ],
)
def test_normalized_parse(text: str, expected: str) -> None:
    assert str(call("semver", text, True)) == expected
    assert call("isSemver", text, True) is True
    assert call("isSemver", text, False) is (text == expected)


@pytest.mark.parametrize("text", ["", " 1.0.0", "1. 0.0", "1.0.0 ", "vv1.0.0", "V1.0.0", "1-beta", "1.2+build"])
def test_normalized_parse_rejects(text: str) -> None:
    assert call("isSemver", text, True) is False
    with pytest.raises(CelRuntimeError):
        call("semver", text, True)


def test_short_version_with_metadata_message() -> None:
    with pytest.raises(CelRuntimeError, match="^short version cannot contain PreRelease/Build meta data$"):
        call("semver", "1.2-rc1", True)


def test_precedence_follows_semver_spec_order() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.1.0",
        "2.0.0",
    ]
    versions = [Semver.parse(s) for s in ordered]
    for i, a in enumerate(versions):
        for j, b in enumerate(versions):
            expected = (i > j) - (i < j)
            assert member("compareTo", a, b) == expected
            assert member("isLessThan", a, b) is (expected == -1)
            assert member("isGreaterThan", a, b) is (expected == 1)
    assert sorted(reversed(versions)) == versions


def test_build_metadata_is_ignored_for_equality_and_hash() -> None:
    a, b = Semver.parse("1.2.3+a"), Semver.parse("1.2.3+b.c")
    assert a == b
    assert hash(a) == hash(b)
    assert member("compareTo", a, b) == 0
    assert a != Semver.parse("1.2.3-a")


def test_uint64_components_wrap_like_go_int_conversion() -> None:
    v = Semver.parse("18446744073709551615.0.0")
    assert member("major", v) == -1


_numbers = st.integers(min_value=0, max_value=2**64 - 1)
_ident = st.one_of(_numbers, st.from_regex(r"\A[A-Za-z-][A-Za-z0-9-]{0,6}\Z"))
_versions = st.builds(
    Semver,
    _numbers,
    _numbers,
    _numbers,
    st.lists(_ident, max_size=3).map(tuple),
    st.lists(st.from_regex(r"\A[A-Za-z0-9-]{1,5}\Z"), max_size=2).map(tuple),
)


@given(_versions)
def test_canonical_string_round_trips(v: Semver) -> None:
    parsed = Semver.parse(str(v))
    assert parsed == v
    assert (parsed.pre, parsed.build) == (v.pre, v.build)


@given(_versions, _versions)
def test_compare_is_antisymmetric_and_consistent_with_eq(a: Semver, b: Semver) -> None:
    assert a.compare(b) == -b.compare(a)
    assert (a.compare(b) == 0) is (a == b)


def test_semver_error_is_value_error() -> None:
    with pytest.raises(ValueError):
        Semver.parse("x")
    assert issubclass(SemverError, ValueError)


def _slow_or_error(text: str) -> tuple[int, int, int, tuple[int | str, ...], tuple[str, ...]] | str:
    try:
        v = Semver._parse_slow(text)
    except SemverError as err:
        return str(err)
    return (v.major, v.minor, v.patch, v.pre, v.build)


@given(st.text(alphabet="0123456789.-+aZ_ ", max_size=14))
def test_fast_path_agrees_with_blang_step_by_step_parse(text: str) -> None:
    expected = _slow_or_error(text)
    try:
        v = Semver.parse(text)
    except SemverError as err:
        assert str(err) == expected
        return
    assert (v.major, v.minor, v.patch, v.pre, v.build) == expected


@pytest.mark.parametrize(
    "text", ["1.2.3-a+b-c", "1.2.3+b-c", "1.2.3-a-b", "1.2.3-0a.01a", "0.0.0-0", "1.2.3-99999999999999999999"]
)
def test_fast_path_edge_cases(text: str) -> None:
    try:
        v = Semver.parse(text)
    except SemverError as err:
        assert str(err) == _slow_or_error(text)
    else:
        assert (v.major, v.minor, v.patch, v.pre, v.build) == _slow_or_error(text)
