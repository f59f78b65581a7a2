"""The end-to-end tests drive Debian's Chromium (never a downloaded browser) through
Playwright against the real web server and a real worker."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.web.live import ROOT, Stack, live_stack, wait_for

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def stack(tmp_path: Path, transactional_db) -> Iterator[Stack]:
    yield from live_stack(tmp_path)


@pytest.fixture
def server(stack: Stack) -> str:
    """The app under gunicorn with one real worker, on a free port; its base URL."""
    port = _free_port()
    stack.start_web(port)
    wait_for(lambda: _answers(port), timeout=30, what="the web server", stack=stack)
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def browser(monkeypatch):
    """Headless Chromium. Playwright's sync API keeps an event loop in this thread, so
    Django's guard against database access from async code is lifted for the test."""
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (make test does)")
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
