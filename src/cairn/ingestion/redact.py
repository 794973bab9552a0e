"""Redaction of secret-like content before anything is written, logged, counted or embedded.

Two sources of patterns, both run on every text at intake:

- the fixed-format token detectors of Yelp's ``detect-secrets`` (AWS, GitHub, GitLab,
  Slack, Stripe, JWT, SendGrid, Twilio, PyPI, npm, URL credentials, ...): maintained
  upstream, offline, pure ``re``. Its entropy and keyword plugins are left out: they are
  built for source files and flag ordinary words in prose.
- our own patterns for model-provider keys (OpenAI, Anthropic, Google, Hugging Face, Groq,
  xAI, Replicate), bearer tokens, PEM private keys, ``password: ...``-style assignments in
  English and Chinese, and card numbers (13-19 digits passing the Luhn check).

A match is replaced by a marker ``[REDACTED:<kind>]``: evidence keeps that something was
there, never the secret. This is a keyword-and-format defence line, not a DLP system: a
secret with no recognisable shape or label passes (tests/ingestion/test_redact.py pins
what is caught and what ordinary prose is left alone).
"""

from __future__ import annotations

import re
from typing import Final

import attrs
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

__all__ = ["Redacted", "redact"]

_LIBRARY_DETECTORS: Final = (
    ("aws_key", AWSKeyDetector),
    ("azure_key", AzureStorageKeyDetector),
    ("url_credentials", BasicAuthDetector),
    ("discord_token", DiscordBotTokenDetector),
    ("github_token", GitHubTokenDetector),
    ("gitlab_token", GitLabTokenDetector),
    ("jwt", JwtTokenDetector),
    ("mailchimp_key", MailchimpDetector),
    ("npm_token", NpmDetector),
    ("api_key", OpenAIDetector),
    ("pypi_token", PypiTokenDetector),
    ("sendgrid_key", SendGridDetector),
    ("slack_token", SlackDetector),
    ("square_secret", SquareOAuthDetector),
    ("stripe_key", StripeDetector),
    ("telegram_token", TelegramBotTokenDetector),
    ("twilio_key", TwilioKeyDetector),
)

_OWN_PATTERNS: Final = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|\Z)",
            re.DOTALL,
        ),
    ),
    # Model providers: OpenAI (sk-, sk-proj-, sk-svcacct-), Anthropic (sk-ant-),
    # DeepSeek and most OpenAI-compatible hosts (sk-), Google (AIza), Hugging Face (hf_),
    # Groq (gsk_), xAI (xai-), Replicate (r8_), GitHub fine-grained PATs.
    ("api_key", re.compile(r"\bsk-[A-Za-z0-9][A-Za-z0-9_-]{19,}")),
    ("api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("api_key", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("api_key", re.compile(r"\bgsk_[A-Za-z0-9]{20,}")),
    ("api_key", re.compile(r"\bxai-[A-Za-z0-9]{20,}")),
    ("api_key", re.compile(r"\br8_[A-Za-z0-9]{20,}")),
    ("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}")),
    ("token", re.compile(r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)")),
    # "password: x", "password=x", "my password is x": the value after a password word is
    # the secret whatever it looks like.
    (
        "password",
        re.compile(
            r"(?i)\b(?:password|passwd|passphrase|pwd|pin code)\b\s*(?:[:=]|is|was)\s*"
            r"[\"']?(?P<secret>[^\s\"',;]{3,})"
        ),
    ),
    # "api_key = x", "token: x" always; "the token is x" only when x looks like one (has a
    # digit), so "the token is expired" stays prose.
    (
        "token",
        re.compile(
            r"(?i)\b(?:api[_ -]?key|access[_ -]?key|secret[_ -]?key|client[_ -]?secret"
            r"|access[_ -]?token|auth[_ -]?token|refresh[_ -]?token|token|secret)\b"
            r"\s*[:=]\s*[\"']?(?P<secret>[^\s\"',;]{6,})"
        ),
    ),
    (
        "token",
        re.compile(
            r"(?i)\b(?:api[_ -]?key|access[_ -]?key|secret[_ -]?key|client[_ -]?secret"
            r"|access[_ -]?token|auth[_ -]?token|refresh[_ -]?token|token)\b"
            r"\s+(?:is|was)\s+[\"']?(?P<secret>(?=[^\s\"',;]*\d)[^\s\"',;]{6,})"
        ),
    ),
    (
        "password",
        re.compile(
            r"(?:密码|口令|密钥|令牌|验证码|支付密码)\s*(?:是|为|:|：|=)\s*"
            r"(?P<secret>[^\s，。；、,;!！?？]{3,})"
        ),
    ),
)

_CARD: Final = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")

# Every pattern above needs one of these: an unbroken token of 16+ characters (every
# fixed-format key), a label word, or 13+ digits (a card). Ordinary prose has none, and
# one search for them is ~10x cheaper than running every pattern
# (tests/ingestion/test_redact.py::test_the_prefilter_never_hides_a_finding).
_MAYBE_SECRET: Final = re.compile(
    r"[A-Za-z0-9_\-./+=:]{16,}"
    r"|(?i:password|passwd|passphrase|pwd|pin code|api|key|token|secret|bearer"
    r"|://|private)"
    r"|密码|口令|密钥|令牌|验证码"
)
_DIGIT: Final = re.compile(r"\d")


@attrs.frozen
class Redacted:
    """``text`` with every finding replaced by a marker; ``kinds`` in order of position."""

    text: str
    kinds: tuple[str, ...]


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _might_hold_secret(text: str) -> bool:
    if _MAYBE_SECRET.search(text) is not None:
        return True
    return len(_DIGIT.findall(text)) >= 13


def _findings(text: str) -> list[tuple[int, int, str]]:
    if not _might_hold_secret(text):
        return []
    found: list[tuple[int, int, str]] = []
    for kind, pattern in _OWN_PATTERNS:
        for match in pattern.finditer(text):
            group = "secret" if "secret" in pattern.groupindex else 0
            if match.end(group) > match.start(group):
                found.append((match.start(group), match.end(group), kind))
    for kind, detector in _LIBRARY_DETECTORS:
        for pattern in detector.denylist:
            found.extend(
                (match.start(), match.end(), kind)
                for match in pattern.finditer(text)
                if match.end() > match.start()
            )
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match[0])
        if 13 <= len(digits) <= 19 and _luhn(digits):
            found.append((match.start(), match.end(), "card_number"))
    return found


def redact(text: str) -> Redacted:
    """Replace secret-like spans of ``text`` by ``[REDACTED:<kind>]`` markers.

    Overlapping findings merge into one marker (the earliest finding names it). Pure and
    thread-safe; never raises on odd text.
    """
    found = sorted(_findings(text))
    if not found:
        return Redacted(text, ())
    merged: list[tuple[int, int, str]] = []
    for start, end, kind in found:
        if merged and start <= merged[-1][1]:
            first, last, name = merged[-1]
            merged[-1] = (first, max(last, end), name)
        else:
            merged.append((start, end, kind))
    pieces: list[str] = []
    position = 0
    for start, end, kind in merged:
        pieces.append(text[position:start])
        pieces.append(f"[REDACTED:{kind}]")
        position = end
    pieces.append(text[position:])
    return Redacted("".join(pieces), tuple(kind for _, _, kind in merged))
