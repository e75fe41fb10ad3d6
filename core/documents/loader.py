"""Loading a folder of source files into ``DoclingDocument``s.

Formats and how each is read:

========================  ===================================================================
extension                 reader
========================  ===================================================================
``.md``, ``.markdown``    docling's ``MarkdownDocumentBackend`` (headings, lists, tables)
``.html``, ``.htm``       docling's ``HTMLDocumentBackend``
``.docx``                 docling's ``MsWordDocumentBackend``
``.pdf``                  pypdfium2 text layer, one ``TEXT`` item per paragraph with page
                          provenance (see :mod:`core.documents.pdf`)
``.txt``                  UTF-8 text, one ``TEXT`` item per paragraph (blank-line separated;
                          line breaks inside a paragraph are kept)
``.json``                 parsed and pretty-printed (2-space indent): one ``TEXT`` item per
                          top-level entry (``"key": value`` of an object, element of an
                          array); a file that does not parse as JSON is read as ``.txt`` and a
                          warning is logged
========================  ===================================================================

Every loaded ``DoclingDocument`` has ``name`` set to the document id, so a bare
``DoclingDocument`` still says where it comes from.

Every file is held to :class:`core.limits.DocumentLimits` (from ``RAGTUNE_DOCUMENT_MAX_*``,
see :func:`core.settings.document_limits`) before it is parsed where the limit can be seen
then (see :mod:`core.documents.limits`): its size on disk before it is read (for a remote
folder, before it is downloaded), a DOCX's parts before docling opens it, a PDF's page count
before any text is read; the characters of the text once it is extracted (a PDF's page by
page). A file over a limit is skipped with the limit named, like any file that cannot be read.

ragtune's own output folders are never read as documents: a folder below the documents folder
that :func:`core.workspace.output_folder_sign` recognises (its marker, or an embedding cache
from before the marker) is not searched and is listed once as skipped, and a documents folder
that is itself an output folder is refused. A folder of documents that sits inside an output
folder on purpose (``<out>/inputs/...``, where documents read from an address are downloaded)
loads as any other.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Callable, Protocol

from core import inputs
from core.documents.base import LoadedDocument, normalize_id
from core.documents.limits import DocumentTooLarge, check_chars, check_size, check_zip, is_zip
from core.documents.pdf import read_pdf
from core.errors import DocumentError, StoreError
from core.workspace import EMBEDDING_CACHE, MARKER, output_folder_sign

if TYPE_CHECKING:
    from docling_core.types.doc import DoclingDocument

    from core.limits import DocumentLimits
    from core.reports.blob import StorageCredential

logger = logging.getLogger(__name__)

_DOCLING_FORMATS = {".md": "MD", ".markdown": "MD", ".html": "HTML", ".htm": "HTML", ".docx": "DOCX"}
_MIMETYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pdf": "application/pdf",
    ".txt": "text/plain",
    ".json": "application/json",
}
#: File extensions the loader reads (lower case, with the dot).
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(sorted(_MIMETYPES))

_DOCLING_HINT = (
    "reading .md, .html and .docx files needs docling-slim: "
    "pip install 'docling-slim[convert-core,format-markdown,format-html,format-docx]'"
)


@dataclass(frozen=True)
class SkippedFile:
    """A file the loader did not load.

    Attributes:
        document_id: the file's path relative to the corpus folder, ``/`` separators (a folder
            that was not searched, hidden, ragtune's output folder, a second link to a folder or
            a broken link, ends with ``/``; bytes of a name that are not UTF-8 are written
            ``\\xNN``).
        reason: why, in words (for example ``"empty file (0 bytes)"``).
    """

    document_id: str
    reason: str


@dataclass
class LoadResult:
    """What :func:`load_documents` found.

    Attributes:
        documents: the loaded documents, sorted by ``document_id``.
        skipped: the files not loaded and why, sorted by ``document_id``.
    """

    documents: list[LoadedDocument] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


class NoDocumentLoaded(DocumentError):
    """No file of a corpus folder loaded, though the folder holds files.

    Attributes:
        skipped: every file skipped and why (sorted by ``document_id``).
    """

    def __init__(self, message: str, skipped: list[SkippedFile]) -> None:
        super().__init__(message)
        self.skipped = skipped


class _Skip(Exception):
    """Internal: this file is skipped for the given reason."""


def _is_hidden(name: str) -> bool:
    """Whether a file or folder name is hidden (``.name``) or an Office lock file (``~$name``)."""
    return name.startswith(".") or name.startswith("~$")


def _undecodable(name: str) -> bool:
    """Whether a name from the file system holds bytes that are not UTF-8 (``surrogateescape``)."""
    return not name.isascii() and any("\udc80" <= c <= "\udcff" for c in name)


def _shown_name(name: str) -> str:
    """A name with its non-UTF-8 bytes written as ``\\xNN``, so it can be printed and stored."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _kind(path: Path) -> str | None:
    """What ``path`` is when it is neither a regular file nor a folder (``"a FIFO ..."``), else None."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    return None if stat.S_ISDIR(mode) else inputs.file_kind(mode)


class _Inside:
    """Whether a symbolic link's target stays inside the documents folder."""

    def __init__(self, root: Path) -> None:
        self.root = os.path.realpath(root)

    def outside(self, link: str | os.PathLike[str]) -> str | None:
        """The reason a link is not followed (its target, all links resolved, is outside the
        folder, or inside ragtune's output folder below it), or None when it stays inside."""
        target = os.path.realpath(link)
        if target == self.root:
            return None
        if not target.startswith(self.root.rstrip(os.sep) + os.sep):
            return f"symbolic link out of the documents folder (to {_shown_name(target)}): not read"
        folder = Path(target)  # the target and each folder above it, up to the documents folder
        while str(folder) != self.root and folder != folder.parent:
            if folder.is_dir() and (sign := output_folder_sign(folder)) is not None:
                return f"symbolic link into ragtune's output folder {_shown_name(str(folder))} (it holds {sign}): not read"
            folder = folder.parent
        return None


def _output_folder_reason(sign: str) -> str:
    """The reason a folder below the documents folder is not searched: it is ragtune's output
    folder, as ``sign`` (a path below it, see :func:`core.workspace.output_folder_sign`) shows."""
    return f"ragtune's output folder (it holds {sign}): not searched"


def _refuse_output_folder(root: Path, shown: str) -> None:
    """Stop when the documents folder ``root`` (shown as ``shown``) is itself ragtune's output
    folder.

    Raises:
        DocumentError: naming the folder and what shows it is an output folder.
    """
    sign = output_folder_sign(root)
    if sign is not None:
        raise DocumentError(_output_root_message(shown, sign))


def _output_root_message(shown: str, sign: str) -> str:
    """Why a documents folder (shown as ``shown``) that is ragtune's output folder, as ``sign``
    shows, is refused."""
    return (f"the documents folder {shown} is ragtune's output folder (it holds {sign}): its reports, caches and "
            "indexes are not documents; give the folder of the documents, and an output folder other than it")


def _scan(root: Path) -> tuple[list[tuple[str, Path]], list[SkippedFile]]:
    """Walk ``root``; return candidate files ``(document id, path)`` and the entries skipped.

    Symbolic links to folders are followed once: a folder reached a second time (a loop, or two
    links to one folder) is skipped and listed. A symbolic link (to a file or a folder) whose
    target, every link resolved, is outside ``root`` or inside an output folder below it is
    skipped and listed, never read. Real folders are searched before links in each folder.
    Names that are not UTF-8, broken links and names that become another one's when
    NFC-normalised are skipped and listed; hidden ones too. A folder below ``root`` that is
    ragtune's output folder (:func:`core.workspace.output_folder_sign`) is not searched and is
    listed once, as the folder (``ragtune-out/``); ``root`` itself is not checked here (see
    :func:`_refuse_output_folder`).
    """
    files: list[tuple[str, Path]] = []
    skipped: list[SkippedFile] = []
    seen_ids: dict[str, str] = {}  # NFC id -> the name it was found under
    inside = _Inside(root)
    try:
        st = root.stat()
        searched = {(st.st_dev, st.st_ino): "."}
    except OSError:
        searched = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        rel = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel == "." else normalize_id(rel) + "/"
        keep = []
        for d in sorted(dirnames, key=lambda d: (os.path.islink(os.path.join(dirpath, d)), d)):
            shown = f"{prefix}{_shown_name(d)}/"
            if _is_hidden(d):
                skipped.append(SkippedFile(shown, "hidden folder (not searched)"))
                continue
            if _undecodable(d):
                skipped.append(SkippedFile(shown, "folder name is not valid UTF-8 (not searched): rename it"))
                continue
            full = os.path.join(dirpath, d)
            try:
                st = os.stat(full)
            except OSError:
                skipped.append(SkippedFile(shown, "broken symbolic link (its target does not exist)"))
                continue
            if os.path.islink(full) and (outside := inside.outside(full)):
                skipped.append(SkippedFile(shown, outside))
                continue
            if (sign := output_folder_sign(full)) is not None:
                skipped.append(SkippedFile(shown, _output_folder_reason(sign)))
                continue
            key = (st.st_dev, st.st_ino)
            if key in searched:
                first = searched[key]
                where = "the documents folder itself" if first == "." else f"'{first}'"
                skipped.append(SkippedFile(shown, f"symbolic link to a folder already searched, {where}: "
                                                  "not searched again"))
                continue
            searched[key] = f"{prefix}{d}/"
            if os.path.islink(full):
                logger.info("following the symbolic link %s to %s", shown, os.path.realpath(full))
            keep.append(d)
        dirnames[:] = sorted(keep)
        for name in sorted(filenames):
            shown = prefix + _shown_name(name)
            if _is_hidden(name):
                skipped.append(SkippedFile(shown, "hidden file"))
                continue
            if _undecodable(name):
                skipped.append(SkippedFile(shown, "file name is not valid UTF-8 (shown here with \\x escapes for "
                                                  "the bytes that are not): rename it to read it"))
                continue
            path = Path(dirpath) / name
            if not path.is_file():
                if path.is_symlink() and not path.exists():
                    skipped.append(SkippedFile(shown, "broken symbolic link (its target does not exist)"))
                else:
                    kind = _kind(path)
                    if kind is not None:
                        skipped.append(SkippedFile(shown, f"not a regular file ({kind}): not read"))
                continue
            if path.is_symlink() and (outside := inside.outside(path)):
                skipped.append(SkippedFile(shown, outside))
                continue
            doc_id = normalize_id(prefix + name)
            if doc_id in seen_ids:
                skipped.append(SkippedFile(shown, f"same name as '{seen_ids[doc_id]}' once Unicode-normalised "
                                                  "(NFC): rename one of them"))
                continue
            seen_ids[doc_id] = prefix + name
            files.append((doc_id, path))
    files.sort()
    return files, skipped


def list_document_ids(
    folder: str | os.PathLike[str],
    *,
    connection_string: str | None = None,
    credential: StorageCredential | None = None,
    endpoint_url: str | None = None,
) -> list[str]:
    """Return the ids of the files :func:`load_documents` would try to load from ``folder``:
    not hidden, not in ragtune's output folder, with a supported extension, sorted. Whether
    each one reads is only known by loading it. A missing folder gives an empty list.

    Args:
        folder: a local folder, or the address of a remote one (``s3://bucket/docs``, a Blob
            URL; see :mod:`core.inputs`). A remote folder's keys are listed; nothing is
            downloaded.
        connection_string, credential, endpoint_url: how to reach a remote folder (see
            :func:`core.inputs.read_input_bytes`; defaults from ``core.settings.Settings``).

    Raises:
        StoreError: listing a remote folder failed (for example a missing S3 bucket).
        ConfigError: an address that cannot be read.
        DocumentError: ``folder`` is itself ragtune's output folder.
    """
    if inputs.is_remote(folder):
        keys = inputs.list_input_keys(
            folder, connection_string=connection_string, credential=credential, endpoint_url=endpoint_url
        )
        keys = _outside_output_folders(keys, inputs.shown_address(folder))
        ids = (normalize_id(k) for k in keys if _listed(k) and PurePath(k).suffix.lower() in SUPPORTED_EXTENSIONS)
        return list(dict.fromkeys(ids))
    root = inputs.local_path(folder) or Path(folder)
    if not root.is_dir():
        return []
    _refuse_output_folder(root, str(root))
    files, _ = _scan(root)
    return [doc_id for doc_id, path in files if path.suffix.lower() in SUPPORTED_EXTENSIONS]


def _outside_output_folders(keys: list[str], shown: str) -> list[str]:
    """The keys of a remote folder (relative, ``/``-separated) that are not below an output
    folder of ragtune's, which the keys show as a local folder shows it (see
    :func:`core.workspace.output_folder_sign`).

    Raises:
        DocumentError: the remote folder (shown as ``shown``) is itself an output folder.
    """
    signs = (MARKER, "/".join(EMBEDDING_CACHE))
    prefixes: dict[str, str] = {}  # "sub/ragtune-out/" -> the key that shows it
    for key in keys:
        for sign in signs:
            if key == sign or key.endswith("/" + sign):
                prefixes.setdefault(key[: len(key) - len(sign)], sign)
    if "" in prefixes:
        raise DocumentError(_output_root_message(shown, prefixes[""]))
    return [k for k in keys if not any(k.startswith(prefix) for prefix in prefixes)]


def _listed(key: str) -> bool:
    """Whether :func:`_scan` would find the file at ``key`` (no hidden file or folder on its path)."""
    return not any(_is_hidden(part) for part in key.split("/"))


class _ProgressBar(Protocol):
    """A tqdm-like progress bar: its ``total`` (None until known) and ``update(n)``."""

    total: int | None

    def update(self, n: int = 1) -> object:
        """Count ``n`` more done."""


def _report_progress(progress: Callable[[int, int], None] | _ProgressBar | None, n_done: int, n_total: int) -> None:
    """Report one more file done to a ``progress(n_done, n_total)`` callable or a tqdm-like bar."""
    if progress is None:
        return
    if hasattr(progress, "update"):  # tqdm-like
        if getattr(progress, "total", 0) is None:
            progress.total = n_total
        progress.update(1)
    else:
        progress(n_done, n_total)


def _new_document(document_id: str, suffix: str, sha256: str) -> Any:
    """An empty ``DoclingDocument`` named ``document_id``, its origin set from the file."""
    from docling_core.types.doc import DoclingDocument, DocumentOrigin

    return DoclingDocument(
        name=document_id,
        origin=DocumentOrigin(
            mimetype=_MIMETYPES[suffix],
            binary_hash=int(sha256[:16], 16),
            filename=PurePath(document_id).name,
        ),
    )


def _decode(data: bytes) -> str:
    """Decode text bytes: UTF-8 (BOM dropped), else Windows-1252; binary data is refused."""
    if b"\x00" in data:
        raise _Skip("binary data in a text file (NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError as exc:
        raise _Skip(f"not UTF-8 or Windows-1252 text ({exc.reason} at byte {exc.start})") from None


def _text_paragraphs(text: str) -> list[str]:
    """Split text on blank lines; paragraphs are stripped, inner line breaks kept."""
    parts = re.split(r"\n[ \t\r\f\v]*\n", text.replace("\r\n", "\n").replace("\r", "\n"))
    return [p.strip() for p in parts if p.strip()]


def _json_paragraphs(text: str, document_id: str) -> list[str]:
    """One pretty-printed paragraph per top-level JSON entry; plain paragraphs if it does not parse."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        logger.warning("%s does not parse as JSON (%s); reading it as plain text", document_id, exc)
        return _text_paragraphs(text)
    except RecursionError:
        logger.warning("%s is JSON nested too deeply to parse; reading it as plain text", document_id)
        return _text_paragraphs(text)

    def dump(value: Any) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False)

    try:
        if isinstance(obj, dict):
            return [f"{json.dumps(k, ensure_ascii=False)}: {dump(v)}" for k, v in obj.items()]
        if isinstance(obj, list):
            return [dump(v) for v in obj]
        return [dump(obj)]
    except RecursionError:  # a value nested deeper than json.dumps goes
        logger.warning("%s is JSON nested too deeply to print; reading it as plain text", document_id)
        return _text_paragraphs(text)


def _load_plain(document_id: str, suffix: str, data: bytes, sha256: str, limits: DocumentLimits) -> Any:
    """Read a .txt or .json file into a ``DoclingDocument`` of TEXT items (its characters held
    to ``limits.max_chars`` before it is split)."""
    from docling_core.types.doc import DocItemLabel

    text = _decode(data)
    check_chars(len(text), limits)
    paragraphs = _json_paragraphs(text, document_id) if suffix == ".json" else _text_paragraphs(text)
    doc = _new_document(document_id, suffix, sha256)
    for paragraph in paragraphs:
        doc.add_text(label=DocItemLabel.TEXT, text=paragraph)
    return doc


def _load_pdf(document_id: str, data: bytes, sha256: str, limits: DocumentLimits) -> tuple[Any, int]:
    """Read a PDF into a ``DoclingDocument`` (pages added, paragraphs with provenance) and its
    page count; its pages and characters held to ``limits``."""
    from docling_core.types.doc import BoundingBox, CoordOrigin, DocItemLabel, ProvenanceItem, Size

    try:
        paragraphs, sizes = read_pdf(data, max_pages=limits.max_pages, max_chars=limits.max_chars)
    except DocumentTooLarge:
        raise
    except Exception as exc:  # pypdfium2 raises PdfiumError for corrupt or encrypted files
        raise _Skip(f"cannot be read as PDF ({type(exc).__name__}: {exc})") from None
    doc = _new_document(document_id, ".pdf", sha256)
    for page_no, (width, height) in enumerate(sizes, start=1):
        doc.add_page(page_no=page_no, size=Size(width=width, height=height))
    for p in paragraphs:
        left, top, right, bottom = p.bbox
        prov = ProvenanceItem(
            page_no=p.page_no,
            bbox=BoundingBox(l=left, t=top, r=right, b=bottom, coord_origin=CoordOrigin.BOTTOMLEFT),
            charspan=(0, len(p.text)),
        )
        doc.add_text(label=DocItemLabel.TEXT, text=p.text, prov=prov)
    return doc, len(sizes)


def _docling_backends() -> dict[str, tuple[Any, Any]]:
    """Import docling's format backends (slow: docling's datamodel imports torch)."""
    try:
        from docling.backend.html_backend import HTMLDocumentBackend
        from docling.backend.md_backend import MarkdownDocumentBackend
        from docling.backend.msword_backend import MsWordDocumentBackend
        from docling.datamodel.base_models import InputFormat
        from docling.datamodel.document import InputDocument
    except ImportError as exc:
        raise DocumentError(f"{_DOCLING_HINT} ({exc})") from exc
    return {
        "MD": (InputFormat.MD, MarkdownDocumentBackend),
        "HTML": (InputFormat.HTML, HTMLDocumentBackend),
        "DOCX": (InputFormat.DOCX, MsWordDocumentBackend),
        "_InputDocument": (InputDocument, None),
    }


def _load_docling(document_id: str, suffix: str, data: bytes, sha256: str, backends: dict) -> Any:
    """Convert a .md, .html or .docx file with its docling format backend."""
    input_document_cls = backends["_InputDocument"][0]
    fmt, backend_cls = backends[_DOCLING_FORMATS[suffix]]
    try:
        in_doc = input_document_cls(
            path_or_stream=io.BytesIO(data),
            format=fmt,
            backend=backend_cls,
            filename=PurePath(document_id).name,
        )
        if not in_doc.valid or not in_doc._backend.is_valid():
            rejection = getattr(in_doc, "_rejection", None)
            detail = f" ({rejection.message})" if rejection is not None else ""
            raise _Skip(f"cannot be read as {suffix[1:].upper()}{detail}")
        doc = in_doc._backend.convert()
    except _Skip:
        raise
    except Exception as exc:
        raise _Skip(f"cannot be read as {suffix[1:].upper()} ({type(exc).__name__}: {exc})") from None
    doc.name = document_id
    if doc.origin is None:
        from docling_core.types.doc import DocumentOrigin

        doc.origin = DocumentOrigin(
            mimetype=_MIMETYPES[suffix], binary_hash=int(sha256[:16], 16), filename=PurePath(document_id).name
        )
    return doc


def _text_chars(doc: DoclingDocument) -> tuple[bool, int]:
    """``(whether the document holds any non-blank text, its characters)``: of its text items
    and table cells."""
    from docling_core.types.doc import TableItem, TextItem

    found, n_chars = False, 0
    for item, _ in doc.iterate_items():
        if isinstance(item, TextItem):
            n_chars += len(item.text)
            found = found or bool(item.text.strip())
        elif isinstance(item, TableItem):
            for cell in item.data.table_cells:
                n_chars += len(cell.text)
                found = found or bool(cell.text.strip())
    return found, n_chars


def _load_file(doc_id: str, path: Path, limits: DocumentLimits, backends: dict[str, Any]) -> LoadedDocument:
    """Read one file into a :class:`LoadedDocument`, held to ``limits`` (``backends`` holds
    docling's format backends once the first .md, .html or .docx file needs them).

    Raises:
        _Skip: the file is not loaded, and why.
    """
    suffix = path.suffix.lower()
    if suffix not in _MIMETYPES:
        raise _Skip(
            f"unsupported file type {suffix or '(no extension)'!r} "
            f"(supported: {', '.join(SUPPORTED_EXTENSIONS)})"
        )
    try:
        check_size(path.stat().st_size, limits)
        try:
            data = inputs.read_local_file(path, limits.max_bytes)  # regular files only, in blocks
        except inputs.InputTooLargeError:  # it grew since its size was read: read one byte past the limit
            check_size(limits.max_bytes + 1, limits)
            raise
    except DocumentTooLarge as exc:
        raise _Skip(str(exc)) from None
    except inputs.NotAFileError as exc:
        raise _Skip(f"not a regular file ({exc.kind}): not read") from None
    except OSError as exc:
        raise _Skip(f"cannot be read ({exc.strerror or exc})") from None
    if not data:
        raise _Skip("empty file (0 bytes)")
    if not data.strip():
        raise _Skip(f"empty file (only whitespace, {len(data)} bytes)")
    try:
        check_size(len(data), limits)
        if is_zip(suffix, data[:4]):
            check_zip(data, limits)
    except DocumentTooLarge as exc:
        raise _Skip(str(exc)) from None
    except DocumentError as exc:
        raise _Skip(f"cannot be read as {suffix[1:].upper()} ({exc})") from None
    sha256 = hashlib.sha256(data).hexdigest()
    n_pages = 0
    try:
        if suffix == ".pdf":
            doc, n_pages = _load_pdf(doc_id, data, sha256, limits)
        elif suffix in _DOCLING_FORMATS:
            if not backends:
                backends.update(_docling_backends())
            doc = _load_docling(doc_id, suffix, data, sha256, backends)
        else:
            doc = _load_plain(doc_id, suffix, data, sha256, limits)
        del data
        has_text, n_chars = _text_chars(doc)
        check_chars(n_chars, limits)
    except DocumentTooLarge as exc:
        raise _Skip(str(exc)) from None
    if not has_text:
        hint = " (a scanned PDF without a text layer?)" if suffix == ".pdf" else ""
        raise _Skip(f"no text found{hint}")
    return LoadedDocument(document_id=doc_id, document=doc, sha256=sha256, n_pages=n_pages)


def load_documents(
    folder: str | os.PathLike[str],
    *,
    on_skip: Callable[[SkippedFile], None] | None = None,
    progress: Callable[[int, int], None] | _ProgressBar | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    connection_string: str | None = None,
    credential: StorageCredential | None = None,
    endpoint_url: str | None = None,
    limits: DocumentLimits | None = None,
    only: Callable[[str], bool] | None = None,
) -> LoadResult:
    """Load every supported file under ``folder`` (recursively) as a ``DoclingDocument``.

    Hidden files and folders (name starting with ``.``, or ``~$`` for Office lock files) and
    files with an unsupported extension are skipped. Document ids are NFC-normalised (a name
    saved decomposed matches the same name typed in a golden file); a second file whose name
    normalises to an id already found is skipped. Files and folders whose names are not UTF-8
    are skipped, listed under their name with ``\\xNN`` escapes. Symbolic links to folders are
    followed once: a folder reached again (a loop, or a second link to it) is skipped and
    listed, as are broken links and links (to a file or a folder) whose target is outside
    ``folder`` (``passwd.txt -> /etc/passwd`` is never read); links inside it are followed.
    ragtune's output folders below ``folder`` (the default ``ragtune-out`` of ``--docs .``, or
    any other; see :func:`core.workspace.output_folder_sign`) are not searched and are listed
    once each, as the folder, with the reason. A file that cannot be read (permission,
    corrupt, encrypted, undecodable), holds no text (empty, or a PDF without a text layer) or
    is over one of ``limits`` (the reason names the limit and its variable) is skipped too;
    each skip is logged, passed to ``on_skip`` and listed in :attr:`LoadResult.skipped`, and
    loading goes on.

    Args:
        folder: the corpus folder: a local path, a ``file://`` URL, or the address of a remote
            folder (``s3://bucket/docs``, ``https://<account>.blob.core.windows.net/<container>/docs``,
            a path-style Azurite URL; see :mod:`core.inputs`), which is first downloaded with
            :func:`core.inputs.fetch_folder`. Document ids are paths relative to it with ``/``
            separators, e.g. ``"sub/x.md"`` (for a remote folder: keys relative to the prefix,
            so the same ids as for a local copy).
        on_skip: called with each :class:`SkippedFile` as it is skipped.
        progress: either a callable ``progress(n_done, n_total)`` called after each file, or
            a tqdm-like object whose ``update(1)`` is called after each file (its ``total``
            is set when it is ``None``). Counts are files considered (hidden ones excluded).
        cache_dir: where a remote folder is downloaded (default ``<Settings.out_dir>/inputs``).
        connection_string, credential, endpoint_url: how to reach a remote folder (see
            :func:`core.inputs.read_input_bytes`; defaults from ``core.settings.Settings``).
        limits: the limits each document is held to; None: from the environment
            (:func:`core.settings.document_limits`, ``RAGTUNE_DOCUMENT_MAX_*``).
        only: ``only(document_id)`` -> False leaves a file out: not read (a remote one not
            downloaded), neither loaded nor listed as skipped. None: every file.

    Returns:
        :class:`LoadResult` with the documents sorted by ``document_id`` and the skipped files.

    Raises:
        NoDocumentLoaded: no file could be loaded (``.skipped`` says why for each).
        DocumentError: ``folder`` does not exist or is not a folder (a remote prefix with
            no keys below it); ``folder`` is itself ragtune's output folder (the message says
            what shows it); a remote folder cannot be listed or downloaded (the message
            names the address without its query string); or
            .md/.html/.docx files are present but docling-slim is not installed.
        ConfigError: an address that cannot be read (unknown scheme, a path-style Blob URL
            without a connection string), or a ``RAGTUNE_DOCUMENT_MAX_*`` variable that is not
            a positive number.
    """
    if limits is None:
        from core.settings import document_limits  # the settings import the models and stores they build

        limits = document_limits()
    shown = inputs.shown_address(folder)
    too_large: list[SkippedFile] = []
    if inputs.is_remote(folder):
        try:
            root = inputs.fetch_folder(
                folder, cache_dir=cache_dir, connection_string=connection_string, credential=credential,
                endpoint_url=endpoint_url, max_file_bytes=limits.max_bytes,
                keep=None if only is None else (lambda key: only(normalize_id(key))),
                on_skip=lambda key, reason: too_large.append(SkippedFile(normalize_id(key), reason)),
            )
        except inputs.InputNotFoundError:
            raise DocumentError(f"corpus folder not found: {shown} (no files below this address)") from None
        except StoreError as exc:
            raise DocumentError(f"cannot download the corpus folder {shown}: {exc}") from None
    else:
        root = inputs.local_path(folder) or Path(folder)
        shown = str(root)
    if not root.exists():
        raise DocumentError(f"corpus folder not found: {shown}")
    if not root.is_dir():
        raise DocumentError(f"corpus path is not a folder: {shown}")
    _refuse_output_folder(root, shown)

    candidates, hidden = _scan(root)
    if only is not None:
        candidates = [(doc_id, path) for doc_id, path in candidates if only(doc_id)]
        hidden = [item for item in hidden if only(item.document_id)]
    result = LoadResult()

    def skip(item: SkippedFile) -> None:
        logger.info("skipped %s: %s", item.document_id, item.reason)
        result.skipped.append(item)
        if on_skip is not None:
            on_skip(item)

    for item in hidden + too_large:
        skip(item)

    backends: dict[str, Any] = {}
    n_total = len(candidates)
    for n_done, (doc_id, path) in enumerate(candidates, start=1):
        try:
            result.documents.append(_load_file(doc_id, path, limits, backends))
        except _Skip as exc:
            skip(SkippedFile(doc_id, str(exc)))
        _report_progress(progress, n_done, n_total)

    result.documents.sort(key=lambda d: d.document_id)
    result.skipped.sort(key=lambda s: s.document_id)
    if not result.documents:
        detail = "; ".join(f"{s.document_id}: {s.reason}" for s in result.skipped[:10])
        more = f" (and {len(result.skipped) - 10} more)" if len(result.skipped) > 10 else ""
        raise NoDocumentLoaded(
            f"no loadable document in {shown}"
            + (f" — skipped {detail}{more}" if detail else " (the folder has no files)"),
            result.skipped,
        )
    logger.info("loaded %d documents from %s (%d skipped)", len(result.documents), shown, len(result.skipped))
    return result


def corpus_fingerprint(documents: list[LoadedDocument]) -> str:
    """Return a hex sha256 identifying a corpus by its files' ids and contents.

    The hash runs over the ``(document_id, sha256)`` pairs sorted by id, so it does not
    depend on the order of ``documents``; renaming, adding, removing or editing any file
    changes it.
    """
    digest = hashlib.sha256()
    for doc_id, sha in sorted((d.document_id, d.sha256) for d in documents):
        digest.update(f"{doc_id}\0{sha}\n".encode("utf-8"))
    return digest.hexdigest()
