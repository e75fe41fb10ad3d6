"""Two evaluations of a run sharing a collection, through ``run_single_evaluation``: the warm
one asks Milvus for no leg and for no chunk already read, and scores exactly as it does
without the run's leg memo.

Real components: the Normans documents of squad-mini (p00 to p14) and its first 20
questions, the packaged bge-small-en-v1.5 and Milvus Lite. The reference is the same
evaluation run again on the same context with ``legs`` set to None (every leg searched), its
stored result not used. Retrieval only (``with_answers=False``): the answers are generated
from the very chunks the retrieval scores (``SearchMemo``), which are what is compared.
"""

from __future__ import annotations

import shutil
from concurrent.futures import Future

import pytest

from core.evaluation.single import Corpus, EvaluationContext, run_single_evaluation
from core.golden import read_golden
from core.models.local import local_embedding_model
from core.vectorstores import MilvusLiteConfig, open_client
from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MODEL_ID = "local:bge-small-en-v1.5"
COLD = {
    "chunking_method": "recursive", "chunk_size": 128, "chunk_overlap": 0, "embedding_model": MODEL_ID,
    "number_of_chunks": 3, "search_mode": "hybrid", "ranker_strategy": "rrf", "ranker_k": 60,
    "ranker_alpha": "n/a", "foundation_model": "extractive",
}
#: The same collection and k, other fusion: both legs (window 66) are the cold one's.
WARM = dict(COLD, ranker_strategy="weighted", ranker_k="n/a", ranker_alpha=0.5)


class Counting:
    """The real client, its ``search`` requests and the ids its ``get`` requests ask counted."""

    def __init__(self, client):
        self._client = client
        self.searches = 0
        self.got: list[str] = []

    def __getattr__(self, name):
        return getattr(self._client, name)

    def search(self, *args, **kwargs):
        self.searches += 1
        return self._client.search(*args, **kwargs)

    def get(self, collection_name, ids, **kwargs):
        self.got.extend(ids)
        return self._client.get(collection_name, ids=ids, **kwargs)


def test_a_warm_evaluation_searches_nothing_and_scores_as_before(squad_dir, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(15):
        shutil.copy(squad_dir / "docs" / f"Normans_p{i:02d}.txt", docs)
    golden = read_golden(first_questions(squad_dir / "golden.jsonl", 20, tmp_path))
    corpus = Corpus.load(docs)
    # measure_waits off: the wait per question is timed with searches that bypass the memo
    # on purpose (core.evaluation.waits); only the scored searches are counted here
    context = EvaluationContext(out_dir=tmp_path / "out", embedding_models={MODEL_ID: local_embedding_model(MODEL_ID)},
                                with_answers=False, measure_waits=False)
    config = MilvusLiteConfig(str(tmp_path / "out" / "milvus.db"))
    client = Counting(open_client(config))
    opened = Future()
    opened.set_result(client)
    context._lite_clients[config.uri] = opened  # the context's shared client, counted
    try:
        cold = run_single_evaluation(COLD, corpus, golden, context=context)
        assert cold["status"] == "ok", cold["error"]
        assert client.searches == 2  # one request per leg for the 20 questions
        read = set(client.got)
        client.searches, client.got = 0, []

        warm = run_single_evaluation(WARM, corpus, golden, context=context)
        assert warm["status"] == "ok" and warm["collection_reused"] is True
        assert warm["collection"] == cold["collection"]
        assert client.searches == 0 and not set(client.got) & read  # only chunks not read before
        assert context.legs.stats()["leg_hits"] == 2 * len(golden.questions)

        memo, context.legs = context.legs, None  # every leg searched again
        reference = run_single_evaluation(WARM, corpus, golden, context=context, use_stored=False)
        context.legs = memo
        assert reference["status"] == "ok" and client.searches == 2
        assert warm["metrics"] == reference["metrics"] and warm["retrieval"] == reference["retrieval"]
    finally:
        context.close()
    assert context.legs.stats()["leg_pairs"] == 0  # emptied with the database's client
