"""Self-contained HTML pages of stored reports: evaluate runs, experiments, chunking runs,
the history of a golden file, two runs compared, and an index of a report store.

Pages are rendered from Jinja2 templates (autoescape on: every value from a report is
escaped) and draw their plots with plotly.js: inlined in a standalone page, so it works
offline and from a file, or referenced as one shared asset by the pages a server gives
(:attr:`Links.asset`). :mod:`core.reports.pages.site` reads what a page needs from a report
store.
"""

from core.reports.pages.render import PAGE_CSP, PAGE_HEADERS, PAGE_MEDIA_TYPE
from core.reports.pages.site import (
    Links,
    chunking_page,
    compare_page,
    experiment_page,
    history_page,
    index_page,
    render_compare,
    render_experiment,
    render_report,
    render_run,
    run_page,
)

__all__ = ["PAGE_CSP", "PAGE_HEADERS", "PAGE_MEDIA_TYPE", "Links", "chunking_page", "compare_page",
           "experiment_page", "history_page", "index_page", "render_compare", "render_experiment",
           "render_report", "render_run", "run_page"]
