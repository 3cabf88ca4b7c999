"""How good an inferred side file is on real logs (docs/custom.md, "Inferring a side file"): issue 41's evaluation.

For each corpus, with the recorded-error evidence turned off (``--no-error-pattern --no-error-evidence``: no reply
text and no error flag is evidence):

1. **References.** ``infer-spec`` on the corpus; the inferred ``refs`` against :data:`TRUTH`, the arguments that
   must hold an existing id, read by hand in the domain's own tool code (each with the line of the check that
   refuses an unknown value). Precision and recall count arguments the corpus passes at least once.
2. **False failures.** Every conversation replayed on the tools list and the inferred side file, its recorded
   error flags dropped and no error pattern, so every rejection is our own check's: a conversation counts when its
   first rejected call is a ``dependency`` or ``state_consistency`` failure at a call the environment ran fine
   (its log's error flag false, or, without a flag, a reply that does not begin with ``Error``).
3. **Mutations.** In each conversation (seeded), one value of one true reference argument, at a call the
   unmutated replay accepted and the environment ran fine, replaced by a made-up value of the same shape that
   appears nowhere in the conversation; caught when the replay's first rejection is that call, as ``dependency``.

Run from the repository root (the tau extra installed, for tau2's tools lists)::

    python scripts/infer_eval.py --out /tmp/infer-eval [--seed 0] [--corpus tau-bench-airline tau2-airline ...]
    python scripts/infer_eval.py --out /tmp/infer-eval --corpus memory --memory DIR   # rollouts.jsonl, tools.json

It prints one table row per corpus and writes each corpus's side file and a JSON of its figures into ``--out``.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import string
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prefix_exec.envs.custom.environment import load_spec
from prefix_exec.envs.custom.evidence import EvidencePolicy
from prefix_exec.importers.tau import conversation_of
from prefix_exec.importers.transcripts import TranscriptFile
from prefix_exec.inference import Options, infer_spec
from prefix_exec.inference.corpus import ANONYMOUS
from prefix_exec.records.codec import read_rollouts
from prefix_exec.replay import replay
from prefix_exec.trajectory import FailureLabel, Observation, PrefixRecord, Rollout, ToolCall

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "tau"
NO_PATTERN = EvidencePolicy(error_pattern=None)
OUR_LABELS = (FailureLabel.DEPENDENCY, FailureLabel.STATE_CONSISTENCY)

#: The arguments that must hold an existing id, per domain, read in the domain's tool code (tau2:
#: ../shared/vendor/tau2-bench src/tau2/domains/<domain>/tools.py; tau-bench's airline tools are the same checks;
#: the memory server: @modelcontextprotocol/server-memory dist/index.js). Search keys (an email, a name and zip)
#: and dates are not ids (docs/custom.md says why); ``SEARCH_KEYS`` lists the search keys apart.
TRUTH: dict[str, frozenset[tuple[str, str]]] = {
    "airline": frozenset(
        {
            ("book_reservation", "user_id"),  # _get_user: "User {user_id} not found"
            ("book_reservation", "flights[*].flight_number"),  # _get_flight: "Flight {n} not found"
            ("book_reservation", "payment_methods[*].payment_id"),  # "Payment method {id} not found"
            ("cancel_reservation", "reservation_id"),  # _get_reservation: "Reservation {id} not found"
            ("get_reservation_details", "reservation_id"),
            ("get_user_details", "user_id"),
            ("send_certificate", "user_id"),
            ("update_reservation_baggages", "reservation_id"),
            ("update_reservation_baggages", "payment_id"),  # _payment_for_update: "Payment method not found"
            ("update_reservation_flights", "reservation_id"),
            ("update_reservation_flights", "flights[*].flight_number"),  # _get_flight for a new segment
            ("update_reservation_flights", "payment_id"),
            ("update_reservation_passengers", "reservation_id"),
            ("get_flight_status", "flight_number"),  # _get_flight_instance -> _get_flight
        }
    ),
    "retail": frozenset(
        {
            ("cancel_pending_order", "order_id"),  # _get_order: "Order not found"
            ("exchange_delivered_order_items", "order_id"),
            ("exchange_delivered_order_items", "item_ids"),  # "Number of {item_id} not found."
            ("exchange_delivered_order_items", "new_item_ids"),  # _get_variant: "Variant not found"
            ("exchange_delivered_order_items", "payment_method_id"),  # _get_payment_method
            ("get_order_details", "order_id"),
            ("get_product_details", "product_id"),  # _get_product: "Product not found"
            ("get_item_details", "item_id"),  # _get_item: "Item not found"
            ("get_user_details", "user_id"),  # _get_user: "User not found"
            ("modify_pending_order_address", "order_id"),
            ("modify_pending_order_items", "order_id"),
            ("modify_pending_order_items", "item_ids"),  # "{item_id} not found"
            ("modify_pending_order_items", "new_item_ids"),
            ("modify_pending_order_items", "payment_method_id"),
            ("modify_pending_order_payment", "order_id"),
            ("modify_pending_order_payment", "payment_method_id"),
            ("modify_user_address", "user_id"),
            ("return_delivered_order_items", "order_id"),
            ("return_delivered_order_items", "item_ids"),  # "Some item not found"
            ("return_delivered_order_items", "payment_method_id"),
        }
    ),
    "memory": frozenset(
        {
            ("add_observations", "observations[*].entityName"),  # "Entity with name {n} not found"
        }
    ),
}
#: Arguments a tool does not refuse an unknown value for, but on which the call then does nothing (the memory
#: server filters by name: dist/index.js openNodes, deleteEntities, deleteObservations, deleteRelations).
NO_EFFECT: dict[str, frozenset[tuple[str, str]]] = {
    "memory": frozenset(
        {
            ("open_nodes", "names"),
            ("delete_entities", "entityNames"),
            ("delete_observations", "deletions[*].entityName"),
            ("delete_relations", "relations[*].from"),
            ("delete_relations", "relations[*].to"),
        }
    ),
}
#: Lookups by a value the user states (the tool refuses an unknown one, but the value is not an id).
SEARCH_KEYS: dict[str, frozenset[tuple[str, str]]] = {
    "retail": frozenset(
        {
            ("find_user_id_by_email", "email"),
            ("find_user_id_by_name_zip", "first_name"),
            ("find_user_id_by_name_zip", "last_name"),
            ("find_user_id_by_name_zip", "zip"),
        }
    ),
}


@dataclass(frozen=True)
class Corpus:
    """A corpus: its files and form for infer-spec, its tools list, its domain (for :data:`TRUTH`), and its
    conversations as rollouts (the recorded observations kept, for whether the environment ran a call fine)."""

    name: str
    files: tuple[Path, ...]
    form: str
    tools: Path
    domain: str
    rollouts: Callable[[], Iterator[Rollout]]


def transcript_rollouts(files: tuple[Path, ...]) -> Callable[[], Iterator[Rollout]]:
    def read() -> Iterator[Rollout]:
        for path in files:
            for item in TranscriptFile(path, ANONYMOUS, tolerant=False):
                assert not isinstance(item, Exception)
                yield item.rollout

    return read


def tau2_rollouts(files: tuple[Path, ...]) -> Callable[[], Iterator[Rollout]]:
    def read() -> Iterator[Rollout]:
        for path in files:
            data = json.loads(path.read_text(encoding="utf-8"))
            for index, simulation in enumerate(data if isinstance(data, list) else data["simulations"]):
                actions, transcript = conversation_of(simulation)
                where = f"{path.name}[{index}]"
                yield Rollout("eval", where, "-", "-", actions, 0, transcript=transcript, metadata={"source": where})

    return read


def guard_rollouts(files: tuple[Path, ...]) -> Callable[[], Iterator[Rollout]]:
    def read() -> Iterator[Rollout]:
        for path in files:
            yield from read_rollouts(path)

    return read


def ran_fine(call: ToolCall) -> bool:
    """Whether the environment ran ``call`` fine by its log: the error flag, else a reply not beginning ``Error``."""
    seen = call.observation
    if seen is None:
        return True
    if seen.error is not None:
        return not seen.error
    text = seen.content if isinstance(seen.content, str) else json.dumps(seen.content, default=str)
    return not text.lstrip().startswith("Error")


def flags_dropped(rollout: Rollout) -> Rollout:
    """The rollout with every recorded error flag and kind dropped (the replies kept, for ``produces``)."""
    actions = tuple(
        replace(a, observation=Observation(a.observation.content)) if a.observation is not None else a
        for a in rollout.actions
    )
    return replace(rollout, actions=actions)


def first_rejection(record: PrefixRecord) -> tuple[int, FailureLabel | None] | None:
    """``(index, label)`` of the first rejected call (0-based), or ``None`` when every call was accepted."""
    for index, verdict in enumerate(record.verdicts):
        if not verdict.accepted:
            return index, verdict.label
    return None


def slots_at(arguments: dict[str, Any], path: str) -> list[tuple[Any, Any]]:
    """``(container, key)`` of every scalar at a ``refs`` path in ``arguments`` (a list of scalars element-wise)."""
    slots: list[tuple[Any, Any]] = [({"$": arguments}, "$")]
    for part in path.split("."):
        name, fans = part.replace("[*]", ""), part.count("[*]")
        if name:
            slots = [(c[k], name) for c, k in slots if isinstance(c[k], dict) and name in c[k]]
        for _ in range(fans):
            slots = [(c[k], i) for c, k in slots if isinstance(c[k], list) for i in range(len(c[k]))]
    found: list[tuple[Any, Any]] = []
    for container, key in slots:
        value = container[key]
        if isinstance(value, list):
            found.extend((value, i) for i, item in enumerate(value) if not isinstance(item, (dict, list)))
        elif not isinstance(value, dict) and value is not None:
            found.append((container, key))
    return found


def made_up(value: Any, text: str, rng: random.Random) -> Any:
    """A value of ``value``'s shape (each digit a digit, each letter a letter of its case) found nowhere in
    ``text`` (the conversation), or ``None`` after 50 tries."""
    original = str(value)
    for _ in range(50):
        chars = [
            rng.choice(string.digits)
            if c.isdigit()
            else rng.choice(string.ascii_uppercase)
            if c.isupper()
            else rng.choice(string.ascii_lowercase)
            if c.isalpha()
            else c
            for c in original
        ]
        candidate = "".join(chars)
        if candidate != original and candidate not in text:
            return int(candidate) if isinstance(value, int) and candidate.isdigit() else candidate
    return None


@dataclass(frozen=True)
class Figures:
    """One corpus's figures (module docstring)."""

    corpus: str
    conversations: int
    inferred: list[str]
    no_effect: list[str]
    true_positive: list[str]
    false_positive: list[str]
    missed: list[str]
    not_passed: list[str]
    false_failures: int
    false_failure_examples: list[str]
    mutated: int
    caught: int
    missed_mutations: list[str]

    @property
    def precision(self) -> float:
        return len(self.true_positive) / len(self.inferred) if self.inferred else float("nan")

    @property
    def recall(self) -> float:
        found = len(self.true_positive) + len(self.missed)
        return len(self.true_positive) / found if found else float("nan")


def infer(corpus: Corpus, out: Path) -> Path:
    """Run inference on the corpus, errors as no evidence; the side file written to ``out``."""
    options = Options(form=corpus.form, tools=corpus.tools, policy=NO_PATTERN, errors=False)
    result = infer_spec(list(corpus.files), options)
    side = out / f"{corpus.name}.yaml"
    side.write_text(result.text, encoding="utf-8")
    passed = {site for site, seen in result.evidence.consumers.items() if seen.calls}
    (out / f"{corpus.name}.passed.json").write_text(json.dumps(sorted(passed)), encoding="utf-8")
    return side


def reference_table(corpus: Corpus, side: Path, out: Path) -> dict[str, list[str]]:
    """Inferred references against the truth, over the arguments the corpus passes."""
    env = load_spec(corpus.tools, hooks=side, policy=NO_PATTERN)
    inferred = {(name, param) for name, tool in env.tools.items() for param in tool.refs}
    passed = {tuple(site) for site in json.loads((out / f"{corpus.name}.passed.json").read_text())}
    truth = TRUTH[corpus.domain]

    def shown(sites: set[tuple[str, str]]) -> list[str]:
        return sorted(f"{t}.{p}" for t, p in sites)

    return {
        "inferred": shown(inferred),
        "no_effect": shown(inferred & NO_EFFECT.get(corpus.domain, frozenset())),
        "true_positive": shown(inferred & truth),
        "false_positive": shown(inferred - truth),
        "missed": shown((truth & passed) - inferred),
        "not_passed": shown(truth - passed),
    }


def false_failures(corpus: Corpus, side: Path) -> tuple[int, int, list[str]]:
    """Conversations whose first rejection is ours (dependency, state_consistency) at a call that ran fine."""
    env = load_spec(corpus.tools, hooks=side, policy=NO_PATTERN)
    total, false = 0, []
    for rollout in corpus.rollouts():
        total += 1
        rejected = first_rejection(replay(flags_dropped(rollout), env))
        if rejected is not None and rejected[1] in OUR_LABELS and ran_fine(rollout.actions[rejected[0]]):
            call = rollout.actions[rejected[0]]
            false.append(f"{rollout.metadata.get('source')} call {rejected[0] + 1} {call.name}")
    return total, len(false), false


def mutations(corpus: Corpus, side: Path, seed: int) -> tuple[int, int, list[str]]:
    """Plant one made-up value per conversation (module docstring); ``(planted, caught, missed examples)``."""
    env = load_spec(corpus.tools, hooks=side, policy=NO_PATTERN)
    rng = random.Random(seed)
    truth = sorted(TRUTH[corpus.domain])
    planted, caught, missed = 0, 0, []
    for rollout in corpus.rollouts():
        rollout = flags_dropped(rollout)
        reached = first_rejection(replay(rollout, env))
        limit = reached[0] if reached is not None else len(rollout.actions)
        sites = [
            (index, slot, path)
            for index, call in enumerate(rollout.actions[:limit])
            if ran_fine(call) and call.parse_error is None
            for tool, path in truth
            if tool == call.name
            for slot in slots_at(dict(call.arguments), path)
        ]
        if not sites:
            continue
        index, (container, key), path = rng.choice(sites)
        text = json.dumps([rollout.transcript, [a.arguments for a in rollout.actions]], default=str)
        mutated = _planted(rollout, index, path, container[key], text, rng)
        if mutated is None:
            continue
        planted += 1
        rejection = first_rejection(replay(mutated, env))
        if rejection == (index, FailureLabel.DEPENDENCY):
            caught += 1
        elif len(missed) < 20:
            missed.append(f"{rollout.metadata.get('source')} call {index + 1} {rollout.actions[index].name}.{path}")
    return planted, caught, missed


def _planted(rollout: Rollout, index: int, path: str, value: Any, text: str, rng: random.Random) -> Rollout | None:
    """``rollout`` with one value at ``path`` of call ``index`` (the one equal to ``value``, first) made up."""
    fake = made_up(value, text, rng)
    if fake is None:
        return None
    arguments = copy.deepcopy(dict(rollout.actions[index].arguments))
    container, key = next((c, k) for c, k in slots_at(arguments, path) if c[k] == value)
    container[key] = fake
    actions = list(rollout.actions)
    actions[index] = replace(actions[index], arguments=arguments)
    return replace(rollout, actions=tuple(actions))


def evaluate(corpus: Corpus, out: Path, seed: int) -> Figures:
    side = infer(corpus, out)
    table = reference_table(corpus, side, out)
    total, false, false_examples = false_failures(corpus, side)
    planted, caught, missed = mutations(corpus, side, seed)
    return Figures(
        corpus.name,
        total,
        **table,
        false_failures=false,
        false_failure_examples=false_examples[:20],
        mutated=planted,
        caught=caught,
        missed_mutations=missed,
    )


def corpora(args: argparse.Namespace, out: Path) -> dict[str, Corpus]:
    """The corpora this script knows; tau2's tools lists are written into ``out`` from the installed tau2."""
    found: dict[str, Corpus] = {}
    bench = (REPO / "tests/data/tau-bench/gpt-4o-airline.json",)
    found["tau-bench-airline"] = Corpus(
        "tau-bench-airline",
        bench,
        "auto",
        REPO / "tests/data/tau-bench/airline-tools.json",
        "airline",
        transcript_rollouts(bench),
    )
    for domain in ("airline", "retail"):
        files = tuple(sorted([*SHARED.glob(f"*_{domain}_*.json"), *(SHARED / "leaderboard").glob(f"*{domain}*.json")]))
        found[f"tau2-{domain}"] = Corpus(
            f"tau2-{domain}", files, "tau2", out / f"tau2-{domain}-tools.json", domain, tau2_rollouts(files)
        )
    if args.memory:
        records = (Path(args.memory) / "rollouts.jsonl",)
        found["memory"] = Corpus(
            "memory", records, "rollouts", Path(args.memory) / "tools.json", "memory", guard_rollouts(records)
        )
    return found


def tau2_tools(domain: str, path: Path) -> None:
    """Write tau2's ``domain`` tools as an OpenAI tools array (the installed tau2's schemas)."""
    from prefix_exec.envs.tau.domain import load_domain

    loaded = load_domain(domain)
    toolkit = loaded.make_toolkit(loaded.base_db)
    path.write_text(json.dumps([t.openai_schema for t in toolkit.get_tools().values()], indent=1), encoding="utf-8")


def row(f: Figures) -> str:
    return (
        f"| {f.corpus} | {f.conversations} | {len(f.inferred)} | {len(f.true_positive)} | {f.precision:.2f} | "
        f"{f.recall:.2f} | {f.false_failures} ({f.false_failures / max(f.conversations, 1):.1%}) | "
        f"{f.caught}/{f.mutated} ({f.caught / max(f.mutated, 1):.1%}) |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the side files and figures")
    parser.add_argument("--seed", type=int, default=0, help="the mutations' seed (default: 0)")
    parser.add_argument("--corpus", nargs="*", help="which corpora (default: all known)")
    parser.add_argument(
        "--memory", help="a guard --record folder of memory-server sessions (rollouts.jsonl, tools.json)"
    )
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    known = corpora(args, out)
    print(
        "| corpus | conversations | inferred refs | true | precision | recall | false dep/state failures | "
        "mutations caught |\n|---|---|---|---|---|---|---|---|"
    )
    for name in args.corpus or list(known):
        corpus = known[name]
        if corpus.name.startswith("tau2-") and not corpus.tools.exists():
            tau2_tools(corpus.domain, corpus.tools)
        figures = evaluate(corpus, out, args.seed)
        (out / f"{name}.json").write_text(json.dumps(figures.__dict__, indent=1), encoding="utf-8")
        print(row(figures), flush=True)
        if figures.no_effect:
            print(
                f"  ({corpus.name}: {len(figures.no_effect)} of the false positives are references whose unknown value "
                f"makes the call do nothing: {', '.join(figures.no_effect)})",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
