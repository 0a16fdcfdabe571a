"""`/redoc` that renders with no network at all.

`fastapi_offline` serves Swagger UI's and ReDoc's files locally, but ReDoc's bundle still
fetches one image from a CDN (the "API docs by Redocly" logo of its side menu): offline, the
page renders and the browser logs a failed request and a console error. So this module serves
`/redoc` itself, pointing at a copy of the same bundle in which that one address is an empty
inline image. The bundle is read and patched once per process, on first request.
"""

from __future__ import annotations

import functools
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html
from fastapi.responses import HTMLResponse, Response

__all__ = ["REDOC_JS", "add_offline_redoc"]

OFFLINE_STATIC = "/static-offline-docs"  # where fastapi_offline mounts its files (its default)
REDOC_JS = "/redoc-assets/redoc.standalone.js"
_CDN_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"
_EMPTY_IMAGE = b"data:image/svg+xml,%3Csvg%20xmlns=%22http://www.w3.org/2000/svg%22/%3E"


@functools.lru_cache(maxsize=1)
def _bundle() -> bytes:
    path = Path(fastapi_offline.__file__).parent / "static" / "redoc.standalone.js"
    return path.read_bytes().replace(_CDN_LOGO, _EMPTY_IMAGE)


def add_offline_redoc(app: FastAPI, url: str = "/redoc") -> None:
    """`url` serves ReDoc over the app's OpenAPI schema from local files only. The app must be
    made with ``FastAPIOffline(redoc_url=None)`` so the two do not claim the same path."""

    @app.get(url, include_in_schema=False)
    def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(openapi_url=f"{root}{app.openapi_url}", title=f"{app.title} - ReDoc",
                              redoc_js_url=f"{root}{REDOC_JS}", with_google_fonts=False,
                              redoc_favicon_url=f"{root}{OFFLINE_STATIC}/favicon.png")

    @app.get(REDOC_JS, include_in_schema=False)
    def redoc_js() -> Response:
        return Response(_bundle(), media_type="text/javascript",
                        headers={"Cache-Control": "public, max-age=86400"})
