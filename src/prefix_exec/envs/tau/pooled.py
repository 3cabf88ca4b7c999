"""tau3, one dataset made of tau's domains: domain-qualified task ids, the per-domain names, and the old layout.

tau3 is one dataset of 164 tasks, 50 airline and 114 retail, as the paper reports it. The two domains number
their tasks independently ("18" is an airline task and a retail task), so a pooled dataset's task id carries its
domain: ``airline/18``, ``retail/18``. A record also names its domain in ``metadata.domain``. Summaries bootstrap
the pooled tasks (distinct qualified ids) for the main rows and each domain on its own for an extra view, whose
rows are named ``<dataset>-<domain>`` (``tau3-airline``, ``tau3-retail``).

Records written before the pooling say dataset ``tau3-airline`` or ``tau3-retail`` with a bare task id. They
are read as the pooled layout (:func:`legacy`): dataset ``tau3``, the id qualified, the domain in metadata.
Nothing here imports a benchmark: the readers (:mod:`records.codec`, :mod:`analysis.summary`, the report's
inputs) key records with it, so it sits beside them rather than in :mod:`prefix_exec.envs.tau`. A record of any
other dataset that names its domain in ``metadata.domain`` gets the same per-domain view.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

#: The pooled tau dataset the importer and the driver write.
TAU3 = "tau3"
#: tau's domains, in report order.
TAU_DOMAINS = ("airline", "retail")
SEPARATOR = "/"
#: Dataset names of the layout before pooling, and the domain each held.
LEGACY_DATASETS = {f"{TAU3}-{domain}": domain for domain in TAU_DOMAINS}


class Qualified(NamedTuple):
    """A record's key in the pooled layout."""

    dataset: str
    task_id: str
    domain: str


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


def legacy(dataset: str, task_id: str) -> Qualified | None:
    """The pooled key of a record in the old per-domain layout (``tau3-airline``, ``18`` -> ``tau3``,
    ``airline/18``, ``airline``), or ``None`` when the record is not in that layout."""
    domain = LEGACY_DATASETS.get(dataset)
    if domain is None or SEPARATOR in task_id:
        return None
    return Qualified(TAU3, qualify(domain, task_id), domain)


class Key(NamedTuple):
    """How a record read from a file is keyed: its dataset, task id and domain (``None``: not a pooled
    dataset's record), and ``renamed_from``, the dataset it said when it was in the old layout."""

    dataset: str
    task_id: str
    domain: str | None
    renamed_from: str | None = None

    def names(self) -> dict[str, str]:
        """``dataset`` and ``task_id``, as keywords of a record or metric row."""
        return {"dataset": self.dataset, "task_id": self.task_id}

    def annotate(self, metadata: dict[str, object]) -> dict[str, object]:
        """``metadata``, plus ``domain`` and ``renamed_from`` for a record read from the old layout."""
        if self.renamed_from is None:
            return metadata
        return {**metadata, "domain": self.domain, "renamed_from": self.renamed_from}


def read_key(dataset: str, task_id: str, metadata: object) -> Key:
    """A record's key as the readers use it: the old layout mapped (:func:`legacy`), the domain from
    ``metadata.domain`` when it is a string, else, for tau3, from the qualified id."""
    old = legacy(dataset, task_id)
    if old is not None:
        return Key(old.dataset, old.task_id, old.domain, dataset)
    named = metadata.get("domain") if isinstance(metadata, Mapping) else None
    if isinstance(named, str) and named:
        return Key(dataset, task_id, named)
    return Key(dataset, task_id, domain_of(task_id) if dataset == TAU3 else None)


def legacy_note(renamed: dict[str, int]) -> str:
    """The note the readers print for records read from the old layout: ``renamed`` counts them by the
    dataset they said."""
    counts = ", ".join(f"{n} {dataset}" for dataset, n in sorted(renamed.items()))
    return (
        f"{sum(renamed.values())} record(s) in the layout before tau3 was pooled ({counts}; bare task ids) are "
        f"read as dataset {TAU3} with domain-qualified task ids (airline/18); re-score the results files with "
        "'prefix-exec score tau' to write the new layout"
    )
