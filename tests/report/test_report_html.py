"""report.html is one self-contained file whose links all land, with the first failing call highlighted."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from report_records import crafted, record

from prefix_exec.report.build import Options, write_report
from prefix_exec.trajectory import FailureLabel, PrefixRecord, ToolCall, Verdict


class Page(HTMLParser):
    """Collects ids, hrefs, srcs, external references and the rows of every rollout's action table."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.srcs: list[str] = []
        self.tags: list[str] = []
        self.rows: list[tuple[str, str]] = []  # (rollout id, tr class)
        self._rollout = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"] or "")
        if a.get("src"):
            self.srcs.append(a["src"] or "")
        if tag == "details":
            self._rollout = a.get("id") or ""
        if tag == "tr" and self._rollout and a.get("class"):
            self.rows.append((self._rollout, a["class"] or ""))


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Page, str, Path]:
    out = tmp_path_factory.mktemp("report")
    rows = crafted()
    # a rollout that fails at step 2 of 4 and then recovers, with a parse error shown as raw text at step 3
    actions = (
        ToolCall("cd", {"folder": "docs"}),
        ToolCall("mv", {"source": "a"}),
        ToolCall("mv", {}, raw="mv(source=", parse_error="unterminated call"),
        ToolCall("ls", {}),
    )
    rows.append(
        PrefixRecord(
            "bfcl_demo",
            "t9",
            "m1",
            "react",
            0,
            4,
            2,
            1,
            (Verdict.accept("ok"), Verdict.reject(FailureLabel.SCHEMA, "missing 'destination'")),
            actions,
        )
    )
    write_report(rows, out, Options(resamples=100, plots=False))
    text = (out / "report.html").read_text(encoding="utf-8")
    parser = Page()
    parser.feed(text)
    return parser, text, out


def test_self_contained(page: tuple[Page, str, Path]) -> None:
    parser, text, _ = page
    assert "link" not in parser.tags  # no stylesheet links
    assert all(src.startswith("data:") for src in parser.srcs)
    assert "http://" not in text
    assert "https://" not in text
    assert "<script>" in text
    assert "<style>" in text


def test_every_internal_link_lands(page: tuple[Page, str, Path]) -> None:
    parser, _, _ = page
    internal = [h[1:] for h in parser.hrefs if h.startswith("#")]
    assert internal
    assert len(internal) == len(parser.hrefs)
    assert set(internal) <= parser.ids


def _payloads(text: str) -> dict[str, list[list[object]]]:
    import json
    import re

    from prefix_exec.report.rollouts import decode

    data = json.loads(re.search(r'<script type="application/json" id="rollout-data">(.*?)</script>', text).group(1))
    return {cid: decode(blob) for cid, blob in data.items()}


def test_rollouts_are_in_the_page_compressed_with_the_failing_call(page: tuple[Page, str, Path]) -> None:
    _, text, _ = page
    payloads = _payloads(text)
    # c0 is bfcl_demo / m1 / react: the t9 rollout fails at step 2 of 4 (schema) and recovers
    (t9,) = [r for r in payloads["c0"] if r[0] == "t9"]
    task, trial, fed, T, label, success, reason, _meta, actions = t9
    assert (task, trial, fed, T, label, success) == ("t9", 0, 2, 4, "schema", 1)
    assert reason == "missing 'destination'"
    assert [a[3] if a[3] == 0 else a[3][0] for a in actions] == [1, 0, 0, 0]  # ok, rejected, not replayed x2
    assert actions[1][3][1:] == ["schema", "schema", "missing 'destination'"]
    assert actions[2][2] == "mv(source=  [parse error: unterminated call]"
    # label groups come first in tie-break order; executable rollouts last; every rollout is in the page
    assert sum(len(rows) for rows in payloads.values()) == len(crafted()) + 1
    assert "<details" not in text  # rendered by the script on demand, not in the file


def test_synthetic_records_are_labelled(tmp_path: Path) -> None:
    rows = [record("react", t, T=2, fed=3, success=1, metadata={"synthetic": True}) for t in ("a", "b")]
    report = write_report(rows, tmp_path, Options(resamples=50, plots=False))
    assert report.synthetic
    assert "SYNTHETIC" in (tmp_path / "report.html").read_text()
    assert "SYNTHETIC" in (tmp_path / "table2.md").read_text()
    assert "SYNTHETIC" in (tmp_path / "table2.tex").read_text()


def test_plots_are_written_and_embedded(tmp_path: Path) -> None:
    from prefix_exec.report.drawing import file_stem

    report = write_report(crafted(), tmp_path, Options(resamples=50))
    names = {p.name for p in report.files}
    m1, m2 = file_stem("figure1", "m1"), file_stem("figure1-elig", "m2")
    board = file_stem("leaderboard", "bfcl_demo")
    assert {f"{m1}.png", f"{m1}.svg", f"{m2}.svg", "ranking.png", f"{board}.png"} <= names
    assert {"pec_checkpoints.md", "reach.md", "reach.csv", "reach.tex"} <= names  # Table G.1 and its n_k
    assert 'id="t-reach"' in (tmp_path / "report.html").read_text()
    assert (tmp_path / f"{m1}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (tmp_path / "report.html").read_text()
    # 2 models x 2 views, the ranking chart, and the leaderboard's curves and ranking (two models, one dataset)
    assert html.count("data:image/svg+xml;base64,") == 7


def test_rollouts_sort_task_ids_naturally() -> None:
    from prefix_exec.report.rollouts import natural

    ids = ["multi_turn_base_110", "multi_turn_base_14", "multi_turn_base_2"]
    assert sorted(ids, key=natural) == ["multi_turn_base_2", "multi_turn_base_14", "multi_turn_base_110"]
    assert sorted(["²", "1"], key=natural) == ["1", "²"]  # '²' isdigit() but no int: no ValueError


#: Names that end or confuse a script element when a page embeds them as they are.
HOSTILE_NAMES = ("<!--<script>", "</script><script>alert(1)</script>", "a\u2028b\u2029c&<>", "<!--", "<script>")


def _script_texts(text: str) -> list[str]:
    """The text of each JSON script element, up to the first ``</script`` as an HTML parser ends it."""
    import re

    return re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script', text, flags=re.S)


def test_hostile_names_leave_no_markup_in_the_embedded_json(tmp_path: Path) -> None:
    import json

    rows = [
        record(method, f"{name}-task", T=2, fed=2, success=0, model=name, dataset=f"{name}-data")
        for name in HOSTILE_NAMES
        for method in (name, "react")
    ]
    write_report(rows, tmp_path / "out", Options(resamples=20, plots=False))
    text = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    scripts = _script_texts(text)
    assert len(scripts) == 2
    for script in scripts:
        assert not set(script) & set("<>&\u2028\u2029"), script[:200]
    titles = json.loads(scripts[1])
    assert {f"{name}-data / {name} / {name}" for name in HOSTILE_NAMES} <= set(titles.values())
    assert sum(len(rows) for rows in _payloads(text).values()) == len(rows)
    assert text.count("</script>") == 3  # the two JSON elements and the page's script, nothing more


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.text() | st.integers() | st.none(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)
    )
)
def test_script_json_reads_back_and_holds_no_markup(value: object) -> None:
    import json

    from prefix_exec.report.html import _script_json

    text = _script_json(value)
    assert json.loads(text) == value
    assert not set(text) & set("<>&\u2028\u2029")
