"""The browser the browser tests drive: the system Chromium, and the hints when it is missing.

The browser is Debian's Chromium (``apt-get install chromium``), driven by the Playwright Python
package; Playwright's own browser downloads (``playwright install``) are never used.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MISSING_CHROMIUM = (
    f"browser tests need Debian's Chromium at {CHROMIUM}: run `apt-get install -y chromium` "
    "(never `playwright install`)"
)
MISSING_PLAYWRIGHT = (
    "browser tests need the Playwright Python package: pip install -e '.[test]' "
    "(it drives the system Chromium; no browser download)"
)


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A launched headless Chromium (a ``playwright.async_api.Browser``), closed afterwards."""
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


def browser_marks() -> list[Any]:
    """The marks of a browser test module (a server process and a real browser): ``browser`` and
    ``slow``, skipped with a hint when Playwright or Chromium is missing."""
    import pytest

    try:
        import playwright.async_api  # noqa: F401
    except ImportError:  # pragma: no cover - the skip explains it
        has_playwright = False
    else:
        has_playwright = True
    return [
        pytest.mark.browser,
        pytest.mark.slow,
        pytest.mark.skipif(not has_playwright, reason=MISSING_PLAYWRIGHT),
        pytest.mark.skipif(not CHROMIUM.exists(), reason=MISSING_CHROMIUM),
    ]


@asynccontextmanager
async def checked_page(browser: Any, server: Any, *, height: int = 800) -> AsyncIterator[Any]:
    """A fresh context and page for one test (a ``playwright.async_api.Page`` on ``server``). The
    test fails on a JS error, an error in the console, or a request to anywhere but the server: the
    console must work with no network."""
    ctx = await browser.new_context(
        base_url=server.base_url, viewport={"width": 1280, "height": height}
    )
    ctx.set_default_timeout(20_000)
    pg = await ctx.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    pg.on(
        "console",
        lambda msg: (
            problems.append(f"console {msg.type}: {msg.text}")
            if msg.type == "error" and "Failed to load resource" not in msg.text
            else None
        ),
    )
    pg.on(
        "request",
        lambda req: (
            None
            if req.url.startswith((server.base_url, "data:", "blob:"))
            else problems.append(f"request off the server: {req.url}")
        ),
    )
    try:
        yield pg
    finally:
        await ctx.close()
    assert not problems, "\n".join(problems) + f"\n--- server log ---\n{server.log_tail(30)}"
