"""tau3, one dataset made of tau's domains: domain-qualified task ids and the per-domain names.

tau3 is one dataset of 164 tasks, 50 airline and 114 retail, as the paper reports it. The two domains number
their tasks independently ("18" is an airline task and a retail task), so a pooled dataset's task id carries its
domain: ``airline/18``, ``retail/18``. A record also names its domain in ``metadata.domain``. Summaries bootstrap
the pooled tasks (distinct qualified ids) for the main rows and each domain on its own for an extra view, whose
rows are named ``<dataset>-<domain>`` (``tau3-airline``, ``tau3-retail``).

Records written before the pooling (dataset ``tau3-airline`` or ``tau3-retail`` with a bare task id) are refused
by the readers (:func:`prefix_exec.records.codec.check_layout`). Nothing here imports a benchmark: the
readers (:mod:`analysis.rows`, :mod:`analysis.summary`, the report's inputs) find a record's domain with it
(:func:`domain_of_record`). A record of any other dataset that names its domain in ``metadata.domain`` gets the
same per-domain view.
"""

from __future__ import annotations

from collections.abc import Mapping

#: The pooled tau dataset the importer and the driver write.
TAU3 = "tau3"
#: tau's domains, in report order.
TAU_DOMAINS = ("airline", "retail")
SEPARATOR = "/"


def variant_of(name: str) -> str | None:
    """The known domain ``name`` is a policy variant of, or ``None`` (a known domain itself, or none): the domain's
    name followed by ``_`` or ``-`` and anything (``airline_tighter_policy``, ``airline-relaxed`` -> ``airline``).
    A variant keeps its domain's tools and database and changes only the policy text, which replay does not read.
    The one rule for a domain's name, wherever it comes from: a results file's ``domain_name`` (``score tau``), an
    inspect task's name (``score inspect``: :func:`inspect_domain`)."""
    if name in TAU_DOMAINS:
        return None
    return next((d for d in TAU_DOMAINS if name.startswith(d) and name[len(d) : len(d) + 1] in ("_", "-")), None)


def domain_named(name: str) -> str | None:
    """The domain replay uses for a domain called ``name``: ``name`` itself when it is one of :data:`TAU_DOMAINS`,
    the domain it is a variant of (:func:`variant_of`), else ``None``."""
    return name if name in TAU_DOMAINS else variant_of(name)


def variant_note(name: str) -> str | None:
    """What to tell a user whose file names the variant ``name`` (read as its domain), or ``None`` when ``name``
    is no variant."""
    base = variant_of(name)
    if base is None:
        return None
    return (
        f"domain {name!r} read as {base}, a policy variant of it (the same tools and database; replay checks "
        f"calls, not the policy text); its tasks are {base}'s ({base}/N): score variants to separate --out files "
        "to keep them apart"
    )


#: How inspect_evals names its tau2 tasks: ``tau2_<domain>`` (``tau2_airline``; a variant task ``tau2_airline_x``).
INSPECT_TASK_PREFIX = "tau2_"


def inspect_domain(task: str) -> str | None:
    """The domain of an inspect log of task ``task`` (its name without the package): ``tau2_airline`` ->
    ``airline``, a variant's (``tau2_airline_tighter_policy``, ``tau2_airline-relaxed``) -> ``airline`` as
    :func:`domain_named` reads it; ``None`` for any other task (``tau2_telecom``, ``bfcl``, ...)."""
    if not task.startswith(INSPECT_TASK_PREFIX):
        return None
    return domain_named(task.removeprefix(INSPECT_TASK_PREFIX))


def qualify(domain: str, task_id: str) -> str:
    """``airline/18`` from ``airline`` and ``18``; an id already qualified with ``domain`` is returned as is."""
    task_id = str(task_id)
    return task_id if task_id.startswith(domain + SEPARATOR) else f"{domain}{SEPARATOR}{task_id}"


def local_id(domain: str, task_id: str) -> str:
    """The domain's own id of ``task_id``: ``18`` from ``airline/18`` (or from ``18``) for ``airline``.

    An id qualified with another domain raises ``KeyError`` naming it: that task is not this domain's."""
    task_id = str(task_id)
    head, sep, tail = task_id.partition(SEPARATOR)
    if not sep:
        return task_id
    if head != domain:
        raise KeyError(f"{task_id!r} is a {head} task, not {domain}")
    return tail


def domain_of(task_id: str) -> str | None:
    """The domain a qualified id names (``airline`` for ``airline/18``), or ``None`` for a bare id."""
    head, sep, _ = str(task_id).partition(SEPARATOR)
    return head if sep else None


def view_name(dataset: str, domain: str) -> str:
    """The name of a pooled dataset's per-domain rows: ``tau3-airline``."""
    return f"{dataset}-{domain}"


def domain_of_record(dataset: str, task_id: str, metadata: object) -> str | None:
    """A record's domain as the readers use it: ``metadata.domain`` when it is a non-empty string, else, for
    tau3, the domain its qualified id names; ``None`` otherwise (not a pooled dataset's record)."""
    named = metadata.get("domain") if isinstance(metadata, Mapping) else None
    if isinstance(named, str) and named:
        return named
    return domain_of(task_id) if dataset == TAU3 else None
