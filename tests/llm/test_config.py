"""Endpoint settings: every field type-checked with a named field and a hint; what a request then carries."""

from __future__ import annotations

from typing import Any

import pytest

from fakes.openai_server import ScriptedServer, text_message
from prefix_exec.errors import InputError
from prefix_exec.llm import ChatBackend, EndpointConfig


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_concurrency", "8"),
        ("timeout_s", "60"),
        ("max_retries", 2.5),
        ("base_url", 5),
        ("temperature", "0"),
        ("temperature", -1),
        ("max_tokens", 0),
        ("max_completion_tokens", True),
        ("tool_mode", "tools"),
        ("api_key_env", 1),
        ("reasoning_effort", 3),
        ("backoff_max_s", "5"),
        ("retry_after_max_s", -1),
        ("timeout_s", float("inf")),
        ("model", ""),
        ("base_url", "localhost:8000/v1"),
    ],
)
def test_a_wrong_type_is_an_input_error_naming_the_field(key: str, value: Any) -> None:
    with pytest.raises(InputError) as info:
        EndpointConfig.from_mapping({"model": "m", key: value}, where="models[2]")
    assert info.value.field == f"models[2].{key}"
    assert repr(value) in info.value.message
    assert info.value.hint


def test_direct_construction_is_checked_too() -> None:
    with pytest.raises(InputError) as info:
        EndpointConfig(model="m", max_concurrency="8")  # type: ignore[arg-type]
    assert info.value.field == "max_concurrency"


def test_good_settings_are_kept_as_written() -> None:
    cfg = EndpointConfig.from_mapping(
        {
            "model": "m",
            "timeout_s": 60,
            "temperature": 1,
            "max_retries": 0,
            "backoff_base_s": 0,
            "retry_after_max_s": 30.5,
            "api_key_env": "",
        }
    )
    assert (cfg.timeout_s, cfg.temperature, cfg.max_retries, cfg.retry_after_max_s) == (60, 1, 0, 30.5)


def test_the_hint_lists_what_the_caller_accepts() -> None:
    caller = ("name", "condition", "usd_per_mtok_prompt")
    with pytest.raises(InputError) as info:
        EndpointConfig.from_mapping(
            {"model": "m", "temprature": 0}, where="models[0]", caller_keys=caller, refused_keys=("seed",)
        )
    assert info.value.field == "models[0].temprature"
    known = (info.value.hint or "").removeprefix("known settings: ").split(", ")
    assert {"name", "condition", "usd_per_mtok_prompt", "temperature", "max_completion_tokens"} <= set(known)
    assert "seed" not in known
    with pytest.raises(InputError, match="cannot be set here") as info:
        EndpointConfig.from_mapping({"model": "m", "seed": 1}, where="models[0]", refused_keys=("seed",))
    assert info.value.field == "models[0].seed"
    # Keys the caller reads itself are left to it.
    assert EndpointConfig.from_mapping({"model": "m", "name": "x"}, caller_keys=caller).model == "m"


def test_one_token_cap_at_a_time() -> None:
    with pytest.raises(InputError, match="not both") as info:
        EndpointConfig.from_mapping({"model": "m", "max_tokens": 10, "max_completion_tokens": 10}, where="models[1]")
    assert info.value.field == "models[1].max_completion_tokens"


def test_temperature_omit_and_max_completion_tokens_shape_the_request() -> None:
    with ScriptedServer(lambda _: text_message("hi")) as server:
        cfg = EndpointConfig.from_mapping(
            {
                "model": "o-mini",
                "base_url": server.base_url,
                "api_key_env": "",
                "temperature": "omit",
                "max_completion_tokens": 512,
            }
        )
        assert cfg.temperature is None
        ChatBackend(cfg).complete([{"role": "user", "content": "x"}])
        default = EndpointConfig(model="m", base_url=server.base_url, api_key_env="", max_tokens=64)
        ChatBackend(default).complete([{"role": "user", "content": "x"}])
        omitted, sent = server.requests
    assert "temperature" not in omitted
    assert omitted["max_completion_tokens"] == 512
    assert "max_tokens" not in omitted
    assert sent["temperature"] == 0.0
    assert sent["max_tokens"] == 64
    assert "max_completion_tokens" not in sent
    with pytest.raises(InputError, match='"omit"'):
        EndpointConfig.from_mapping({"model": "m", "temperature": None})


def test_decoding_names_what_shapes_the_answers_and_no_credential() -> None:
    cfg = EndpointConfig(
        model="o-mini",
        base_url="https://user:s3cret@example.com/v1?api_key=abc",
        temperature=None,
        seed=7,
        max_completion_tokens=512,
        tool_mode="auto",
        timeout_s=5.0,
        max_concurrency=2,
    )
    assert cfg.decoding() == {
        "model": "o-mini",
        "base_url": "https://***@example.com/v1?api_key=***",
        "max_completion_tokens": 512,
        "tool_mode": "auto",
        "text_format": "auto",
        "null_content": "keep",
    }  # no temperature (not sent), seed (the caller's), timeouts or caps (how a unit runs, not what it says)
    assert EndpointConfig(model="m").decoding() == {
        "model": "m",
        "base_url": "https://api.openai.com/v1",
        "temperature": 0.0,
        "tool_mode": "native",
        "text_format": "auto",
        "null_content": "keep",
    }
