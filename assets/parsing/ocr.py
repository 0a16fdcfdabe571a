"""Where Tesseract's language data lives, so PyMuPDF's built-in OCR can use it.

PyMuPDF links Tesseract itself; it needs only the `tessdata` folder with `<lang>.traineddata`
(Debian: `apt-get install tesseract-ocr tesseract-ocr-eng`, data under
/usr/share/tesseract-ocr/5/tessdata). `TESSDATA_PREFIX` wins when set.
"""

from __future__ import annotations

import functools
import glob
import os

__all__ = ["find_tessdata", "installed_languages", "ocr_unavailable_reason"]

_CANDIDATES = (
    "/usr/share/tesseract-ocr/*/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
    "/opt/homebrew/share/tessdata",
    "/usr/share/tesseract-ocr/tessdata",
)


def _folders() -> list[str]:
    env = os.environ.get("TESSDATA_PREFIX")
    folders = [env, os.path.join(env, "tessdata")] if env else []
    for pattern in _CANDIDATES:
        folders.extend(sorted(glob.glob(pattern), reverse=True))  # newest version first
    return folders


def installed_languages() -> list[str]:
    """Every language some tessdata folder holds (empty: Tesseract's data is not installed)."""
    found = {name.removesuffix(".traineddata") for folder in _folders() if folder and os.path.isdir(folder)
             for name in os.listdir(folder) if name.endswith(".traineddata")}
    return sorted(found)


def _has_languages(folder: str, language: str) -> bool:
    return all(
        os.path.isfile(os.path.join(folder, f"{lang}.traineddata")) for lang in language.split("+")
    )


@functools.lru_cache(maxsize=8)
def find_tessdata(language: str = "eng") -> str | None:
    """The tessdata folder holding every language in `language` ("eng", "eng+deu"), or None."""
    for folder in _folders():
        if folder and _has_languages(folder, language):
            return folder
    return None


def ocr_unavailable_reason(language: str) -> str:
    """A human explanation of why OCR cannot run for `language`."""
    return (
        f"Tesseract language data for {language!r} was not found "
        "(install tesseract-ocr and tesseract-ocr-<lang>, or set TESSDATA_PREFIX)"
    )
