"""Issue 22: the regex memo and the compiled-pattern cache are bounded in characters, whatever strings pods carry."""

from __future__ import annotations

from dra.cel import stdlib
from dra.cel.stdlib import Regex, compile_regex, regex_cache_chars


def test_a_regex_memo_keeps_short_texts_within_its_character_budget() -> None:
    regex = Regex("^a")
    for i in range(5000):
        assert regex.matches(f"a{i:0200d}") is True
    assert regex.memo_chars <= Regex._MEMO_CHARS
    long = "a" + "b" * 100_000
    assert regex.matches(long) is True and regex.matches(long) is True
    assert regex.memo_chars <= Regex._MEMO_CHARS, "a long text is tested, never remembered"


def test_the_pattern_cache_stays_within_its_budget_with_many_long_patterns() -> None:
    for i in range(600):
        pattern = f"^{i}" + "x?" * 2000
        assert compile_regex(pattern).matches(str(i)) is True
    bound = stdlib._REGEX_CACHE_PATTERN_CHARS + stdlib._REGEX_CACHE_SIZE * Regex._MEMO_CHARS
    assert len(stdlib._REGEX_CACHE) <= stdlib._REGEX_CACHE_SIZE
    assert regex_cache_chars() <= bound
