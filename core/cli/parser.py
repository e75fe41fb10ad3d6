"""The argument parser of the ``ragtune`` command: one function adds each command group's
subcommands, with their flags, defaults and help."""

from __future__ import annotations

import argparse

from core import __version__
from core.cli.app import cmd_compare_apps, cmd_evaluate_app
from core.cli.common import DEFAULT_OUT
from core.optimizers import DEFAULT_OPTIMIZER, OPTIMIZERS
from core.cli.evaluate import cmd_evaluate
from core.cli.gate import _threshold
from core.cli.golden import cmd_check, cmd_draft, cmd_suggest, cmd_template
from core.cli.optimize import cmd_optimize
from core.cli.reports import cmd_report, cmd_serve
from core.cli.studies import cmd_compare_chunking, cmd_cutoff, cmd_sweep


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``ragtune`` command."""
    parser = argparse.ArgumentParser(prog="ragtune", description="Evaluate and optimize RAG setups with evidence.")
    parser.add_argument("--version", action="version", version=f"ragtune {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True)

    _add_check(sub)
    _add_evaluate(sub)
    _add_app_commands(sub)
    _add_optimize(sub)
    _add_corpus_studies(sub)
    _add_report(sub)
    _add_golden_authoring(sub)
    _add_serve(sub)
    _add_allow_download(sub)
    return parser


def _add_check(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``check``: a golden file, against documents and targets."""
    p = sub.add_parser("check", help="check a golden file; exit 0 when it can be run, 1 when it has errors")
    p.add_argument("golden", nargs="?", help="golden JSONL file (a path, s3://bucket/key or a Blob URL)")
    p.add_argument("--golden", dest="golden_option", metavar="FILE",
                   help="the golden file, as the other commands take it (the same as giving it first)")
    p.add_argument("--docs", help="corpus folder (a path, s3://bucket/prefix or a Blob URL): warn about expected "
                                  "documents it does not hold")
    p.add_argument("--target", action="append", metavar="KIND:WHERE#INDEX",
                   help="warn about expected documents this index lacks and evidence its chunks do not hold "
                        "(as for evaluate; repeatable)")
    p.add_argument("--targets", metavar="FILE", help="a targets file: check against each of its targets")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--all", action="store_true", help="list every problem in full (by default the first 100 of "
                                                      "each kind, then their count and lines)")
    p.set_defaults(func=cmd_check)


def _add_evaluate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``evaluate``: every search setup, its answers, its gate."""
    from core.chunking import MODEL_FREE_METHODS
    from core.metrics.retrieval import TOP_K  # the depth --label-unjudged grades (LABEL_DEPTH) by default

    p = sub.add_parser("evaluate", help="evaluate every search setup on documents and a golden file")
    p.add_argument("--docs", help="folder of documents (.pdf .md .html .docx .txt .json): a path, "
                                  "s3://bucket/prefix or a Blob URL (required unless targets are given)")
    p.add_argument("--target", action="append", metavar="KIND:WHERE#INDEX",
                   help="also search an index in place: azure-search:INDEX, azure-search:ENDPOINT#INDEX, "
                        "pgvector:DSN#TABLE, qdrant:PATH_OR_URL#COLLECTION, milvus:URI_OR_DB#COLLECTION (repeatable)")
    p.add_argument("--targets", metavar="FILE", help="a targets file (YAML or JSON) naming targets and their fields")
    p.add_argument("--golden", required=True, help="golden JSONL file (a path, s3://bucket/key or a Blob URL)")
    p.add_argument("--out", help=f"output folder (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--chunking", default="recursive",
                   choices=list(MODEL_FREE_METHODS), help="chunking technique (default recursive; see compare-chunking)")
    p.add_argument("--chunk-size", type=int, help="chunk size in tokens (default 256; not for hierarchical)")
    p.add_argument("--chunk-overlap", type=int, help="chunk overlap in tokens (default 32, at most an eighth of the size; recursive only)")
    p.add_argument("--title", action=argparse.BooleanOptionalAction, default=True,
                   help="put each document's title (its file name, made readable) in front of its chunks' text, "
                        "which is embedded, searched and reranked (default: on)")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"],
                   help="vector store (default $RAGTUNE_VECTOR_STORE; else milvus when $RAGTUNE_MILVUS_URI is set; "
                        "else milvus-lite in the output folder)")
    p.add_argument("--generate", action=argparse.BooleanOptionalAction, default=True,
                   help="answer every question with the setup that finds the most and score the answers: with the "
                        "chat model from RAGTUNE_CHAT_* when set, else the extractive baseline (default: on)")
    p.add_argument("--judge", metavar="MODEL",
                   help="judge answers with this chat model (on RAGTUNE_JUDGE_BASE_URL or the chat endpoint)")
    p.add_argument("--rank-by", choices=["doc", "page", "evidence"], help="grain to rank setups by (default: finest labelled)")
    p.add_argument("--judge-repeat", type=int, default=1, metavar="N",
                   help="ask the judge N times per answer and metric, and report how the scores spread (default 1)")
    p.add_argument("--label-unjudged", action="store_true",
                   help="with a judge: grade (0-3, the UMBRELA prompt) each setup's top results that are not from an "
                        "expected document or page, and report judged@k, the holes, and found@k and nDCG with those "
                        "labels beside the golden-only numbers")
    p.add_argument("--label-depth", type=int, default=TOP_K, metavar="K",
                   help=f"with --label-unjudged: results per setup and question graded (default {TOP_K})")
    p.add_argument("--dry-run", action="store_true",
                   help="send nothing: print the chat and judge calls, tokens and cost this would take")
    p.add_argument("--embedding-model", action="append", metavar="ID[,ID]",
                   help="embedding models whose vectors dense and hybrid search run on (default: the configured one)")
    p.add_argument("--only", action="append", metavar="PATTERN", help="evaluate only the setups whose key matches "
                   "(shell-style, for example 'hybrid*' or '*+rerank'; repeatable)")
    p.add_argument("--skip", action="append", metavar="PATTERN", help="leave out the setups whose key matches (repeatable)")
    p.add_argument("--by", action="append", metavar="metadata.KEY",
                   help="also report every setup's metrics per value of this metadata key, with counts (repeatable)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--fail-under", action="append", metavar="METRIC=V", type=_threshold,
                   help="exit 4 when the chosen setup's METRIC (found@k, recall@k, precision@k, ndcg@k, mrr; at the "
                        "rank grain) is under V, e.g. --fail-under found@5=0.8 (repeatable)")
    p.add_argument("--setup",
                   help="the setup the gate checks: a pick (finds_the_most, best_for_balance, best_for_time) or a "
                        "setup name (default finds_the_most; with a baseline, a pick is the setup the baseline "
                        "gated)")
    p.add_argument("--baseline", metavar="RUN|FILE|latest",
                   help="exit 4 when the gated setup finds significantly fewer questions than in this run on the same "
                        "golden file (exact McNemar test, alpha 0.05): a stored run's id, a report.json file, or "
                        "latest: the newest stored run that passed its gate on this golden file, corpus and branch; "
                        "the setup it gated is the one gated now")
    p.add_argument("--branch", metavar="NAME",
                   help="the branch this run is on, recorded in the report (default $RAGTUNE_BRANCH, else the CI's: "
                        "GITHUB_HEAD_REF, GITHUB_REF_NAME, CI_COMMIT_REF_NAME, BUILD_SOURCEBRANCHNAME)")
    p.add_argument("--baseline-branch", metavar="NAME",
                   help="with --baseline latest: take the baseline from this branch (for example main, for a pull "
                        "request) instead of this run's branch")
    p.add_argument("--any-branch", action="store_true",
                   help="with --baseline latest: take the baseline from any branch")
    p.set_defaults(func=cmd_evaluate)


def _app_options(p: argparse.ArgumentParser) -> None:
    """The options ``evaluate-app`` and ``compare-apps`` share."""
    p.add_argument("--config", help="the app config: request template and response mapping (YAML or JSON; see "
                                    "the README's 'Evaluate your deployed app')")
    p.add_argument("--override", action="append", metavar="KEY=VALUE",
                   help="add to the config's overrides, sent as ${overrides} (repeatable; VALUE read as YAML)")
    p.add_argument("--judge", metavar="MODEL", help="judge the answers with this chat model (on "
                                                    "RAGTUNE_JUDGE_BASE_URL or the chat endpoint)")
    p.add_argument("--judge-repeat", type=int, default=1, metavar="N",
                   help="ask the judge N times per answer and metric, and report how the scores spread (default 1)")
    p.add_argument("--refresh", action="store_true",
                   help="ask the app again even for questions whose replies are cached")
    p.add_argument("--dry-run", action="store_true",
                   help="send nothing: print the calls, tokens and cost this would take, and what the cache holds")
    p.add_argument("--out", help=f"output folder, or an s3:// or Blob address for the report (caches stay in "
                                 f"$RAGTUNE_OUT_DIR or {DEFAULT_OUT}; default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--html", metavar="FILE", help="also write the page of the run (or the comparison)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def _add_app_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``evaluate-app`` and ``compare-apps``: a deployed RAG app."""
    p = sub.add_parser("evaluate-app", help="ask a deployed RAG app every golden question and score its replies")
    p.add_argument("--golden", required=True, help="golden JSONL file, native or Amazon Bedrock (conversations are "
                                                   "played turn by turn)")
    p.add_argument("--url", help="the app's endpoint (default: the config's url, else $RAGTUNE_APP_URL)")
    _app_options(p)
    p.add_argument("--fail-under", action="append", metavar="METRIC=V",
                   help="exit 4 when METRIC is under V: a measure of the citations (found@5, mrr, ... at the rank "
                        "grain), an answer metric (judge.correctness, unitxt.answer_correctness, ...) or answered "
                        "(the share of questions answered) (repeatable)")
    p.add_argument("--baseline", metavar="RUN|latest",
                   help="exit 4 when this run is significantly worse than that stored app run on the same golden "
                        "file (exact McNemar tests on the questions answered and cited right; bootstrap intervals "
                        "of each answer metric's per-question differences); 'latest' is the newest app run "
                        "that passed its gate on this golden file and branch")
    p.add_argument("--branch", help="the branch this run is on (default: the CI's, e.g. GITHUB_HEAD_REF or "
                                    "GITHUB_REF_NAME); a 'latest' baseline comes from the same branch")
    p.set_defaults(func=cmd_evaluate_app)

    p = sub.add_parser("compare-apps", help="compare two app versions question by question (stored runs or URLs)")
    p.add_argument("first", help="a stored app run id, 'latest', or a URL to ask now")
    p.add_argument("second", help="a stored app run id or a URL to ask now")
    p.add_argument("--golden", help="golden JSONL file (needed to ask a URL)")
    p.add_argument("--url", help=argparse.SUPPRESS)
    _app_options(p)
    p.set_defaults(func=cmd_compare_apps)


def _add_optimize(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``optimize``: the search over RAG configurations."""
    p = sub.add_parser("optimize", help="search the space of RAG configurations (screen by default: random configurations, "
                                          "the weak ones stopped on a subset of the questions; or a GAM surrogate)")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--golden", required=True, help="golden JSONL file, native or Amazon Bedrock (a path, "
                                                   "s3://bucket/key or a Blob URL)")
    p.add_argument("--space", help="JSON or YAML file narrowing or widening the default search space")
    p.add_argument("--set", action="append", metavar="NAME=V1,V2",
                   help="override one parameter's values, e.g. --set chunk_size=128,256 (repeatable)")
    p.add_argument("--max-evals", type=int, default=None,
                   help="most configurations to evaluate (default 12; with --resume: the experiment's new budget)")
    p.add_argument("--optimizer", choices=list(OPTIMIZERS), default=DEFAULT_OPTIMIZER,
                   help="screen (default: random configurations scored on a subset of the questions first, the "
                        "rest only for those at least as good as the best so far; see bench/optimizer.py in the "
                        "README), gam or random (every configuration on every question unless --multi-fidelity)")
    p.add_argument("--metric", help="objective (default: overall_score with a chat or judge model, else "
                                    "unitxt.answer_correctness; mrr without reference answers)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--judge", metavar="MODEL", help="judge answers with this chat model")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"])
    p.add_argument("--resume", metavar="EXPERIMENT_ID", help="continue a stopped experiment")
    p.add_argument("--workers", type=int, metavar="N",
                   help="evaluations run at once, in threads (default 1 with the local embedding model, 4 when the "
                        "models are endpoints)")
    p.add_argument("--no-cache", action="store_true",
                   help="ask the chat and judge models afresh instead of reusing cached replies")
    p.add_argument("--multi-fidelity", action=argparse.BooleanOptionalAction, default=False,
                   help="with --optimizer gam or random: score configurations on a seeded subset of the questions "
                        "first and promote those not significantly worse (retrieval objectives; screen always does)")
    p.add_argument("--min-questions", type=int, metavar="N", help="questions of the first rung (default 16)")
    p.add_argument("--dry-run", action="store_true",
                   help="send nothing: print the chat and judge calls (at most), tokens and cost this would take")
    p.add_argument("--out", help=f"output folder, or an s3:// or Blob address for the experiment (caches stay in "
                                 f"$RAGTUNE_OUT_DIR or {DEFAULT_OUT}; default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_optimize)


def _add_corpus_studies(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``compare-chunking``, ``sweep`` and ``cutoff``: studies of one corpus."""
    p = sub.add_parser("compare-chunking", help="compare chunking techniques on the same character budget")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--golden", required=True, help="golden JSONL file")
    p.add_argument("--techniques", help="comma-separated chunking techniques (default: every one without a chat model)")
    p.add_argument("--sizes", help="comma-separated chunk sizes in tokens, 4 characters each (default 64,128,256)")
    p.add_argument("--budget", type=int, default=4000, help="characters handed over per question (default 4000)")
    p.add_argument("--search", default="vector", help="search setup (default vector; hybrid-rrf, hybrid-weighted, keyword)")
    p.add_argument("--current", metavar="KEY", help="the build in use (e.g. recursive-64-8-plain): it stays unless the "
                                                    "best beats it significantly")
    p.add_argument("--judge", metavar="MODEL", help="with a chat model: judge answers and count 'answered'")
    p.add_argument("--dry-run", action="store_true",
                   help="send nothing: print the chat and judge calls (at most), tokens and cost this would take")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"])
    p.add_argument("--out", help=f"output folder (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_compare_chunking)

    p = sub.add_parser("sweep", help="build every chunking combination once and ask every search setup of each")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--golden", required=True, help="golden JSONL file")
    p.add_argument("--chunking", help="comma-separated chunking methods (default recursive)")
    p.add_argument("--chunk-size", help="comma-separated sizes in tokens (default 128,256)")
    p.add_argument("--chunk-overlap", help="comma-separated overlaps in tokens (default 0,32; for the methods that take one)")
    p.add_argument("--embed-headings", help="yes, no or yes,no (default no)")
    p.add_argument("--search", help="comma-separated search setups (default vector,hybrid-rrf,hybrid-weighted)")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown (for a pull request)")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"])
    p.add_argument("--out", help=f"output folder (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("cutoff", help="the top-result score below which to decline to answer")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--golden", required=True, help="golden JSONL file (labelled questions)")
    p.add_argument("--unanswerable", required=True, help="JSONL file of questions no document answers")
    p.add_argument("--setup", default="vector", metavar="KEY", help="search setup (default vector; hybrid-rrf, hybrid-weighted, keyword)")
    p.add_argument("--chunking", default="recursive", help="chunking method of the setup (default recursive)")
    p.add_argument("--chunk-size", type=int, help="chunk size in tokens (default 256)")
    p.add_argument("--chunk-overlap", type=int, help="chunk overlap in tokens (default 32, at most an eighth of the size)")
    p.add_argument("--measure", choices=["similarity", "relevance"], default="similarity",
                   help="the top result's search score, or a reranker's relevance score")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"])
    p.add_argument("--out", help=f"output folder (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_cutoff)


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``report``: a stored report as text, JSON, a page, CSV or MLflow runs."""
    p = sub.add_parser("report", help="print a stored retrieval report or experiment report")
    p.add_argument("run", nargs="?", default="latest",
                   help="an evaluate run id, 'latest' (default: the newest evaluate run, else the newest experiment), "
                        "an optimize experiment id, or a compare-chunking or sweep id")
    p.add_argument("--out", help=f"report store: a folder, s3://bucket/prefix or a Blob URL (default $RAGTUNE_OUT_DIR "
                                 f"or {DEFAULT_OUT})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--html", metavar="FILE", help="write the report as a self-contained HTML page")
    p.add_argument("--csv", metavar="FILE", help="write one row per setup and grain (per configuration for an "
                                                 "experiment) as CSV")
    p.add_argument("--per-question", action="store_true", help="with --csv: one row per question and setup")
    p.add_argument("--mlflow", nargs="?", const="", default=None, metavar="TRACKING_URI",
                   help="log the report to MLflow: one run per evaluated configuration (default a local ./mlruns store)")
    p.set_defaults(func=cmd_report)


def _add_golden_authoring(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``template``, ``suggest`` and ``draft``: writing golden files."""
    from core.golden.draft import KINDS, DraftOptions
    from core.golden.suggest import DEFAULT_TOP
    from core.golden.template import DEFAULT_TEMPLATE_ROWS

    p = sub.add_parser("template", help="write golden rows to fill in, one sampled document or page each")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--by", choices=["doc", "page"], default="page", help="one row per page (default) or per document")
    p.add_argument("--n", type=int, default=DEFAULT_TEMPLATE_ROWS, help=f"rows to write (default {DEFAULT_TEMPLATE_ROWS})")
    p.add_argument("--seed", type=int, default=0, help="picks where the even spread through the corpus starts")
    p.add_argument("-o", "--output", required=True, help="the file to write (never overwritten)")
    p.set_defaults(func=cmd_template)

    p = sub.add_parser("suggest", help="propose draft expected ids for questions with a reference answer")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--golden", required=True, help="golden JSONL file, native or Amazon Bedrock")
    p.add_argument("--top", type=int, default=DEFAULT_TOP, help=f"ids proposed per question (default {DEFAULT_TOP})")
    p.add_argument("--by", choices=["doc", "page"], default="page", help="propose pages (default) or documents")
    p.add_argument("--vector-store", choices=["milvus-lite", "milvus", "pgvector"],
                   help="where the chunks are indexed (as for evaluate; the collection is shared with it)")
    p.add_argument("--out", help=f"output folder of the index and caches (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("-o", "--output", required=True, help="the golden file to write (never overwritten)")
    p.set_defaults(func=cmd_suggest)

    p = sub.add_parser("draft", help="draft golden questions from the documents with a writer and a critic chat model")
    p.add_argument("--docs", required=True, help="folder of documents (a path, s3://bucket/prefix or a Blob URL)")
    p.add_argument("--n", type=int, default=DraftOptions.n, help=f"rows wanted (default {DraftOptions.n})")
    p.add_argument("--seed", type=int, default=DraftOptions.seed, help="picks where the spread of passages starts")
    p.add_argument("--kinds", help=f"comma-separated kinds of question (default {','.join(KINDS)})")
    p.add_argument("--examples", help="a golden file whose questions show the writer the style wanted")
    p.add_argument("--writer", metavar="MODEL", help="writer model on the chat endpoint (default $RAGTUNE_CHAT_MODEL)")
    p.add_argument("--critic", metavar="MODEL", help="critic model on the chat endpoint (default the writer)")
    p.add_argument("--tries", type=int, default=DraftOptions.tries,
                   help=f"writer replies per passage before it is set aside (default {DraftOptions.tries})")
    p.add_argument("--max-unusable", type=int, default=DraftOptions.max_unusable, metavar="N",
                   help=f"stop after N replies in a row that are not in the reply format (default "
                        f"{DraftOptions.max_unusable})")
    p.add_argument("--cache", help="reply cache file (default OUTPUT.replies.jsonl)")
    p.add_argument("--dry-run", action="store_true",
                   help="send nothing: print the chat and judge calls (at most), tokens and cost this would take")
    p.add_argument("--unanswerable-output", metavar="FILE",
                   help="where unanswerable questions go, for 'cutoff --unanswerable' (default "
                        "OUTPUT without .jsonl, then .unanswerable.jsonl)")
    p.add_argument("--out", help=f"output folder of the caches (default $RAGTUNE_OUT_DIR or {DEFAULT_OUT})")
    p.add_argument("-o", "--output", required=True,
                   help="the golden file to write (never overwritten; a stopped run of the same settings resumes)")
    p.set_defaults(func=cmd_draft)


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``serve``: the pages of every report in a store."""
    from core.reports import serve as serve_defaults

    p = sub.add_parser("serve", help="serve the pages of every report in a store (127.0.0.1 by default)")
    p.add_argument("--out", help=f"report store: a folder, s3://bucket/prefix or a Blob URL (default $RAGTUNE_OUT_DIR "
                                 f"or {DEFAULT_OUT})")
    p.add_argument("--host", default=serve_defaults.DEFAULT_HOST,
                   help=f"address to listen on (default {serve_defaults.DEFAULT_HOST}: this machine only)")
    p.add_argument("--port", type=_port, default=serve_defaults.DEFAULT_PORT,
                   help=f"TCP port, 0-65535 (default {serve_defaults.DEFAULT_PORT}; 0: a free one)")
    p.set_defaults(func=cmd_serve)


def _port(text: str) -> int:
    """argparse ``type`` of ``serve --port``: a whole number 0-65535, else
    ``argparse.ArgumentTypeError`` (a usage error: exit 2)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number 0-65535, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0-65535, got {port}")
    return port


def _add_allow_download(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``--allow-download`` on every subcommand that may load an ``hf:`` model."""
    for name in ("evaluate", "optimize", "compare-chunking", "sweep", "cutoff", "suggest", "draft"):
        sub.choices[name].add_argument(
            "--allow-download", action="store_true",
            help="download an hf:ORG/NAME model missing from the Hugging Face cache (once; as "
                 "RAGTUNE_ALLOW_MODEL_DOWNLOAD=1 does); without it such a model is an error and nothing is downloaded")
