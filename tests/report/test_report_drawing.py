"""What every figure shares (:mod:`prefix_exec.report.drawing`): unique bounded file names, distinct styles."""

from __future__ import annotations

import itertools

from prefix_exec.report.drawing import file_stem, series_styles


def test_file_names_are_unique_per_name_and_bounded() -> None:
    names = ["org/model-a", "org:model-a", "org_model-a", "x" * 300, "x" * 301]
    stems = [file_stem("figure1", n) for n in names]
    assert len(set(stems)) == len(names)
    assert max(len(s) for s in stems) <= len("figure1-") + 40 + 1 + 8
    assert all("/" not in s and ":" not in s for s in stems)


def test_styles_differ_for_every_series_up_to_forty() -> None:
    styles = series_styles([f"m{i}" for i in range(40)])
    assert len(set(styles.values())) == 40
    # neighbours differ in colour and marker, so two adjacent legend rows never look alike
    values = list(styles.values())
    assert all(a[0] != b[0] and a[1] != b[1] for a, b in itertools.pairwise(values))
