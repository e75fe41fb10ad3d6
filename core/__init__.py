"""ragtune core: golden files, indexing, retrieval and answer evaluation, optimization, reports.

Everything here runs without Azure. Heavy libraries (torch, pymilvus, docling, unitxt,
pygam) are imported inside the functions that need them, never at package import time.
"""

__version__ = "0.1.0"
