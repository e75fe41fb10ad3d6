"""The experiment engine's steps over a local Files store: what an evaluation trusts, how the
study is told, one key, capped texts, one report."""

from __future__ import annotations

import hashlib
import json
import threading
import time

import pytest

from core.errors import ConfigError, DamagedFileError, EmbeddingError, StoreError, is_transient
from core.experiment import EvaluationRequest, Experiment, MAX_MESSAGE_BYTES, TransientEvaluationError
from core.experiment.engine import STORE_REQUESTS_AT_ONCE, _each
from core.experiment.prepare import StoredEvaluator, evaluate_request, prepare_request
from core.optimization import Configuration
from core.experiment.requests import parse_experiment_request
from core.reports import LocalFiles

from tests.support.experiment_settings import GOLDEN, FakeEmbedding, FakeSettings  # noqa: F401


def ok(score):
    """An evaluation that scores ``score`` on mrr without running anything."""
    return lambda configuration: {"status": "ok", "error": None, "metrics": {"mrr": score},
                                  "timings": {"total_s": 0.5}}


@pytest.fixture
def data(tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_bytes(GOLDEN)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "plan.md").write_text("The deductible is 500 dollars.")
    return tmp_path


def prepared(data, space=None, max_evals=2, name="exp-1"):
    request, errors = parse_experiment_request({
        "golden": str(data / "golden.jsonl"), "documents": str(data / "docs"),
        "optimizer": "random", "max_evals": max_evals, "objective": "mrr",
        "space": space or {"chunking_method": ["recursive"], "chunk_size": [256], "chunk_overlap": [0],
                           "search_mode": ["vector"], "number_of_chunks": [3, 5]}})
    assert errors == []
    files = LocalFiles(data / "reports")
    out = prepare_request(files, name, request, FakeSettings(data / "out"))
    return Experiment(files, name), out


def test_prepare_refuses_documents_that_hold_none_of_the_expected_ones(data):
    """As the CLI does: every score would be 0, so the experiment does not start (the
    orchestration ends Failed with this reason) and nothing is stored."""
    (data / "docs" / "plan.md").rename(data / "docs" / "other.md")
    with pytest.raises(ConfigError, match=r"the golden file expects 1 document and none is in .*'plan.md'"):
        prepared(data)
    assert not Experiment(LocalFiles(data / "reports"), "exp-1").exists()


def test_prepare_stores_the_spec_and_the_study(data):
    experiment, out = prepared(data)
    assert out.to_dict() == {"objective": "mrr", "n_valid": 2, "max_evals": 2, "notes": []}
    spec = experiment.spec()
    assert spec.golden_sha256 == hashlib.sha256(GOLDEN).hexdigest() and spec.n_questions == 1
    # a retried prepare leaves it as it is
    again, out2 = prepared(data)
    assert out2.max_evals == 2 and again.study().to_dict() == experiment.study().to_dict()


@pytest.mark.parametrize(("name", "content", "message"), [
    ("spec.json", b'{"objective": "mrr",', "spec.json is not valid JSON (Expecting"),
    ("spec.json", b"\xff\xfe", "spec.json is not valid JSON ("),
    ("spec.json", None, "spec.json is not a valid experiment spec: start must be one of default, reranked or None, "
                        "got 'bogus'"),
    ("study.json", b"[1, 2", "study.json is not valid JSON (Expecting"),
    ("study.json", b'{"trials": 3}', "study.json is not a valid study: "),
    ("progress.json", b"{", "progress.json is not valid JSON (Expecting"),
])
def test_a_damaged_stored_file_is_a_store_error_naming_it(data, name, content, message):
    """Changed or cut-short stored files never surface as a traceback: each read says which file."""
    experiment, _ = prepared(data)
    folder = data / "reports" / "experiments" / "exp-1"
    if content is None:  # a spec that parses, with a value no spec holds
        spec = json.loads((folder / name).read_text())
        content = json.dumps({**spec, "start": "bogus"}).encode()
    (folder / name).write_bytes(content)
    fresh = Experiment(LocalFiles(data / "reports"), "exp-1")  # a store object reads the spec once
    with pytest.raises(DamagedFileError) as caught:
        fresh.study() if name == "study.json" else fresh.progress() if name == "progress.json" else fresh.spec()
    assert str(caught.value).startswith(f"{folder / name}") and message in str(caught.value), str(caught.value)


def test_the_message_carries_ids_and_keys_only_and_extra_fields_are_ignored(data):
    experiment, _ = prepared(data)
    (config,) = experiment.ask(1)
    message = experiment.evaluation_request(config).to_dict()
    assert set(message) == {"v", "experiment_id", "key", "configuration"}
    forged = {**message, "golden": {"address": "/etc/passwd", "sha256": "0" * 64}, "documents": "/srv", "score": 1e9}
    parsed = EvaluationRequest.parse(json.dumps(forged))
    assert parsed.to_dict() == message
    for broken, where in [({**message, "v": 1}, "version"), ({**message, "experiment_id": "../x"}, "experiment_id"),
                          ({**message, "configuration": {**config, "number_of_chunks": 10}}, "does not match")]:
        with pytest.raises(ConfigError, match=where):
            EvaluationRequest.parse(json.dumps(broken))


def test_a_configuration_outside_the_space_or_never_asked_is_refused(data):
    experiment, _ = prepared(data)
    experiment.ask(1)
    outside = Configuration({**experiment.study().trials[0].configuration, "number_of_chunks": 10})
    with pytest.raises(ConfigError, match="not in experiment exp-1's space"):
        experiment.evaluate(EvaluationRequest("exp-1", outside.key, outside.to_dict()), ok(1.0))
    never = [c for c in experiment.study().space.valid_configurations()
             if c.key != experiment.study().trials[0].configuration.key][0]
    with pytest.raises(ConfigError, match="was never asked"):
        experiment.evaluate(EvaluationRequest("exp-1", never.key, never.to_dict()), ok(1.0))
    assert experiment.results() == {}


def test_the_evaluator_reads_the_stored_golden_file_and_refuses_a_changed_one(data):
    experiment, _ = prepared(data)
    (config,) = experiment.ask(1)
    (data / "golden.jsonl").write_bytes(GOLDEN + GOLDEN.replace(b"deductible", b"copay"))
    outcome = evaluate_request(experiment, experiment.evaluation_request(config), StoredEvaluator(FakeSettings(data)), 30)
    assert outcome.status == "failed" and outcome.score is None and not outcome.stored
    assert "changed since the experiment started" in outcome.error
    assert experiment.result(config.key)["status"] == "failed"


def test_ask_hands_out_asked_configurations_first_within_the_budget(data):
    """Pending trials come back first; a budget lowered below them (a resumed run's
    --max-evals) leaves the rest unevaluated, and nothing new is asked past it."""
    space = {"chunking_method": ["recursive"], "chunk_size": [256], "chunk_overlap": [0], "search_mode": ["vector"],
             "number_of_chunks": [3, 5, 10]}
    experiment, _ = prepared(data, space=space, max_evals=3)
    asked = experiment.ask(3)
    assert len(asked) == 3 and experiment.ask(2) == asked[:2]  # a retried ask: the same, in order
    study = experiment.study()
    study.set_budget(2)  # room for 2 of the 3 pending
    assert experiment.ask(3, study=study) == asked[:2]
    experiment.evaluate(experiment.evaluation_request(asked[0]), ok(0.5), study=study)
    experiment.tell([asked[0].key], study=study)
    assert experiment.ask(None, study=study) == [asked[1]]  # 1 evaluated: room for 1 more
    experiment.evaluate(experiment.evaluation_request(asked[1]), ok(0.25), study=study)
    experiment.tell([asked[1].key], study=study)
    assert experiment.ask(3, study=study) == []  # the budget of 2 is spent; asked[2] stays pending
    assert [t.configuration for t in experiment.study().pending_trials] == [asked[2]]


def test_tell_believes_stored_results_only(data):
    experiment, _ = prepared(data)
    first, second = experiment.ask(2)
    experiment.evaluate(experiment.evaluation_request(first), ok(0.25))
    # second: an event came (say with score 1e9) but no result is stored: it is not believed
    summary = experiment.tell([first.key, second.key])
    assert (summary.evaluated, summary.best_score, summary.best_key, summary.pending) == (1, 0.25, first.key, 1)
    summary = experiment.tell([second.key], missing={second.key: "no result within the round's timeout of 60 s"})
    assert (summary.evaluated, summary.failed, summary.best_score) == (2, 1, 0.25)
    assert experiment.tell([first.key, second.key]).evaluated == 2  # a retried tell changes nothing
    # the timed-out configuration stores a result afterwards: the report says so, the score stays out
    experiment.write_result(second.key, {**ok(0.9)(second), "key": second.key})
    report = experiment.build_report()
    row = [r for r in report["leaderboard"] if r["key"] == second.key][0]
    assert row["status"] == "failed" and row["score"] is None and row["late_result"] == {"status": "ok", "score": 0.9}
    assert report["best"]["score"] == 0.25 and report["complete"] is True
    assert report["counts"] == {"evaluations": 2, "failed": 1, "stored": 0, "pending": 0}


def test_a_transient_failure_raises_and_stores_nothing(data):
    experiment, _ = prepared(data)
    (config,) = experiment.ask(1)
    request = experiment.evaluation_request(config)

    def broken_store(configuration):
        raise StoreError("connection reset")

    with pytest.raises(StoreError):
        experiment.evaluate(request, broken_store)

    def rate_limited(configuration):  # what run_single_evaluation returns for a 429 after its retries
        return {"status": "failed", "error": "EmbeddingError: 429", "transient": True, "metrics": {}}

    with pytest.raises(TransientEvaluationError):
        experiment.evaluate(request, rate_limited)
    assert experiment.results() == {}

    def bad_data(configuration):
        raise EmbeddingError("model returned 3-dimensional vectors; expected 384")

    assert experiment.evaluate(request, bad_data).status == "failed"
    assert experiment.result(config.key)["status"] == "failed"


def test_a_poison_message_with_a_stored_ok_result_fails_nothing(data):
    experiment, _ = prepared(data)
    (config,) = experiment.ask(1)
    experiment.evaluate(experiment.evaluation_request(config), ok(0.5))
    outcome = experiment.record_failure(config, "poisoned")
    assert outcome.status == "ok" and outcome.stored and outcome.score == 0.5
    # an OK result is not evaluated again when delivered again
    again = experiment.evaluate(experiment.evaluation_request(config), ok(0.1))
    assert again.stored and again.score == 0.5


def _poison(experiment, configuration):
    return experiment.record_poisoned(experiment.evaluation_request(configuration), "poisoned")


def test_a_poison_message_is_checked_as_an_evaluation_message_is(data):
    """A forged poison message fails nothing and writes nothing: not for an unknown
    experiment, a configuration outside the space or never asked, nor a pending one none of
    whose deliveries failed; a real one (a delivery failed) stores the failure."""
    experiment, _ = prepared(data, max_evals=2)
    first, second = experiment.ask(2)
    files = experiment.files
    before = sorted(files.list())
    outside = {**dict(first), "chunk_size": 4096}
    for target, configuration, why in [
            (Experiment(files, "no-such-experiment"), first, "no experiment 'no-such-experiment'"),
            (experiment, outside, "not in experiment exp-1's space"),
            (experiment, {**dict(first), "number_of_chunks": 7}, "not in experiment exp-1's space"),
            (experiment, first, "has no failed delivery on record")]:
        with pytest.raises(ConfigError, match=why):
            _poison(target, configuration)
    assert sorted(files.list()) == before and experiment.results() == {}
    # a delivery fails transiently: now the poison message is believed
    with pytest.raises(StoreError):
        experiment.evaluate(experiment.evaluation_request(first), lambda c: (_ for _ in ()).throw(StoreError("down")))
    assert experiment.was_tried(first.key) and not experiment.was_tried(second.key)
    outcome = _poison(experiment, first)
    assert outcome.status == "failed" and outcome.error == "poisoned"
    assert experiment.result(first.key)["round"] == 1
    # a second delivery marks it tried before running (the first may have crashed its worker)
    experiment.evaluate(experiment.evaluation_request(second), ok(0.5), delivery=2)
    assert experiment.was_tried(second.key)
    assert _poison(experiment, second).stored  # evaluated after all: nothing failed
    assert experiment.result(second.key)["status"] == "ok"


def test_one_key_with_non_ascii_values(data):
    """Configuration.key is the sha256 of the canonical JSON with UTF-8 kept (computed here by
    hand); result files are named by it and the report counts both evaluations."""
    space = {"chunking_method": ["recursive"], "chunk_size": [256], "chunk_overlap": [0], "search_mode": ["vector"],
             "number_of_chunks": [3], "system_message_text": ["Réponds en français.", "Antworte auf Deutsch, bitte: ü"]}
    experiment, _ = prepared(data, space=space)
    configs = experiment.ask(2)
    for config in configs:
        canonical = json.dumps(config.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert config.key == hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
        experiment.evaluate(experiment.evaluation_request(config), ok(0.5))
    assert sorted(experiment.results()) == sorted(c.key for c in configs)
    experiment.tell([c.key for c in configs])
    assert experiment.build_report()["counts"]["evaluations"] == 2


def test_long_errors_are_cut_with_the_full_text_beside_the_experiment(data):
    experiment, _ = prepared(data)
    (config,) = experiment.ask(1)
    text = "x" * 100_000

    def fails(configuration):
        return {"status": "failed", "error": text, "metrics": {}}

    outcome = experiment.evaluate(experiment.evaluation_request(config), fails)
    assert len(outcome.error.encode("utf-8")) <= MAX_MESSAGE_BYTES
    address = outcome.error.rsplit("full text: ", 1)[1].rstrip("]")
    assert experiment.files.read_bytes(address).decode() == text
    summary = experiment.tell([config.key])
    assert len(experiment.study().trials[0].error) <= MAX_MESSAGE_BYTES and summary.failed == 1


def test_a_space_smaller_than_the_budget_is_said(data):
    _, out = prepared(data, max_evals=8)
    assert out.max_evals == 2
    assert out.notes == ("the space holds 2 valid configurations, fewer than the budget of 8: 2 will be evaluated",)


def test_an_override_that_removes_a_chunker_says_so(data):
    _, out = prepared(data, space={"chunking_method": ["recursive", "hierarchical"], "chunk_size": [256],
                                   "chunk_overlap": [200], "search_mode": ["vector"], "number_of_chunks": [3]},
                      max_evals=1)
    rule = "rule overlap_below_half_chunk (chunk_size > 2 * chunk_overlap) fails"
    assert out.notes == (f"the request's space removed every configuration with chunking_method='recursive': {rule}",
                         f"the request's space removed every configuration with chunk_size=256: {rule}",
                         f"the request's space removed every configuration with chunk_overlap=200: {rule}")
    # 100 leaves 256 (> 200) and removes 128 only
    _, out = prepared(data, space={"chunking_method": ["recursive"], "chunk_size": [128, 256], "chunk_overlap": [100],
                                   "search_mode": ["vector"], "number_of_chunks": [3]}, max_evals=1, name="exp-2")
    assert out.notes == (f"the request's space removed every configuration with chunk_size=128: {rule}",)


def test_a_parameter_that_applies_in_no_configuration_is_said(data):
    base = {"chunking_method": ["recursive"], "chunk_size": [256], "chunk_overlap": [0], "number_of_chunks": [3]}
    _, out = prepared(data, space={**base, "search_mode": ["vector"], "reranker": ["none"], "retrieval_depth": [40],
                                   "ranker_k": [20, 60]}, max_evals=1)
    assert out.notes == (
        "the request's space: ranker_k=20,60 is used by no configuration: ranker_k applies only when "
        "search_mode is hybrid and ranker_strategy is rrf",
        "the request's space: retrieval_depth=40 is used by no configuration: retrieval_depth applies only "
        "when reranker is not none")
    # once hybrid rrf search is in the space, ranker_k is used and nothing is said of it
    _, out = prepared(data, space={**base, "search_mode": ["vector", "hybrid"], "ranker_strategy": ["rrf"],
                                   "ranker_k": [20]}, max_evals=2, name="exp-2")
    assert out.notes == ()


def test_an_evaluation_past_its_budget_is_stored_as_failed_and_a_late_result_shows(data):
    import time

    experiment, _ = prepared(data)
    (config,) = experiment.ask(1)
    finished = []

    def slow(spec, configuration):  # the evaluator reads the stored spec: this one takes 1 s
        time.sleep(1.0)
        finished.append(spec.experiment_id)
        return ok(0.75)(configuration)

    outcome = evaluate_request(experiment, experiment.evaluation_request(config), slow, 0.1)
    assert outcome.status == "failed"
    assert outcome.error == "the evaluation took longer than its budget of 0.1 s (RAGTUNE_EVALUATION_TIMEOUT_S)"
    experiment.tell([config.key])
    deadline = time.monotonic() + 10
    while not finished and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # its result is written right after
    row = experiment.build_report()["leaderboard"][0]
    assert finished == ["exp-1"] and row["status"] == "failed" and row["late_result"] == {"status": "ok", "score": 0.75}


def test_results_and_rows_carry_their_round_and_cost(data):
    """Two configurations asked in one round: both stored results and both leaderboard rows
    say round 1; the cost an evaluation returns is kept as it is (row ``cost``)."""
    experiment, _ = prepared(data)
    first, second = experiment.ask(2)
    spent = {"seconds": 0.5, "texts_embedded": 7, "texts_from_cache": 2, "chat_requests": 0,
             "replies_from_cache": 0, "prompt_tokens": 0, "completion_tokens": 0, "tokens": 0}
    experiment.evaluate(experiment.evaluation_request(first), lambda c: {**ok(0.25)(c), "cost": spent})
    experiment.record_failure(second, "past the round's timeout")
    assert experiment.result(first.key)["round"] == 1 and experiment.result(second.key)["round"] == 1
    experiment.tell([first.key, second.key])
    rows = {r["key"]: r for r in experiment.build_report()["leaderboard"]}
    assert rows[first.key]["round"] == rows[second.key]["round"] == 1
    assert rows[first.key]["cost"] == spent and rows[second.key]["cost"] == {}


class CountingFiles(LocalFiles):
    """LocalFiles counting every read, look-up and listing by key."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.calls: list[tuple[str, str]] = []

    def read_bytes(self, key):
        self.calls.append(("read", key.rsplit("/", 1)[-1]))
        return super().read_bytes(key)

    def exists(self, key):
        self.calls.append(("exists", key.rsplit("/", 1)[-1]))
        return super().exists(key)

    def read_or_none(self, key):
        self.calls.append(("read_or_none", key.rsplit("/", 1)[-1]))
        return super().read_or_none(key)

    def list(self, prefix=""):
        self.calls.append(("list", prefix.rsplit("/", 1)[-1]))
        return super().list(prefix)


def test_an_evaluation_reads_the_spec_and_the_study_once_per_process_and_looks_up_only_its_result(data):
    experiment, _ = prepared(data, space={"chunking_method": ["recursive"], "chunk_size": [256], "chunk_overlap": [0],
                                          "search_mode": ["vector"], "number_of_chunks": [2, 3, 4, 5, 6]}, max_evals=5)
    first, second = experiment.ask(2)
    files = CountingFiles(data / "reports")
    outcome = Experiment(files, "exp-1").evaluate(experiment.evaluation_request(first.to_dict()), ok(0.5))
    assert outcome.status == "ok" and outcome.score == 0.5
    assert files.calls == [("read", "study.json"), ("read", "spec.json"), ("read_or_none", f"{first.key}.json")]
    # the next message of the same experiment: the study read holds its trial, the spec never changes
    files.calls.clear()
    outcome = Experiment(files, "exp-1").evaluate(experiment.evaluation_request(second.to_dict()), ok(0.4))
    assert outcome.score == 0.4 and files.calls == [("read_or_none", f"{second.key}.json")]
    # a configuration asked after that read: the study is read again, and its round is the new one
    third = experiment.ask(3)[2]
    files.calls.clear()
    outcome = Experiment(files, "exp-1").evaluate(experiment.evaluation_request(third.to_dict()), ok(0.3))
    assert files.calls == [("read", "study.json"), ("read_or_none", f"{third.key}.json")]
    stored = Experiment(files, "exp-1").result(third.key)
    assert stored["round"] == experiment.study().trial_of(third).round
    # a configuration never asked is refused after one more read, and nothing is stored
    fourth = experiment.study().ask(1)[0]  # asked of a copy that is never saved
    files.calls.clear()
    with pytest.raises(ConfigError, match="never asked"):
        Experiment(files, "exp-1").evaluate(experiment.evaluation_request(fourth.to_dict()), ok(0.9))
    assert files.calls == [("read", "study.json")] and Experiment(files, "exp-1").result(fourth.key) is None
    with pytest.raises(ConfigError, match="no experiment 'exp-2' is stored"):
        Experiment(files, "exp-2").evaluate(experiment.evaluation_request(first.to_dict()), ok(0.5))


def test_evaluations_that_start_at_once_on_a_new_instance_read_the_spec_and_the_study_once(data):
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    experiment, _ = prepared(data, space={"chunking_method": ["recursive"], "chunk_size": [256], "chunk_overlap": [0],
                                          "search_mode": ["vector"], "number_of_chunks": [2, 3, 4, 5, 6]}, max_evals=5)
    configs = experiment.ask(5)
    files = CountingFiles(data / "reports")
    slow_read = files.read_bytes
    start = threading.Barrier(5)

    def read_bytes(key):
        time.sleep(0.05)  # a network read: the other threads arrive meanwhile
        return slow_read(key)

    files.read_bytes = read_bytes

    def evaluate(config):
        start.wait()
        return Experiment(files, "exp-1").evaluate(experiment.evaluation_request(config.to_dict()), ok(0.5)).status

    with ThreadPoolExecutor(5) as pool:
        assert list(pool.map(evaluate, configs)) == ["ok"] * 5
    reads = sorted(name for kind, name in files.calls if kind == "read")
    assert reads == ["spec.json", "study.json"]


def test_enqueued_keys_are_listed_once(data):
    experiment, _ = prepared(data)
    first, second = experiment.ask(2)
    assert experiment.enqueued_keys() == set()
    experiment.mark_enqueued(first.key)
    files = CountingFiles(data / "reports")
    again = Experiment(files, "exp-1")
    sent = again.enqueued_keys()
    assert sent == {first.key}
    assert second.key not in sent
    assert files.calls[0] == ("list", "queued")


BIG_SPACE = {"chunking_method": ["recursive"], "chunk_size": [128, 256, 512], "chunk_overlap": [0],
             "search_mode": ["vector", "hybrid"], "number_of_chunks": [3, 5]}


class SlowFiles(LocalFiles):
    """A local store whose reads and writes each take ``delay_s`` and count how many are in
    flight at once (a network store's round trips)."""

    def __init__(self, root, delay_s=0.02):
        super().__init__(root)
        self.delay_s, self.lock, self.now, self.most = delay_s, threading.Lock(), 0, 0

    def _slow(self, fn, *args):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(self.delay_s)
            return fn(*args)
        finally:
            with self.lock:
                self.now -= 1

    def read_bytes(self, key):
        return self._slow(super().read_bytes, key)

    def read_or_none(self, key):
        return self._slow(super().read_or_none, key)

    def write_bytes(self, key, data):
        return self._slow(super().write_bytes, key, data)


def test_enqueue_sends_each_configuration_once_and_marks_it(data):
    experiment, _ = prepared(data, space=BIG_SPACE, max_evals=12)
    configs = [c.to_dict() for c in experiment.ask(12)]
    files = SlowFiles(data / "reports")
    sent_bodies = []

    def send(body):
        sent_bodies.append(json.loads(body))

    keys, sent = Experiment(files, "exp-1").enqueue(configs + configs[:2], send)  # two given twice
    assert keys == [Configuration(c).key for c in configs + configs[:2]] and sent == 12
    assert sorted(b["key"] for b in sent_bodies) == sorted(keys[:12])
    assert all(b == EvaluationRequest("exp-1", b["key"], b["configuration"]).to_dict() for b in sent_bodies)
    assert experiment.enqueued_keys() == set(keys)
    assert 1 < files.most <= STORE_REQUESTS_AT_ONCE  # marked several at a time, never more than the bound
    # a retried step sends nothing again
    assert Experiment(files, "exp-1").enqueue(configs, send) == (keys[:12], 0) and len(sent_bodies) == 12


def test_a_message_that_cannot_be_sent_is_not_marked_and_the_error_is_raised(data):
    experiment, _ = prepared(data, space=BIG_SPACE, max_evals=4)
    configs = [c.to_dict() for c in experiment.ask(4)]
    refused = Configuration(configs[2]).key

    def send(body):
        if json.loads(body)["key"] == refused:
            raise StoreError("the queue refused the message")

    with pytest.raises(StoreError, match="refused"):
        experiment.enqueue(configs, send)
    marked = experiment.enqueued_keys()
    assert refused not in marked and marked <= {Configuration(c).key for c in configs}
    resent = []
    keys, sent = experiment.enqueue(configs, lambda body: resent.append(json.loads(body)["key"]))
    assert sorted(resent) == sorted(set(keys) - marked) and refused in resent  # the retry sends what is left
    assert sent == len(resent) and experiment.enqueued_keys() == set(keys)


def test_many_results_are_read_a_few_at_a_time_and_told_once(data):
    experiment, _ = prepared(data, space=BIG_SPACE, max_evals=12)
    configs = experiment.ask(12)
    for i, config in enumerate(configs):
        experiment.evaluate(experiment.evaluation_request(config), ok(i / 100))
    files = SlowFiles(data / "reports")
    slow = Experiment(files, "exp-1")
    keys = [c.key for c in configs]
    summary = slow.tell(keys + keys[:3])  # keys given twice are told once
    assert (summary.evaluated, summary.failed, summary.best_score, summary.best_key) == (12, 0, 0.11, keys[11])
    assert 1 < files.most <= STORE_REQUESTS_AT_ONCE
    files.most = 0
    results = Experiment(files, "exp-1").results()
    assert sorted(results) == sorted(keys)
    assert {k: r["metrics"]["mrr"] for k, r in results.items()} == {k: i / 100 for i, k in enumerate(keys)}
    assert 1 < files.most <= STORE_REQUESTS_AT_ONCE


def test_each_keeps_order_and_raises_the_first_error():
    assert _each(lambda x: x * 2, list(range(50))) == [x * 2 for x in range(50)]
    with pytest.raises(ValueError, match="3"):
        _each(lambda x: (_ for _ in ()).throw(ValueError(str(x))) if x in (3, 30) else x, list(range(40)))


def test_enqueue_stops_sending_soon_after_the_queue_fails(data):
    """The queue is down: every send fails after a while (a client's own timeout). The step
    fails once the sends in flight end; it does not try every message."""
    experiment, _ = prepared(data, space=BIG_SPACE, max_evals=12)
    configs = [c.to_dict() for c in experiment.ask(12)]
    calls = []
    lock = threading.Lock()

    def send(body):
        with lock:
            calls.append(json.loads(body)["key"])
        time.sleep(0.2)
        raise ConnectionError("queue unreachable")

    started = time.perf_counter()
    with pytest.raises(ConnectionError):
        experiment.enqueue(configs, send)
    took = time.perf_counter() - started
    assert experiment.enqueued_keys() == set()
    assert len(calls) <= STORE_REQUESTS_AT_ONCE, f"{len(calls)} sends tried after the first failed ({took:.1f} s)"


def test_enqueue_whose_marker_write_fails_raises_and_the_retry_resends_only_that(data):
    experiment, _ = prepared(data, space=BIG_SPACE, max_evals=6)
    configs = [c.to_dict() for c in experiment.ask(6)]
    bad = Configuration(configs[3]).key

    class Flaky(LocalFiles):
        def write_bytes(self, key, body):
            if key.endswith(f"queued/{bad}"):
                raise StoreError("store down")
            return super().write_bytes(key, body)

    sent = []
    with pytest.raises(StoreError):
        Experiment(Flaky(data / "reports"), "exp-1").enqueue(configs, lambda b: sent.append(json.loads(b)["key"]))
    assert bad in sent and bad not in experiment.enqueued_keys()  # sent, but its marker was not written
    marked = experiment.enqueued_keys()
    assert marked <= set(sent)
    again = []
    keys, n = experiment.enqueue(configs, lambda b: again.append(json.loads(b)["key"]))
    # the retry sends only what is not marked: the one whose marker failed, and any not reached
    assert sorted(again) == sorted(set(keys) - marked) and bad in again and n == len(again)


def test_tell_with_duplicate_and_unknown_keys(data):
    experiment, _ = prepared(data, space=BIG_SPACE, max_evals=6)
    configs = experiment.ask(6)
    for i, c in enumerate(configs):
        experiment.evaluate(experiment.evaluation_request(c), ok(i / 10))
    keys = [c.key for c in configs]
    summary = experiment.tell(keys + keys + ["nope", "../../etc"], missing="timeout")
    assert summary.evaluated == 6 and summary.failed == 0
    again = experiment.tell(keys, missing="timeout")  # a retried step changes nothing
    assert again.to_dict() == summary.to_dict()


def test_tell_of_a_corrupt_result_raises_and_saves_nothing(data):
    experiment, _ = prepared(data, space=BIG_SPACE, max_evals=4)
    configs = experiment.ask(4)
    for i, c in enumerate(configs):
        experiment.evaluate(experiment.evaluation_request(c), ok(i / 10))
    (data / "reports" / "experiments" / "exp-1" / "results" / f"{configs[2].key}.json").write_bytes(b"\xff{")
    before = experiment.summary().to_dict()
    with pytest.raises(DamagedFileError, match=f"results/{configs[2].key}.json is not valid JSON"):
        experiment.tell([c.key for c in configs])
    assert not is_transient(DamagedFileError("x"))  # a retry reads the same bytes
    assert experiment.summary().to_dict() == before


def test_results_while_results_are_being_written(data):
    experiment, _ = prepared(data, space=BIG_SPACE, max_evals=12)
    configs = experiment.ask(12)
    stop = threading.Event()
    errors = []

    def writer():
        i = 0
        while not stop.is_set():
            c = configs[i % 12]
            experiment.write_result(c.key, {"key": c.key, "status": "ok", "metrics": {"mrr": i}})
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(200):
            try:
                experiment.results()
            except Exception as exc:  # noqa: BLE001
                errors.append(repr(exc))
    finally:
        stop.set()
        t.join()
    assert errors == []


def test_what_a_process_remembers_belongs_to_one_store_object(tmp_path):
    """Two stores holding an experiment of the same id never answer for each other, even when
    their roots read the same (a relative folder from two working directories)."""
    import os

    spaces = {"a": [3, 5], "b": [7, 9]}
    stores = {}
    for name, ks in spaces.items():
        root = tmp_path / name
        root.mkdir()
        (root / "golden.jsonl").write_bytes(GOLDEN)
        (root / "docs").mkdir()
        (root / "docs" / "plan.md").write_text("The deductible is 500 dollars.")
        stores[name] = prepared(root, space={"chunking_method": ["recursive"], "chunk_size": [256],
                                             "chunk_overlap": [0], "search_mode": ["vector"], "number_of_chunks": ks})[0]
    config_a = stores["a"].ask(1)[0]
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path / "a")
        in_a = Experiment(LocalFiles("reports"), "exp-1")
        assert in_a.evaluate(in_a.evaluation_request(config_a.to_dict()), ok(0.5)).status == "ok"
        os.chdir(tmp_path / "b")
        in_b = Experiment(LocalFiles("reports"), "exp-1")  # the same root text, another store
        with pytest.raises(ConfigError, match="not in experiment exp-1's space"):
            in_b.evaluate(in_b.evaluation_request(config_a.to_dict()), ok(0.5))
        assert in_b.spec().documents.endswith(str(tmp_path / "b" / "docs"))
    finally:
        os.chdir(cwd)


def test_leaderboard_rows_carry_a_retrieval_objectives_interval(data):
    """The objective mrr is a retrieval metric: its row's interval is the evaluation's bootstrap
    interval at its rank grain (stored in the result, copied as it is)."""
    experiment, _ = prepared(data)
    (config,) = experiment.ask(1)
    retrieval = {"doc": {"means": {"mrr": 0.25}, "ci_low": {"mrr": 0.125}, "ci_high": {"mrr": 0.5}},
                 "page": {"means": {"mrr": 0.1}, "ci_low": {"mrr": 0.0}, "ci_high": {"mrr": 0.2}}}
    experiment.evaluate(experiment.evaluation_request(config),
                        lambda c: {**ok(0.25)(c), "retrieval": retrieval, "rank_grain": "doc"})
    experiment.tell([config.key])
    row = experiment.build_report()["leaderboard"][0]
    assert (row["score"], row["ci_low"], row["ci_high"]) == (0.25, 0.125, 0.5)
