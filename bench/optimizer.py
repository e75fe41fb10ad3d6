"""Optimizer benchmark: what each search strategy spends to find a configuration near the best.

Default: three data sets (``bench/grid.py``: northwind-benefits, the first 50 questions of
squad-mini and of musique-mini), each with every configuration of a 144-configuration space
(rerankers, retrieval depth, top_k, chunk size, dense or hybrid search, both local embedding
models) evaluated once, retrieval only, and its per-question ``mrr`` stored. Each strategy of
:func:`strategies` (random search, the GAM, both with rungs of questions, the product's default
configuration first, screening on the first rung with promotions held to the best configuration
scored on every question, and ``screen``, what ``ragtune optimize`` runs by default: that
screening from the reranked default configuration, ``core.optimizers.SCREEN``) is then
replayed from those tables for ``--seeds`` seeds (default 100: over 20 seeds a median's ratio
to random search's moved by up to 0.2 from one set of seeds to the next; ``bench/replay.py``
``replay_questions``: scores looked up, nothing evaluated). Printed per data set: the default
configuration and its score; per strategy the median over seeds of the evaluations (a promotion
counts as one), and the median and the mean (over the seeds that got there) of the
question-evaluations (the real cost: each evaluation counts the questions it scored, a
promotion only its rung's new ones) until a configuration within one
point (0.01) of the best is scored on every question (a seed that never gets there counts as
infinite), the share of seeds that got there, and the replay's seconds; then each strategy's
median question-evaluations over random search's, and whether it is at most 0.6 on every data
set (the goal). The rungs: ``--min-questions`` (default 16) and ``--eta`` (default 3), so 49 or 50
questions give rungs of 16 and all. ``--strategies a,b`` replays only those (random always:
the ratios' base). ``--every-start`` also replays ``screen`` from each configuration of the held
space as its start and prints the best, median and worst start's median question-evaluations
and where ``screen``'s own start ranks: what the choice of the start is worth on that data set.

``--one-data-set``: the earlier single-data-set replay, described below.


One process, on one corpus and golden file:

1. the grid: every valid configuration of the offline default space
   (``default_space({LOCAL_MODEL_ID: 256}, ["extractive"])``, 84 configurations: chunking,
   chunk size and overlap, number of chunks, vector or hybrid search and its ranker) is
   evaluated once, retrieval only (no answers are generated, so the foundation model plays no
   part), and its objective (``mrr`` at the finest labelled grain by default) is written to a
   score table ``{configuration key: score}`` in the output folder, with the configurations.
   A re-run with the same corpus, questions, space and metric reads the table instead of
   evaluating; the per-configuration results, the embedding cache and the Milvus Lite
   collections also stay in that folder, so even a new table (another metric) is cheap;
2. the replays: the GAM sampler (``GAMSampler()``, its defaults), uniform random search
   (``RandomSampler()``) and Optuna's TPE (``TPESampler``, 10 random start-up trials) each
   search the table for ``--seeds`` seeds, one configuration per ask, each score looked up
   instead of evaluated (``bench/replay.py``). Every seed is replayed twice: once
   until it reaches the target, with the whole space as budget (evaluations to the target),
   and once for 20 evaluations (the best score after 10 and 20). Stopping at the target keeps
   TPE's replay short: once it has converged it mostly suggests configurations it has already
   tried, which cost no evaluation but take Optuna's time.

A last section replays the GAM asking 1, 4 and 8 configurations per round (``Study.ask(n)``,
as the Functions' rounds of ``RAGTUNE_PARALLEL_EVALUATIONS`` and ``ragtune optimize
--workers`` do) and prints the median rounds and evaluations to the target per batch size.

It prints, per optimizer, the median over seeds of the evaluations needed to reach a score
within 0.01 (1 point) of the grid's best, the median best score after 10 and after 20
evaluations, and the ratios GAM / random and GAM / TPE of the median evaluations. The goal
line is "GAM needs at most half the evaluations random search needs, and no more than TPE";
the last line says whether this run meets it. How many configurations lie within 1 point of
the best is printed too: when many do, the target is easy for every optimizer and the ratios
say little. For reference, uniform sampling without replacement needs (N + 1) / (m + 1)
evaluations on average to hit one of m targets among N configurations.

Seconds are measured on the machine that runs it: the grid (cold or warm caches, as found)
and each replay.

Usage: python bench/optimizer.py [--dataset DIR] [--golden FILE] [--questions N] [--seeds N]
       [--metric NAME] [--out DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.evaluation.single import EXTRACTIVE, Corpus, EvaluationContext, run_single_evaluation  # noqa: E402
from core.golden import read_golden  # noqa: E402
from core.models import LOCAL_MODEL_ID, LocalEmbeddingModel  # noqa: E402
from bench.replay import replay, replay_tpe  # noqa: E402
from core.optimization import GAMSampler, RandomSampler, SearchSpace, default_space  # noqa: E402

SQUAD = ROOT / "examples" / "data" / "squad-mini"
DEFAULT_OUT = ROOT / ".bench-cache" / "optimizer"
#: How close to the grid's best a score must be to count as found (1 point on a 0-1 metric).
TOLERANCE = 0.01
#: Evaluation counts at which the best score so far is reported.
CHECKPOINTS = (10, 20)
#: Context length in tokens of the local embedding model (all-MiniLM-L6-v2).
LOCAL_CONTEXT_TOKENS = 256
#: Version of the score table's layout.
TABLE_VERSION = 1


def bench_space() -> SearchSpace:
    """The offline default space: the local embedding model and the extractive baseline."""
    return default_space({LOCAL_MODEL_ID: LOCAL_CONTEXT_TOKENS}, [EXTRACTIVE])


def load_golden(path: Path, n_questions: int | None) -> Any:
    """Read the golden file and keep its first ``n_questions`` questions (None: all).

    A subset gets its own ``sha256`` (the file's, the count), so its stored results never mix
    with those of the whole file.
    """
    golden = read_golden(path)
    if n_questions is None or n_questions >= len(golden.questions):
        return golden
    digest = hashlib.sha256(f"{golden.sha256}\0first {n_questions}".encode()).hexdigest()
    return dataclasses.replace(golden, questions=golden.questions[:n_questions], sha256=digest)


def table_path(out: Path, corpus: Corpus, golden: Any, space: SearchSpace, metric: str) -> Path:
    """The score table's file: one per corpus, question set, space and metric."""
    scope = "\0".join((corpus.fingerprint, golden.sha256, str(len(golden.questions)), space.fingerprint(), metric))
    return out / f"table-{metric.replace('@', '_at_')}-{hashlib.sha256(scope.encode()).hexdigest()[:12]}.json"


def evaluate_grid(space: SearchSpace, corpus: Corpus, golden: Any, metric: str, out: Path) -> dict[str, Any]:
    """Evaluate every valid configuration (retrieval only) and return the table's content.

    Returns:
        ``{version, metric, n_questions, n_valid, grid_s, collections_built, texts_embedded,
        scores{key: score or None}, errors{key: message}, configurations{key: config}}``.
        A configuration that failed, or whose result lacks ``metric``, scores None.
    """
    model = LocalEmbeddingModel()
    model.embed_documents(["warm up"])  # load the weights outside the timing
    context = EvaluationContext(out_dir=out, embedding_models={LOCAL_MODEL_ID: model}, with_answers=False)
    configs = space.valid_configurations()
    scores: dict[str, float | None] = {}
    errors: dict[str, str] = {}
    stored = 0
    t0 = time.perf_counter()
    for i, config in enumerate(configs, start=1):
        result = run_single_evaluation(dict(config), corpus, golden, context=context)
        stored += bool(result.get("stored"))
        value = result["metrics"].get(metric) if result["status"] == "ok" else None
        if result["status"] != "ok":
            errors[config.key] = result["error"] or "evaluation failed"
        elif value is None:
            known = ", ".join(sorted(result["metrics"])) or "none"
            errors[config.key] = f"no {metric!r} in the result (metrics: {known})"
        scores[config.key] = None if value is None else float(value)
        if i % 12 == 0 or i == len(configs):
            print(f"  grid {i}/{len(configs)}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    grid_s = time.perf_counter() - t0
    if all(v is None for v in scores.values()):
        first = next(iter(errors.values()), "?")
        raise SystemExit(f"no configuration produced {metric!r}; first error: {first}")
    return {
        "version": TABLE_VERSION,
        "metric": metric,
        "n_questions": len(golden.questions),
        "n_valid": space.n_valid,
        "grid_s": round(grid_s, 2),
        "stored_results_reused": stored,
        "collections_built": context.collections_built,
        "texts_embedded": sum(m.n_embedded for m in context._cached_models.values()),
        "scores": scores,
        "errors": errors,
        "configurations": {c.key: c.to_dict() for c in configs},
    }


def median_or_none(values: list[float | None]) -> float | None:
    """Median of the values that are not None (None when there are none)."""
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else None


def fmt(value: float | None, spec: str) -> str:
    """``value`` formatted with ``spec``, or ``-`` for None."""
    return "-" if value is None else format(value, spec)


def goal(gam: float | None, random: float | None, tpe: float | None) -> tuple[float | None, float | None, bool]:
    """Ratios of median evaluations to the target and whether they meet the goal.

    Args:
        gam, random, tpe: each optimizer's median evaluations to the target (None: the
            median seed never reached it, infinitely many).

    Returns:
        ``(gam / random, gam / tpe, met)``; a ratio is None when either median is None (a
        ratio with an unreached numerator is infinite, one with an unreached denominator is
        0), and ``met`` is ``gam / random <= 0.5 and gam / tpe <= 1`` with those limits.
    """

    def ratio(a: float | None, b: float | None) -> float:
        if a is None:
            return math.inf
        return 0.0 if b is None else a / b

    r_random, r_tpe = ratio(gam, random), ratio(gam, tpe)
    met = r_random <= 0.5 and r_tpe <= 1.0
    shown = [None if gam is None or other is None else r for r, other in ((r_random, random), (r_tpe, tpe))]
    return shown[0], shown[1], met


#: Batch sizes of the parallel-ask section: configurations asked per round, all told before the next.
BATCH_SIZES = (1, 4, 8)


def batch_section(scores: dict[str, float | None], space: SearchSpace, seeds: list[int]) -> dict[str, Any]:
    """Replay the GAM with ``Study.ask(b)`` for each batch size ``b`` of :data:`BATCH_SIZES`
    and print the median rounds and evaluations to the target, and the goal: at batch 8 the
    median rounds at most a third of batch 1's median evaluations, with at most 1.5 times its
    evaluations. A round to the target is ``ceil(evaluations to target / b)``: every round but
    the last holds ``b`` evaluations."""
    print()
    print(f"parallel asks: the GAM asks b configurations per round and is told all of them before the next "
          f"({len(seeds)} seeds each, until the target)")
    print(f"{'batch':>5} {'median rounds to target':>24} {'median evals to target':>23} {'reached':>8} {'replay s':>9}")
    out: dict[str, Any] = {}
    for b in BATCH_SIZES:
        t0 = time.perf_counter()
        stats = replay(scores, space, GAMSampler, seeds, tolerance=TOLERANCE, checkpoints=CHECKPOINTS, batch=b,
                       stop_at_target=True)
        rounds = [None if r.evaluations_to_target is None else math.ceil(r.evaluations_to_target / b)
                  for r in stats.runs]
        out[str(b)] = {"median_rounds": median_or_none(rounds), "median_evaluations": stats.median_evaluations_to_target,
                       "reached": stats.fraction_reached, "replay_s": round(time.perf_counter() - t0, 2)}
        row = out[str(b)]
        print(f"{b:>5} {fmt(row['median_rounds'], '.1f'):>24} {fmt(row['median_evaluations'], '.1f'):>23} "
              f"{row['reached']:>8.0%} {row['replay_s']:>9.1f}")
    one, eight = out["1"], out["8"]
    met = None not in (one["median_evaluations"], eight["median_rounds"], eight["median_evaluations"]) and \
        eight["median_rounds"] <= one["median_evaluations"] / 3 and \
        eight["median_evaluations"] <= 1.5 * one["median_evaluations"]
    rounds_ratio = None if None in (eight["median_rounds"], one["median_evaluations"]) else \
        eight["median_rounds"] / one["median_evaluations"]
    evals_ratio = None if None in (eight["median_evaluations"], one["median_evaluations"]) else \
        eight["median_evaluations"] / one["median_evaluations"]
    print(f"batch 8 rounds / batch 1 evaluations = {fmt(rounds_ratio, '.2f')}; "
          f"batch 8 evaluations / batch 1 evaluations = {fmt(evals_ratio, '.2f')}")
    print('goal: "at batch 8, median rounds to target <= 1/3 of batch 1\'s median evaluations, with <= 1.5x its '
          'evaluations"')
    print(f"this run {'meets' if met else 'does not meet'} the goal")
    out["goal_met"] = bool(met)
    return out


def main_one_data_set() -> int:
    """The single-data-set replay over the offline default space (GAM, random, TPE, batch
    sizes), ``--one-data-set``; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one-data-set", action="store_true")
    parser.add_argument("--dataset", default=str(SQUAD), help="folder with docs/ and golden.jsonl")
    parser.add_argument("--golden", default=None, help="golden file (default: DATASET/golden.jsonl)")
    parser.add_argument("--questions", type=int, default=None, help="use the first N questions (default: all)")
    parser.add_argument("--seeds", type=int, default=30, help="seeds per optimizer (default: 30)")
    parser.add_argument("--metric", default="mrr", help="objective, maximised (default: mrr)")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help=f"persistent folder (default: {DEFAULT_OUT})")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    if args.questions is not None and args.questions < 1:
        parser.error("--questions must be at least 1")

    dataset = Path(args.dataset)
    golden_file = Path(args.golden) if args.golden else dataset / "golden.jsonl"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    golden = load_golden(golden_file, args.questions)
    corpus = Corpus.load(dataset / "docs")
    space = bench_space()

    path = table_path(out, corpus, golden, space, args.metric)
    if path.is_file():
        table = json.loads(path.read_text(encoding="utf-8"))
        grid_note = f"read from {path} (evaluating it took {table['grid_s']:.1f} s)"
    else:
        table = evaluate_grid(space, corpus, golden, args.metric, out)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(table, indent=1, allow_nan=False), encoding="utf-8")
        tmp.replace(path)
        grid_note = (f"{table['grid_s']:.1f} s for {table['n_valid']} configurations "
                     f"({table['grid_s'] / table['n_valid']:.2f} s each; {table['collections_built']} collections "
                     f"built, {table['texts_embedded']} texts embedded, {table['stored_results_reused']} stored "
                     f"results reused); written to {path}")
    scores: dict[str, float | None] = table["scores"]
    ok = [v for v in scores.values() if v is not None]
    best = max(ok)
    near = sum(v >= best - TOLERANCE for v in ok)
    exact = sum(v == best for v in ok)
    n = len(scores)

    print(f"dataset {dataset}: {len(corpus.documents)} documents, {len(golden.questions)} questions; "
          f"objective {args.metric} (maximised), retrieval only")
    print(f"grid: {grid_note}")
    print(f"scores over {n} configurations: best {best:.4f}, median {statistics.median(ok):.4f}, "
          f"worst {min(ok):.4f}; {n - len(ok)} failed")
    top = max((k for k, v in scores.items() if v is not None), key=lambda k: scores[k] or 0.0)
    shown = {k: v for k, v in table["configurations"][top].items() if v is not None and not k.endswith("_text")}
    print(f"best configuration: {json.dumps(shown)}")
    print(f"within {TOLERANCE:g} of the best: {near} of {n} configurations ({exact} tied at the best); "
          f"uniform sampling without replacement expects {(n + 1) / (near + 1):.1f} evaluations to reach one")

    seeds = list(range(args.seeds))
    last = max(CHECKPOINTS)
    common = {"tolerance": TOLERANCE, "checkpoints": CHECKPOINTS}
    optimizers = {
        "gam": lambda **kw: replay(scores, space, GAMSampler, seeds, **common, **kw),
        "random": lambda **kw: replay(scores, space, RandomSampler, seeds, **common, **kw),
        "optuna-tpe": lambda **kw: replay_tpe(scores, space, seeds, **common, **kw),
    }
    to_target: dict[str, Any] = {}
    first: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for name, go in optimizers.items():
        t0 = time.perf_counter()
        to_target[name] = go(stop_at_target=True)  # until the target, within the whole space
        first[name] = go(max_evals=last)  # the first evaluations, for the best-so-far checkpoints
        seconds[name] = time.perf_counter() - t0

    print()
    print(f"replay: {args.seeds} seeds per optimizer; each seed searches until the target (best - {TOLERANCE:g}) "
          f"within a budget of {n} evaluations, and again for {last} evaluations for the best-so-far columns")
    head = (f"{'optimizer':<11} {'median evals to target':>23} {'quartiles':>11} {'max':>4} {'reached':>8} "
            + " ".join(f"{f'median best @{k}':>15}" for k in CHECKPOINTS) + f" {'replay s':>9}")
    print(head)
    medians: dict[str, float | None] = {}
    for name in optimizers:
        stats = to_target[name]
        medians[name] = stats.median_evaluations_to_target
        best_at = [median_or_none([r.best_after.get(k) for r in first[name].runs]) for k in CHECKPOINTS]
        evals = [math.inf if r.evaluations_to_target is None else r.evaluations_to_target for r in stats.runs]
        q1, _, q3 = statistics.quantiles(evals, n=4) if len(evals) > 1 else (evals[0], None, evals[0])
        print(f"{name:<11} {fmt(medians[name], '.1f'):>23} {f'{q1:g}-{q3:g}':>11} {max(evals):>4g} "
              f"{stats.fraction_reached:>8.0%} "
              + " ".join(f"{fmt(b, '.4f'):>15}" for b in best_at) + f" {seconds[name]:>9.1f}")
    tpe = {c: statistics.median(r.extra[c] for r in to_target["optuna-tpe"].runs)
           for c in ("suggestions", "duplicates", "invalid")}
    print(f"TPE suggestions per seed until the target (median): {tpe['suggestions']:.0f}, of which repeats "
          f"{tpe['duplicates']:.0f} and invalid {tpe['invalid']:.0f} (not counted as evaluations)")

    gam_random, gam_tpe, met = goal(medians["gam"], medians["random"], medians["optuna-tpe"])
    print()
    print(f"ratio of median evaluations to target: GAM / random = {fmt(gam_random, '.2f')}, "
          f"GAM / TPE = {fmt(gam_tpe, '.2f')}")
    print('goal: "GAM needs at most half the evaluations random search needs, and no more than TPE"')
    verdict = "meets" if met else "does not meet"
    print(f"this run {verdict} the goal (needs GAM / random <= 0.50 and GAM / TPE <= 1.00; "
          f"{near} of {n} configurations are within the target)")

    batches = batch_section(scores, space, seeds)

    summary = {
        "batches": batches,
        "table": str(path), "metric": args.metric, "tolerance": TOLERANCE, "seeds": seeds,
        "table_best": best, "within_tolerance": near, "n_valid": n,
        "replay_s": {k: round(v, 2) for k, v in seconds.items()},
        "ratios": {"gam_over_random": gam_random, "gam_over_tpe": gam_tpe}, "goal_met": met,
        "to_target": {k: v.to_dict() for k, v in to_target.items()},
        f"first_{last}": {k: v.to_dict() for k, v in first.items()},
    }
    replay_file = path.with_name(path.stem.replace("table-", "replay-") + ".json")
    replay_file.write_text(json.dumps(summary, indent=1, allow_nan=False), encoding="utf-8")
    print(f"replays written to {replay_file}")
    return 0


#: Seeds per strategy in the three-data-set replay (the median is over these).
MULTI_SEEDS = 100
#: The goal: the default strategy's median question-evaluations to the target at most this
#: share of random search's, on every data set.
QUESTION_GOAL = 0.6


def strategies(rungs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The replayed strategies by name: ``{sampler, rungs, promotion, start}`` (the sampler's
    class; the rungs' settings or None for every question at once; ``Halving``'s promotion
    rule; the configuration evaluated first, ``start``, a name of
    ``core.optimization.defaults.STARTS`` made in the space replayed, or None).

    - ``random``, ``gam``: the sampler alone, every configuration on every question;
    - ``mf-random``, ``mf-gam``: with rungs, a configuration promoted unless the sign test says
      it is worse, promotions first (``--multi-fidelity``);
    - ``default+random``: the default configuration first, then random search;
    - ``screen-random``, ``screen-gam``: rungs, a promotion handed out only while it is at least
      as good as the best configuration scored on every question, on the questions both saw
      (promotion ``incumbent``), new configurations screened on the first rung meanwhile;
    - ``default+screen-random``, ``default+screen-gam``: the same, the default configuration
      first;
    - ``random-held``, ``gam-held``: random search and the GAM on the space with
      ``number_of_chunks`` held at its largest value (:func:`held_space`);
    - ``screen``: what ``ragtune optimize`` runs by default (``core.optimizers.SCREEN``, its
      start included, on the space :func:`held_space` holds); ``screen-all-chunks``: the same on
      the whole space; ``screen-no-start``: ``screen`` starting from a random configuration.

    Every strategy is judged against the whole space's best.
    """
    from core.optimizers import SCREEN

    samplers = {"random": RandomSampler, "gam": GAMSampler}
    out: dict[str, dict[str, Any]] = {}
    for name in ("random", "gam"):
        out[name] = {"sampler": samplers[name], "rungs": None, "promotion": "tied", "start": None}
    for name in ("random", "gam"):
        out[f"mf-{name}"] = {"sampler": samplers[name], "rungs": rungs, "promotion": "tied", "start": None}
    out["default+random"] = {"sampler": RandomSampler, "rungs": None, "promotion": "tied", "start": "default"}
    for name in ("random", "gam"):
        out[f"screen-{name}"] = {"sampler": samplers[name], "rungs": rungs, "promotion": "incumbent", "start": None}
        out[f"default+screen-{name}"] = {"sampler": samplers[name], "rungs": rungs, "promotion": "incumbent",
                                         "start": "default"}
    screen = {"sampler": samplers[str(SCREEN["sampler"])], "rungs": rungs if SCREEN["multi_fidelity"] else None,
              "promotion": str(SCREEN["promotion"]), "start": SCREEN["start"]}
    out["screen-all-chunks"] = screen
    for name in ("random", "gam"):
        out[f"{name}-held"] = {"sampler": samplers[name], "rungs": None, "promotion": "tied", "start": None,
                               "held": True}
    out["screen-no-start"] = dict(screen, start=None, held=True)
    out["screen"] = dict(screen, held=True)
    return out


def held_space(space: Any, metric: str) -> Any:
    """``space`` as ``ragtune optimize`` searches it for ``metric``: ``number_of_chunks`` held
    at its largest value for a retrieval metric (``core.experiment.prepare.hold_number_of_chunks``)."""
    from core.experiment.prepare import hold_number_of_chunks

    return hold_number_of_chunks(space, metric)[0]


def replay_data_set(table: dict[str, Any], seeds: list[int], rungs: dict[str, Any],
                    only: list[str] | None = None) -> dict[str, Any]:
    """Replay every strategy (or those named in ``only``) over one data set's per-question
    table (``bench/grid.py``) and return ``{name: {median_evaluations, median_questions,
    reached, replay_s}}``."""
    from bench.grid import wide_space
    from bench.replay import replay_questions
    from core.models.local import DEFAULT_LOCAL_EMBEDDING
    from core.optimization.defaults import start_configuration

    space = wide_space()
    held = held_space(space, table["metric"])
    ids = table["question_ids"]
    means = [statistics.fmean([x for x in v if x is not None]) for v in table["scores"].values()
             if v is not None and any(x is not None for x in v)]
    best = max(means)  # the whole space's: every strategy is judged against it
    out: dict[str, Any] = {}
    for name, how in strategies(rungs).items():
        if only and name not in only:
            continue
        where = held if how.get("held") else space
        start = start_configuration(where, how["start"], DEFAULT_LOCAL_EMBEDDING)
        t0 = time.perf_counter()
        runs = replay_questions(table["scores"], ids, where, how["sampler"], seeds, tolerance=TOLERANCE,
                                rungs=how["rungs"], promotion=how["promotion"], start=start, target=best)
        evals = [math.inf if r.evaluations_to_target is None else r.evaluations_to_target for r in runs]
        questions = [math.inf if r.questions_to_target is None else r.questions_to_target for r in runs]
        med_e, med_q = statistics.median(evals), statistics.median(questions)
        reached_q = [q for q in questions if not math.isinf(q)]
        out[name] = {"median_evaluations": None if math.isinf(med_e) else med_e,
                     "median_questions": None if math.isinf(med_q) else med_q,
                     "mean_questions": round(statistics.fmean(reached_q), 1) if reached_q else None,
                     "reached": sum(r.evaluations_to_target is not None for r in runs) / len(runs),
                     "replay_s": round(time.perf_counter() - t0, 1)}
    return out


def every_start(table: dict[str, Any], seeds: list[int], rungs: dict[str, Any], target: float) -> dict[str, Any]:
    """``screen`` (on the held space) replayed from each of the held space's configurations as
    its first one, to come within a point of ``target`` (the whole space's best): what the
    choice of the start is worth on this table. Returns
    ``{starts, min, median, max, screen_start, rank}``: the number of starts; the smallest,
    median and largest of their median question-evaluations to the target; ``SCREEN``'s own
    start's median; and how many starts do at least as well as it (1: none better)."""
    from bench.grid import wide_space
    from bench.replay import replay_questions
    from core.models.local import DEFAULT_LOCAL_EMBEDDING
    from core.optimization.defaults import start_configuration
    from core.optimizers import SCREEN

    held = held_space(wide_space(), table["metric"])
    how = strategies(rungs)["screen"]
    mine = start_configuration(held, SCREEN["start"], DEFAULT_LOCAL_EMBEDDING)
    medians: dict[str, float] = {}
    for config in held.valid_configurations():
        runs = replay_questions(table["scores"], table["question_ids"], held, how["sampler"], seeds,
                                tolerance=TOLERANCE, rungs=how["rungs"], promotion=how["promotion"], start=config,
                                target=target)
        medians[config.key] = statistics.median([math.inf if r.questions_to_target is None else r.questions_to_target
                                                 for r in runs])
    values = sorted(medians.values())
    own = medians.get(mine.key) if mine is not None else None
    return {"starts": len(values), "min": values[0], "median": statistics.median(values), "max": values[-1],
            "screen_start": own, "rank": None if own is None else sum(v < own for v in values) + 1}


def main() -> int:
    """Replay random, GAM and multi-fidelity strategies on the three data sets' grids; prints
    a table per data set and the goal's verdict; returns 0."""
    from bench.grid import DATA_SETS, DEFAULT_OUT as GRID_OUT, evaluate_grid
    from core.optimization.fidelity import DEFAULT_ETA, DEFAULT_MIN_QUESTIONS, rung_sizes

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-sets", default=",".join(DATA_SETS))
    parser.add_argument("--seeds", type=int, default=MULTI_SEEDS, help=f"seeds per strategy (default {MULTI_SEEDS})")
    parser.add_argument("--metric", default="mrr", help="objective, maximised (default: mrr)")
    parser.add_argument("--min-questions", type=int, default=DEFAULT_MIN_QUESTIONS)
    parser.add_argument("--eta", type=int, default=DEFAULT_ETA)
    parser.add_argument("--out", default=str(GRID_OUT), help=f"grid folder (default: {GRID_OUT})")
    parser.add_argument("--strategies", default=None,
                        help="comma-separated strategies to replay (default: all; random is always replayed)")
    parser.add_argument("--every-start", action="store_true",
                        help="also replay screen from every configuration of the held space as its start")
    args = parser.parse_args()
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    known = list(strategies({}))
    only = None
    if args.strategies:
        only = ["random"] + [n for n in args.strategies.split(",") if n != "random"]
        unknown = [n for n in only if n not in known]
        if unknown:
            parser.error(f"unknown strategies {', '.join(unknown)} (known: {', '.join(known)})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = list(range(args.seeds))
    rungs = {"min_questions": args.min_questions, "eta": args.eta}
    summary: dict[str, Any] = {"seeds": len(seeds), "tolerance": TOLERANCE, "metric": args.metric, "rungs": rungs,
                               "data_sets": {}}
    ratios: dict[str, dict[str, float | None]] = {}
    for data_set in args.data_sets.split(","):
        table = evaluate_grid(data_set, args.metric, out)
        full = {k: (None if v is None or all(x is None for x in v) else statistics.fmean([x for x in v if x is not None]))
                for k, v in table["scores"].items()}
        ok = [v for v in full.values() if v is not None]
        best = max(ok)
        near = sum(v >= best - TOLERANCE for v in ok)
        n_q = len(table["question_ids"])
        print(f"\n{data_set}: {len(table['scores'])} configurations, {n_q} questions, {args.metric} best "
              f"{best:.4f}, median {statistics.median(ok):.4f}; {near} within {TOLERANCE:g} of the best; "
              f"rungs {rung_sizes(n_q, args.min_questions, args.eta)}; grid {table.get('grid_s')} s")
        from bench.grid import wide_space
        from core.models.local import DEFAULT_LOCAL_EMBEDDING
        from core.optimization.defaults import start_configuration

        held = held_space(wide_space(), args.metric)
        for how in ("default", "reranked"):
            start = start_configuration(held, how, DEFAULT_LOCAL_EMBEDDING)
            shown = ", ".join(f"{k}={v}" for k, v in start.items() if v is not None and not k.endswith("_text"))
            print(f"the {how} start on the held space ({shown}) scores {fmt(full.get(start.key), '.4f')}")
        rows = replay_data_set(table, seeds, rungs, only)
        print(f"{'strategy':<22} {'median evals':>13} {'median question-evals':>22} {'mean':>7} {'reached':>8} "
              f"{'replay s':>9}")
        for name, row in rows.items():
            print(f"{name:<22} {fmt(row['median_evaluations'], 'g'):>13} {fmt(row['median_questions'], 'g'):>22} "
                  f"{fmt(row['mean_questions'], 'g'):>7} {row['reached']:>8.0%} {row['replay_s']:>9.1f}")
        base = rows["random"]["median_questions"]
        ratios[data_set] = {name: (None if row["median_questions"] is None or not base
                                   else row["median_questions"] / base) for name, row in rows.items()}
        print("question-evaluations / random's: " + ", ".join(f"{k} {fmt(v, '.2f')}" for k, v in ratios[data_set].items()))
        summary["data_sets"][data_set] = {"n_questions": n_q, "best": best, "within_tolerance": near, "strategies": rows,
                                          "ratios": ratios[data_set]}
        if args.every_start:
            starts = every_start(table, seeds, rungs, best)
            print(f"screen from each of the held space's {starts['starts']} configurations as its start: median "
                  f"question-evaluations {fmt(starts['min'], 'g')} (best start), {fmt(starts['median'], 'g')} "
                  f"(median start), {fmt(starts['max'], 'g')} (worst start); screen's own start "
                  f"{fmt(starts['screen_start'], 'g')}, rank {starts['rank']} of {starts['starts']}")
            summary["data_sets"][data_set]["every_start"] = starts
    print()
    for name in [n for n in known if only is None or n in only]:
        worst = [r[name] for r in ratios.values()]
        met = all(v is not None and v <= QUESTION_GOAL for v in worst)
        print(f"{name:<22} question-evaluations / random's on every data set <= {QUESTION_GOAL}: "
              f"{'yes' if met else 'no'} ({', '.join(fmt(v, '.2f') for v in worst)})")
    summary_file = out / f"replay-summary-{args.data_sets.replace(',', '+')}.json"
    summary_file.write_text(json.dumps(summary, indent=1, allow_nan=False), encoding="utf-8")
    print(f"written to {summary_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main_one_data_set() if "--one-data-set" in sys.argv else main())
