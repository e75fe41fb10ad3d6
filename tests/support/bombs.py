"""Crafted documents for the document limits' tests: DOCX files whose XML expands far past their
size on disk (ZIP bombs), written part by part so the test itself never holds the XML.

A DOCX here is the smallest package Word and docling read: ``[Content_Types].xml``,
``_rels/.rels`` and ``word/document.xml`` of ``<w:p>`` paragraphs (ECMA-376 Part 2, Open
Packaging Conventions; Part 1, WordprocessingML).
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

CONTENT_TYPES = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    b'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    b'<Default Extension="xml" ContentType="application/xml"/>'
    b'<Override PartName="/word/document.xml" '
    b'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
RELS = (
    b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    b'<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    b'officeDocument" Target="word/document.xml"/></Relationships>'
)
HEAD = (b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>')
TAIL = b"</w:body></w:document>"
PARAGRAPH = b"<w:p><w:r><w:t>All work and no play makes Jack a dull boy.</w:t></w:r></w:p>"


def write_docx(path: Path, xml_bytes: int, *, paragraph: bytes = PARAGRAPH, extra_parts: int = 0) -> int:
    """Write a DOCX whose ``word/document.xml`` is ``paragraph`` repeated to at least
    ``xml_bytes`` bytes (deflated: repeated XML compresses some 300 times), plus
    ``extra_parts`` small parts ``word/extra<i>.xml``.

    Returns:
        The size of ``word/document.xml`` in bytes.
    """
    n = max(1, -(-(xml_bytes - len(HEAD) - len(TAIL)) // len(paragraph)))
    block = paragraph * 1000
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES)
        archive.writestr("_rels/.rels", RELS)
        with archive.open("word/document.xml", "w", force_zip64=xml_bytes > 2**31) as part:
            part.write(HEAD)
            left = n
            while left > 0:
                part.write(block if left >= 1000 else paragraph * left)
                left -= 1000
            part.write(TAIL)
        for i in range(extra_parts):
            archive.writestr(f"word/extra{i}.xml", b"<x/>")
    return len(HEAD) + n * len(paragraph) + len(TAIL)


def understate_sizes(path: Path, part: str, declared: int) -> None:
    """Rewrite the archive at ``path`` so that ``part``'s local header and central directory
    entry declare ``declared`` bytes unpacked (a lying header; the deflated data stay as
    they are). The archive must have no ZIP64 fields for ``part``.

    References:
        PKWARE APPNOTE.TXT 4.3.7 (local file header: uncompressed size at offset 22) and
        4.3.12 (central directory header: uncompressed size at offset 24).
    """
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(part)
    struct.pack_into("<I", data, info.header_offset + 22, declared)
    name = part.encode()
    at = struct.unpack_from("<I", data, data.rfind(b"PK\x05\x06") + 16)[0]  # the central directory's offset
    while data[at:at + 4] == b"PK\x01\x02":
        n_name = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46:at + 46 + n_name]) == name:
            struct.pack_into("<I", data, at + 24, declared)
            break
        n_extra, n_comment = struct.unpack_from("<HH", data, at + 30)
        at += 46 + n_name + n_extra + n_comment
    else:
        raise ValueError(f"no central directory entry for {part}")
    path.write_bytes(bytes(data))
