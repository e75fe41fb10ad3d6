"""Exports of stored reports: CSV files and pandas DataFrames.

pandas is imported when a DataFrame is asked for, never at import time.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from core.reports.tables import columns, rows


def to_dataframe(report: dict[str, Any], *, per_question: bool = False) -> Any:
    """A report as a ``pandas.DataFrame``.

    Args:
        report: a retrieval or experiment report (as stored).
        per_question: for a retrieval report, one row per question and setup instead of one
            per setup and grain.

    Returns:
        A DataFrame with the columns of :func:`core.reports.tables.rows` (missing values are
        ``None`` / NaN as pandas reads them).

    Raises:
        ConfigError: as :func:`core.reports.tables.rows`.
    """
    import pandas as pd

    table = rows(report, per_question=per_question)
    return pd.DataFrame(table, columns=columns(table))


def to_csv(report: dict[str, Any], *, per_question: bool = False) -> str:
    """A report as CSV text (RFC 4180 quoting, a header line, ``\\r\\n`` line ends as the
    ``csv`` module writes them; ``None`` is an empty field).

    Raises:
        ConfigError: as :func:`core.reports.tables.rows`.

    References:
        RFC 4180, Common Format and MIME Type for CSV Files.
    """
    table = rows(report, per_question=per_question)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns(table), extrasaction="ignore")
    writer.writeheader()
    writer.writerows(table)
    return out.getvalue()
