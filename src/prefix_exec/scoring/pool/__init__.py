"""The pool behind ``score --workers N`` and ``--launcher ray``: replays on worker processes or Ray actors, with
the records still written in input order by the reading process."""
