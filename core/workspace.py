"""The working folder of a run: the one home of every path ragtune keeps in an output folder.

Every workflow (``evaluate``, ``compare-chunking``, ``sweep``, ``cutoff``, ``suggest``,
``draft``, ``optimize`` and the optimizer's evaluations) works in an output folder laid out the
same way::

    <root>/cache/embeddings.sqlite   the embedding cache (and the reranker's scores), by model and text
    <root>/milvus.db                 the default Milvus Lite database (a folder for Milvus Lite 3)
    <root>/inputs/                   documents read from an address (s3://, a Blob URL), kept
    <root>/results/<scope>/<key>.json  one stored evaluation result per configuration
    <root>/.ragtune-output           the marker: this folder is ragtune's output, never documents

This module names those paths, creates the folder with its marker (:meth:`Workspace.create`)
and tells an output folder from a folder of documents (:func:`output_folder_sign`); it imports
nothing of the project, so every layer (the vector stores' defaults, the settings, the
workflows, the documents loader) can take its paths from here. The index builder that works in
it is ``core.evaluation.indexing``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: The embedding cache, below the working folder.
EMBEDDING_CACHE = ("cache", "embeddings.sqlite")
#: The default Milvus Lite database, below the working folder.
MILVUS_LITE_DB = "milvus.db"
#: Documents downloaded from an address, below the working folder.
INPUTS = "inputs"
#: Stored evaluation results, below the working folder (one folder per corpus and golden file).
RESULTS = "results"
#: The file at the root of every output folder a workflow creates: a documents folder that
#: holds an output folder (``--docs .`` with the default ``--out ragtune-out``) never has it
#: read as documents.
MARKER = ".ragtune-output"
#: What the marker says to whoever opens it.
MARKER_TEXT = ("This folder is ragtune's output folder (reports, caches, indexes). "
               "ragtune never reads a folder holding this file as documents.\n")


def output_folder_sign(folder: str | os.PathLike[str]) -> str | None:
    """What shows that ``folder`` is ragtune's output folder, or None when nothing does.

    A folder is one when it holds the marker (:data:`MARKER`, written by
    :meth:`Workspace.create`), or the embedding cache (:data:`EMBEDDING_CACHE`, a regular
    file): output folders written before the marker existed have one as soon as a run embedded
    or ranked anything.

    Args:
        folder: a local folder (a path or a string); a missing one is no output folder.

    Returns:
        The path below ``folder`` that shows it, ``/``-separated (``".ragtune-output"`` or
        ``"cache/embeddings.sqlite"``), or None.
    """
    root = Path(folder)
    for parts in ((MARKER,), EMBEDDING_CACHE):
        if root.joinpath(*parts).is_file():
            return "/".join(parts)
    return None


@dataclass(frozen=True)
class Workspace:
    """The paths of one working folder (nothing is created but by :meth:`create`).

    Attributes:
        root: the output folder (a local path; an experiment stored at an address keeps its
            working files in the local output folder all the same).
    """

    root: Path

    @classmethod
    def at(cls, root: str | os.PathLike[str]) -> "Workspace":
        """The workspace of the folder ``root`` (a path or a string)."""
        return cls(Path(root))

    def create(self) -> "Workspace":
        """Create the folder (and its parents) when it is missing and write its marker
        (:data:`MARKER`) when it has none, so the documents loader never reads the folder as
        documents, wherever it sits; returns this workspace. Calling it again changes nothing.

        Raises:
            OSError: the folder or its marker cannot be written (a file where the folder should
                be, no permission).
        """
        self.root.mkdir(parents=True, exist_ok=True)
        marker = self.root / MARKER
        if not marker.is_file():
            marker.write_text(MARKER_TEXT, encoding="utf-8")
        return self

    @property
    def embedding_cache(self) -> Path:
        """``<root>/cache/embeddings.sqlite``: embeddings (and reranker scores) by model and text."""
        return self.root.joinpath(*EMBEDDING_CACHE)

    @property
    def milvus_lite(self) -> str:
        """``<root>/milvus.db``: the default Milvus Lite database, as the string its config takes."""
        return str(self.root / MILVUS_LITE_DB)

    @property
    def inputs(self) -> Path:
        """``<root>/inputs``: documents read from an address are kept here."""
        return self.root / INPUTS

    def results(self, scope: str) -> Path:
        """``<root>/results/<scope>``: the stored evaluation results of one corpus and golden
        file (``scope`` names them)."""
        return self.root / RESULTS / scope
