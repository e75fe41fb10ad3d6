"""Reports as text a person reads: an evaluate run's tables and an experiment's leaderboard."""

from __future__ import annotations

import json
from typing import Any, Mapping

from core.text import plural


def _fmt(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def found_name(means: dict[str, Any], k: int) -> Any:
    """``found@k`` from a report's means (``success@k`` in reports written before the rename)."""
    from core.metrics.retrieval import found_name as read

    return read(means, k)


def format_report(report: dict[str, Any]) -> str:
    """Return a retrieval report as text tables a person reads: one table per grain with
    scored questions (found in top 10, found first, recall@5, MRR, nDCG@10, median and p95
    search time per setup), then the picks and where the report lives."""
    lines = []
    g = report["golden"]
    if report.get("targets") is not None:  # a run over targets (core.evaluation.targets)
        from core.evaluation.targets import format_targets

        lines.extend(format_targets(report))
    else:
        c, ix = report["corpus"], report["indexing"]
        lines.append(
            f"golden {g['path']}: {g['n_questions']} questions (sha256 {g['sha256'][:12]}); corpus {c['path']}: "
            f"{c['n_documents']} documents, {c['n_pages']} pages, {c['n_chunks']} chunks"
        )
        emb = ix["embedding"]
        if ix.get("vector_store_location"):
            lines.append(f"vector store {ix['vector_store']} at {ix['vector_store_location']}")
        lines.append(
            f"chunking {ix['chunking']}; embedding {ix['embedding_model']}: {emb['n_embedded']} texts embedded, "
            f"{emb['n_cache_hits']} from cache; collection {ix['collection']}{' (reused)' if ix['reused'] else ''}"
        )
        for skipped in c.get("skipped", []):
            lines.append(f"skipped {skipped['document_id']}: {skipped['reason']}")
    lines += _grain_tables(report)
    picks = report["picks"]
    lines.append("")
    for skipped in report.get("skipped_setups") or []:
        lines.append(f"skipped {skipped['key']}: {skipped['reason']}")
    if picks.get("reason"):
        lines.append(f"no pick: {picks['reason']}")
    undecided = report.get("undecided")
    if undecided:
        lines.append(f"no winner: {undecided['message']}")
    for key in ("finds_the_most", "best_for_balance", "best_for_time"):
        rule = picks["rules"][key]
        if key == "finds_the_most" and picks.get("tied_with_all"):
            rule = "tied with every other setup: not a winner"
        lines.append(f"{key:<17} {picks[key] or '-':<24} ({rule})")
    answers = report.get("answers")
    if answers:
        lines += _answer_lines(answers)
    if report.get("unjudged"):
        from core.evaluation.unjudged import format_unjudged

        lines.append(format_unjudged(report["unjudged"]))
    if report.get("location"):
        lines.append(f"\nreport: {report['location']}")
    return "\n".join(lines)


def _grain_tables(report: dict[str, Any]) -> list[str]:
    """The lines of a retrieval report's table per grain (a line for a grain with no scored
    question), each setup a row; the setups ranked by the rank grain."""
    lines = []
    width = max([34] + [len(str(s["name"])) + 1 for s in report["setups"]])
    rank_grain = report["evaluation"]["rank_grain"]
    ran = [s for s in report["setups"] if s.get("status", "ok") == "ok"]
    if report["evaluation"].get("rank_grain_reason"):
        lines.append(f"setups ranked by the {rank_grain} grain: {report['evaluation']['rank_grain_reason']}")
    for grain in report["evaluation"]["grains"]:
        first = ran[0]["metrics"][grain] if ran else None
        if first is None:
            continue
        marker = " (setups ranked by this grain)" if grain == rank_grain else ""
        if not first["n_scored"]:
            lines.append(f"\n[{grain}] not scorable: {first.get('reason') or 'no labels at this grain'}"
                         f" ({first['n_unscorable']} questions left out)")
            continue
        if grain == "evidence" and first.get("n_fallback") == first["n_scored"]:
            lines.append(f"\n[{grain}] no usable evidence quotes (3 words or more): every question is judged "
                         "on its documents, as in [doc]")
            continue
        extra = []
        if first["n_unscorable"]:
            extra.append(f"{first['n_unscorable']} left out (no labels at this grain)")
        if first.get("n_fallback"):
            extra.append(f"{first['n_fallback']} judged on documents (no usable evidence)")
        lines.append(f"\n[{grain}] {plural(first['n_scored'], 'question')} scored{', ' + ', '.join(extra) if extra else ''}{marker}")
        header = (f"{'setup':<{width}} {'found@10':>9} {'95% CI':>11} {'found@1':>8} {'recall@5':>9} {'mrr':>6} "
                  f"{'ndcg@10':>8} {'wait ms':>8} {'search ms':>9}")
        lines.append(header)
        lines.append("-" * len(header))
        for s in report["setups"]:
            if s.get("status", "ok") != "ok":
                lines.append(f"{s['name']:<{width}} failed: {s.get('error')}")
                continue
            agg = s["metrics"][grain]
            m, low, high = agg["means"], agg.get("ci_low") or {}, agg.get("ci_high") or {}
            ci = (f"{_fmt(found_name(low, 10), 2)}-{_fmt(found_name(high, 10), 2)}"
                  if found_name(low, 10) is not None else "-")
            t = s["timings_ms"]
            wait = (t.get("total") or t)["median"]
            tied = "=" if grain == rank_grain and s.get("tied_with_best") else " "
            lines.append(
                f"{s['name']:<{width - 1}}{tied} {_fmt(found_name(m, 10)):>9} {ci:>11} {_fmt(found_name(m, 1)):>8} "
                f"{_fmt(m.get('recall@5')):>9} {_fmt(m.get('mrr')):>6} {_fmt(m.get('ndcg@10')):>8} "
                f"{wait:>8.2f} {(t.get('search') or t)['median']:>9.2f}"
            )
        if grain == rank_grain:
            lines.append("(found@k: share of questions with a right result in the top k, the hit rate or success@k; "
                         "95% CI: bootstrap over questions; '=': tied with the best, McNemar's exact test; "
                         "wait: median query embedding + search + rerank)")
    return lines


def _answer_lines(answers: dict[str, Any]) -> list[str]:
    """The lines of a report's ``answers``: who answered how many, the answer metrics (those
    with no score last), the overall score and a warning when answers failed."""
    lines = []
    gen = answers["generator"]
    kind = {"extractive": "extractive baseline, no language model", "llm": "language model",
            "external": "answers read from the file"}.get(gen["kind"], gen["kind"])
    where = f" from the top {gen['k']} chunks of {gen['setup']}" if gen.get("setup") else ""
    lines.append(f"\nanswers by {gen['model_id']} ({kind}){where}: {answers['n_answered']} of "
                 f"{answers['n_questions']} answered, {answers['n_failed']} failed")
    from core.evaluation.app_report import answer_metric_lines

    metric_lines = answer_metric_lines(answers)
    no_score = [line for line in metric_lines if ": no score: " in line]
    lines += [line for line in metric_lines if line not in no_score]
    if answers.get("overall_score") is not None:
        lines.append(f"overall_score {answers['overall_score']:.3f} (mean of {', '.join(answers['overall_metrics'])})")
    if answers["n_failed"]:
        lines.append(f"warning: {answers['n_failed']} of {answers['n_questions']} answers failed; the scores above "
                     "cover only the answered questions (errors per question are in the report)")
    lines += no_score
    return lines


def _partial_reason(decision: Mapping[str, Any]) -> str:
    """Why a leaderboard row was not scored on every question, from its fidelity decision."""
    if decision.get("verdict") == "stop":
        return f"stopped, {decision.get('reason')}" if decision.get("reason") else "stopped"
    if decision.get("waiting"):
        return "waiting: on the questions both saw it scored below the best configuration scored on every question"
    return "promoted, not scored further before the search ended"


#: Parameters the printed leaderboard has no column for, with their short names: an ``also``
#: column shows those whose values differ between the printed rows.
_ALSO: dict[str, str] = {"embedding_model": "embedding", "reranker": "reranker", "retrieval_depth": "depth",
                         "ranker_k": "rrf-k", "vector_store": "store"}


def _overlapping_best(board: list[dict[str, Any]], best_key: str) -> int:
    """How many other rows of the leaderboard scored on every question have a 95 % interval
    that overlaps the best row's (0 when the best has no interval)."""
    mine = next((r for r in board if r.get("key") == best_key), None)
    if mine is None or mine.get("ci_low") is None or mine.get("ci_high") is None:
        return 0
    return sum(1 for r in board if r.get("key") != best_key and r.get("fully_evaluated") is not False
               and r.get("ci_low") is not None and r.get("ci_high") is not None
               and r["ci_high"] >= mine["ci_low"] and r["ci_low"] <= mine["ci_high"])


def format_experiment(report: dict[str, Any], most: int = 20) -> str:
    """Return an experiment report as text: the leaderboard (score with its interval, key
    parameters, and each evaluation's cost: seconds, texts embedded, chat and judge tokens,
    ``—`` when not recorded or the endpoint did not say; an ``also`` column names the embedding
    model, reranker, retrieval depth, RRF k and vector store where two printed rows hold
    different values), the best configuration, and what the search cost and why it stopped.

    With multi-fidelity (``report["fidelity"]``) the budget counts configurations, and a
    configuration not scored on every question gets a line under its row: the questions it was
    scored on and why it went no further (stopped by the paired test, waiting, or the budget)."""
    lines = []
    g, sp, opt = report["golden"], report["space"], report["optimizer"]
    fidelity = report.get("fidelity")
    sizes = list((fidelity or {}).get("sizes") or [])
    budget = (f"up to {plural(opt['max_evals'], 'configuration')} on rungs of {', '.join(map(str, sizes))} questions"
              if len(sizes) > 1 else f"up to {plural(opt['max_evals'], 'evaluation')}")  # one rung: every question
    lines.append(f"experiment {report['experiment_id']}: {plural(g['n_questions'], 'question')}, "
                 f"{plural(report['corpus']['n_documents'], 'document')}; {plural(sp['n_valid'], 'valid configuration')}; "
                 f"optimizer {opt['name']} (seed {opt['seed']}, {budget}); "
                 f"objective {report['objective']}")
    board = report["leaderboard"][:most]
    also = [name for name in _ALSO  # a value missing where the parameter does not apply is no difference
            if len({repr(v) for row in board if (v := (row.get("parameters") or {}).get(name)) is not None}) > 1]
    kw = max([3, *(len(str((row.get("parameters") or {}).get("number_of_chunks"))) for row in board)])
    header = (f"{'rank':>4} {'score':>6} {'95% CI':>13} {'chunking':<12} {'size':>5} {'overlap':>7} {'k':>{kw}} "
              f"{'search':<22} {'generator':<11} {'seconds':>8} {'embedded':>8} {'tokens':>8}"
              + ("  also" if also else ""))
    lines += ["", header, "-" * len(header)]
    for row in board:
        p = row["parameters"]
        search = p.get("search_mode") or "-"
        if search == "hybrid":
            search += f"-{p.get('ranker_strategy')}"
            if p.get("ranker_strategy") == "weighted":
                search += f"-a{p.get('ranker_alpha')}"
        ci = f"{_fmt(row['ci_low'])}-{_fmt(row['ci_high'])}" if row["ci_low"] is not None else "-"
        rank = "-" if row["rank"] is None else str(row["rank"])
        score = "failed" if row["status"] == "failed" else _fmt(row["score"])
        overlap = "-" if p.get("chunk_overlap") is None else str(p.get("chunk_overlap"))
        size = "-" if p.get("chunk_size") is None else str(p.get("chunk_size"))
        gen = str(p.get("foundation_model"))[:11]
        dur = "-" if row["duration_s"] is None else f"{row['duration_s']:.1f}"
        cost = row.get("cost") or {}
        embedded = "—" if cost.get("texts_embedded") is None else str(cost["texts_embedded"])
        tokens = "—" if cost.get("tokens") is None else str(cost["tokens"])
        lines.append(f"{rank:>4} {score:>6} {ci:>13} {str(p.get('chunking_method')):<12} {size:>5} "
                     f"{overlap:>7} {str(p.get('number_of_chunks')):>{kw}} {search:<22} {gen:<11} {dur:>8} "
                     f"{embedded:>8} {tokens:>8}"
                     + ("  " + " ".join(f"{_ALSO[name]}={'-' if p.get(name) is None else p.get(name)}" for name in also)
                        if also else ""))
        if row["status"] == "failed":
            lines.append(f"{'':>4} error: {row['error']}")
        elif fidelity and row.get("fully_evaluated") is False and row["score"] is not None:
            lines.append(f"{'':>4} scored on {row.get('n_questions')} of {fidelity['sizes'][-1]} questions: "
                         + _partial_reason(row.get("fidelity") or {}))
    if len(report["leaderboard"]) > most:
        lines.append(f"... {len(report['leaderboard']) - most} more in the report")
    best = report.get("best")
    c = report["counts"]
    lines.append("")
    if best:
        params = {k: v for k, v in best["configuration"].items() if not k.endswith("_text") and v is not None}
        lines.append(f"best: {report['objective']} = {best['score']:.3f} with {json.dumps(params)}")
        tied = _overlapping_best(report["leaderboard"], best["key"])
        if tied:
            lines.append(f"      the 95% intervals of {plural(tied, 'other configuration')} scored on every question "
                         "overlap the best's: these questions do not tell them apart")
    else:
        lines.append("best: none (every evaluation failed)")
    timings = report["timings_s"]
    lines.append(f"cost: {plural(c['evaluations'], 'configuration' if fidelity else 'evaluation')} "
                 f"({c['failed']} failed, {c['stored']} from stored "
                 f"results), {plural(c['collections_built'], 'collection')} built, "
                 f"{plural(c.get('texts_unique', c['texts_embedded']), 'distinct text')}"
                 + (f" (distinct within each of {c['runs']} runs, summed)" if (c.get("runs") or 1) > 1 else "")
                 + ": "
                 f"{c['texts_embedded']} embedded, {c.get('texts_from_cache', 0)} from the cache"
                 + (f"; {plural(c['chat_calls'], 'chat call')}, {c.get('replies_from_cache', 0)} replies from the cache"
                    if c.get("chat_calls") or c.get("replies_from_cache") else "")
                 + f"; {timings['total_s']:.0f} s"
                 + (f" ({timings['startup_s']:.1f} s start-up)" if timings.get("startup_s") else ""))
    if (report.get("stop") or {}).get("text"):
        lines.append(f"stopped: {report['stop']['text']}")
    for note in report.get("notes") or []:
        lines.append(f"note: {note}")
    if report.get("location"):
        lines.append(f"report: {report['location']}")
    return "\n".join(lines)

