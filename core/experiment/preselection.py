"""Model pre-selection (IBM ai4rag's MPS): narrow several embedding and foundation models to
the best few before the search.

Every (embedding model, foundation model) pair is evaluated once, with one fixed, valid
configuration of the space, on a small seeded sample of questions and only the documents those
questions reference. Embedding models are ranked by their mean objective over the foundation
models, foundation models by their mean over the embedding models; the best
``keep_embedding`` and ``keep_foundation`` stay. A pair that fails scores nothing, and a model
whose every pair failed ranks last.

References:
    IBM ai4rag, model pre-selection (``ModelsPreSelector``): https://github.com/IBM/ai4rag
"""

from __future__ import annotations

import hashlib
import logging
import statistics
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import ConfigError
import core.evaluation.single as single  # run_single_evaluation read at call time (tests replace it)
from core.evaluation.single import Corpus

if TYPE_CHECKING:
    from core.evaluation.single import EvaluationContext
    from core.golden.types import GoldenSet
    from core.optimization.space import SearchSpace

logger = logging.getLogger(__name__)


def _baseline(space: SearchSpace, embedding: str, foundation: str) -> dict[str, Any]:
    """The first valid configuration of ``space`` with these two models."""
    for config in space.valid_configurations():
        if config["embedding_model"] == embedding and config["foundation_model"] == foundation:
            return dict(config)
    raise ConfigError(f"the search space has no valid configuration with {embedding} and {foundation}")


def preselect_models(
    space: SearchSpace,
    corpus: Corpus,
    golden: GoldenSet,
    *,
    context: EvaluationContext,
    objective: str,
    keep_embedding: int = 2,
    keep_foundation: int = 3,
    n_questions: int = 5,
    seed: int = 0,
) -> dict[str, Any]:
    """Score every model pair on a sample and keep the best models.

    Args:
        space: the ``SearchSpace``; its ``embedding_model`` and ``foundation_model`` values are
            the candidates.
        corpus: the loaded ``Corpus``.
        golden: the ``GoldenSet``.
        context: the study's ``EvaluationContext`` (models, store, caches).
        objective: the metric ranking the models (higher is better).
        keep_embedding: embedding models kept (>= 1).
        keep_foundation: foundation models kept (>= 1).
        n_questions: questions in the sample (>= 1; all when fewer).
        seed: seeds the sample.

    Returns:
        ``{"ran": bool, "reason", "embedding_models": [kept], "foundation_models": [kept],
        "pairs": [{embedding_model, foundation_model, score, status, error}], "sample":
        {question_ids, document_ids}}``. ``ran`` is False (and the models are all kept) when
        there is nothing to narrow.

    Raises:
        ConfigError: a ``keep_*`` or ``n_questions`` below 1.
    """
    for label, value in (("keep_embedding", keep_embedding), ("keep_foundation", keep_foundation),
                         ("n_questions", n_questions)):
        if int(value) < 1:
            raise ConfigError(f"{label} must be at least 1, got {value}")
    values = {p.name: list(p.values) for p in space.parameters}
    embeddings, foundations = values["embedding_model"], values["foundation_model"]
    out: dict[str, Any] = {"ran": False, "reason": None, "embedding_models": embeddings,
                           "foundation_models": foundations, "pairs": [], "sample": None}
    if len(embeddings) <= keep_embedding and len(foundations) <= keep_foundation:
        out["reason"] = "no more models than are kept"
        return out

    rng = np.random.default_rng(seed)
    questions = list(golden.questions)
    picked = sorted(rng.choice(len(questions), size=min(n_questions, len(questions)), replace=False).tolist())
    sample = [questions[i] for i in picked]
    wanted = {d for q in sample for d in q.document_ids}
    documents = [d for d in corpus.documents if d.document_id in wanted] or list(corpus.documents)
    fingerprint = hashlib.sha256(
        "\n".join(f"{d.document_id}\0{d.sha256}" for d in sorted(documents, key=lambda d: d.document_id)).encode()
    ).hexdigest()
    sub_corpus = Corpus(corpus.docs_dir, documents, [], fingerprint)
    sub_golden = replace(golden, questions=sample,
                         sha256=hashlib.sha256(f"{golden.sha256}\0{','.join(q.id for q in sample)}".encode()).hexdigest())
    out["sample"] = {"question_ids": [q.id for q in sample], "document_ids": sorted(d.document_id for d in documents)}

    by_embedding: dict[str, list[float]] = {e: [] for e in embeddings}
    by_foundation: dict[str, list[float]] = {f: [] for f in foundations}
    for e in embeddings:
        for f in foundations:
            result = single.run_single_evaluation(_baseline(space, e, f), sub_corpus, sub_golden, context=context)
            score = result["metrics"].get(objective) if result["status"] == "ok" else None
            out["pairs"].append({"embedding_model": e, "foundation_model": f, "score": score,
                                 "status": result["status"], "error": result["error"]})
            if score is not None:
                by_embedding[e].append(score)
                by_foundation[f].append(score)

    def ranked(scores: dict[str, list[float]], keep: int) -> list[str]:
        order = sorted(scores, key=lambda m: (-(statistics.fmean(scores[m]) if scores[m] else float("-inf")),
                                               list(scores).index(m)))
        return order[:keep]

    out.update(ran=True, embedding_models=ranked(by_embedding, keep_embedding),
               foundation_models=ranked(by_foundation, keep_foundation))
    logger.info("pre-selection kept embedding %s and foundation %s", out["embedding_models"], out["foundation_models"])
    return out
