"""Questions written by an LLM about one passage, for drafting an eval set (`bindery evalset draft`).

Uses the Anthropic Messages API with the contextualiser's settings (`stages.context`: model,
base_url; the key from `ANTHROPIC_API_KEY`). The model is asked for a question the passage
answers and the exact answering phrase; a reply that does not follow the format still gives a
question (the whole reply), and the phrase is then taken from the passage by the caller.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from connectors.config import ContextConfig
from connectors.contextualizers import API_KEY_ENV
from connectors.errors import ConfigError

__all__ = ["QUESTION_INSTRUCTION", "AnthropicQuestionWriter", "DraftQuestion"]

QUESTION_INSTRUCTION = (
    "Write one question that a user of this documentation would ask and that the passage above "
    "answers. Then copy, word for word, the shortest phrase of the passage that answers it. "
    "Reply in exactly two lines:\nQuestion: <the question>\nAnswer: <the phrase>"
)


@dataclass(frozen=True)
class DraftQuestion:
    question: str
    answer: str | None  # the model's answering phrase, when it gave one


def parse_reply(text: str) -> DraftQuestion | None:
    q = re.search(r"^\s*Question:\s*(.+)$", text, re.MULTILINE | re.IGNORECASE)
    a = re.search(r"^\s*Answer:\s*(.+)$", text, re.MULTILINE | re.IGNORECASE)
    if q:
        return DraftQuestion(q.group(1).strip(), a.group(1).strip().strip('"') if a else None)
    flat = " ".join(text.split())
    return DraftQuestion(flat, None) if flat else None


class AnthropicQuestionWriter:
    """One Messages API call per passage."""

    def __init__(self, config: ContextConfig, *, max_retries: int = 4, timeout: float = 60.0):
        api_key = os.environ.get(API_KEY_ENV)
        if not api_key:
            raise ConfigError(f"drafting questions with Anthropic needs the environment variable {API_KEY_ENV}")
        import anthropic

        self.config = config
        self._client = anthropic.Anthropic(api_key=api_key, base_url=config.base_url, timeout=timeout,
                                           max_retries=max_retries)

    def request_params(self, title: str | None, heading_path: list[str], passage: str) -> dict[str, Any]:
        where = " > ".join(h for h in heading_path if h.strip())
        head = (f"Document: {title}\n" if title else "") + (f"Section: {where}\n" if where else "")
        return {"model": self.config.model, "max_tokens": 200,
                "messages": [{"role": "user", "content": f"<passage>\n{head}{passage}\n</passage>\n"
                                                         f"{QUESTION_INSTRUCTION}"}]}

    def write(self, title: str | None, heading_path: list[str], passage: str) -> DraftQuestion | None:
        msg = self._client.messages.create(**self.request_params(title, heading_path, passage))
        return parse_reply(" ".join(b.text for b in msg.content if b.type == "text"))

    def close(self) -> None:
        self._client.close()
