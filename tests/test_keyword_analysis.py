"""The shared keyword analyser: identifier extraction and query sanitising."""

from __future__ import annotations

import random

import pytest
import tantivy

from connectors.analysis import identifiers, sanitize_query
from connectors.indexes.tantivy_index import build_schema


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Part XR-4471 failed.", ["xr-4471", "xr4471"]),
        ("upgrade to v2.14.3 now", ["v2.14.3", "v2143", "v2"]),
        ("got ERR-0x1F again", ["err-0x1f", "err0x1f"]),
        ("see INC-2041", ["inc-2041", "inc2041"]),
        ("set max_payload_kg to 4", ["max_payload_kg", "maxpayloadkg"]),
        ("CONFIG_SET then HSET", ["config_set", "configset", "hset"]),
        ("ping 192.168.0.1", ["192.168.0.1", "19216801"]),
        ("XR4471", ["xr4471"]),
        ("call getUserById", ["getuserbyid"]),
        # glib's translation macro was read as the word "n" and its page never matched exactly;
        # a lower-case word between underscores is a mail's emphasis, not a name
        ("wrap it in N_() at __LINE__, _that_ is __really__ it", ["n_", "__line__", "line"]),
        # command-line options keep their dashes ("--file" is not the word "file"); a hyphenated
        # word, a negative number, a dash alone and a mail's "--Guido" sign-off are none
        ("use ‘--file=FILE’, -empty or -L; a well-known -5 -- --Guido :-P", ["file", "--file", "-empty", "-l"]),
        ("do _NOT_ run it, _IMPORTANT_", []),  # shouting, not C macros
        # typeset dashes stand for an option's (Texinfo's index "–expression", groff's "−v");
        # between words or numbers they are punctuation
        ("–expression, example; —file, ls −l ‐v", ["--expression", "--file", "-l", "-v"]),
        ("Paris – London, 1990–1995, A–Z", []),
    ],
)
def test_identifiers_examples(text: str, expected: list[str]) -> None:
    assert identifiers(text) == expected


def test_identifiers_ignore_plain_words_numbers_and_caps_function_words() -> None:
    assert identifiers("The pump was configured in 2024. NOTE: THE valve is fine") == []


def test_identifiers_components_of_qualified_names() -> None:
    ids = identifiers("open config.max_payload_kg on 10.0.0.7:8080")
    assert "max_payload_kg" in ids
    assert "10.0.0.7" in ids
    assert "10.0.0.7:8080" in ids


def test_identifiers_spellings_meet() -> None:
    # "XR4471" (query) and "XR-4471" (document) share the squashed form
    assert set(identifiers("XR4471")) & set(identifiers("the XR-4471 unit"))
    assert identifiers("xr-4471") == identifiers("XR-4471")


def test_identifiers_each_once_and_trailing_punctuation_dropped() -> None:
    assert identifiers("XR-4471, XR-4471. (XR-4471)") == ["xr-4471", "xr4471"]


def test_sanitize_query_strips_syntax_and_operators() -> None:
    raw = 'foo AND (bar:"baz") || -XR-4471^2 ~ IN [a TO b] NOT x* y? \\ / {z} !w && <v>=u'
    out = sanitize_query(raw)
    assert out == "foo and bar baz xr 4471 2 in a to b not x y z w v u"
    assert sanitize_query("  ***  ") == ""
    assert sanitize_query("") == ""


def test_sanitize_query_never_yields_a_syntax_error() -> None:
    index = tantivy.Index(build_schema())
    alphabet = [*"+-&|!(){}[]^\"~*?:\\/'<>=@#$%., _\t", "AND", "OR", "NOT", "IN", "TO"]
    alphabet += ["text", "ident", "xr", "4471", "é", "日本"]
    rng = random.Random(7)
    for _ in range(2000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        cleaned = sanitize_query(raw)
        if cleaned:
            index.parse_query(cleaned, ["text"])  # must not raise


def test_proximity_pairs_skip_stopwords_and_keep_the_distance() -> None:
    from connectors.analysis import MAX_PROXIMITY_PAIRS, proximity_pairs

    assert proximity_pairs("How do I start the Redis server?") == [("start", "redis", 2), ("redis", "server", 1)]
    assert proximity_pairs("what is redis") == []  # fewer than two content words
    assert proximity_pairs("") == []
    assert proximity_pairs("ab cd ab cd") == [("ab", "cd", 1), ("cd", "ab", 1)]  # each pair once
    words = " ".join(f"w{i}" for i in range(100))
    assert len(proximity_pairs(words)) == MAX_PROXIMITY_PAIRS
