"""Redaction: secret-like content is replaced by a marker before anything is stored, and
ordinary prose (numbers, dates, the word "token") is left alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.ingestion import redact as redact_module
from cairn.ingestion.redact import _might_hold_secret, redact


def _all_patterns(text: str) -> list[tuple[int, int, str]]:
    """The findings with the prefilter forced open."""
    original = redact_module._might_hold_secret
    redact_module._might_hold_secret = lambda _: True  # type: ignore[assignment]
    try:
        return redact_module._findings(text)
    finally:
        redact_module._might_hold_secret = original


SECRETS = [
    (
        "my key is sk-proj-abcDEF1234567890abcdefGHIJKL1234",
        "sk-proj-abcDEF1234567890abcdefGHIJKL1234",
        "api_key",
    ),
    (
        "use sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx for claude",
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx",
        "api_key",
    ),
    (
        "gemini AIzaSyA1234567890abcdefghijklmnopqrstuv ok",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "api_key",
    ),
    (
        "hf_abcdefghijklmnopqrstuvwxyz0123456789 is my HF token",
        "hf_abcdefghijklmnopqrstuvwxyz0123456789",
        "api_key",
    ),
    (
        "token: ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "github_token",
    ),
    ("AKIAIOSFODNN7EXAMPLE is the aws id", "AKIAIOSFODNN7EXAMPLE", "aws_key"),
    (
        "slack xoxb-123456789012-abcdefghij works",
        "xoxb-123456789012-abcdefghij",
        "slack_token",
    ),
    ("password = hunter2hunter2", "hunter2hunter2", "password"),
    ("my password is sunshine", "sunshine", "password"),
    ("我的密码是abc12345。", "abc12345", "password"),
    ("card 4111 1111 1111 1111 thanks", "4111 1111 1111 1111", "card_number"),
    (
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456",
        "abcdefghijklmnopqrstuvwxyz123456",
        "token",
    ),
    ("postgres://bob:s3cretpw@db.example.com/x", "s3cretpw", "url_credentials"),
    ("api_key=Zx81kq0aPq7Lw2", "Zx81kq0aPq7Lw2", "token"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS)
def test_secrets_are_replaced_by_a_marker(text: str, secret: str, kind: str) -> None:
    redacted = redact(text)
    assert secret not in redacted.text
    assert f"[REDACTED:{kind}]" in redacted.text
    assert kind in redacted.kinds


def test_private_key_blocks_go_whole() -> None:
    text = (
        "here: -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc\n"
        "-----END RSA PRIVATE KEY----- thanks"
    )
    redacted = redact(text)
    assert redacted.text == "here: [REDACTED:private_key] thanks"


@pytest.mark.parametrize(
    "text",
    [
        "I like tea with lemon on Sundays.",
        "The token is expired, please log in again.",
        "I bought 3 apples for 12 dollars on 2024-05-01.",
        "Call me at 4111 1111 1111 1112.",  # fails the Luhn check
        "我下周三去上海出差。",
        "The password reset email never came.",
    ],
)
def test_prose_is_left_alone(text: str) -> None:
    assert redact(text).text == text


@given(st.text(max_size=300))
def test_redaction_never_raises_and_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once.text).text == once.text


@given(
    st.text(
        alphabet=st.sampled_from("abcXYZ019 -_:/=.+@密码是token passwordsk-"),
        max_size=120,
    )
)
def test_the_prefilter_never_hides_a_finding(text: str) -> None:
    assert not _all_patterns(text) or _might_hold_secret(text)


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS)
def test_every_known_secret_passes_the_prefilter(
    text: str, secret: str, kind: str
) -> None:
    assert _might_hold_secret(text)
