"""The response cache written out as data and read back: the same answers under the same requests."""

from __future__ import annotations

from pathlib import Path

from prefix_exec.llm.cache import ResponseCache, request_key


def test_entries_read_back_answer_the_same_requests(tmp_path: Path) -> None:
    first = ResponseCache(tmp_path / "a.sqlite")
    requests = [{"model": "m", "messages": [{"role": "user", "content": f"q{i} \ud800"}]} for i in range(3)]
    for i, request in enumerate(requests):
        first.put(request, {"choices": [{"message": {"role": "assistant", "content": f"a{i}"}}]}, latency_s=i + 0.5)
    entries = list(first.entries())
    assert [key for key, _, _ in entries] == sorted(request_key(r) for r in requests)
    second = ResponseCache(tmp_path / "b.sqlite")
    for key, response, latency in entries:
        second.put_entry(key, response, latency)
    assert len(second) == 3
    for i, request in enumerate(requests):
        assert second.get(request) == ({"choices": [{"message": {"role": "assistant", "content": f"a{i}"}}]}, i + 0.5)
    assert second.get({"model": "m", "messages": []}) is None
