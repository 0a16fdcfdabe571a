"""Contextual prefix providers: a short text situating each chunk within its document.

"Contextual retrieval": before a chunk is embedded and keyword-indexed, a one- or two-sentence
prefix saying where the chunk sits (which document, which section, what the document is about)
is prepended to it, so a chunk such as "It must be set before the first call." can still be
found by a query that names the product or topic it belongs to.

Three providers share one interface (`Contextualizer`), chosen by `stages.context.provider`:

- ``offline`` (default): deterministic, no model. ``"<title> — <h1 > h2>. <summary sentence>"``.
- ``anthropic``: one Messages API call per chunk through the official ``anthropic`` SDK. The whole
  document goes in a content block marked ``cache_control: {"type": "ephemeral"}``; it is
  identical for every chunk of a document, so after the first call the document is read from the
  prompt cache. The first chunk of a document is sent alone (it writes the cache) and the rest
  run with bounded concurrency (they read it).
- ``none``: empty prefixes.

Every prefix is trimmed to ``max_prefix_tokens`` (about words x 1.3, or a caller's exact
``count_tokens``) because it shares the embedder's input window with the chunk.

The Anthropic provider was tested against a local HTTP stub that follows the public Messages API
(``tests/anthropic_stub.py``: auth, version header, prompt-cache usage, 5xx/529 retries), not
against the live service.

Failures are of two kinds: `ContextError` for one document (a 400 for its text, a 5xx that
outlasted the retries), which dead-letters that document, and `ProviderUnavailable` when no
request can succeed (rejected key, unknown model, exhausted quota, unreachable endpoint), which
fails the run with the reason rather than dead-lettering every document.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from connectors.config import ContextConfig
from connectors.errors import BinderyError, ConfigError

if TYPE_CHECKING:
    import anthropic

__all__ = [
    "API_KEY_ENV",
    "CONTEXT_INSTRUCTION",
    "AnthropicContextualizer",
    "ChunkContext",
    "ContextError",
    "Contextualizer",
    "DocumentContext",
    "NoopContextualizer",
    "OfflineContextualizer",
    "PrefixResult",
    "ProviderUnavailable",
    "approx_tokens",
    "make_contextualizer",
    "summary_sentence",
    "trim_to_tokens",
]

API_KEY_ENV = "ANTHROPIC_API_KEY"
CONTEXT_INSTRUCTION = (
    "Give a short succinct context to situate this chunk within the overall document for the "
    "purposes of improving search retrieval of the chunk. Answer only with the succinct context "
    "and nothing else."
)
# Beyond this the document is cut before it is sent: a book-sized file would otherwise overflow
# the model's context window and dead-letter the whole document (about 100k tokens).
MAX_DOCUMENT_CHARS = 400_000

TokenCounter = Callable[[str], int]


class ContextError(BinderyError):
    """The context provider failed for one document (after the SDK's retries).

    The pipeline dead-letters that document; the run goes on.
    """

    reason = "context"

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ProviderUnavailable(ContextError):
    """The provider refuses or cannot be reached for *every* request, not for one document:
    the key is rejected (401/403), the model does not exist (404), the quota is spent (429
    after the SDK's retries) or the endpoint is unreachable. The pipeline fails the run with
    this reason instead of dead-lettering every document."""

    reason = "context-provider"


# HTTP statuses that say nothing about the document being sent: no later request will succeed.
PROVIDER_WIDE_STATUSES = {401: "the API key was rejected", 403: "the API key may not use this model",
                          404: "no such model or endpoint", 429: "rate limit or quota exhausted after retries"}


@dataclass
class DocumentContext:
    """What a provider may know about the whole document."""

    title: str | None
    summary: str
    full_text: str

    @functools.cached_property
    def summary_or_whole(self) -> str:
        """`summary`, else the first sentence of the whole text: looked for once per document. A
        CSV, a word list or CJK text has no sentence of its own words, and searched for every
        chunk, a 1.8 MB CSV's prefixes took 148 s."""
        return self.summary or summary_sentence(self.full_text)

    @classmethod
    def from_text(cls, title: str | None, full_text: str) -> DocumentContext:
        """Build one with `summary` taken from the text's first real sentence."""
        return cls(title=title, summary=summary_sentence(full_text), full_text=full_text)


@dataclass
class ChunkContext:
    """One chunk to situate: its section headings (outermost first) and its text."""

    heading_path: list[str]
    text: str


@dataclass
class PrefixResult:
    """A prefix and the model usage it cost (all zero for providers without a model)."""

    prefix: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0


@runtime_checkable
class Contextualizer(Protocol):
    """Turns the chunks of one document into one prefix each, in order."""

    @property
    def provider_id(self) -> str: ...

    def contextualize(self, doc: DocumentContext, chunks: list[ChunkContext]) -> list[PrefixResult]: ...


# --------------------------------------------------------------------------- token budget


def approx_tokens(text: str) -> int:
    """Rough token count (words x 1.3, rounded up): close enough for a budget of a few dozen."""
    return math.ceil(len(text.split()) * 1.3)


def trim_to_tokens(text: str, max_tokens: int, count_tokens: TokenCounter | None = None) -> str:
    """The longest word-prefix of `text` (whitespace collapsed) within `max_tokens`.

    Cuts at word boundaries only, so the result is deterministic and never ends mid-word.
    """
    count = count_tokens or approx_tokens
    words = text.split()
    if max_tokens <= 0 or not words:
        return ""
    joined = " ".join(words)
    if count(joined) <= max_tokens:
        return joined
    lo, hi = 0, len(words)  # invariant: words[:lo] fits, words[:hi] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if count(" ".join(words[:mid])) <= max_tokens:
            lo = mid
        else:
            hi = mid
    return " ".join(words[:lo]).rstrip(",;:—-")


# --------------------------------------------------------------------------- summary sentence

_FENCE = re.compile(r"^\s*(```|~~~)")
_SETEXT_UNDERLINE = re.compile(r"^\s*(=+|-+)\s*$")
_RULE_OR_MARKUP = re.compile(r"^\s*([-*_=~#>|+.]\s*){3,}$")
_BULLET = re.compile(r"^\s*([-*+•·]|\d+[.)])\s+")
_NAV_SEPARATORS = re.compile(r"\s[|»\u203a·•/>]\s")
_NAV_PHRASES = re.compile(
    r"^(skip to (main )?content|(table of )?contents|menu|home|search|sign in|log ?in|next|"
    r"previous|back to top|edit (this page|on github)|share|print)\W*$",
    re.IGNORECASE,
)
# A sentence ends at . ! or ? (optionally followed by a closing quote or bracket) before
# whitespace and an upper-case letter, digit or opening quote/bracket.
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9\u00c0-\u00de])")
_TERMINATED = re.compile(r"[.!?][\"')\]]*$")
# "Owner: Jane Doe", "Date : 30 September", "Last reviewed: May": document metadata, not prose.
_METADATA = re.compile(r"^[^\W\d_][\w'./()-]*(\s[\w'./()-]+){0,2}\s?:\s+\S")
_ABBREVIATIONS = frozenset(
    {
        "e.g",
        "i.e",
        "etc",
        "vs",
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "jr",
        "sr",
        "no",
        "fig",
        "figs",
        "eq",
        "cf",
        "approx",
        "inc",
        "ltd",
        "co",
        "corp",
        "dept",
        "vol",
        "ch",
        "sec",
        "p",
        "pp",
        "al",
    }
)
_MIN_SENTENCE_WORDS = 4


def _is_nav(s: str) -> bool:
    """A menu or breadcrumb: short items between separators ("Home | Docs | Blog")."""
    parts = _NAV_SEPARATORS.split(s)
    return len(parts) >= 2 and all(len(p.split()) <= 4 for p in parts)


def _is_prose_line(line: str) -> bool:
    """Whether a line reads as running text rather than a heading, nav item or markup."""
    s = line.strip()
    if not s or s.startswith(("#", "|")) or _RULE_OR_MARKUP.match(s):
        return False
    if _NAV_PHRASES.match(s) or _is_nav(s):
        return False
    if _METADATA.match(s) and s[1] != ":":  # but "Q: How do I ...?" is prose
        return False
    words = s.split()
    if _BULLET.match(s):
        return len(words) >= 6 and s[-1] in ".!?"  # a list item that is a full sentence
    if len(words) < _MIN_SENTENCE_WORDS and s[-1] not in ".!?:":
        return False  # short label: a heading, a button, a page number
    letters = sum(map(str.isalpha, s))
    return letters >= 0.5 * len(s)


def _paragraphs(text: str) -> Iterator[str]:
    """Runs of consecutive prose lines, joined with single spaces; code blocks skipped. Lazy:
    the summary wants the first sentence, not a scan of a whole manual."""
    buf: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif in_fence:
            continue
        elif _SETEXT_UNDERLINE.match(line) and buf:
            buf.clear()  # the lines above an ===/--- underline were a heading
            continue
        elif _is_prose_line(line):
            buf.append(_BULLET.sub("", line.strip()))
            continue
        if buf:  # a fence or a line that is not prose ends the paragraph
            yield " ".join(" ".join(buf).split())
            buf.clear()
    if buf:
        yield " ".join(" ".join(buf).split())


_LOOK_BACK = 256  # characters before a sentence end that hold its last word (abbreviations are short)


def _sentences(paragraph: str) -> list[str]:
    """Split at sentence ends, not after common abbreviations or single-letter initials."""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(paragraph):
        # the word before the stop, read from a bounded window: re-split from `start` each time,
        # a paragraph of "Mrs." and initials (where `start` stays put) was quadratic (912 KB: 94 s)
        before = paragraph[max(start, m.start() - _LOOK_BACK) : m.start()].split()
        last = before[-1].lower().rstrip(".") if before else ""
        if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
            continue
        out.append(paragraph[start : m.end()].strip())
        start = m.end()
    tail = paragraph[start:].strip()
    if tail:
        out.append(tail)
    return out


def _clip(sentence: str, max_chars: int) -> str:
    if len(sentence) <= max_chars:
        return sentence
    cut = sentence[: max_chars - 1]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(",;:—- ") + "…"


def summary_sentence(text: str, max_chars: int = 200) -> str:
    """The document's first real sentence, at most `max_chars` characters (cut with "…").

    Headings (``#``, setext underlines, short unpunctuated lines), navigation and breadcrumb
    lines, ``Label: value`` metadata lines, tables, rules and fenced code are skipped; a
    sentence must have at least four words and end with ``.``, ``!`` or ``?``.
    When there is none, the first paragraph is used as is; an empty string when there is no
    prose at all. Deterministic: the same text always gives the same sentence.
    """
    first: str | None = None
    for para in _paragraphs(text):
        first = para if first is None else first
        for sentence in _sentences(para):
            if len(sentence.split()) >= _MIN_SENTENCE_WORDS and _TERMINATED.search(sentence):
                return _clip(sentence, max_chars)
    return _clip(first, max_chars) if first is not None else ""


# --------------------------------------------------------------------------- providers


def _norm(s: str) -> str:
    return " ".join(s.split()).casefold()


class NoopContextualizer:
    """Provider ``none``: every chunk gets an empty prefix."""

    provider_id = "none"

    def contextualize(self, doc: DocumentContext, chunks: list[ChunkContext]) -> list[PrefixResult]:
        return [PrefixResult(prefix="") for _ in chunks]


class OfflineContextualizer:
    """Deterministic prefix from document metadata: ``"<title> — <h1 > h2>. <summary>"``.

    Empty parts are left out, a leading heading equal to the title is not repeated, and the
    result is cut at a word boundary to ``max_prefix_tokens`` (so the summary is what gets
    shortened first). No model and no I/O: identical inputs always give identical prefixes.
    """

    provider_id = "offline"

    def __init__(self, config: ContextConfig, *, count_tokens: TokenCounter | None = None) -> None:
        self.config = config
        self._count = count_tokens

    def prefix_for(self, doc: DocumentContext, chunk: ChunkContext) -> str:
        title = " ".join((doc.title or "").split())
        path = [" ".join(h.split()) for h in chunk.heading_path if h.strip()]
        if title and path and _norm(path[0]) == _norm(title):
            path = path[1:]
        head = " — ".join(p for p in (title, " > ".join(path)) if p)
        summary = " ".join(doc.summary_or_whole.split())
        sep = " " if head.endswith((".", "!", "?", ":")) else ". "
        text = sep.join(p for p in (head, summary) if p)
        return trim_to_tokens(text, self.config.max_prefix_tokens, self._count)

    def contextualize(self, doc: DocumentContext, chunks: list[ChunkContext]) -> list[PrefixResult]:
        return [PrefixResult(prefix=self.prefix_for(doc, c)) for c in chunks]


class AnthropicContextualizer:
    """Model-written prefixes via the Anthropic Messages API with prompt caching.

    Per chunk, one request whose user turn holds two text blocks: the whole document (with
    ``cache_control`` ephemeral, identical across the document's chunks) and then the chunk with
    `CONTEXT_INSTRUCTION`. Transient errors (429, 5xx, 529 overloaded, connection) are retried
    by the SDK (`max_retries`, honouring ``retry-after``); a final failure raises `ContextError`.
    """

    def __init__(
        self,
        config: ContextConfig,
        *,
        client: anthropic.Anthropic | None = None,
        count_tokens: TokenCounter | None = None,
        max_retries: int = 4,
        timeout: float = 60.0,
        max_document_chars: int = MAX_DOCUMENT_CHARS,
    ) -> None:
        self.config = config
        self._count = count_tokens
        self._max_document_chars = max_document_chars
        self._owns_client = client is None
        if client is None:
            api_key = os.environ.get(API_KEY_ENV)
            if not api_key:
                raise ConfigError(
                    f"stages.context.provider is 'anthropic' but the environment variable {API_KEY_ENV} is not set"
                )
            import anthropic  # deferred: the offline path never pays for the SDK import

            client = anthropic.Anthropic(
                api_key=api_key,
                base_url=config.base_url,
                timeout=timeout,
                max_retries=max_retries,
            )
        self._client = client

    @property
    def provider_id(self) -> str:
        return f"anthropic:{self.config.model}"

    def close(self) -> None:
        """Close the HTTP client if this provider created it."""
        if self._owns_client:
            self._client.close()

    def request_params(self, doc: DocumentContext, chunk: ChunkContext) -> dict[str, Any]:
        """The `messages.create` arguments for one chunk (the document block is cacheable)."""
        body = doc.full_text
        if len(body) > self._max_document_chars:
            body = body[: self._max_document_chars] + "\n[document truncated]"
        title = f"Title: {doc.title}\n\n" if doc.title else ""
        section = " > ".join(h for h in chunk.heading_path if h.strip())
        section_line = f"Section: {section}\n" if section else ""
        return {
            "model": self.config.model,
            "max_tokens": self.config.max_tokens,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": f"<document>\n{title}{body}\n</document>",
                            "cache_control": {"type": "ephemeral"},
                        },
                        {
                            "type": "text",
                            "text": (
                                "Here is the chunk we want to situate within the whole document\n"
                                f"<chunk>\n{section_line}{chunk.text}\n</chunk>\n"
                                f"{CONTEXT_INSTRUCTION}"
                            ),
                        },
                    ],
                }
            ],
        }

    def _one(self, doc: DocumentContext, chunk: ChunkContext, ordinal: int) -> PrefixResult:
        import anthropic

        try:
            msg = self._client.messages.create(**self.request_params(doc, chunk))
        except anthropic.APIStatusError as e:
            if e.status_code in PROVIDER_WIDE_STATUSES:
                raise ProviderUnavailable(
                    f"Anthropic API error {e.status_code} ({PROVIDER_WIDE_STATUSES[e.status_code]}) for model "
                    f"{self.config.model!r}: {e.message}. Nothing can be contextualised until this is fixed "
                    f"(check {API_KEY_ENV}, stages.context.model and the account's limits)",
                    status=e.status_code,
                ) from e
            raise ContextError(
                f"Anthropic API error {e.status_code} on chunk {ordinal} of "
                f"{doc.title or 'untitled document'!r}: {e.message}",
                status=e.status_code,
            ) from e
        except (anthropic.APIConnectionError, anthropic.APITimeoutError) as e:
            raise ProviderUnavailable(
                f"Anthropic API endpoint {self._client.base_url} unreachable after retries: {e.message}"
            ) from e
        except anthropic.APIError as e:  # a malformed response
            raise ContextError(
                f"Anthropic API request failed on chunk {ordinal} of {doc.title or 'untitled document'!r}: {e.message}"
            ) from e
        text = " ".join(b.text for b in msg.content if b.type == "text")
        u = msg.usage
        return PrefixResult(
            prefix=trim_to_tokens(text, self.config.max_prefix_tokens, self._count),
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_input_tokens or 0,
            cache_creation_tokens=u.cache_creation_input_tokens or 0,
        )

    def contextualize(self, doc: DocumentContext, chunks: list[ChunkContext]) -> list[PrefixResult]:
        """Prefixes in chunk order. Raises `ContextError` if any chunk finally fails."""
        if not chunks:
            return []
        # The first call writes the document into the prompt cache; sending the others only
        # after it returns lets every later call read the cache instead of writing it again.
        first = self._one(doc, chunks[0], 0)
        rest = chunks[1:]
        if not rest:
            return [first]
        pool = ThreadPoolExecutor(max_workers=max(1, self.config.concurrency))
        futures: list[Future[PrefixResult]] = [pool.submit(self._one, doc, c, i) for i, c in enumerate(rest, start=1)]
        try:
            results = [first] + [f.result() for f in futures]
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)  # stop unstarted calls on failure
            raise
        pool.shutdown(wait=True)
        return results


def make_contextualizer(config: ContextConfig, *, count_tokens: TokenCounter | None = None) -> Contextualizer:
    """The provider named by `config.provider`; ``anthropic`` reads its key from the env now."""
    if config.provider == "offline":
        return OfflineContextualizer(config, count_tokens=count_tokens)
    if config.provider == "anthropic":
        return AnthropicContextualizer(config, count_tokens=count_tokens)
    if config.provider == "none":
        return NoopContextualizer()
    raise ConfigError(f"stages.context.provider: unknown provider {config.provider!r}")
