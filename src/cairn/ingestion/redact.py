"""Redaction of secret-like content before anything is written, logged, counted or embedded.

Every text at intake goes through one cheap prefilter (a label word, a 16+ character
token or 13+ digits) and, when it fires, through those rules of
:mod:`cairn.ingestion.redact_patterns` whose gates open. A finding is replaced by a
marker ``[REDACTED:<kind>]``: evidence keeps that something was there, never the
secret. :func:`secret_kinds` names the kinds a text holds, for refusing identifiers
that carry one.

Caught:

- fixed formats: model-provider keys (OpenAI, Anthropic, Google, Hugging Face, Groq,
  xAI, Replicate), detect-secrets' token detectors (AWS key IDs, GitHub, GitLab, Slack,
  Stripe, SendGrid, Twilio, PyPI, npm, Discord, Telegram, Mailchimp, Square), AWS
  secret keys after an aws...secret label, Azure ``AccountKey=``/``SharedAccessKey=``
  and SAS ``sig=``, JWTs with their signature, PEM private keys (OpenSSH, PGP,
  encrypted, a GCP service account's ``"private_key"``) and PuTTY key files, whole;
- credentials in URLs (``postgres://u:pw@h``, ``redis://:pw@h``, JDBC ``password=``,
  Oracle ``user/pw@``), ``mysql -pX``, ``sshpass -p X``;
- values under a secret's name: ``.env`` and shell assignments (``DB_PASS=``,
  ``export OPENAI_API_KEY=``, ``PGPASSWORD=``), JSON/YAML/TOML/INI keys
  (``"password": "x"``, ``client_secret = "x"``, ``smtpPassword:``), headers
  (``Authorization: Bearer x``, ``Cookie: ...`` to the end of the line, ``X-Api-Key:``),
  ``sessionid=``; a name ending in a descriptor (``PASSWORD_MIN_LENGTH``, ``TOKEN_URL``,
  ``SECRET_NAME``) or naming a public key is not a secret's;
- prose: "my password is x", "the password for the wifi is x", "wifi password: x",
  "wifi password abc12345" (no separator: the value needs a letter and a digit),
  "I changed my password to x", "the API token is x" (x needs a digit), PINs and
  door/alarm/one-time codes (digits), CVV/CVC, security answers ("my security answer
  is Fluffy", "mother's maiden name is Smith": up to three words, ending at
  punctuation or an ordinary word);
- Chinese: 密码/口令/密钥/令牌 with 是/为/：/a space/nothing before the value (密码是x,
  wifi密码 x, 密码123456), 验证码/PIN码/开门密码 codes, 安全问题的答案是x; a value
  ends at Chinese punctuation or whitespace (an ASCII ``!`` inside it stays);
- card numbers: 13-19 digits with an issuer's first digit and the Luhn check.

Deliberately left alone (false positives cost meaning): a label with no value ("I forgot
my password", "修改密码", "SELECT password FROM users"); a value that is an ordinary
word ("my password is wrong", "the password was changed", "password: see the vault";
a single other word, "my password is sunshine", is taken as the password); token/secret
prose without a digit ("the token is expired", "the secret is patience"); "key",
"code", "pin" and "pass" as English words ("key: value pairs", "the code is on
GitHub", "pin the tweet", "pass the salt": "pass" is a label only before ``:``/``=``);
lengths and counts ("the PIN is 4 digits", "密码是8位"); Chinese text after a label
(密码错误, 密码是什么; only 口令 and security answers take Chinese values); digit runs
failing the Luhn check, UUIDs, git SHAs. Unquoted passphrases with spaces lose only
their first word; a secret with no recognisable shape or label passes. This is a
keyword-and-format defence line, not a DLP system (tests/ingestion/test_redact.py and
bench/redaction_corpus.jsonl pin what is caught and what is left alone).
"""

from __future__ import annotations

import re
from typing import Final

import attrs

from cairn.ingestion.redact_patterns import (
    ANSWER_END_WORDS,
    ANY_LABEL_WORD,
    CARD,
    KEY_VALUES,
    LABEL_WORDS,
    LONG_TOKEN,
    PREFIX_WORDS,
    QUOTED_STOP_WORDS,
    RULES,
    STOP_WORDS,
    UNIT_AFTER,
    ZH_NOT_A_VALUE,
    Rule,
    Value,
    key_class,
)

__all__ = ["Redacted", "redact", "secret_kinds"]

_DIGIT: Final = re.compile(r"\d")
_MARKER: Final = re.compile(r"\[REDACTED:[a-z_]+\]")
_CJK: Final = (
    "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\uff00-\uffef"
)
_RUN: Final = re.compile(r"[^\s\"`;<" + _CJK + r"]+")
_RUN_QUERY: Final = re.compile(r"[^\s\"`;<&#" + _CJK + r"]+")
_RUN_CJK: Final = re.compile(
    r"[^\s\"`;,.!?，。；！？、：:（）()「」『』【】《》“”‘’"
    r"\u3000-\u303f\uff00-\uff0f\uff1a-\uff20]+"
)
_LINE: Final = re.compile(r"[^\r\n\"']+")
_QUOTES: Final = {
    '"': '"',
    "'": "'",
    "`": "`",
    "“": "”",
    "‘": "’",
    "「": "」",
    "『": "』",
}
_TRAILING: Final = frozenset(".,:;?\"'`”’」』")
_CLOSERS: Final = {")": "(", "]": "[", "}": "{", ">": "<"}
_SCHEME: Final = re.compile(
    r"(?i:bearer|basic|token|bot|digest|apikey|api-key|sso-key|negotiate|hmac|otp)\s+"
)
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_CODE_CHARS: Final = re.compile(r"[A-Za-z0-9#*-]+")
_PLACEHOLDER: Final = re.compile(
    r"\$[{(]|\$[A-Z_][A-Z0-9_]*$|[<({\[]|%[A-Za-z_]+%$|\[REDACTED|[*•·xX.]+$"
    r"|[A-Za-z_][\w.]*\(.*\)$|[A-Za-z_][\w.]*\["
    r"|(?:self|this|os|settings|config|cfg|process|env|request|args|opts|options"
    r"|params|secrets|vars)\."
)


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


_GATES: Final = tuple(
    (frozenset(rule.needs), rule.also, rule.long_token) for rule in RULES
)


def _present(text: str) -> tuple[frozenset[str], bool] | None:
    """The rules' gate words ``text`` holds and whether it holds a long token, or None
    when no gate can open (no label word, no long token, fewer than 13 digits for a
    card): the cheap test every text at intake takes; most prose fails it."""
    lowered = text.lower()
    labelled = ANY_LABEL_WORD.search(lowered) is not None
    long_token = LONG_TOKEN.search(text) is not None
    if not (labelled or long_token or len(_DIGIT.findall(text)) >= 13):
        return None
    present = {word for word in LABEL_WORDS if word in lowered} if labelled else set()
    if long_token:
        present.update(word for word in PREFIX_WORDS if word in lowered)
    return frozenset(present), long_token


def _might_hold_secret(text: str) -> bool:
    return _present(text) is not None


def _strip(text: str, start: int, end: int) -> int:
    """``end`` moved back over trailing sentence punctuation, quotes and unmatched
    closing brackets."""
    while end > start:
        last = text[end - 1]
        if last in _TRAILING or (
            last in _CLOSERS and _CLOSERS[last] not in text[start : end - 1]
        ):
            end -= 1
        else:
            break
    return end


def _quoted(text: str, start: int) -> int | None:
    """The end of the quoted value opening at ``start``, if it closes on its line."""
    close = _QUOTES[text[start]]
    position = start + 1
    limit = min(len(text), start + 1025)
    while position < limit:
        char = text[position]
        if char == "\\":
            position += 2
            continue
        if char == close:
            return position
        if char in "\r\n":
            return None
        position += 1
    return None


def _run(text: str, start: int, value: Value) -> tuple[int, int] | None:
    """The unquoted value starting at ``start``, without trailing punctuation."""
    pattern = _RUN_CJK if value.cjk else _RUN_QUERY if value.query else _RUN
    if value.line:
        pattern = _LINE
    match = pattern.match(text, start)
    if match is None:
        return None
    end = match.end() if value.line else _strip(text, start, match.end())
    if value.line:
        end = start + len(text[start:end].rstrip())
    words = 1
    while words < value.words and end == match.end():
        following = re.match(r"[ ]([A-Za-z0-9][^\s]*)", text[end:])
        if following is None:
            break
        word = following.group(1)
        if word.lower().strip(".,;:!?") in ANSWER_END_WORDS:
            break
        match = pattern.match(text, end + 1)
        if match is None:
            break
        end = _strip(text, end + 1, match.end())
        words += 1
    return (start, end) if end > start else None


def _is_value(text: str, start: int, end: int, value: Value, quoted: bool) -> bool:
    candidate = text[start:end]
    if not candidate or len(candidate) > value.max_len:
        return False
    if len(candidate) < (1 if quoted and not value.digits_only else value.min_len):
        return False
    if _PLACEHOLDER.match(candidate) and not (quoted and candidate[0] not in "<[$"):
        return False
    if value.digits_only and not (candidate.isascii() and candidate.isdigit()):
        return False
    if value.code and _CODE_CHARS.fullmatch(candidate) is None:
        return False
    digits = len(_DIGIT.findall(candidate))
    if digits < value.min_digits:
        return False
    if value.shape and not (
        digits >= 6 or (digits and re.search(r"[^\W\d]", candidate) is not None)
    ):
        return False
    if (digits == len(candidate) or value.code) and UNIT_AFTER.match(text, end):
        return False
    if value.cjk and ZH_NOT_A_VALUE.match(candidate):
        return False
    first = candidate.split(" ", 1)[0]
    # A capitalised word in a multi-word value is a name ("New York"), not prose.
    named = value.words > 1 and first[:1].isupper()
    if value.stop_words and not named and _WORD.fullmatch(first):
        lowered = first.lower()
        if quoted:
            return lowered not in QUOTED_STOP_WORDS
        if lowered in STOP_WORDS:
            return False
        if lowered == first and len(first) >= 4 and lowered.endswith("ed"):
            return False
    return True


def _value_span(text: str, start: int, value: Value) -> tuple[int, int] | None:
    """Where the value that starts at ``start`` lies, if it is one."""
    if start >= len(text):
        return None
    if value.scheme:
        scheme = _SCHEME.match(text, start)
        if scheme is not None:
            start = scheme.end()
    if not value.line and text[start] in _QUOTES:
        close = _quoted(text, start)
        if close is not None:
            inner = start + 1
            if value.scheme:
                scheme = _SCHEME.match(text, inner, close)
                if scheme is not None:
                    inner = scheme.end()
            if _is_value(text, inner, close, value, quoted=True):
                return inner, close
            return None
        start += 1
    span = _run(text, start, value)
    if span is None or not _is_value(text, *span, value, quoted=False):
        return None
    return span


def _rule_findings(rule: Rule, rank: int, text: str) -> list[tuple[int, int, int, str]]:
    found: list[tuple[int, int, int, str]] = []
    for match in rule.pattern.finditer(text):
        kind, value = rule.kind, rule.value
        if rule.keyed:
            separator = match["sep"] if "sep" in rule.pattern.groupindex else "="
            separator = ":" if separator == "：" else separator
            key = key_class(match["key"], separator)
            if key is None:
                continue
            kind, value = KEY_VALUES[key]
        if value is not None and match.start() and text[match.start() - 1] in "?&":
            value = attrs.evolve(value, query=True)  # a URL parameter ends at "&"
        if value is None:
            group = "secret" if "secret" in rule.pattern.groupindex else 0
            start, end = match.start(group), match.end(group)
        else:
            span = _value_span(text, match.end(), value)
            if span is None:
                continue
            start, end = span
        if end > start:
            found.append((start, end, rank, kind))
    return found


def _findings(text: str, *, gated: bool = True) -> list[tuple[int, int, int, str]]:
    """Every finding as ``(start, end, rank, kind)``; ``rank`` is the rule's precedence.
    Only rules whose gate opens run (``gated=False`` runs all: the same findings, more
    slowly). Spans inside an existing marker are never findings (markers are not
    re-redacted)."""
    gates = _present(text) if gated else (frozenset(), True)
    if gates is None:
        return []
    present, long_token = gates
    found: list[tuple[int, int, int, str]] = []
    for rank, (rule, (needs, also, long_rule)) in enumerate(
        zip(RULES, _GATES, strict=True)
    ):
        if not gated or (
            (long_token or not long_rule)
            and (not needs or not needs.isdisjoint(present))
            and (not also or any(mark in text for mark in also))
        ):
            found.extend(_rule_findings(rule, rank, text))
    for match in CARD.finditer(text):
        digits = re.sub(r"\D", "", match[0])
        if 13 <= len(digits) <= 19 and _luhn(digits):
            found.append((match.start(), match.end(), len(RULES), "card_number"))
    if "[REDACTED:" in text and found:
        markers = [(m.start(), m.end()) for m in _MARKER.finditer(text)]
        found = [
            finding
            for finding in found
            if not any(
                finding[0] < end and start < finding[1] for start, end in markers
            )
        ]
    return found


def _merged(text: str) -> list[tuple[int, int, str]]:
    """Findings merged where they overlap or touch; the earliest (then the rule of
    highest precedence) names the marker."""
    merged: list[tuple[int, int, str]] = []
    for start, end, _, kind in sorted(_findings(text), key=lambda f: (f[0], f[2])):
        if merged and start <= merged[-1][1]:
            first, last, name = merged[-1]
            merged[-1] = (first, max(last, end), name)
        else:
            merged.append((start, end, kind))
    return merged


_MAX_PASSES: Final = 8


def _segments(text: str) -> list[str]:
    """``text`` as literal pieces with the kinds of new markers between them (odd
    indexes), redacted until a pass finds nothing: replacing a secret can make a label
    next to it match ("4111...1111password:x"), and redacted text must redact to
    itself."""
    segments = [text]
    for _ in range(_MAX_PASSES):
        joined = _join(segments) if len(segments) > 1 else text
        merged = _merged(joined)
        if not merged:
            break
        # A match never spans a marker; look-arounds are one character wide and the
        # longer-reaching patterns stop at "[" (redact_patterns), so a new marker can
        # only make a new match where it touches a word character.
        glued = any(
            (start > 0 and _is_word(joined[start - 1]))
            or (end < len(joined) and _is_word(joined[end]))
            for start, end, _ in merged
        )
        result: list[str] = []
        offset = 0
        spans = iter(merged)
        span = next(spans, None)
        for index, segment in enumerate(segments):
            if index % 2:
                result.append(segment)
                offset += len(_marker(segment))
                continue
            # A finding never overlaps a marker, so each lies inside one literal piece.
            position = 0
            while span is not None and span[0] < offset + len(segment):
                start, end, kind = span
                result.extend((segment[position : start - offset], kind))
                position = end - offset
                span = next(spans, None)
            result.append(segment[position:])
            offset += len(segment)
        segments = result
        if not glued:
            break
    return segments


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _join(segments: list[str]) -> str:
    return "".join(
        _marker(segment) if index % 2 else segment
        for index, segment in enumerate(segments)
    )


def redact(text: str) -> Redacted:
    """Replace secret-like spans of ``text`` by ``[REDACTED:<kind>]`` markers.

    Overlapping findings merge into one marker. Pure and thread-safe; never raises on
    odd text; idempotent (markers are never redacted again).
    """
    segments = _segments(text)
    if len(segments) == 1:
        return Redacted(text, ())
    return Redacted(_join(segments), tuple(segments[1::2]))


def secret_kinds(text: str) -> tuple[str, ...]:
    """The kinds of secret ``text`` holds, each once, in order of position; empty if
    none. For refusing identifiers (event, session, request IDs) that carry a secret:
    an ID is never redacted, it is refused."""
    return tuple(dict.fromkeys(_segments(text)[1::2]))
