"""The one experiment engine: specification, store layout, steps and report.

- :mod:`~core.experiment.spec`: :class:`ExperimentSpec` (frozen, JSON-serialisable).
- :mod:`~core.experiment.types`: :class:`EvaluationRequest`, :class:`EvaluationOutcome`,
  :class:`ExperimentSummary`, :class:`Prepared` (frozen, with ``to_dict``).
- :mod:`~core.experiment.engine`: :class:`Experiment`, the store layout and the steps (ask,
  evaluate one configuration, tell, report).
- :mod:`~core.experiment.prepare`: planning an experiment (objective, space) and starting its
  study, the Functions' prepare step, and the evaluators (one experiment's loaded data; the one
  that reads its data from the stored spec).
- :mod:`~core.experiment.report`: the one report builder.
- :mod:`~core.experiment.requests`: experiment requests from the network, checked.
- :mod:`~core.experiment.preselection`: model pre-selection before the search.
- :mod:`~core.experiment.events`: progress events (ai4rag's event handlers and payloads).
- :mod:`~core.experiment.runner`: the local driver (``ragtune optimize``, a pool of workers).

The local runner and the Durable activities (``functions/experiments.py``) both drive these
steps, prepared and evaluated the same way. Importing this package does no I/O and imports no
heavy library.
"""

from core.experiment.engine import EXPERIMENTS_PREFIX, Experiment, ExperimentFailed, TransientEvaluationError, report_so_far
from core.experiment.spec import ExperimentSpec, default_objective
from core.experiment.types import (MAX_MESSAGE_BYTES, EvaluationOutcome, EvaluationRequest, ExperimentSummary,
                                   Prepared, cut_text)

__all__ = ["EXPERIMENTS_PREFIX", "EvaluationOutcome", "EvaluationRequest", "Experiment", "ExperimentFailed",
           "ExperimentSpec",
           "ExperimentSummary", "MAX_MESSAGE_BYTES", "Prepared", "TransientEvaluationError", "cut_text",
           "default_objective", "report_so_far"]
