"""Headless Chromium for page tests: Debian's ``chromium`` driven by Playwright (never a
downloaded browser), and the checks every page must pass."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

#: Flags from the machine notes: no sandbox (root in a container), no GPU, nothing reaching out.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"]
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")

#: Per plot: whether plotly drew it, its SVGs, and the marks (points, lines, bars) with data.
PLOTS_JS = """() => Array.from(document.querySelectorAll('div.plot')).map(el => ({
  id: el.id,
  rendered: el.dataset.rendered || null,
  svgs: el.querySelectorAll('svg.main-svg').length,
  marks: el.querySelectorAll('.scatterlayer .trace path.point, .scatterlayer .trace path.js-line, .barlayer .trace path').length,
}))"""


def chromium_path() -> str:
    """The system Chromium. Raises RuntimeError when it is not installed."""
    for candidate in CHROMIUM_CANDIDATES:
        if Path(candidate).exists():
            return candidate
    found = shutil.which("chromium")
    if found:
        return found
    raise RuntimeError("headless page tests need Debian's chromium package: apt-get install -y chromium "
                       "(scripts/test.sh installs it)")


def launch(playwright: Any, user_data_dir: Path) -> Any:
    """A persistent context of headless system Chromium in a fresh profile folder."""
    return playwright.chromium.launch_persistent_context(
        str(user_data_dir), executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS,
        viewport={"width": 1200, "height": 1400})


def nonblank(png: bytes) -> tuple[int, float]:
    """``(distinct colours, share of pixels that are not the background)`` of a screenshot."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    small = image.resize((image.width // 4, image.height // 4))
    colours = small.getcolors(maxcolors=1 << 20) or []
    background = max(colours)[1] if colours else (255, 255, 255)
    total = small.width * small.height
    other = sum(n for n, c in colours if c != background)
    return len(colours), other / total


def check_page(context: Any, url: str, screenshot: Path) -> dict[str, Any]:
    """Load ``url``; wait for every plot; return the console errors, the plots and the screenshot's
    measures (the test asserts on them)."""
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    response = page.goto(url)
    page.wait_for_function("() => Array.from(document.querySelectorAll('div.plot')).every(e => e.dataset.rendered)",
                           timeout=60_000)
    plots = page.evaluate(PLOTS_JS)
    png = page.screenshot(full_page=False)
    screenshot.write_bytes(png)
    colours, share = nonblank(png)
    out = {"errors": errors, "plots": plots, "colours": colours, "ink": share, "page": page,
           "headers": response.headers if response is not None else {}}
    return out
