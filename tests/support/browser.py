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


#: What a page's layout gets wrong at the viewport's width, as readable lines (empty: nothing):
#: the page scrolls sideways; a table wider than its box; a visible row taller than its
#: content (a row: as tall as its tallest cell's content plus padding; a card, a flex row:
#: each cell as tall as its content or its label; give or take 0.6 of a line, as the text's
#: boxes are shorter than its lines); in a drawn plot, two labels (axis ticks,
#: axis titles, legend entries, text on the plot) overlapping, or one outside the plot's SVG
#: (clipped).
LAYOUT_JS = """(tables) => {
  const problems = [];
  const width = window.innerWidth;
  const doc = document.documentElement;
  if (doc.scrollWidth > width + 1) problems.push(`the page scrolls sideways: ${doc.scrollWidth} px in ${width}`);
  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const contentHeight = cell => {
    const range = document.createRange(); range.selectNodeContents(cell);
    const rects = Array.from(range.getClientRects()).filter(r => r.height > 0);
    if (!rects.length) return 0;
    return Math.max(...rects.map(r => r.bottom)) - Math.min(...rects.map(r => r.top));
  };
  const padding = cell => { const s = getComputedStyle(cell); return parseFloat(s.paddingTop) + parseFloat(s.paddingBottom)
                                                               + parseFloat(s.borderTopWidth) + parseFloat(s.borderBottomWidth); };
  for (const selector of tables) {
    const table = document.querySelector(selector);
    if (!table || !visible(table)) { problems.push(`${selector}: not shown`); continue; }
    const box = table.parentElement.getBoundingClientRect();
    const own = table.getBoundingClientRect();
    if (own.right > box.right + 1 || own.right > width + 1)
      problems.push(`${selector}: ${Math.round(own.width)} px wide in a ${Math.round(box.width)} px box`);
    for (const row of table.querySelectorAll('tbody tr')) {
      if (!visible(row)) continue;
      const cells = Array.from(row.cells).filter(visible);
      const rowHeight = row.getBoundingClientRect().height;
      const line = parseFloat(getComputedStyle(row).lineHeight) || 20;
      if (getComputedStyle(row).display === 'table-row') {
        const need = Math.max(...cells.map(c => contentHeight(c) + padding(c)));
        if (rowHeight > need + 0.6 * line + 4) problems.push(`${selector}: a row ${Math.round(rowHeight)} px tall for ${Math.round(need)} px of content: ${row.textContent.slice(0, 60)}`);
      } else {
        for (const c of cells) {
          const h = c.getBoundingClientRect().height;
          const need = Math.max(contentHeight(c), line) + padding(c);
          if (h > need + 0.6 * line + 4) problems.push(`${selector}: a cell ${Math.round(h)} px tall for ${Math.round(need)} px: ${c.textContent.slice(0, 60)}`);
        }
      }
    }
  }
  for (const plot of document.querySelectorAll('div.plot')) {
    if (!visible(plot) || plot.dataset.rendered !== '1') continue;
    const svg = plot.querySelector('svg.main-svg').getBoundingClientRect();
    const labels = [];
    const take = (kind, nodes) => nodes.forEach(n => { const r = n.getBoundingClientRect();
      if (r.width > 0 && r.height > 0 && (n.textContent || '').trim()) labels.push({kind, text: n.textContent, r}); });
    take('x tick', plot.querySelectorAll('.xtick text, .x2tick text'));
    take('y tick', plot.querySelectorAll('.ytick text, .y2tick text'));
    take('axis title', plot.querySelectorAll('.g-xtitle text, .g-ytitle text, .g-y2title text'));
    take('legend', plot.querySelectorAll('.legend text.legendtext'));
    take('text', plot.querySelectorAll('.textpoint text, .annotation-text'));
    take('menu', plot.querySelectorAll('.updatemenu-item-text'));
    const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
    for (let i = 0; i < labels.length; i++) {
      const a = labels[i];
      if (a.r.left < svg.left - 1 || a.r.right > svg.right + 1 || a.r.top < svg.top - 1 || a.r.bottom > svg.bottom + 1)
        problems.push(`${plot.id}: ${a.kind} '${a.text}' is clipped`);
      for (let j = i + 1; j < labels.length; j++) {
        const b = labels[j];
        if (overlap(a.r, b.r)) problems.push(`${plot.id}: ${a.kind} '${a.text}' overlaps ${b.kind} '${b.text}'`);
      }
    }
  }
  return problems;
}"""


def layout_problems(page: Any, tables: list[str], width: int) -> list[str]:
    """:data:`LAYOUT_JS`'s findings on ``page`` at ``width`` px wide (the viewport is resized,
    the plots redraw for it), for the tables ``tables`` (CSS selectors) and every visible plot."""
    page.set_viewport_size({"width": width, "height": 1000})
    page.evaluate("() => Promise.all(Array.from(document.querySelectorAll('div.plot'))"
                  ".filter(p => p.dataset.rendered === '1' && p.getBoundingClientRect().width > 0)"
                  ".map(p => Plotly.Plots.resize(p)))")
    page.wait_for_timeout(200)
    return page.evaluate(LAYOUT_JS, tables)


def full_screenshot(page: Any, path: Path, most_px: int = 8000) -> None:
    """A screenshot of the whole page (its first ``most_px`` pixels) at the current width."""
    height = min(page.evaluate("() => document.documentElement.scrollHeight"), most_px)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    page.screenshot(path=str(path), full_page=True, clip={"x": 0, "y": 0, "width": width, "height": height})
