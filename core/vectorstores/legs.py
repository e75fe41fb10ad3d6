"""The legs of searches and the fields of chunks, remembered across the evaluations of a run.

Many configurations of one study share a collection (same corpus, chunking and embedding
model) and differ only in how they search it: hybrid RRF or weighted fusion, alpha, the
number of chunks ``k``, or the generator. Every one of them searches the same golden
questions on the same collection, and a hybrid search is two legs (the dense search and the
BM25 search) fused outside the database. :class:`LegMemo` keeps each leg's ranking, the
``(id, score)`` pairs of one ``(collection, leg, query)`` at the depth it was fetched, and
each chunk's fields, so a run searches each leg and reads each chunk at most once (while they
fit in the bounds below). It is a different thing from ``core.vectorstores.memo.SearchMemo``,
which keeps one evaluation's whole search results by ``(query, k, setup)``.

Why a remembered list answers exactly what a new search would:

* Depth ``d`` equal to the depth ``D`` fetched: the same request again. The collection has not
  changed (see invalidation below), and Milvus answers the same request on the same data
  with the same list, order of ties included (checked on Milvus Lite 2.5.1 with a group of
  150 tied BM25 scores and groups of 38 tied cosines, each searched twice).
* ``d < D``: the collections are searched exactly: a ``FLAT`` dense index (every vector
  compared, no approximation) and BM25 on a ``SPARSE_INVERTED_INDEX`` with no terms dropped
  (``drop_ratio_search`` 0, the default), and a chunk's score does not depend on the depth
  asked for (checked: the same floats at every depth from 1 to 150). So the top ``d`` are
  the first ``d`` of the top ``D`` - ties aside.
  Among equal scores Milvus gives no order: which tied chunks come first, and which of them
  make the cut, change with the depth (checked on Milvus Lite 2.5.1: a search at depth 5 and
  one at depth 150 order a group of tied chunks differently, and their tie order is neither
  by id nor stable across depths). A prefix is therefore used only when its first ``d + 1``
  scores are strictly decreasing: then the top ``d`` and their order are the only possible
  answer. Otherwise the leg is fetched again at depth ``d`` (and kept beside the deeper
  list), so answers stay exactly those of a new search.
* A list shorter than its depth holds every chunk the leg can return (the whole collection
  for the dense leg, every chunk sharing a term with the query for BM25), so with strictly
  decreasing scores it also answers any deeper request.

Depth fetched: a store fetches a leg the memo misses at least at :attr:`LegMemo.fetch_depth`,
which a run sets to the deepest leg any of its configurations searches
(``EvaluationContext.fit_to_space``, ``core.evaluation.single.widest_leg``), so that the first configuration to search a
collection fetches what the others' shallower searches are prefixes of; a query whose deep
list has tied scores at a shallower cut is then searched at that depth.

Invalidation: a store holding a memo drops the entries of its collection before and after
it deletes the collection, writes rows or flushes (:meth:`LegMemo.changing`), and every
write bumps the collection's generation; a search records the generation it started from,
and what it fetched is kept only when no write happened meanwhile. A collection rebuilt
never answers from the lists of its former contents; a collection reused unchanged keeps its
entries. Nothing outside the process may change the collection meanwhile: the memo suits a
Milvus Lite database while this process holds it open (one process at a time can), not a
server other processes write to; :meth:`LegMemo.clear` empties it when the database is closed.

Bounds (least recently used dropped first): :data:`MAX_LEG_PAIRS` ``(id, score)`` pairs over
all leg lists, and :data:`MAX_FIELD_CHARS` characters of chunk fields (each chunk counted as
its text plus :data:`FIELD_OVERHEAD_CHARS`). The only other state is one generation number
per collection written to in the run.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Hashable, Iterable, Iterator, Literal, Mapping, Sequence

from core.errors import ConfigError

#: ``(id, score)`` pairs kept over all leg lists: at most about 170 bytes each (the pair, its
#: float and a 32-character chunk id), some 70 MB at the bound. 293 questions with both legs
#: at a window of 70 are 41,000 pairs per collection.
MAX_LEG_PAIRS = 400_000
#: Characters of chunk fields kept (texts plus :data:`FIELD_OVERHEAD_CHARS` per chunk), about
#: as many bytes for ASCII text.
MAX_FIELD_CHARS = 32_000_000
#: Characters a remembered chunk is counted for besides its text (its id, metadata, entry).
FIELD_OVERHEAD_CHARS = 256
#: The legs a hybrid search fuses: the dense (vector) search and the BM25 (keyword) search.
LEGS = ("dense", "sparse")

Leg = Literal["dense", "sparse"]
#: Where a collection lives: ``(database location, collection name)``.
Binding = tuple[str, str]
Pairs = list[tuple[Hashable, float]]
#: What :meth:`LegMemo.generation` returns: compared for equality only.
Generation = tuple[int, int]


def _decreasing_prefix(scores: Sequence[float]) -> int:
    """Length of the longest prefix of ``scores`` that is strictly decreasing (0 for none)."""
    for i in range(1, len(scores)):
        if not scores[i - 1] > scores[i]:
            return i
    return len(scores)


class _List:
    """One leg's ranking fetched at ``depth``: ``pairs`` best first, and how many of its first
    scores are strictly decreasing."""

    __slots__ = ("depth", "pairs", "distinct")

    def __init__(self, depth: int, pairs: Sequence[tuple[Hashable, float]]) -> None:
        self.depth = int(depth)
        self.pairs = tuple((item_id, float(score)) for item_id, score in pairs)
        self.distinct = _decreasing_prefix([score for _, score in self.pairs])

    def answers(self, depth: int) -> bool:
        """Whether a search at ``depth`` must return this list's first ``depth`` pairs (see the
        module docstring)."""
        if depth == self.depth:
            return True
        n = len(self.pairs)
        if depth > self.depth and n >= self.depth:  # more may exist past what was fetched
            return False
        return self.distinct >= min(depth + 1, n)


def leg_answers(fetched_depth: int, pairs: Sequence[tuple[Hashable, float]], depth: int) -> bool:
    """Whether ``pairs``, a leg's ranking fetched at ``fetched_depth``, answers a search of the
    same leg at ``depth`` exactly by its first ``depth`` pairs (see the module docstring)."""
    return _List(fetched_depth, pairs).answers(depth)


class LegMemo:
    """Leg rankings and chunk fields of Milvus collections, shared by the stores of one run.

    Safe under threads. A store fetching what the memo misses holds :meth:`fetching` of that
    collection and leg (or of its chunk fields) meanwhile, so evaluations missing the same leg
    at once (the first wave of a parallel run) search it once: the others wait, then take what
    was kept. See the module docstring for why answers are exact, how entries are invalidated
    and bounded.

    Args:
        max_pairs: ``(id, score)`` pairs kept over all leg lists (>= 0; 0 keeps none).
        max_field_chars: characters of chunk fields kept (>= 0; 0 keeps none).
        fetch_depth: the least depth a store fetches a leg at when the memo misses it (>= 0;
            0: the depth asked for). A run sets it to the deepest leg its configurations search
            (:func:`core.evaluation.single.widest_leg`), so that the first search of a leg
            answers the shallower ones of the others. Settable.

    Attributes:
        leg_hits, leg_misses: leg lists answered from the memo, and not (counters).
        field_hits, field_misses: chunk fields answered from the memo, and not (counters).

    Raises:
        ConfigError: a negative bound.
    """

    def __init__(self, *, max_pairs: int = MAX_LEG_PAIRS, max_field_chars: int = MAX_FIELD_CHARS,
                 fetch_depth: int = 0) -> None:
        if int(max_pairs) < 0 or int(max_field_chars) < 0 or int(fetch_depth) < 0:
            raise ConfigError(f"bounds must be >= 0, got max_pairs={max_pairs}, max_field_chars={max_field_chars}, "
                              f"fetch_depth={fetch_depth}")
        self.fetch_depth = int(fetch_depth)
        self.max_pairs = int(max_pairs)
        self.max_field_chars = int(max_field_chars)
        self._lock = threading.Lock()
        # (binding, leg or "fields") -> the lock held while a store fetches what the memo misses
        self._fetching: dict[tuple[Binding, str], threading.RLock] = {}
        # (binding, leg, query) -> {depth: _List}
        self._legs: OrderedDict[tuple[Binding, str, str], dict[int, _List]] = OrderedDict()
        self._pairs = 0
        # (binding, id) -> (fields, weight)
        self._fields: OrderedDict[tuple[Binding, Hashable], tuple[dict[str, Any], int]] = OrderedDict()
        self._chars = 0
        self._generations: dict[Binding, int] = {}
        self._epoch = 0  # bumped by clear(): every binding's token changes
        self.leg_hits = self.leg_misses = self.field_hits = self.field_misses = 0

    def generation(self, binding: Binding) -> Generation:
        """An opaque token that changes with every write to ``binding`` (and every
        :meth:`clear`): take it before a search and pass it back to :meth:`remember_leg` and
        :meth:`remember_fields` with what the search fetched."""
        with self._lock:
            return self._token(binding)

    def _token(self, binding: Binding) -> Generation:
        return (self._epoch, self._generations.get(binding, 0))

    @contextmanager
    def fetching(self, binding: Binding, what: str) -> Iterator[bool]:
        """Hold, while a store fetches what the memo misses of ``binding``'s ``what`` (a leg of
        :data:`LEGS`, or ``"fields"``), the lock of that pair; yields whether another store held
        it first, in which case the caller looks in the memo again before fetching, so
        concurrent misses of the same leg are searched once. Re-entrant: a fetch may search the
        same leg again at another depth."""
        with self._lock:
            lock = self._fetching.setdefault((binding, what), threading.RLock())
        waited = not lock.acquire(blocking=False)
        if waited:
            lock.acquire()
        try:
            yield waited
        finally:
            lock.release()

    def leg(self, binding: Binding, leg: Leg, query: str, depth: int, *, count: bool = True) -> Pairs | None:
        """The first ``depth`` pairs of ``leg`` for ``query``, when a remembered list answers a
        search at ``depth`` exactly; None otherwise.

        Args:
            binding: the collection.
            leg: ``"dense"`` or ``"sparse"``.
            query: the query text.
            depth: the search's limit (>= 1).
            count: add to ``leg_hits`` / ``leg_misses`` (False: a second look after waiting
                for another store's fetch, already counted).

        Returns:
            ``[(id, score), ...]`` best first (scores higher-is-better, as remembered), a new
            list the caller may change; possibly shorter than ``depth``.
        """
        key = (binding, leg, query)
        with self._lock:
            lists = self._legs.get(key)
            found = None
            if lists is not None:
                exact = lists.get(depth)
                found = exact if exact is not None else next((x for x in lists.values() if x.answers(depth)), None)
            if found is None:
                self.leg_misses += count
                return None
            self._legs.move_to_end(key)
            self.leg_hits += count
            return list(found.pairs[:depth])

    def deepest(self, binding: Binding, leg: Leg, query: str) -> int:
        """The deepest depth a list of ``leg`` for ``query`` is remembered at (0: none)."""
        with self._lock:
            lists = self._legs.get((binding, leg, query))
            return max(lists, default=0) if lists else 0

    def remember_leg(self, binding: Binding, generation: Generation, leg: Leg, query: str, depth: int,
                     pairs: Sequence[tuple[Hashable, float]]) -> None:
        """Keep ``pairs``, the ranking a search of ``leg`` at ``depth`` returned for ``query``
        (best first, scores higher-is-better), unless ``binding`` was written to since
        ``generation``. Shallower lists of the same leg and query that it answers are dropped;
        least recently used lists are dropped past :data:`MAX_LEG_PAIRS`.

        Raises:
            ConfigError: ``leg`` is not one of :data:`LEGS`, or ``depth < 1``.
        """
        if leg not in LEGS:
            raise ConfigError(f"leg must be one of {', '.join(LEGS)}, got {leg!r}")
        if int(depth) < 1:
            raise ConfigError(f"depth must be at least 1, got {depth}")
        new = _List(depth, pairs)
        key = (binding, leg, query)
        with self._lock:
            if self._token(binding) != generation:
                return
            lists = self._legs.setdefault(key, {})
            old = lists.pop(new.depth, None)
            if old is not None:
                self._pairs -= _weight(old)
            for d in [d for d in lists if d < new.depth and new.answers(d)]:
                self._pairs -= _weight(lists.pop(d))
            lists[new.depth] = new
            self._pairs += _weight(new)
            self._legs.move_to_end(key)
            while self._pairs > self.max_pairs and self._legs:
                _, dropped = self._legs.popitem(last=False)
                self._pairs -= sum(_weight(x) for x in dropped.values())

    def fields(self, binding: Binding, ids: Iterable[Hashable], *, count: bool = True) -> dict[Hashable, dict[str, Any]]:
        """The remembered fields of those of ``ids`` whose fields are kept, by id (a chunk not
        kept is absent). The dicts are the memo's own: do not change them. ``count``: add to
        ``field_hits`` / ``field_misses`` (False: a second look, already counted)."""
        out: dict[Hashable, dict[str, Any]] = {}
        with self._lock:
            for item_id in ids:
                entry = self._fields.get((binding, item_id))
                if entry is None:
                    self.field_misses += count
                    continue
                self._fields.move_to_end((binding, item_id))
                self.field_hits += count
                out[item_id] = entry[0]
        return out

    def remember_fields(self, binding: Binding, generation: Generation,
                        rows: Mapping[Hashable, Mapping[str, Any]]) -> None:
        """Keep the fields ``rows`` (id -> field name -> value, as read from ``binding``)
        unless ``binding`` was written to since ``generation``; least recently used chunks are
        dropped past :data:`MAX_FIELD_CHARS`."""
        with self._lock:
            if self._token(binding) != generation:
                return
            for item_id, row in rows.items():
                fields = dict(row)
                weight = len(str(fields.get("text") or "")) + FIELD_OVERHEAD_CHARS
                old = self._fields.pop((binding, item_id), None)
                if old is not None:
                    self._chars -= old[1]
                self._fields[(binding, item_id)] = (fields, weight)
                self._chars += weight
            while self._chars > self.max_field_chars and self._fields:
                _, (_, weight) = self._fields.popitem(last=False)
                self._chars -= weight

    def forget(self, binding: Binding) -> None:
        """Drop every list and chunk of ``binding`` and bump its generation, so what a search
        started before fetched is not kept either."""
        with self._lock:
            self._generations[binding] = self._generations.get(binding, 0) + 1
            for key in [key for key in self._legs if key[0] == binding]:
                self._pairs -= sum(_weight(x) for x in self._legs.pop(key).values())
            for key in [key for key in self._fields if key[0] == binding]:
                self._chars -= self._fields.pop(key)[1]

    def clear(self) -> None:
        """Drop everything and change every binding's generation: for when the database may
        be written to by someone else from now on (its client closed)."""
        with self._lock:
            self._epoch += 1
            self._legs.clear()
            self._fields.clear()
            self._pairs = self._chars = 0

    @contextmanager
    def changing(self, binding: Binding) -> Iterator[None]:
        """Wrap a write to ``binding``: :meth:`forget` before it (no search answers from the
        old lists meanwhile) and after it (nothing read during the write is kept)."""
        self.forget(binding)
        try:
            yield
        finally:
            self.forget(binding)

    def stats(self) -> dict[str, int]:
        """``{leg_lists, leg_pairs, chunks, field_chars, leg_hits, leg_misses, field_hits,
        field_misses}``: what is kept now, and the counters."""
        with self._lock:
            return {
                "leg_lists": sum(len(x) for x in self._legs.values()), "leg_pairs": self._pairs,
                "chunks": len(self._fields), "field_chars": self._chars,
                "leg_hits": self.leg_hits, "leg_misses": self.leg_misses,
                "field_hits": self.field_hits, "field_misses": self.field_misses,
            }


def _weight(leg_list: _List) -> int:
    """What a list counts against :data:`MAX_LEG_PAIRS`: its pairs (at least 1, so empty
    lists are bounded too)."""
    return max(1, len(leg_list.pairs))


__all__ = ["FIELD_OVERHEAD_CHARS", "LEGS", "LegMemo", "MAX_FIELD_CHARS", "MAX_LEG_PAIRS", "leg_answers"]
