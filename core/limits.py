"""The bounds on what ragtune reads and waits for: the limits of one document, of a golden file
and of the free text of one golden line, and the total deadline of one request to a model
endpoint.

This module holds the defaults (one home for each) and the typed :class:`DocumentLimits`;
:mod:`core.settings` reads the environment variables that change them
(``RAGTUNE_DOCUMENT_MAX_*``, ``RAGTUNE_ENDPOINT_DEADLINE_S``). It imports nothing of ragtune,
so the document loader, the model clients and the settings can all read it.

Why these defaults: each is a few times what an ordinary real document needs, so that nothing
a team would index is refused, while a crafted or broken file is refused before it can take
the machine's memory or hours of time.

- bytes on disk: a long report or manual with pictures is a few MB, a scanned book a few tens
  of MB; :data:`DOCUMENT_MAX_BYTES` is 64 MiB.
- bytes unpacked (the sum of a ZIP-based file's parts as they expand: DOCX, and any other
  Office Open XML or EPUB file): pictures do not shrink when zipped, so an ordinary file
  unpacks to about its size on disk plus some megabytes of XML (the text of a thousand-page
  Word document is a few tens of MB of XML); :data:`DOCUMENT_MAX_UNPACKED_BYTES` is 256 MiB.
- compression ratio of one part: text XML compresses some 5 to 20 times; a part that expands
  more than :data:`DOCUMENT_MAX_INFLATE_RATIO` (100) times is the shape of a ZIP bomb, the
  bound Apache POI uses for the same files (``ZipSecureFile``'s minimum inflate ratio of 1 %).
  Parts that unpack to at most :data:`ZIP_RATIO_GRACE_BYTES` are not held to it (a small part
  of repeated XML can compress far better than that and is harmless).
- parts of a ZIP-based file: an Office file has tens of parts, an EPUB some hundreds;
  :data:`DOCUMENT_MAX_ZIP_ENTRIES` is 10,000 (read from the archive's end record before its
  directory is parsed).
- pages (PDF): a long annual report or a manual has a few hundred pages, a book rarely more
  than 1,500; :data:`DOCUMENT_MAX_PAGES` is 5,000.
- characters after extraction: a dense page holds about 3,000 characters, so 5,000 such pages
  hold 15 million; :data:`DOCUMENT_MAX_CHARS` is 20 million.

A golden file read by path (``ragtune check``, ``evaluate``, ...): a golden file of 10,000
questions, each with a reference answer and a few evidence quotes, is about 30 MB; a file over
:data:`GOLDEN_FILE_MAX_BYTES` (256 MiB) is refused as a file-level error before more of it is
read. Files are read in blocks of :data:`READ_BLOCK_BYTES`, so a file that grows while it is
read stops at the cap too; anything that is not a regular file (a device such as
``/dev/zero``, a FIFO, a socket, ``/dev/stdin``) is refused before it is read (see
:func:`core.inputs.read_local_file`).

The free text of one golden line, each a few times what a real golden file holds, so that a
line over one is a mistake (a file pasted into a field, a generator gone wrong) and not a long
question; a line over one is a line error naming its line and field, before anything is
embedded or searched (a 48 MB question would otherwise be embedded, searched and written into
every report):

- ``question``: a long question with its context pasted in is a few hundred words;
  :data:`GOLDEN_MAX_QUESTION_CHARS` is 4,000 characters (about 700 words).
- ``id``: ids are names such as ``q17`` or ``hr-leave-003``; :data:`GOLDEN_MAX_ID_CHARS` is
  200 characters.
- one expected source (a document id, a relative path with ``#page=N``): paths are at most
  4,096 bytes on Linux; :data:`GOLDEN_MAX_SOURCE_CHARS` is 4,096 characters.
- ``reference`` (the reference answer): a long answer is a few paragraphs;
  :data:`GOLDEN_MAX_REFERENCE_CHARS` is 20,000 characters (about 3,000 words).
- one ``evidence`` quote: a quote is a sentence or a paragraph; :data:`GOLDEN_MAX_EVIDENCE_CHARS`
  is 10,000 characters.
- ``hint`` (a template row's note): :data:`GOLDEN_MAX_HINT_CHARS` is 10,000 characters.
- an Amazon Bedrock prompt dataset's turn is held to the same limits: its prompt to the
  question's; its reference response, its output's text and each retrieved passage's text to
  the reference's; a passage's name and the output's model and knowledge base identifiers to
  an expected source's (an ARN is at most 2,048 characters).

The endpoint deadline: a chat completion of a thousand tokens at ten tokens a second takes
100 s, a batch of a thousand texts embedded by a model on a CPU about as long; a request that
takes longer than :data:`ENDPOINT_DEADLINE_S` (300 s) in total, however its bytes trickle in,
is given up as a timeout (a transient error, retried as one).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The most results one search returns, so the largest ``number_of_chunks`` and
#: ``retrieval_depth``: Milvus's ``topK`` limit (Milvus Lite 2.5.1 refuses 16385 with "invalid
#: parameter"), held for every vector store so a space means the same on each.
MAX_SEARCH_LIMIT = 16384
#: Default largest document on disk, in bytes (``RAGTUNE_DOCUMENT_MAX_BYTES``).
DOCUMENT_MAX_BYTES = 64 * 1024 * 1024
#: Default largest sum of a ZIP-based document's parts, unpacked, in bytes
#: (``RAGTUNE_DOCUMENT_MAX_UNPACKED_BYTES``).
DOCUMENT_MAX_UNPACKED_BYTES = 256 * 1024 * 1024
#: Default largest expansion of one part of a ZIP-based document, unpacked bytes per packed
#: byte (``RAGTUNE_DOCUMENT_MAX_INFLATE_RATIO``).
DOCUMENT_MAX_INFLATE_RATIO = 100
#: Parts that unpack to at most this many bytes are not held to the compression ratio.
ZIP_RATIO_GRACE_BYTES = 1024 * 1024
#: Most parts (entries) of a ZIP-based document.
DOCUMENT_MAX_ZIP_ENTRIES = 10_000
#: Default most pages of a paged document (PDF) (``RAGTUNE_DOCUMENT_MAX_PAGES``).
DOCUMENT_MAX_PAGES = 5_000
#: Default most characters of a document's extracted text (``RAGTUNE_DOCUMENT_MAX_CHARS``).
DOCUMENT_MAX_CHARS = 20_000_000
#: Largest golden file read by path or address, in bytes.
GOLDEN_FILE_MAX_BYTES = 256 * 1024 * 1024
#: Bytes read from a local file at a time.
READ_BLOCK_BYTES = 1024 * 1024
#: Longest ``question`` of a golden line (a Bedrock prompt too), in characters.
GOLDEN_MAX_QUESTION_CHARS = 4_000
#: Longest ``id`` of a golden line, in characters.
GOLDEN_MAX_ID_CHARS = 200
#: Longest expected source of a golden line (one ``expected`` item), in characters.
GOLDEN_MAX_SOURCE_CHARS = 4_096
#: Longest ``reference`` answer of a golden line (a Bedrock reference response, an output or a
#: retrieved passage too), in characters.
GOLDEN_MAX_REFERENCE_CHARS = 20_000
#: Longest ``evidence`` quote of a golden line, in characters.
GOLDEN_MAX_EVIDENCE_CHARS = 10_000
#: Longest ``hint`` of a golden template row, in characters.
GOLDEN_MAX_HINT_CHARS = 10_000
#: Default total time of one request to a model endpoint (embeddings, chat, rerank), in
#: seconds, from sending it to the last byte of the reply (``RAGTUNE_ENDPOINT_DEADLINE_S``).
ENDPOINT_DEADLINE_S = 300.0


@dataclass(frozen=True)
class DocumentLimits:
    """The limits one document must keep to be loaded (see the module docstring for the
    defaults and why). A document over any of them is skipped with the limit named; the run
    goes on.

    Attributes:
        max_bytes: largest file on disk, in bytes; checked before the file is read (and
            before a remote file is downloaded).
        max_unpacked_bytes: largest sum of a ZIP-based file's parts, unpacked, in bytes; the
            sizes the archive declares are checked first, then the parts are read through, at
            most this many bytes in all, so a part whose header understates it cannot pass.
        max_inflate_ratio: largest expansion of one part of a ZIP-based file (unpacked bytes
            per packed byte), for parts over :data:`ZIP_RATIO_GRACE_BYTES`.
        max_pages: most pages of a PDF, read from the file before any text is.
        max_chars: most characters of the text extracted from a document (a PDF's text is
            counted as its pages are read, and reading stops at the limit).
        max_zip_entries: most parts of a ZIP-based file.
    """

    max_bytes: int = DOCUMENT_MAX_BYTES
    max_unpacked_bytes: int = DOCUMENT_MAX_UNPACKED_BYTES
    max_inflate_ratio: float = DOCUMENT_MAX_INFLATE_RATIO
    max_pages: int = DOCUMENT_MAX_PAGES
    max_chars: int = DOCUMENT_MAX_CHARS
    max_zip_entries: int = DOCUMENT_MAX_ZIP_ENTRIES


__all__ = [
    "DOCUMENT_MAX_BYTES", "DOCUMENT_MAX_CHARS", "DOCUMENT_MAX_INFLATE_RATIO", "DOCUMENT_MAX_PAGES",
    "DOCUMENT_MAX_UNPACKED_BYTES", "DOCUMENT_MAX_ZIP_ENTRIES", "DocumentLimits", "ENDPOINT_DEADLINE_S",
    "GOLDEN_FILE_MAX_BYTES", "GOLDEN_MAX_EVIDENCE_CHARS", "GOLDEN_MAX_HINT_CHARS", "GOLDEN_MAX_ID_CHARS",
    "GOLDEN_MAX_QUESTION_CHARS", "GOLDEN_MAX_REFERENCE_CHARS", "GOLDEN_MAX_SOURCE_CHARS", "READ_BLOCK_BYTES",
    "ZIP_RATIO_GRACE_BYTES",
]
