"""Preparing an experiment (its space, spec and study) and evaluating from its stored spec.

- :func:`build_space`: the default space for the configured models, narrowed or widened by a
  space file and overrides, with a note for every value the overrides left with no valid
  configuration (``--set chunk_overlap=100`` with both chunkers removes every recursive one).
- :func:`hold_number_of_chunks`: a retrieval objective searches the longest ranking only.
- :func:`budget_note`: the note when the space holds fewer configurations than the budget.
- :func:`plan_experiment` (the objective and the space) and :func:`start_study` (the spec
  completed from the golden file, a new study and its notes): how every experiment is
  prepared, by the Functions' prepare step and by the local runner (``ragtune optimize``).
- :func:`prepare_request`: the Functions' prepare step, from a validated request.
- :class:`LoadedEvaluator`: one experiment's loaded corpus, golden file and evaluation
  context, evaluating a configuration on them; how every driver evaluates (the local runner
  holds one, :class:`StoredEvaluator` one per experiment), with :func:`embed_questions_early`.
- :class:`StoredEvaluator`: runs one configuration on the data the stored spec names (the
  evaluator trusts nothing else), keeping the loaded corpus and golden file between
  evaluations of the same experiment in one process.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from core.documents import list_document_ids
from core.errors import ConfigError, StoreError
from core.evaluation.gate import golden_documents_reason
import core.evaluation.single as single  # run_single_evaluation read at call time (tests replace it)
from core.evaluation.single import Corpus, EXTRACTIVE, EvaluationContext, check_objective
from core.experiment.engine import Experiment
import core.experiment.requests as experiment_requests  # models_from_settings read at call time
from core.experiment.spec import ExperimentSpec, default_objective
from core.experiment.types import EvaluationOutcome, EvaluationRequest, Prepared, cut_text
from core.golden import read_golden
from core.heap import freeze_loaded_heap
from core.inputs import shown_address
from core.metrics.retrieval import metric_names
from core.models import OpenAIEmbeddingModel
from core.models.context_length import detect_context_length
from core.optimization.defaults import start_configuration
from core.optimization.parameters import NO_RERANKER, PARAMETER_NAMES, unconfigured_values
from core.optimization.rules import APPLIES_WHEN
from core.optimization.space import SearchSpace, default_space
from core.optimization.space_file import read_space_file
from core.optimization.study import Study
from core.text import plural

if TYPE_CHECKING:
    from core.golden.types import GoldenSet
    from core.models.embeddings import EmbeddingModel
    from core.reports.files import Files
    from core.settings import Settings

logger = logging.getLogger(__name__)


def removed_values(before: SearchSpace, after: SearchSpace, source: str) -> list[str]:
    """A note per value of ``after`` that a validity rule removed from every configuration
    (while ``before`` had a configuration with it), with the rule: ``--set chunk_overlap=100``
    removes ``chunk_size=128`` (not above twice the overlap).

    Args:
        before: the space before the overrides.
        after: the space after them.
        source: where the overrides come from (``"--set"``).
    """
    notes = []
    levels, _ = after.level_codes()
    before_levels, _ = before.level_codes()
    for j, p in enumerate(after.parameters):
        for value in p.values:
            if value in levels[j] or (value not in before_levels[j] and value in before[p.name].values):
                continue  # kept, or already without a valid configuration before the overrides
            why = None
            for row in after._walk(PARAMETER_NAMES, use_rules=False):  # the grid before the rules
                if row[j] == value:
                    why = after.why_invalid(dict(zip(PARAMETER_NAMES, row)))
                    break
            if why:  # else the value only ever stands where its parameter does not apply
                notes.append(f"{source} removed every configuration with {p.name}={value!r}: {why}")
    return notes


def unused_parameters(space: SearchSpace, names: Iterable[str], source: str) -> list[str]:
    """A note per parameter of ``names`` that applies in no configuration of ``space``, even
    before the validity rules (whose removals :func:`removed_values` notes): ``--set
    retrieval_depth=40`` in a space whose only reranker is ``none`` changes nothing.

    Args:
        space: the space as planned.
        names: the parameters ``source`` sets.
        source: where they are set (``"--set"``, ``"--space FILE"``), for the note.
    """
    wanted = {j for j, p in enumerate(space.parameters) if p.name in names and p.name in APPLIES_WHEN}
    for row in space._walk(PARAMETER_NAMES, use_rules=False):  # a rule's removals are removed_values' notes
        if not wanted:
            break
        wanted -= {j for j in wanted if row[j] is not None}
    notes = []
    for j in sorted(wanted):
        p = space.parameters[j]
        notes.append(f"{source}: {p.name}={','.join(str(v) for v in p.values)} is used by no configuration: "
                     f"{p.name} applies only when {APPLIES_WHEN[p.name]}")
    return notes


def context_length(model: EmbeddingModel) -> int | None:
    """An embedding model's context length in tokens: its own ``max_input_tokens``, else, for an
    OpenAI-compatible endpoint, the length detected with a few calls
    (``core.models.context_length``), else None (unknown: chunk sizes are not bounded)."""
    given = getattr(model, "max_input_tokens", None)
    if given is not None:
        return given

    if isinstance(model, OpenAIEmbeddingModel):
        return detect_context_length(model)
    return None


def known_context_length(model: EmbeddingModel) -> int | None:
    """An embedding model's context length in tokens when it is known without loading the
    model or calling an endpoint (what ``optimize --dry-run`` bounds chunk sizes with), else
    None: a packaged or folder ONNX model's window (``core.models.onnx``: read from its files'
    table or its folder's config, 512 tokens for ``local:bge-small-en-v1.5``), an endpoint's
    length given in the settings. A sentence-transformers model (``local:all-MiniLM-L6-v2``,
    ``hf:``) reads it only once loaded, and an endpoint without a given length is asked
    (:func:`context_length`): None for them."""
    from core.models.onnx import OnnxEmbeddingModel

    if isinstance(model, (OnnxEmbeddingModel, OpenAIEmbeddingModel)):
        return model.max_input_tokens
    return None


def build_space(*, embedding_models: Mapping[str, Any], foundation_models: Sequence[str],
                vector_stores: Sequence[str] = ("milvus-lite",), space_file: str | None = None,
                overrides: Mapping[str, Any] | None = None, overrides_source: str = "--set",
                generators: Sequence[str] = (), default_embedding_models: Sequence[str] | None = None,
                rerankers: Sequence[str] = ()) -> tuple[Any, list[str]]:
    """The default space for the models, narrowed or widened by the space file and overrides.

    Args:
        embedding_models: model id -> model (its ``max_input_tokens`` bounds the chunk sizes).
        foundation_models: the foundation models that exist here (the extractive baseline too).
        vector_stores: the backends of the default space.
        space_file: a JSON or YAML space file, or None.
        overrides: parameter -> values, applied last.
        overrides_source: where the overrides come from, for messages.
        generators: the configured chat models; when there are some and neither the space file
            nor the overrides name ``foundation_model``, the space's foundation models are these
            (the extractive baseline only when asked for).
        default_embedding_models: the ids the default space holds (None: every one of
            ``embedding_models``); a space file or override may name any configured one.
        rerankers: reranker ids a space may name besides ``none``.

    Returns:
        ``(space, notes)``: ``notes`` say which values the overrides left without a valid
        configuration, and why, and which parameters the space file or the overrides set that
        apply in no configuration (``unused_parameters``).

    Raises:
        ConfigError: a bad space file or override, a space with no valid configuration, or a
            model or reranker the space names that is not configured.
    """
    lengths = {name: context_length(model) for name, model in embedding_models.items()
               if default_embedding_models is None or name in default_embedding_models}
    if space_file:
        space = SearchSpace.from_file(space_file, embedding_models=lengths, foundation_models=list(foundation_models),
                                      vector_stores=tuple(vector_stores))
    else:
        space = default_space(lengths, list(foundation_models), tuple(vector_stores))
    notes: list[str] = []
    if generators and not space_file and "foundation_model" not in (overrides or {}):
        space = space.with_overrides({"foundation_model": tuple(generators)}, source="the configured chat model")
    if overrides:
        narrowed = space.with_overrides(overrides, source=overrides_source)
        notes = removed_values(space, narrowed, overrides_source)
        space = narrowed
    if space_file:
        notes += unused_parameters(space, [n for n in read_space_file(Path(space_file)) if n not in (overrides or {})],
                                   f"--space {space_file}")
    notes += unused_parameters(space, list(overrides or {}), overrides_source)
    source = " and ".join(filter(None, (space_file and f"--space {space_file}", overrides and overrides_source))) \
        or "the space"
    problems = unconfigured_values({p.name: p.values for p in space.parameters},
                                   {"embedding_model": list(embedding_models),
                                    "foundation_model": list(foundation_models),
                                    "reranker": [NO_RERANKER, *rerankers]}, source)
    if problems:
        raise ConfigError("; ".join(problems))
    return space, notes


def hold_number_of_chunks(space: SearchSpace, objective: str) -> tuple[SearchSpace, str | None]:
    """``space`` with ``number_of_chunks`` held at its largest value when ``objective`` is a
    retrieval metric, and the note that says so; ``(space, None)`` otherwise.

    Every retrieval metric (``mrr``, ``found@k``, ``recall@k``, ``precision@k`` divided by
    ``k``, ``nDCG@k``; ``core.metrics.retrieval``) scores the first ``number_of_chunks``
    results, and a shorter list is the same search cut earlier, so fewer chunks never score
    higher (a hybrid search, whose legs are fetched deeper for a longer list,
    ``core.vectorstores.fusion.hybrid_window``, may reorder a few first results). Searching the
    shorter lists would spend evaluations on configurations that cannot win.

    Args:
        space: the space (unchanged when ``number_of_chunks`` has one value).
        objective: the experiment's objective metric.

    Returns:
        ``(space, note)``; ``note`` names the value kept and how to search the others.
    """
    values = tuple(space["number_of_chunks"].values)
    if objective not in metric_names() or len(values) < 2:
        return space, None
    longest = max(values)
    shown = ",".join(str(v) for v in values)
    note = (f"number_of_chunks is held at {longest} (the space holds {shown}): with the retrieval objective "
            f"{objective} a shorter list is the same ranking cut earlier and scores no higher; to search "
            f"them, name the values (--set number_of_chunks={shown})")
    return space.with_overrides({"number_of_chunks": [longest]}), note


def budget_note(n_valid: int, max_evals: int | None) -> str | None:
    """The note when the space holds fewer valid configurations than ``max_evals``, else None."""
    if max_evals is not None and n_valid < max_evals:
        return (f"the space holds {plural(n_valid, 'valid configuration')}, fewer than the budget of {max_evals}: "
                f"{n_valid} will be evaluated")
    return None


@dataclass(frozen=True)
class ExperimentPlan:
    """What an experiment searches, before its spec is written.

    Attributes:
        objective: the metric maximised (the one asked for, else ``default_objective``).
        space: the ``SearchSpace``.
        notes: the values the overrides left without a valid configuration, and why.
    """

    objective: str
    space: SearchSpace
    notes: tuple[str, ...]


def plan_experiment(golden: GoldenSet, *, objective: str | None, has_judge: bool,
                    embedding_models: Mapping[str, Any], chat_models: Mapping[str, Any],
                    vector_stores: Sequence[str], space_file: str | None = None,
                    overrides: Mapping[str, Any] | None = None, overrides_source: str = "--set",
                    default_embedding_models: Sequence[str] | None = None,
                    rerankers: Sequence[str] = ()) -> ExperimentPlan:
    """The objective and the space of a new experiment on ``golden``.

    The foundation models are the extractive baseline and the chat models; the space's default
    ones are the chat models when there are some (see :func:`build_space`). The objective asked
    for is checked by the caller (``check_objective``) before the golden file is read. With a
    retrieval objective and neither a space file nor an override naming ``number_of_chunks``,
    it is held at its largest value (:func:`hold_number_of_chunks`, the first note).

    Args:
        golden: the golden file (its reference answers choose the default objective).
        objective: the metric asked for, or None for ``default_objective``.
        has_judge: a judge model scores answers.
        embedding_models: embedding model id -> model.
        chat_models: foundation model id -> chat model.
        vector_stores: the backends of the default space.
        space_file / overrides / overrides_source / default_embedding_models / rerankers: as
            :func:`build_space`.

    Raises:
        ConfigError: as :func:`build_space`.
    """
    objective = objective or default_objective(golden, has_generator=bool(chat_models) or has_judge)
    space, notes = build_space(embedding_models=embedding_models, foundation_models=[EXTRACTIVE, *chat_models],
                               vector_stores=vector_stores, space_file=space_file, overrides=overrides,
                               overrides_source=overrides_source, generators=list(chat_models),
                               default_embedding_models=default_embedding_models, rerankers=rerankers)
    if not space_file and "number_of_chunks" not in (overrides or {}):  # values a user named are searched
        space, held = hold_number_of_chunks(space, objective)
        notes = ([held] if held else []) + list(notes)
    return ExperimentPlan(objective, space, tuple(notes))


@dataclass(frozen=True)
class NewStudy:
    """A new experiment's spec and study, before they are stored (``Experiment.create``).

    Attributes:
        spec: the ``ExperimentSpec``, with what it records of the golden file.
        study: a new ``Study`` of the space with the spec's sampler, objective, seed and budget.
        notes: the budget note (a space smaller than the budget) first, then the plan's notes.
    """

    spec: ExperimentSpec
    study: Study
    notes: tuple[str, ...]
    question_ids: tuple[str, ...] = ()


def start_study(spec: ExperimentSpec, golden: GoldenSet, space: SearchSpace,
                notes: Sequence[str] = (), default_embedding_model: str | None = None) -> NewStudy:
    """Complete ``spec`` with what it records of ``golden`` (sha256, format, question count) and
    start a new study of ``space`` (the plan's, possibly narrowed by pre-selection); the
    configuration ``spec.start`` names (``core.optimization.defaults.start_configuration``), if
    any, is its first trial, and a ``reranked`` start says so in a note.

    Args:
        spec: the experiment's spec; its ``objective`` is the study's.
        golden: the golden file read for the experiment.
        space: the space searched.
        notes: the plan's notes, kept after the budget note.
        default_embedding_model: the configured embedding model, which the default
            configuration takes when the space holds it.
    """
    spec = replace(spec.screening(), golden_sha256=golden.sha256, golden_format=getattr(golden, "format", "ragtune"),
                   n_questions=len(golden.questions))

    if spec.multi_fidelity and spec.objective not in metric_names():
        spec = replace(spec, multi_fidelity=False)  # answer metrics have no per-question block: one rung
        first = (f"screen scores every configuration on every question with {spec.objective} (rungs of questions "
                 f"need a retrieval objective's per-question scores)" if spec.optimizer == "screen" else
                 f"multi-fidelity needs a retrieval objective; {spec.objective} is scored on every question")
        notes = [first] + list(notes)
    study = Study(space, spec.sampler(), spec.objective, spec.seed, max_evals=spec.max_evals)
    first_trial = start_configuration(space, spec.start, default_embedding_model)
    if first_trial is not None:
        study.enqueue(first_trial)
        if spec.start == "reranked":
            fetched = max(int(first_trial["retrieval_depth"]), int(first_trial["number_of_chunks"] or 0))
            notes = list(notes) + [f"{spec.optimizer} evaluates first the default configuration (or the nearest this "
                                   f"space holds) reranked by {first_trial['reranker']} over the first {fetched} "
                                   "results"]
    note = budget_note(space.n_valid, spec.max_evals)
    return NewStudy(spec, study, tuple(([note] if note else []) + list(notes)), tuple(q.id for q in golden.questions))


def prepare_request(files: Files, experiment_id: str, request: Mapping[str, Any] | None,
                    settings: Settings) -> Prepared:
    """The prepare step of a request (``core.experiment.requests.parse_experiment_request``;
    None: the one stored with ``Experiment.store_request``): read the golden file, build the
    space and store the spec, a new study and the notes. An experiment already prepared is left
    as it is.

    Raises:
        GoldenError / ConfigError / StoreError / DocumentError: the golden file, the documents
            (missing or empty), the objective, the space or the settings are unusable.
    """
    experiment = Experiment(files, experiment_id)
    if experiment.exists():
        study = experiment.study()
        return Prepared(study.objective_metric, study.space.n_valid, study.max_evals, tuple(experiment.notes()))
    if request is None:
        request = experiment.request()
    judge = settings.judge_model()
    if request.get("objective"):
        check_objective(request["objective"], has_judge=judge is not None)
    golden = read_golden(request["golden"])
    document_ids = list_document_ids(request["documents"])
    if not document_ids:
        raise ConfigError(f"{shown_address(request['documents'])} holds no documents to load "
                          "(missing, empty, or no supported file types)")
    missing = golden_documents_reason(golden, document_ids, shown_address(request["documents"]))
    if missing:  # every score would be 0
        raise ConfigError(missing)
    embedding, chat = experiment_requests.models_from_settings(settings)
    overrides = experiment_requests.request_overrides(request)
    reranker = settings.reranker()
    plan = plan_experiment(golden, objective=request.get("objective"), has_judge=judge is not None,
                           embedding_models=embedding, chat_models=chat, vector_stores=[settings.vector_store],
                           overrides=overrides, overrides_source="the request's space",
                           default_embedding_models=list(embedding)[:1],  # the configured one comes first
                           rerankers=[reranker.model_id] if reranker is not None else [])
    new = start_study(ExperimentSpec(experiment_id=experiment_id, golden=request["golden"],
                                     documents=request["documents"], objective=plan.objective,
                                     optimizer=request["optimizer"], max_evals=request["max_evals"],
                                     seed=request["seed"], overrides=overrides,
                                     vector_store=request.get("vector_store"),
                                     multi_fidelity=bool(request.get("multi_fidelity", False))),
                      golden, plan.space, plan.notes, default_embedding_model=next(iter(embedding), None))
    notes = [cut_text(n) for n in new.notes]
    Experiment.create(files, new.spec, new.study, list(new.question_ids)).write_notes(notes)
    return Prepared(plan.objective, plan.space.n_valid, new.study.max_evals, tuple(notes))


@dataclass(frozen=True)
class LoadedEvaluator:
    """Evaluates configurations of one experiment on its loaded data.

    Attributes:
        corpus: the loaded ``Corpus``.
        golden: the ``GoldenSet``.
        context: the ``EvaluationContext`` (models, stores, caches) shared by its evaluations.
    """

    corpus: Corpus
    golden: GoldenSet
    context: EvaluationContext

    def __call__(self, configuration: Mapping[str, Any], questions: Sequence[str] | None = None) -> dict[str, Any]:
        """Evaluate ``configuration`` (``run_single_evaluation``) on every question, or on the
        golden questions whose ids are in ``questions`` (a multi-fidelity rung): the result
        ``{"status", "error", "metrics", ...}``; a failure is a result with ``status``
        ``"failed"`` (see ``run_single_evaluation`` for what it raises).

        Raises:
            ConfigError: ``questions`` names an id the golden file does not hold.
        """
        golden = self.golden if questions is None else golden_subset(self.golden, questions)
        return single.run_single_evaluation(configuration, self.corpus, golden, context=self.context)


def golden_subset(golden: GoldenSet, question_ids: Sequence[str]) -> GoldenSet:
    """``golden`` with only the questions in ``question_ids`` (in golden-file order) and its own
    ``sha256`` (the file's and the ids'), so stored results of a subset never mix with the whole
    file's.

    Raises:
        ConfigError: an id the golden file does not hold.
    """
    import hashlib

    wanted = set(question_ids)
    known = {q.id for q in golden.questions}
    unknown = sorted(wanted - known)
    if unknown:
        raise ConfigError(f"the golden file has no question {unknown[0]!r} ({len(unknown)} unknown ids asked for)")
    if wanted == known:
        return golden
    kept = [q for q in golden.questions if q.id in wanted]
    digest = hashlib.sha256("\0".join([golden.sha256, *[q.id for q in kept]]).encode("utf-8")).hexdigest()
    return replace(golden, questions=kept, sha256=digest)


def embed_questions_early(context: EvaluationContext, golden: GoldenSet, space: SearchSpace) -> None:
    """Start embedding ``golden``'s questions with the space's embedding model while the
    documents load (``EvaluationContext.embed_questions_early``)."""
    context.embed_questions_early([q.question for q in golden.questions], space["embedding_model"].values)


class StoredEvaluator:
    """Evaluates configurations of stored experiments with a deployment's settings.

    The golden file and the documents are read from the experiment's spec (never from a
    message); a golden file whose sha256 changed since prepare fails the evaluation. The last
    experiment's corpus, golden file and evaluation context are kept for the next evaluation in
    the same process (one experiment at a time, so memory stays bounded).

    Args:
        settings: ``core.settings.Settings``.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._loaded: tuple[tuple[str, ...], LoadedEvaluator] | None = None

    def _inputs(self, spec: ExperimentSpec) -> LoadedEvaluator:
        from concurrent.futures import ThreadPoolExecutor


        with self._lock:
            which = (spec.experiment_id, spec.golden, spec.golden_sha256, spec.documents)
            if self._loaded is not None and self._loaded[0] == which:
                return self._loaded[1]
            # the documents (the longest read) load while the golden file and the space are read
            loading = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragtune-corpus")
            corpus_future = loading.submit(Corpus.load, spec.documents)
            context = None
            cold = self._loaded is None
            try:
                golden = read_golden(spec.golden)
                if golden.sha256 != spec.golden_sha256:
                    raise ConfigError(f"the golden file {shown_address(spec.golden)} changed since the experiment "
                                      f"started (sha256 {golden.sha256[:12]}..., expected {spec.golden_sha256[:12]}...)")
                settings = self.settings
                embedding, chat = experiment_requests.models_from_settings(settings)
                context = EvaluationContext(out_dir=settings.out_dir, embedding_models=embedding, chat_models=chat,
                                            vector_store_config=settings.vector_store_config(settings.out_dir),
                                            vector_store_configs=settings.vector_store_configs(settings.out_dir),
                                            judge=settings.judge_model(),
                                            rerankers={r.model_id: r for r in [settings.reranker()] if r is not None})
                # a cold instance opens its database while the documents load (a warm one has
                # the last experiment's context, whose evaluations may still run)
                if cold:
                    context.open_store_early()
                space = self._space(spec)
                if space is not None:  # the questions are embedded while the documents load
                    embed_questions_early(context, golden, space)
                corpus = corpus_future.result()
            except BaseException:
                if cold and context is not None:
                    context.close()
                raise
            finally:
                loading.shutdown(wait=True)  # a load still running after a failure ends before this returns
            if space is not None:  # else every collection gets a keyword index
                context.fit_to_space(space)
            loaded = LoadedEvaluator(corpus, golden, context)
            self._loaded = (which, loaded)
            return loaded

    def _space(self, spec: ExperimentSpec) -> Any:
        """The experiment's search space, from its stored study; None when it cannot be read
        (every collection then gets a keyword index, and search legs are fetched at the depth
        each search asks for)."""
        try:
            return Experiment(self.settings.report_store().files, spec.experiment_id).study().space
        except (StoreError, ConfigError) as exc:
            logger.info("experiment %s: no stored space (%s); every collection gets a keyword index",
                        spec.experiment_id, exc)
            return None

    def __call__(self, spec: ExperimentSpec, configuration: Mapping[str, Any],
                 questions: Sequence[str] | None = None) -> dict[str, Any]:
        """Evaluate ``configuration`` on ``spec``'s data (``run_single_evaluation``), on the
        questions whose ids are in ``questions`` (None: all).

        Raises:
            ConfigError: the golden file changed, or the settings are unusable.
            StoreError / DocumentError: the data cannot be read.
        """
        return self._inputs(spec)(configuration, questions)


def evaluate_request(experiment: Experiment, request: EvaluationRequest, evaluator: StoredEvaluator,
                     timeout_s: float | None, delivery: int = 1) -> EvaluationOutcome:
    """Run ``request`` (an ``EvaluationRequest``) on ``experiment`` with ``evaluator`` within
    ``timeout_s`` seconds (None: no limit); ``delivery`` is the message's dequeue count (see
    ``Experiment.evaluate``).

    Past the budget the evaluation is stored as failed (a configuration too slow for it fails
    the same way on every retry); the evaluation thread cannot be stopped, and should it finish
    later its result replaces the failure and the report shows it as a late result.

    Returns:
        The ``EvaluationOutcome``.

    Raises:
        ConfigError: see ``Experiment.evaluate``.
        TransientEvaluationError / StoreError: a transient failure (retry the message).
    """
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as FutureTimeout

    spec = experiment.spec()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragtune-evaluation")
    future = pool.submit(experiment.evaluate, request,
                         lambda configuration, *questions: evaluator(spec, configuration, *questions),
                         delivery=delivery)
    try:
        outcome = future.result(timeout=timeout_s)
        freeze_loaded_heap()  # the libraries an evaluation needs are loaded: later collections skip them
        return outcome
    except FutureTimeout:
        logger.error("configuration %s of experiment %s passed its budget of %s s", request.key,
                     experiment.experiment_id, timeout_s)
        return experiment.record_failure(request.configuration, f"the evaluation took longer than its budget of "
                                                                f"{timeout_s} s (RAGTUNE_EVALUATION_TIMEOUT_S)",
                                         rung=request.rung)
    finally:
        pool.shutdown(wait=False)


__all__ = ["ExperimentPlan", "LoadedEvaluator", "NewStudy", "StoredEvaluator", "budget_note", "build_space",
           "context_length", "embed_questions_early", "evaluate_request", "golden_subset", "known_context_length",
           "plan_experiment", "prepare_request",
           "removed_values", "start_study", "unused_parameters"]
