"""The working folder of a run: the one home of every path ragtune keeps in an output folder.

Every workflow (``evaluate``, ``compare-chunking``, ``sweep``, ``cutoff``, ``suggest``,
``draft``, ``optimize`` and the optimizer's evaluations) works in an output folder laid out the
same way::

    <root>/cache/embeddings.sqlite   the embedding cache (and the reranker's scores), by model and text
    <root>/milvus.db                 the default Milvus Lite database (a folder for Milvus Lite 3)
    <root>/inputs/                   documents read from an address (s3://, a Blob URL), kept
    <root>/results/<scope>/<key>.json  one stored evaluation result per configuration

This module names those paths and nothing else: it opens no file and imports nothing of the
project, so every layer (the vector stores' defaults, the settings, the workflows) can take its
paths from here. The index builder that works in it is ``core.evaluation.indexing``.
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


@dataclass(frozen=True)
class Workspace:
    """The paths of one working folder (nothing is created here).

    Attributes:
        root: the output folder (a local path; an experiment stored at an address keeps its
            working files in the local output folder all the same).
    """

    root: Path

    @classmethod
    def at(cls, root: str | os.PathLike[str]) -> "Workspace":
        """The workspace of the folder ``root`` (a path or a string)."""
        return cls(Path(root))

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
