"""The pieces dra.sizing reads a container with: `$(VAR)` expansion as the kubelet does it (checked row by row against
the Go code) within a budget, a shlex-compatible linear word splitter, and a byte-bounded LRU."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dra.sizing.cache import ByteBoundedLRU
from dra.sizing.expansion import expand_words
from dra.sizing.shellwords import split, split_prefix


# The kubelet's semantics (k8s.io/kubernetes third_party/forked/golang/expansion Expand + MappingFuncFor); each row
# was checked against that Go code.
@pytest.mark.parametrize(
    ("word", "expanded"),
    [
        ("$(A)", "xy"),
        ("$(A)$(B)$(UNSET)", "xy$(UNSET)"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$$$(A)", "$xy"),
        ("a$", "a$"),
        ("$x$(A)", "$xxy"),
        ("$(", "$("),
        ("$(A", "$(A"),
        ("$($(A))", "$($(A))"),
        ("$()", "$()"),
        ("$(C.D)", "z"),
        ("$(R)", "$(A)"),  # one pass: a value is never expanded again
    ],
)
def test_expansion_follows_the_kubelet(word: str, expanded: str) -> None:
    env = {"A": "xy", "B": "", "C.D": "z", "R": "$(A)"}
    assert expand_words([word], env, 1000).words == (expanded,)


def test_expansion_stops_at_the_budget_and_says_so() -> None:
    result = expand_words(["ab", "$(A)$(A)", "never"], {"A": "x" * 10}, 15)
    assert result.words == ("ab", "x" * 13) and result.truncated
    assert expand_words(["ab", "$(A)"], {"A": "x" * 13}, 15) == expand_words(["ab", "x" * 13], {}, 15)
    assert not expand_words(["ab", "$(A)"], {"A": "x" * 13}, 15).truncated


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("$()AB x", max_size=12), max_size=5), st.integers(0, 40))
def test_expansion_within_any_budget_is_a_prefix_of_the_whole(words: list[str], budget: int) -> None:
    env = {"A": "aaaa", "B": "$(A)"}
    whole = "\0".join(expand_words(words, env, 10**6).words)
    cut = expand_words(words, env, budget)
    assert sum(len(w) for w in cut.words) <= budget
    assert whole.startswith("\0".join(cut.words))
    assert cut.truncated == (len(whole) - whole.count("\0") > budget)


_SHELL_TEXT = st.text(st.sampled_from(list("ab- =$\t\n\r'\"\\#")), max_size=24)


@settings(max_examples=1000, deadline=None)
@given(_SHELL_TEXT)
def test_split_agrees_with_shlex(text: str) -> None:
    try:
        expected: list[str] | None = shlex.split(text)
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError):
            split(text)
    else:
        assert split(text) == expected


@settings(max_examples=1000, deadline=None)
@given(_SHELL_TEXT, st.integers(0, 24))
def test_a_cut_text_yields_only_complete_words(text: str, cut: int) -> None:
    try:
        whole = shlex.split(text)
    except ValueError:
        return
    words = split_prefix(text[:cut])
    assert words == whole[: len(words)]
    assert split_prefix(text + " ") == whole  # whitespace after the last word completes it


def test_byte_bounded_lru_evicts_least_recent_first_and_skips_the_too_heavy() -> None:
    cache: ByteBoundedLRU[str, str] = ByteBoundedLRU(max_bytes=10, max_entries=3, weigh=len)
    cache.put("a", "aaaa")
    cache.put("b", "bbbb")
    assert cache.get("a") == "aaaa"  # a is now the most recent
    cache.put("c", "cc")
    assert (cache.get("b"), cache.bytes) == ("bbbb", 10)
    cache.put("d", "d")  # over 10 bytes: a, the least recent, goes
    assert cache.get("a") is None and cache.bytes == 7
    cache.put("e", "e")  # over 3 entries: c goes
    assert cache.get("c") is None and len(cache) == 3
    cache.put("huge", "x" * 11)
    assert cache.get("huge") is None and len(cache) == 3
    cache.put("b", "b")  # replacing charges the new weight only
    assert cache.bytes == 3
