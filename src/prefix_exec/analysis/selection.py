"""Naming conditions on the command line: selectors, and how a pair of selectors becomes pairs of conditions.

A condition is one (dataset, model, method). A *selector* names conditions by their model, their method, or
both as ``model/method``; a (dataset, model, method) tuple names exactly one. Names are compared exactly
(model names may hold ``/`` and ``:``: ``org/model-a/react`` is model ``org/model-a``, method ``react``).

A pair ``A:B`` is resolved in every dataset on its own:

- when A and B each name one condition of the dataset, that is the pair (two models on a leaderboard);
- otherwise, within each model of the dataset where A and B each name one condition (two methods of the
  paper grid, compared model by model);
- anything else that matches is ambiguous: an :class:`InputError` that lists the candidates as
  ``model/method``.

A dataset where A or B names nothing is skipped; a pair that resolves nowhere is an input error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prefix_exec.errors import InputError

Condition = tuple[str, str, str]
#: A model, a method, ``model/method``, or one (dataset, model, method).
Selector = str | Condition


def label(condition: Condition) -> str:
    """``model/method``: how a condition is named in messages and tables."""
    return f"{condition[1]}/{condition[2]}"


def matches(selector: Selector, condition: Condition) -> bool:
    if isinstance(selector, tuple):
        return selector == condition
    _, model, method = condition
    return selector in (model, method, f"{model}/{method}")


def select(conditions: Iterable[Condition], selector: Selector) -> list[Condition]:
    return [c for c in conditions if matches(selector, c)]


def _listing(conditions: Iterable[Condition], limit: int = 30) -> str:
    names = sorted({label(c) for c in conditions})
    more = f" (and {len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _show(selector: Selector) -> str:
    return "/".join(selector) if isinstance(selector, tuple) else selector


def require(conditions: Sequence[Condition], selector: Selector, *, option: str = "--compare") -> None:
    """An :class:`InputError` listing the conditions when ``selector`` names none of them."""
    if not select(conditions, selector):
        raise InputError(
            f"{option}: no condition is named {_show(selector)!r}",
            hint=f"name a model, a method or model/method; the records hold {_listing(conditions)}",
        )


def pair_conditions(
    conditions: Sequence[Condition], a: Selector, b: Selector, *, option: str = "--compare"
) -> list[tuple[Condition, Condition]]:
    """Every (A condition, B condition) pair the selectors name, dataset by dataset (rules above)."""
    shown = f"{option} {_show(a)}:{_show(b)}"
    if a == b:
        raise InputError(f"{shown} pairs a name with itself", hint="name two different conditions")
    require(conditions, a, option=option)
    require(conditions, b, option=option)
    pairs: list[tuple[Condition, Condition]] = []
    for dataset in sorted({c[0] for c in conditions}):
        inside = [c for c in conditions if c[0] == dataset]
        xs, ys = select(inside, a), select(inside, b)
        if not xs or not ys:
            continue
        if len(xs) == 1 and len(ys) == 1:
            if xs[0] == ys[0]:
                raise InputError(
                    f"{shown}: both sides name {label(xs[0])} in dataset {dataset!r}",
                    hint="name two different conditions",
                )
            pairs.append((xs[0], ys[0]))
            continue
        found = False
        for model in sorted({c[1] for c in xs} & {c[1] for c in ys}):
            mx = [c for c in xs if c[1] == model]
            my = [c for c in ys if c[1] == model]
            if len(mx) == 1 and len(my) == 1 and mx[0] != my[0]:
                pairs.append((mx[0], my[0]))
                found = True
        if not found:
            side, many = (a, xs) if len(xs) > 1 else (b, ys)
            raise InputError(
                f"{shown}: {_show(side)!r} is ambiguous in dataset {dataset!r}: it names {_listing(many)}",
                hint="name one condition as model/method",
            )
    if not pairs:
        raise InputError(f"{shown}: no dataset holds both", hint=f"the records hold {_listing(conditions)}")
    return pairs


def split_pair(text: str, conditions: Sequence[Condition], *, option: str = "--compare") -> tuple[str, str]:
    """``A:B`` split at the one ``:`` whose two sides both name a condition (names may hold ``:``).

    No such split, or more than one, is an :class:`InputError` listing the candidates."""
    cuts = [i for i, ch in enumerate(text) if ch == ":" and 0 < i < len(text) - 1]
    if not cuts:
        raise InputError(f"{option} {text}: expected A:B (a model, a method or model/method on each side)")
    valid = [
        (text[:i], text[i + 1 :]) for i in cuts if select(conditions, text[:i]) and select(conditions, text[i + 1 :])
    ]
    if len(valid) == 1:
        return valid[0]
    if not valid:
        missing = "; ".join(_unnamed(text[:i], text[i + 1 :], conditions) for i in cuts)
        raise InputError(
            f"{option} {text}: {missing}",
            hint=f"name a model, a method or model/method; the records hold {_listing(conditions)}",
        )
    options = "; ".join(f"{x!r} : {y!r}" for x, y in valid)
    raise InputError(
        f"{option} {text}: ambiguous, it splits as {options}",
        hint="name each side as model/method so that only one split matches",
    )


def _unnamed(a: str, b: str, conditions: Sequence[Condition]) -> str:
    """Which side of the split ``a:b`` names no condition, in words: ``the right side 'nope' names none``."""
    sides = [(where, name) for where, name in (("left", a), ("right", b)) if not select(conditions, name)]
    if len(sides) == 2:
        return f"neither side names a condition (left {a!r}, right {b!r})"
    where, name = sides[0]
    return f"the {where} side {name!r} names no condition (the {'right' if where == 'left' else 'left'} side does)"
