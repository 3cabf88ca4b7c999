import pytest

from prefix_exec.trajectory import FailureLabel, PrefixRecord, Rollout, Verdict


def test_labels_follow_the_fixed_order():
    order = [label.value for label in sorted(FailureLabel)]
    assert order == ["schema", "dependency", "precondition", "state_consistency", "information"]


def test_primary_label_is_the_first_applicable_in_order():
    causes = [FailureLabel.INFORMATION, FailureLabel.PRECONDITION, FailureLabel.DEPENDENCY]
    assert FailureLabel.primary(causes) is FailureLabel.DEPENDENCY
    verdict = Verdict.reject(causes, "several causes")
    assert verdict.label is FailureLabel.DEPENDENCY
    assert verdict.causes == (FailureLabel.DEPENDENCY, FailureLabel.PRECONDITION, FailureLabel.INFORMATION)


def test_unknown_label_names_the_valid_ones():
    with pytest.raises(ValueError, match="schema, dependency"):
        FailureLabel.parse("syntax")


def test_verdict_invariants():
    assert Verdict.accept().label is None
    with pytest.raises(ValueError):
        Verdict(accepted=False)
    with pytest.raises(ValueError):
        Verdict(accepted=True, causes=(FailureLabel.SCHEMA,))


@pytest.mark.parametrize(("T", "fed"), [(0, 1), (3, 0), (3, 5)])
def test_record_rejects_impossible_depths(T, fed):
    with pytest.raises(ValueError):
        PrefixRecord("d", "t", "m", "x", 0, T=T, fed=fed, success=1)


def test_record_exposes_the_failing_verdict():
    ok, bad = Verdict.accept(), Verdict.reject(FailureLabel.PRECONDITION, "engine off")
    rec = PrefixRecord("d", "t", "m", "x", 0, T=3, fed=2, success=0, verdicts=(ok, bad))
    assert not rec.executable
    assert rec.label is FailureLabel.PRECONDITION
    assert rec.reason == "engine off"
    full = PrefixRecord("d", "t", "m", "x", 0, T=1, fed=2, success=1, verdicts=(ok,))
    assert full.executable
    assert full.label is None
    assert full.reason is None


def test_a_record_may_hold_an_absent_y_but_nothing_else_outside_zero_one():
    assert PrefixRecord("d", "t", "m", "x", 0, T=1, fed=2, success=None).success is None
    with pytest.raises(ValueError, match="0, 1 or None"):
        PrefixRecord("d", "t", "m", "x", 0, T=1, fed=2, success=2)


def test_a_rollout_whose_y_is_absent_holds_none():
    assert Rollout("d", "t", "m", "x", success_absent=True).success is None
    with pytest.raises(ValueError, match="absent"):
        Rollout("d", "t", "m", "x", success=1, success_absent=True)
