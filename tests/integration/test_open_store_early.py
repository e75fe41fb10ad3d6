"""Opening a Milvus Lite database early (``EvaluationContext.open_store_early``) on real Milvus
Lite: a locked database, a folder that cannot be made, ``close()`` during the open, a failed
open racing a newer one, and ``run_experiment`` failing after the early open: each gives a
clear error, leaves no opener thread and leaves the database free for another process."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

from core.errors import StoreError
from core.evaluation.single import EvaluationContext
from core.vectorstores import MilvusLiteConfig
from core.vectorstores.milvus import open_client

HOLD = """
import sys, warnings
warnings.simplefilter("ignore")
from pymilvus import MilvusClient
client = MilvusClient(sys.argv[1])
print("open", flush=True)
sys.stdin.readline()  # until its input closes; then it lets the database go as a process ending does
client.close()
"""

TRY_OPEN = """
import sys
from core.vectorstores import MilvusLiteConfig
from core.vectorstores.milvus import open_client
try:
    open_client(MilvusLiteConfig(sys.argv[1])).close()
    print("opened")
except Exception as exc:
    print("failed:", exc)
"""


def opener_threads():
    return [t for t in threading.enumerate() if t.name == "ragtune-open-store"]


def wait_openers(limit=120):
    end = time.time() + limit
    while opener_threads() and time.time() < end:
        time.sleep(0.1)
    return opener_threads()


def context(path):
    return EvaluationContext(out_dir=path.parent, embedding_models={}, vector_store_config=MilvusLiteConfig(str(path)))


def other_process_can_open(path) -> str:
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", TRY_OPEN, str(path)], capture_output=True,
                          text=True, timeout=120, cwd=str(Path(__file__).parents[2]))
    return done.stdout.strip()


def failing_opener(opens, name, message):
    """A scripted open: records ``name`` in ``opens``, sets ``.started``, waits for ``.may_fail``
    and raises ``StoreError(message)``."""
    started, may_fail = threading.Event(), threading.Event()

    def open_(cfg):
        opens.append(name)
        started.set()
        may_fail.wait(10)
        raise StoreError(message)

    open_.started, open_.may_fail = started, may_fail
    return open_


def test_early_open_of_a_locked_database_reports_it_and_leaves_no_thread(tmp_path):
    path = tmp_path / "m.db"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        ctx = context(path)
        started = time.perf_counter()
        ctx.open_store_early()
        with pytest.raises(StoreError, match="in use by another process"):
            ctx.vector_store(None, ctx.vector_store_config, "c")
        assert time.perf_counter() - started < 60
        assert wait_openers() == []
        assert ctx._lite_clients == {}  # the failure is forgotten: the next try opens again
        ctx.close()
    finally:
        # the holder ends as a process does (a SIGKILL left its Milvus Lite server holding the
        # database for a moment after it, so the open below sometimes still found it in use)
        holder.stdin.close()
        try:
            holder.wait(timeout=60)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()
    # the holder is gone: the same context opens it now
    client = ctx._lite_client(ctx.vector_store_config, open_client)
    assert client.list_collections() == []
    ctx.close()


def test_early_open_in_a_folder_that_cannot_be_made_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    ctx = context(blocker / "m.db")
    ctx.open_store_early()
    with pytest.raises((StoreError, OSError)) as caught:
        ctx.vector_store(None, ctx.vector_store_config, "c")
    assert str(blocker) in str(caught.value)
    assert wait_openers() == []
    ctx.close()


def test_close_right_after_early_open_waits_and_releases_the_database(tmp_path):
    path = tmp_path / "m.db"
    ctx = context(path)
    ctx.open_store_early()
    time.sleep(0.05)
    ctx.close()
    assert wait_openers() == []
    ctx.close()  # twice is harmless
    import milvus_lite.server_manager as sm

    sm.server_manager_instance.release_server(str(path))  # what the process exit does
    assert other_process_can_open(path) == "opened"


def test_a_failed_open_finishing_after_close_does_not_forget_a_newer_open(tmp_path):
    """close() while an open is in progress, then a new open of the same URI: when the old
    open fails, it must not pop the *new* open's future (two opens of one database would then
    run at once, and the second one fails 'in use')."""
    config = MilvusLiteConfig(str(tmp_path / "m.db"))
    ctx = context(tmp_path / "m.db")
    second_started, second_may_end = threading.Event(), threading.Event()
    opens = []
    failing_open = failing_opener(opens, "first", "first open failed")
    first_started, first_may_fail = failing_open.started, failing_open.may_fail

    def slow_open(cfg):
        opens.append("second")
        second_started.set()
        second_may_end.wait(10)
        return "client-2"

    def quick_open(cfg):
        opens.append("third")
        return "client-3"

    errors = []
    t1 = threading.Thread(target=lambda: errors.append(pytest.raises(StoreError, ctx._lite_client, config, failing_open)))
    t1.start()
    first_started.wait(5)
    closer = threading.Thread(target=ctx.close)
    closer.start()
    time.sleep(0.1)  # close() now waits for the first open
    got = []
    t2 = threading.Thread(target=lambda: got.append(ctx._lite_client(config, slow_open)))
    t2.start()
    second_started.wait(5)
    first_may_fail.set()
    t1.join(5)
    closer.join(5)
    got.append(ctx._lite_client(config, quick_open))  # must wait for the second open, not start a third
    second_may_end.set()
    t2.join(5)
    assert opens == ["first", "second"], opens


def test_run_experiment_whose_documents_fail_to_load_closes_the_database_it_opened(tmp_path, squad_dir,
                                                                                     monkeypatch):
    """run_experiment opens the store early, then Corpus.load raises: the client opened early is
    closed (not left for the process's lifetime) and no opener thread keeps running."""
    import core.evaluation.single as single
    from core.models import LOCAL_MODEL_ID, LocalEmbeddingModel
    from core.experiment.runner import ExperimentOptions, run_experiment

    opened = []

    def recording_open(config):
        opened.append(open_client(config))
        return opened[-1]

    monkeypatch.setattr(single, "open_client", recording_open)  # the name the context opens with
    empty = tmp_path / "no-docs"
    empty.mkdir()
    with pytest.raises(Exception, match="no-docs"):  # no documents: the corpus cannot load
        run_experiment(empty, squad_dir / "golden.jsonl", out_dir=tmp_path / "out",
                       embedding_models={LOCAL_MODEL_ID: LocalEmbeddingModel()},
                       options=ExperimentOptions(max_evals=1, show_progress=False))
    assert wait_openers() == []
    assert len(opened) == 1
    with pytest.raises(Exception, match="should create connection first"):  # closed
        opened[0].list_collections()


def test_a_thread_waiting_for_an_early_open_that_fails_opens_the_database_again(tmp_path):
    """The background open fails (say the server did not start) while an evaluation waits for
    it: the evaluation opens the database itself, once, and raises its own error if that fails
    too. Openers are scripted, to place the failure while the evaluation waits."""
    config = MilvusLiteConfig(str(tmp_path / "m.db"))
    ctx = context(tmp_path / "m.db")
    opens = []
    failing_early = failing_opener(opens, "early", "the server did not start")

    def again(cfg):
        opens.append("again")
        return "client"

    early = threading.Thread(target=lambda: pytest.raises(StoreError, ctx._lite_client, config, failing_early,
                                                          early=True))
    early.start()
    failing_early.started.wait(5)
    got = []
    waiter = threading.Thread(target=lambda: got.append(ctx._lite_client(config, again)))
    waiter.start()
    time.sleep(0.1)  # the evaluation now waits for the early open
    failing_early.may_fail.set()
    early.join(5)
    waiter.join(5)
    assert got == ["client"] and opens == ["early", "again"]

    def failing_too(cfg):
        opens.append("fails too")
        raise StoreError("still no server")

    ctx2 = context(tmp_path / "m2.db")
    failing_early = failing_opener(opens, "early", "the server did not start")
    config2 = MilvusLiteConfig(str(tmp_path / "m2.db"))
    early = threading.Thread(target=lambda: pytest.raises(StoreError, ctx2._lite_client, config2, failing_early,
                                                          early=True))
    early.start()
    failing_early.started.wait(5)
    raised = []

    def wait_and_fail():
        try:
            ctx2._lite_client(config2, failing_too)
        except StoreError as exc:
            raised.append(str(exc))

    waiter = threading.Thread(target=wait_and_fail)
    waiter.start()
    time.sleep(0.1)
    failing_early.may_fail.set()
    early.join(5)
    waiter.join(5)
    assert raised == ["still no server"]  # its own error, after one more try
    assert ctx2._lite_clients == {}


def test_a_new_database_is_known_new_only_while_it_opens(tmp_path):
    """``new_store_opening``: True while a database that did not exist is being opened, False
    once it is open, and never for a database that existed before."""
    path = tmp_path / "new.db"
    ctx = context(path)
    config = ctx.vector_store_config
    assert ctx.new_store_opening(config) is False  # nothing asked to open it yet
    ctx.open_store_early()
    deadline = time.time() + 5
    while not ctx._lite_clients and time.time() < deadline:  # the opener thread registers its open
        time.sleep(0.01)
    assert ctx.new_store_opening(config) is True
    ctx._lite_client(config, open_client)  # wait for it
    assert ctx.new_store_opening(config) is False
    ctx.close()
    assert not wait_openers()
    again = context(path)  # the database exists now
    again.open_store_early()
    deadline = time.time() + 5
    while not again._lite_clients and time.time() < deadline:
        time.sleep(0.01)
    assert again.new_store_opening(again.vector_store_config) is False
    again.close()
    assert ctx.new_store_opening(MilvusLiteConfig(str(tmp_path / "other.db"))) is False  # never opened here


def test_an_evaluation_on_a_new_database_embeds_its_chunks_while_it_opens(tmp_path, squad_dir, monkeypatch):
    """The first evaluation of a context whose database is new embeds its chunks before the
    database is open, each once, in batches of ``EARLY_EMBED_BATCH`` (each cached once
    embedded); its metrics and counts are those of an evaluation on a context that opened its
    database first."""
    import core.evaluation.single as single
    from core.evaluation.single import Corpus, run_single_evaluation
    from core.golden import read_golden
    from core.models import LOCAL_MODEL_ID, LocalEmbeddingModel
    from tests.support.corpora import first_questions

    configuration = {"chunking_method": "recursive", "chunk_size": 256, "chunk_overlap": 0,
                     "embedding_model": LOCAL_MODEL_ID, "number_of_chunks": 3, "search_mode": "vector",
                     "ranker_strategy": "n/a", "ranker_k": "n/a", "ranker_alpha": "n/a", "foundation_model": "extractive"}
    golden = read_golden(first_questions(squad_dir / "golden.jsonl", 10, tmp_path))
    corpus = Corpus.load(squad_dir / "docs")
    model = LocalEmbeddingModel()
    monkeypatch.setattr(single, "EARLY_EMBED_BATCH", 16)  # the name the early embedding reads
    results = {}
    for name, early in (("first-open", False), ("early", True)):
        out = tmp_path / name
        ctx = EvaluationContext(out_dir=out, embedding_models={LOCAL_MODEL_ID: model}, with_answers=False,
                                vector_store_config=MilvusLiteConfig(str(out / "milvus.db")))
        opened = []
        if early:
            ctx.open_store_early()
            deadline = time.time() + 5
            while not ctx._lite_clients and time.time() < deadline:
                time.sleep(0.01)
            cached = ctx.embedding_model(LOCAL_MODEL_ID)
            real = cached.embed_documents

            def embed(texts, real=real, ctx=ctx):
                opened.append((ctx.new_store_opening(ctx.vector_store_config), len(texts)))
                return real(texts)
            cached.embed_documents = embed
        else:
            ctx._lite_client(ctx.vector_store_config, open_client)
        results[name] = (run_single_evaluation(configuration, corpus, golden, context=ctx), ctx.n_embedded, opened)
        ctx.close()
    plain, early = results["first-open"], results["early"]
    assert early[0]["status"] == plain[0]["status"] == "ok"
    assert early[0]["metrics"] == plain[0]["metrics"]
    assert early[0]["n_embedded"] == plain[0]["n_embedded"] > 0 and early[1] == plain[1] > 0
    import itertools

    # the first calls are the early batches (indexing's own then asks in batches of 256, from the cache)
    batches = list(itertools.takewhile(lambda call: call[1] <= 16, early[2]))
    assert len(batches) > 1  # in batches of EARLY_EMBED_BATCH
    assert batches[0][0] is True  # the first went to the model while the database was still opening
