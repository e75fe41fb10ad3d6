"""The optimizer strategies an experiment can use, and the default: one home for the command
line's choices, the Functions' requests and the stored experiment spec
(``core.experiment.spec``). A module of names only, so the command line's parser imports it
without loading the optimizer.
"""

from __future__ import annotations

from typing import Any, Mapping

#: The optimizers an experiment can use: ``screen`` (the default, :data:`SCREEN`), or one
#: sampler alone (``gam``, ``random``; rungs of questions only when asked for).
OPTIMIZERS = ("screen", "gam", "random")
#: The optimizer of a request or command that names none.
DEFAULT_OPTIMIZER = "screen"
#: What ``screen`` is, chosen by ``bench/optimizer.py`` (see the README): configurations drawn
#: by ``sampler``, each scored on the first rung's questions (``core.optimization.fidelity``), a
#: promoted one given the rest only while it is at least as good as the best configuration
#: scored on every question, on the questions both saw (``core.optimization.halving``,
#: promotion ``incumbent``); the configuration ``start`` names first
#: (``core.optimization.defaults.STARTS``: ``reranked``, the product's default configuration
#: with the space's reranker at its deepest retrieval, when the space holds a reranker). With an
#: answer objective (no per-question scores) every configuration is scored on every question.
SCREEN: Mapping[str, Any] = {"sampler": "random", "multi_fidelity": True, "promotion": "incumbent",
                             "start": "reranked"}


__all__ = ["DEFAULT_OPTIMIZER", "OPTIMIZERS", "SCREEN"]
