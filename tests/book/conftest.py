"""The book tests' shared fixture: the headless browser the live-figure and findings-page tests
drive (Debian's ``chromium``, which ``.ci/run`` installs; Playwright downloads no browser)."""

from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's), no network of its own."""
    if not CHROMIUM.exists():
        pytest.skip(f"no {CHROMIUM}: apt-get install chromium (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield b
        b.close()
