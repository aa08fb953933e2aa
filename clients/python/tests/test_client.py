"""The typed client: problem types become exceptions, 429/503 are retried after Retry-After,
every call has a deadline, and the token is in no repr, log line or exception text."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from agenticos_sandbox import Console, Token, errors
from agenticos_sandbox.client import AsyncConsole, _Call

from .standin import scripted

PROBLEM = {"content-type": "application/problem+json"}


def problem(kind: str, status: int, **extra: str) -> bytes:
    return json.dumps({"type": f"https://agenticos.dev/problems/{kind}", "title": kind, "status": status, "detail": "d", **extra}).encode()


def test_problem_types_of_the_console_become_their_exceptions(setup, console):
    with pytest.raises(errors.NotFound) as e:
        console.get_run(str(uuid.uuid4()))
    assert e.value.status == 404 and e.value.type.endswith("/not-found")
    with pytest.raises(errors.InvalidInput) as e:
        console.create_run("")
    assert "agent_id" in e.value.fields and "started_by" not in e.value.fields
    with Console(setup.url, "not-a-token") as stranger, pytest.raises(errors.Unauthenticated) as e:
        stranger.me()
    assert e.value.status == 401


def test_the_token_is_in_no_repr_log_line_or_exception(setup, caplog):
    secret = "agtok_" + uuid.uuid4().hex
    caplog.set_level(logging.DEBUG)
    c = Console(setup.url, secret)
    assert secret not in repr(c) and secret not in repr(Token(secret)) and secret not in str(c._token)
    with pytest.raises(errors.Unauthenticated) as e:
        c.me()
    texts = [str(e.value), repr(e.value), json.dumps(e.value.problem), caplog.text]
    with Console("http://127.0.0.1:9", secret, timeout=2) as nowhere, pytest.raises(errors.TransportError) as t:
        nowhere.me()
    texts += [str(t.value), repr(t.value), caplog.text]
    assert all(secret not in text for text in texts)
    assert "Authorization" not in caplog.text
    c.close()


def test_429_and_503_are_retried_after_retry_after():
    answers = [
        (429, {"retry-after": "1", **PROBLEM}, problem("too-many-requests", 429)),
        (503, {"retry-after": "0", **PROBLEM}, problem("unavailable", 503)),
        (200, {"content-type": "application/json"}, b'{"ok": true}'),
    ]
    with scripted(answers) as (url, seen), Console(url, "t0ken-value") as c:
        assert c.call(_Call("GET", "/api/v1/me")) == {"ok": True}
    assert len(seen) == 3
    assert seen[1]["at"] - seen[0]["at"] >= 1.0
    assert all(s["headers"].get("Authorization") == "Bearer t0ken-value" for s in seen)


async def test_async_retries_too_and_gives_up_after_its_retries():
    answers = [(503, {"retry-after": "0", **PROBLEM}, problem("unavailable", 503))]
    with scripted(answers) as (url, seen):
        c = AsyncConsole(url, "t", retries=2)
        with pytest.raises(errors.Unavailable):
            await c.me()
        await c.aclose()
    assert len(seen) == 3


def test_a_wait_past_the_deadline_is_not_taken():
    answers = [(429, {"retry-after": "120", **PROBLEM}, problem("too-many-requests", 429))]
    with scripted(answers) as (url, seen), Console(url, "t", timeout=5) as c:
        with pytest.raises(errors.TooManyRequests):
            c.me()
    assert len(seen) == 1


def test_a_host_that_does_not_answer_meets_the_deadline():
    with scripted([(0, {"hold": "5"}, b"")]) as (url, _), Console(url, "t", timeout=1) as c:
        with pytest.raises(errors.DeadlineExceeded):
            c.me()
