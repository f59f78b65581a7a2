"""The repository's ``docs/`` pages, rendered for the app's Docs section.

The Markdown files in ``docs/`` are the one source: the repository shows them as they
are, the app renders them here, so the two can never disagree. Raw HTML in a page is
escaped, not passed through, and links between pages (``metrics.md#lost-work``) are
rewritten to the app's own URLs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.urls import reverse
from markdown_it import MarkdownIt

# The order of the index: what a new user needs first. Pages not named here follow,
# alphabetically, so a new page never goes missing from the index.
ORDER = (
    "metrics",
    "application-model",
    "presets",
    "kubernetes-preemption",
    "kubernetes-rules",
    "kubernetes",
    "kubernetes-export",
    "decisions",
    "traces",
)
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_LINK = re.compile(r"^(?P<page>[a-z0-9][a-z0-9-]*)\.md(?P<anchor>#[\w-]*)?$")


@dataclass(frozen=True, slots=True)
class DocPage:
    slug: str
    title: str
    html: str


def docs_dir() -> Path:
    return Path(settings.BASE_DIR) / "docs"


def doc_index() -> list[DocPage]:
    """Every page in ``docs/``, in reading order."""
    slugs = sorted(
        (path.stem for path in docs_dir().glob("*.md") if _SLUG.match(path.stem)),
        key=lambda slug: (ORDER.index(slug) if slug in ORDER else len(ORDER), slug),
    )
    pages = (doc_page(slug) for slug in slugs)
    return [page for page in pages if page is not None]


def doc_page(slug: str) -> DocPage | None:
    """The rendered page ``docs/<slug>.md``, or None if there is no such page."""
    if not _SLUG.match(slug):
        return None
    path = docs_dir() / f"{slug}.md"
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return None
    return _render(str(path), stamp)


@lru_cache(maxsize=64)
def _render(path: str, stamp: int) -> DocPage:
    """Rendered once per file version (``stamp`` is the file's mtime)."""
    text = Path(path).read_text(encoding="utf-8")
    title = next(
        (line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("# ")),
        Path(path).stem,
    )
    return DocPage(slug=Path(path).stem, title=title, html=_markdown().render(text))


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.core.ruler.push("lab_links_and_anchors", _links_and_anchors)
    return md


def _links_and_anchors(state: Any) -> None:
    """Headings get ids (so ``#lost-work`` works); ``page.md`` links go to the app."""
    tokens = state.tokens
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            token.attrSet("id", _anchor(tokens[index + 1].content))
        for child in token.children or ():
            if child.type == "link_open":
                match = _LINK.match(str(child.attrGet("href") or ""))
                if match:
                    url = reverse("experiments:doc", args=[match["page"]])
                    child.attrSet("href", url + (match["anchor"] or ""))


def _anchor(heading: str) -> str:
    """GitHub's rule, near enough: lower case, punctuation dropped, spaces to dashes."""
    words = re.sub(r"[^\w\- ]", "", heading.lower()).strip()
    return re.sub(r" ", "-", words)
