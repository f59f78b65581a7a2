"""The Docs section (issue 16 §2): the repository's ``docs/`` pages inside the app, and a
product that stands alone (nothing it shows points outside the repository)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

import scheduler_core as sc
from experiments import docs

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = sorted((ROOT / "docs").glob("*.md"))


def test_the_index_lists_every_page_by_its_title(client: Client):
    html = client.get(reverse("experiments:docs")).content.decode()
    for path in DOC_FILES:
        title = next(
            line[2:].strip() for line in path.read_text().splitlines() if line.startswith("# ")
        )
        assert reverse("experiments:doc", args=[path.stem]) in html
        assert title.split("`")[0] in html.replace("&#x27;", "'")


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda path: path.stem)
def test_every_page_renders_for_a_reader_who_has_not_signed_in(client: Client, path: Path):
    response = client.get(reverse("experiments:doc", args=[path.stem]))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="doc"' in html
    if "\n|---" in path.read_text() or "\n| ---" in path.read_text():
        assert "<table>" in html  # GitHub-style tables are rendered, not left as pipes


def test_the_pages_a_new_user_needs_are_there():
    slugs = {page.slug for page in docs.doc_index()}
    assert {
        "metrics",
        "application-model",
        "presets",
        "kubernetes-preemption",  # the rules the core's docstrings cite by section
        "kubernetes-rules",
        "traces",
    } <= slugs


def test_the_presets_page_describes_every_preset():
    text = (ROOT / "docs" / "presets.md").read_text()
    for preset in sc.list_presets(studies=True):
        assert f"`{preset.id}`" in text, f"docs/presets.md does not describe {preset.id}"


def test_the_traces_page_says_where_to_download_each_public_trace():
    text = (ROOT / "docs" / "traces.md").read_text()
    section = text.split("## Where to download the public traces", 1)[1].split("\n## ", 1)[0]
    for trace in ("openb", "DLRM", "PAI", "spot"):
        assert trace in section
    assert "https://github.com/alibaba/clusterdata" in section


@pytest.fixture
def docs_in(tmp_path, settings):
    folder = tmp_path / "docs"
    folder.mkdir()
    settings.BASE_DIR = tmp_path
    return folder


def test_raw_html_in_a_page_is_shown_as_text_not_run(client: Client, docs_in: Path):
    (docs_in / "evil.md").write_text(
        "# Evil\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n"
    )
    html = client.get(reverse("experiments:doc", args=["evil"])).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;" in html
    assert 'href="javascript:' not in html


def test_links_between_pages_and_heading_anchors_work_in_the_app(client: Client, docs_in):
    (docs_in / "one.md").write_text("# One\n\nSee [lost work](two.md#lost-work).\n")
    (docs_in / "two.md").write_text("# Two\n\n## Lost work\n\nText.\n")
    one = client.get(reverse("experiments:doc", args=["one"])).content.decode()
    two = client.get(reverse("experiments:doc", args=["two"])).content.decode()
    assert f'href="{reverse("experiments:doc", args=["two"])}#lost-work"' in one
    assert 'id="lost-work"' in two


def test_a_missing_page_is_a_404(client: Client):
    assert client.get(reverse("experiments:doc", args=["no-such-page"])).status_code == 404
    assert client.get("/docs/..%2FREADME/").status_code == 404


def test_an_edited_page_is_rendered_anew(client: Client, docs_in: Path):
    page = docs_in / "live.md"
    page.write_text("# Live\n\nfirst\n")
    assert "first" in client.get("/docs/live/").content.decode()
    page.write_text("# Live\n\nsecond version\n")
    os.utime(page, ns=(page.stat().st_atime_ns, page.stat().st_mtime_ns + 1_000_000))
    assert "second version" in client.get("/docs/live/").content.decode()


def _shown_files() -> list[Path]:
    return [ROOT / "README.md", *DOC_FILES, *sorted((ROOT / "templates").rglob("*.html"))]


def test_nothing_the_product_shows_points_outside_the_repository():
    """A user who clones the repository has only the repository."""
    outside = re.compile(r"\.\./shared|/work/shared|shared/design|shared/seeds")
    offenders = [
        str(path.relative_to(ROOT))
        for path in _shown_files()
        if outside.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_every_relative_link_in_the_readme_and_docs_resolves():
    link = re.compile(r"\]\((?!https?://|#|mailto:)([^)#\s]+)")
    broken = []
    for path in [ROOT / "README.md", *DOC_FILES]:
        for target in link.findall(path.read_text(encoding="utf-8")):
            if not (path.parent / target).exists():
                broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert broken == []
