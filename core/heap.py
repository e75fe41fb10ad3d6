"""The process's garbage collector once the heavy libraries are loaded.

An evaluation imports large libraries (unitxt and its datasets, pymilvus, the models'
runtimes) whose objects live as long as the process. CPython's full collection walks every
tracked object, half a million of them after one evaluation, and holds the interpreter lock
meanwhile: a fifth of a second during which no thread of the process runs, not even one
whose reply just arrived. :func:`freeze_loaded_heap` moves the objects alive after the
process's first evaluation to the collector's permanent generation (``gc.freeze``), which no
collection examines, so later collections walk only what was made since.

The cost: an object frozen that later becomes garbage in a reference cycle is never freed
(objects without cycles are still freed by reference counting). Freezing happens once per
process, so this holds at most what one evaluation context and the evaluations running
beside it kept at that moment.

References:
    Python documentation, ``gc.freeze``: https://docs.python.org/3/library/gc.html#gc.freeze
"""

from __future__ import annotations

import gc
import logging
import threading

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_frozen = False


def freeze_loaded_heap() -> bool:
    """Freeze every object alive now (``gc.freeze``), the first time it is called in this
    process; later calls do nothing.

    Returns:
        True when this call froze the heap.
    """
    global _frozen
    with _lock:
        if _frozen:
            return False
        _frozen = True
        gc.freeze()
    logger.debug("%d objects moved to the collector's permanent generation", gc.get_freeze_count())
    return True


__all__ = ["freeze_loaded_heap"]
