"""The cockpit's files (`/ui/`): plain ES modules, one stylesheet and the page, shipped in the package and served
from memory by the translator itself (nothing from a CDN), with a Content Security Policy that allows no inline
script or style and no other origin. They hold no data: what the page shows comes from the JSON API, which keeps
its own token checks. Not in the OpenAPI schema (no JSON)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from services.offset_translator.problems import problem_response

STATIC_DIR = Path(__file__).with_name("static")
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",  # revalidated by ETag: a new release's page never runs an old module
}

router = APIRouter(include_in_schema=False)


@dataclass(frozen=True, slots=True)
class UiFile:
    """One file's bytes, media type and ETag."""

    body: bytes
    media_type: str
    etag: str


class UiFiles:
    """The cockpit's files by name, read once at start (a few tens of KiB)."""

    def __init__(self, files: dict[str, UiFile]) -> None:
        self._files = files

    @classmethod
    def load(cls, directory: Path = STATIC_DIR) -> UiFiles:
        """Every file of `directory` with a known media type."""
        files = {}
        for path in sorted(directory.iterdir()) if directory.is_dir() else []:
            media_type = _MEDIA_TYPES.get(path.suffix)
            if media_type is not None and path.is_file():
                body = path.read_bytes()
                files[path.name] = UiFile(body, media_type, f'"{hashlib.sha256(body).hexdigest()[:16]}"')
        return cls(files)

    def get(self, name: str) -> UiFile | None:
        """The file called `name` (no directories: the names are the allow-list)."""
        return self._files.get(name)


def _serve(request: Request, name: str) -> Response:
    files: UiFiles = request.app.state.ui_files
    found = files.get(name)
    if found is None:
        return problem_response(404, "Not found", f"no cockpit file '{name[:100]}'", headers=SECURITY_HEADERS)
    headers = {**SECURITY_HEADERS, "ETag": found.etag}
    if request.headers.get("if-none-match") == found.etag:
        return Response(status_code=304, headers=headers)
    return Response(found.body, media_type=found.media_type, headers=headers)


@router.get("/")
async def root() -> RedirectResponse:
    """The translator's address in a browser opens the cockpit."""
    return RedirectResponse("/ui/", status_code=307)


@router.get("/ui")
async def ui_bare() -> RedirectResponse:
    """The cockpit lives under /ui/ (its modules load relative to it)."""
    return RedirectResponse("/ui/", status_code=307)


@router.get("/ui/")
async def ui_page(request: Request) -> Response:
    """The cockpit's page."""
    return _serve(request, "index.html")


@router.get("/ui/{name}")
async def ui_file(name: str, request: Request) -> Response:
    """One of the cockpit's modules, its stylesheet or its icon."""
    return _serve(request, name)
