"""Exact WordPiece counts of ASCII text without a full Rust encode of it.

The chunker counts every block it sees and the embed stage counts every text it embeds, so
counting was the largest single cost of chunking (a third of a `bindery plan` on a documentation
tree). For a BERT-style tokenizer the count of a text is the sum of its words' counts: the
normaliser removes control characters and lowercases, the pre-tokeniser splits on whitespace
and makes every punctuation character its own word, and word pieces never span words. On ASCII
text all three rules are a lowercase, one substitution and one regular expression, and a
natural-language corpus repeats its words, so each distinct word is encoded by the real
tokenizer once and remembered. 3-4x faster than `encode_batch_fast` on one core, and the
same number to the piece (checked against the tokenizer in tests/test_chunking.py, and on the
141,957 ASCII blocks of every bench corpus and a 300-file documentation tree).

It is used only where that argument holds: a tokenizer.json whose normaliser is BertNormalizer
with `clean_text`, pre-tokeniser BertPreTokenizer and model WordPiece, and no added token that
normalisation could make out of other text. Text that is not ASCII, or
that holds the text of one of the tokenizer's added tokens ("[SEP]" is one piece, not three), is
left to the tokenizer itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from tokenizers import Tokenizer

__all__ = ["WordPieceCounts"]

# BertNormalizer's clean_text drops the ASCII control characters other than tab, CR and LF (it
# turns those into spaces); \x0b and \x0c are controls there, not whitespace
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# BertPreTokenizer: runs of letters and digits, and each ASCII punctuation character alone
_WORDS = {True: re.compile(r"[a-z0-9]+|[^a-z0-9\s]"), False: re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9\s]")}
_MAX_WORDS = 200_000  # remembered words; past this the memory starts over (a corpus of hashes)


class WordPieceCounts:
    """Counts ASCII text in a BERT WordPiece tokenizer's pieces, word by remembered word."""

    def __init__(self, tokenizer: Tokenizer, lowercase: bool, added: Sequence[str]):
        self._tok = tokenizer
        self._lower = lowercase
        self._words = _WORDS[lowercase]
        self._pieces: dict[str, int] = {}
        # an added token's text is one piece wherever it stands; matched case-blind to be safe
        self._added = re.compile("|".join(re.escape(a) for a in added), re.IGNORECASE) if added else None

    @classmethod
    def for_tokenizer(cls, tokenizer: Tokenizer) -> WordPieceCounts | None:
        """The counter for `tokenizer`, or None when its pipeline is not the one this models."""
        try:
            spec = json.loads(tokenizer.to_str())
        except ValueError:
            return None
        norm, pre, model = spec.get("normalizer") or {}, spec.get("pre_tokenizer") or {}, spec.get("model") or {}
        if (norm.get("type") != "BertNormalizer" or not norm.get("clean_text")
                or pre.get("type") != "BertPreTokenizer" or model.get("type") != "WordPiece"):
            return None
        tokens = [t for t in tokenizer.get_added_tokens_decoder().values() if t.content]
        # an added token matched after normalisation can be made by it ("a\tb" becomes "a b"):
        # only one that is a single run of letters and digits is sure to be seen in the raw text
        if any(t.normalized and not str(t.content).isalnum() for t in tokens):
            return None
        return cls(tokenizer, bool(norm.get("lowercase")), [str(t.content) for t in tokens])

    def count(self, text: str) -> int | None:
        """Pieces in `text` (no special tokens), or None when the tokenizer itself must count."""
        if not text.isascii() or (self._added is not None and self._added.search(text)):
            return None
        if _CONTROL.search(text):
            text = _CONTROL.sub("", text)
        words = self._words.findall(text.lower() if self._lower else text)
        try:
            return sum(map(self._pieces.__getitem__, words))
        except KeyError:
            return sum(map(self._learn(words).__getitem__, words))

    def _learn(self, words: list[str]) -> dict[str, int]:
        """Encode the words of `words` not yet remembered, each alone (a word is its own
        pre-token); returns the memory that now holds all of them (another thread may start a
        new one meanwhile)."""
        pieces = self._pieces
        unique = [w for w in dict.fromkeys(words) if w not in pieces]
        if len(pieces) + len(unique) > _MAX_WORDS:
            pieces = self._pieces = {}
            unique = list(dict.fromkeys(words))
        encode = getattr(self._tok, "encode_batch_fast", self._tok.encode_batch)
        for w, enc in zip(unique, encode(unique, add_special_tokens=False), strict=True):
            pieces[w] = len(enc)
        return pieces
