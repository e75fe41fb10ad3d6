"""Targets: what the golden questions are searched in.

A collection ragtune builds from documents, or an index in place: Azure AI Search, a team's own
Milvus (server or Lite), PostgreSQL + pgvector or Qdrant collection. Each offers setups,
searches, describes itself and says which expected documents it lacks (``core.targets.base``);
field mappings say which field holds what (``core.targets.mapping``); a targets file or
``--target`` options say which targets to open (``core.targets.spec``, ``core.targets.open``).

Engine clients (azure-search-documents, psycopg, pymilvus, qdrant-client) are imported by the
module of each target, when it is opened.
"""

from core.targets.base import Hit, QueryVectors, Target, TargetDescription, TargetSetup, UnavailableSetup
from core.targets.ids import index_document_id, page_numbers
from core.targets.mapping import FieldMapping, ResolvedMapping, SchemaField, resolve_mapping
from core.targets.spec import TargetSpec, parse_target_option, parse_targets_text, read_targets_file

__all__ = [
    "FieldMapping", "Hit", "QueryVectors", "ResolvedMapping", "SchemaField", "Target", "TargetDescription",
    "TargetSetup", "TargetSpec", "UnavailableSetup", "index_document_id", "page_numbers", "parse_target_option",
    "parse_targets_text", "read_targets_file", "resolve_mapping",
]
