"""Scoring: ``(rollout, environment)`` pairs replayed into a locked, resumable records file (``score``).

The modules, each importing only those below it (pyproject.toml's import-linter contracts):

- :mod:`.pool`: ``--workers N`` and ``--launcher ray``, the replays on worker processes or Ray actors; handed to
  :func:`.run.score_to_file` by the caller (:class:`.pool.dispatch.Pool`), never imported by the modules below;
- :mod:`.run`: :func:`~.run.score_to_file` (the single-process path), its options and its report;
- :mod:`.admission`: which units are replayed, in input order (repeated identities, ``--resume``);
- :mod:`.replayer`: one rollout replayed inside its budget, and what becomes of it (its record, or its line);
- :mod:`.units`: what a run takes (:data:`~.units.ScoringUnit`: a rollout with its environment, and more);
- :mod:`.numbering`: distinct trials for rollouts of one task read together.

This package imports nothing itself: the command's entry point imports :mod:`.pool.spawn` before anything else, to
start the workers early (a face here would import the whole single-process path first).
"""
