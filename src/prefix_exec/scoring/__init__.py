"""Scoring: ``(rollout, environment)`` pairs replayed into a locked, resumable records file (``score``).

The modules, each importing only those below it (pyproject.toml's import-linter contracts):

- :mod:`.pool`: ``--workers N`` and ``--launcher ray``, the replays on worker processes or Ray actors; handed to
  :func:`score_to_file` by the caller (:class:`.pool.dispatch.Pool`), never imported by the modules below;
- :mod:`.run`: :func:`score_to_file` (the single-process path), its :class:`ScoreOptions` and :class:`ScoreReport`;
- :mod:`.admission`: which units are replayed, in input order (repeated identities, ``--resume``);
- :mod:`.replayer`: one rollout replayed inside its budget, and what becomes of it (its record, or its line);
- :mod:`.units`: what a run takes (:data:`ScoringUnit`: :class:`Scorable`, :class:`Undecoded`, :class:`Batch`);
- :mod:`.numbering`: distinct trials for rollouts of one task read together.

This package's face is below: what a caller scoring rollouts needs.
"""

from prefix_exec.scoring.run import ScoreOptions, ScoreReport, score_to_file
from prefix_exec.scoring.units import Batch, EnvFor, Scorable, ScoringUnit, Undecoded, numbered, paired

__all__ = [
    "Batch",
    "EnvFor",
    "Scorable",
    "ScoreOptions",
    "ScoreReport",
    "ScoringUnit",
    "Undecoded",
    "numbered",
    "paired",
    "score_to_file",
]
