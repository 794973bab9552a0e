"""What a secret looks like: the patterns, label words and value rules behind
:mod:`cairn.ingestion.redact`.

Two families of rules:

- fixed formats (provider keys, JWTs, PEM blocks, URL credentials, ...): the match, or
  its ``secret`` group, is the secret;
- labels ("password is", ``DB_PASS=``, "PIN:", "密码是", ...): the pattern ends where
  the value starts, and a :class:`Value` says how far the value runs and whether what is
  there is a secret at all ("my password is wrong" names no value).

Each rule has a gate (:class:`Rule`): words it cannot match without, a long token, a
separator or digit. A text opening no gate (most prose) costs one search; otherwise
only the rules whose gates open run. tests/ingestion/test_redact.py checks that the
gates never hide a finding.
"""

from __future__ import annotations

import re
from typing import Final

import attrs
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector


@attrs.frozen
class Value:
    """How a labelled value is read, and when it counts as a secret.

    ``min_len`` applies to an unquoted value (a quoted one needs one character);
    ``stop_words``: a single ordinary English word ("wrong", "the", "expired") is prose,
    not a value; ``min_digits``; ``digits_only`` (PINs, CVVs); ``code`` (digits, letters,
    ``#*-`` only: door codes); ``shape`` (a letter and a digit, or 6+ digits: labels with
    no separator, "wifi password abc12345"); ``words``: how many words the value may
    span (security answers); ``cjk``: CJK characters belong to the value (Chinese
    security answers, 口令); ``query``: the value ends at ``&`` (URL parameters);
    ``scheme``: skip an ``Authorization`` scheme word; ``line``: the rest of the line
    (``Cookie:`` headers).
    """

    min_len: int = 3
    max_len: int = 1024
    stop_words: bool = True
    min_digits: int = 0
    digits_only: bool = False
    code: bool = False
    shape: bool = False
    words: int = 1
    cjk: bool = False
    query: bool = False
    scheme: bool = False
    line: bool = False


@attrs.frozen
class Rule:
    """``pattern`` finds a secret of ``kind``: the match (or its ``secret`` group) when
    ``value`` is None, else the value that starts where the match ends. ``keyed``: the
    match's ``key`` group must name a secret (:func:`key_class`), which picks the kind
    and value rule.

    The gate: the pattern runs only on a text holding one of ``needs`` (lowercase
    substrings, checked on the lowercased text: a label word, a key's prefix), if given
    one of ``also`` (a separator, a digit), and when ``long_token`` an unbroken token of
    16+ characters (:data:`LONG_TOKEN`). Every match implies its gate
    (tests/ingestion/test_redact.py: gated and ungated findings are the same)."""

    kind: str
    pattern: re.Pattern[str]
    value: Value | None = None
    keyed: bool = False
    needs: tuple[str, ...] = ()
    long_token: bool = False
    also: tuple[str, ...] = ()


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# --- value rules ------------------------------------------------------------------

ASSIGNED: Final = Value()  # password: x, DB_PASS=x, "api_key": "x"
PROSE: Final = Value()  # my password is x
LOOSE: Final = Value(min_len=6, shape=True)  # wifi password abc12345
LOOSE_PAIR: Final = Value(min_len=4, shape=True)  # login is admin / x
TOKEN_PROSE: Final = Value(min_len=6, min_digits=1)  # the token is x (x has a digit)
SESSION: Final = Value(min_len=8)
COOKIE: Final = Value(min_len=8, stop_words=False, line=True)
AUTHORIZATION: Final = Value(min_len=8, stop_words=False, scheme=True)
COMMAND: Final = Value(min_len=3, stop_words=False)  # mysql -pSECRET
PIN: Final = Value(min_len=4, max_len=8, digits_only=True)
CVV: Final = Value(min_len=3, max_len=4, digits_only=True)
CODE: Final = Value(min_len=3, max_len=16, code=True, min_digits=3)
ANSWER: Final = Value(min_len=2, max_len=60, words=3)
ZH: Final = Value(min_len=3)  # 密码是x / 密码：x
ZH_LOOSE: Final = Value(min_len=4)  # wifi密码 x
ZH_ADJACENT: Final = Value(min_len=4, min_digits=1)  # 密码123456
ZH_CJK: Final = Value(min_len=1, max_len=12, cjk=True)  # 安全问题的答案是小白

# Single ordinary words that follow a label in prose without being its value:
# "my password is wrong", "the password was changed", "password: see the vault".
# Lowercase; a value is checked only when it is one alphabetic word. Participles in -ed
# are prose too ("is expired", "was updated") without being listed.
STOP_WORDS: Final = _words(
    """
    a an the my your our his her their its this that these those it i me you we they
    he she mine yours what which who where when how why whatever something nothing
    anything everything someone same different other another one some any all both
    each every either neither i'm i'll i've it's that's there's here's
    in on at of for to from with without by about as like into onto under behind inside
    below above here there and or but so because if then than too very also just still
    now already again always never usually probably definitely really actually not no
    yes only even almost quite pretty rather way much more less most least super kinda
    sorta literally basically simply currently apparently supposedly somewhere nowhere
    elsewhere later soon yet extremely totally completely fairly relatively ridiculously
    nearly exactly around over
    being been be is are was were has have had do does did done going gonna getting got
    gotten set reset wrong right correct incorrect invalid valid required expired
    expiring changing hidden written forgotten lost stolen known unknown shown given
    taken broken working missing pending needed necessary mandatory optional enabled
    disabled active inactive locked blocked compromised weak strong short long simple
    easy hard difficult complex secure insecure safe unsafe good bad fine ok okay great
    terrible awful horrible obvious old new temporary temp permanent default blank empty
    null none nil undefined true false off n/a na tbd todo unset case-sensitive
    sensitive private secret confidential public personal encrypted hashed random
    generated ridiculous stupid dumb impossible annoying useless fake real identical
    similar unique shared common typical standard
    see check ask use try look find call text email send type enter please thanks thank
    sorry lol haha yeah nope yep hmm um uh well oh ah eh btw fyi expires expire changes
    change works work fails matters doesn't isn't wasn't won't can't cannot don't
    didn't needs must should would could will can may might supposed meant
    string str int integer text varchar bool boolean number
    wifi app qq id vpn pin login account
    """
)

# Quoted values are explicit, so only schema and placeholder words are prose there
# (``"password": "string"`` in an API schema).
QUOTED_STOP_WORDS: Final = _words(
    "string str int integer text varchar bool boolean none null nil true false "
    "required optional hidden undefined"
)

# A value followed by one of these is a length or a count, not a secret: "the PIN is
# 4 digits", "密码是8位".
UNIT_AFTER: Final = re.compile(
    r"\s*(?:characters?|chars?|digits?|letters?|symbols?|numbers?|long\b|times|tries"
    r"|attempts|days?|hours?|minutes?|mins?|seconds?|secs?|weeks?|months?|years?"
    r"|%|percent|位|个|次|天|月|年|小时|分钟|秒|字)",
    re.IGNORECASE,
)

# Words that end a multi-word value (security answers): "Fluffy, my first cat", "Smith
# and ...".
ANSWER_END_WORDS: Final = STOP_WORDS | _words(
    "because which who since though although lol haha btw"
)

# Chinese openings that ask or describe instead of giving a value: 答案是什么.
ZH_NOT_A_VALUE: Final = re.compile(
    r"(?:什么|什麼|多少|啥|哪|忘|不|没|沒|错|錯|对|對|空|一样|一樣|相同|正确|正確"
    r"|之前|以前|原来|原來|默认|默認|我的|你的|他的|她的)"
)

# --- key names (``KEY=value``, ``"key": value``) -----------------------------------

_KEY_PARTS: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PASSWORD_PARTS: Final = frozenset(
    {"password", "passwd", "passphrase", "passcode", "pwd", "pw", "pword", "passwort"}
)
_TOKEN_PARTS: Final = frozenset(
    {
        "secret",
        "token",
        "apikey",
        "apitoken",
        "authtoken",
        "accesstoken",
        "refreshtoken",
        "secretkey",
        "privatekey",
        "accesskey",
        "clientsecret",
        "credential",
        "credentials",
        "creds",
    }
)
_SESSION_PARTS: Final = frozenset(
    {"sessionid", "sessid", "phpsessid", "jsessionid", "sessiontoken", "sessionkey"}
)
# "key" is a secret's name after one of these (API_KEY, "secret key", apiKey) or in an
# UPPER_SNAKE name (STRIPE_KEY); "primary_key", "sort_key" and "key: value" are not.
_KEY_PREFIXES: Final = _words(
    "api access secret private signing encryption encrypt master client ssh account "
    "shared storage app consumer service subscription deploy admin root auth session "
    "webhook hmac jwt crypt cipher aes license openai anthropic stripe"
)
_PASS_PREFIXES: Final = _words(
    "user username login db database admin root wifi ftp sftp smtp mail email my the "
    "your vpn router app account mysql postgres redis"
)
# A name ending in one of these is about the secret, not the secret: PASSWORD_MIN_LENGTH,
# TOKEN_URL, SECRET_NAME, api_key_header.
_NOT_SECRET_LAST: Final = _words(
    "url uri path file dir directory name type mode length len size count limit ttl "
    "expiry expires expiration timeout enabled disabled required policy header field "
    "param prefix env var version format algorithm alg method provider endpoint host "
    "port region rate hint min max rotation store manager source location ref arn label "
    "scope issuer audience usage budget reset strength regex pattern validation rule "
    "rules secs seconds minutes hours days lifetime age duration interval id ids "
    "placeholder example help description title"
)
_NOT_SECRET_ANY: Final = frozenset({"public", "publishable", "pub", "tokenizer"})
_UPPER_PASSWORD: Final = re.compile(r"PASSWORD|PASSWD|PASSPHRASE")


def key_class(key: str, separator: str) -> str | None:
    """What a key name holds: ``password``, ``token``, ``session``, ``cookie``,
    ``authorization``, ``pin``, ``prose_token`` (a lone lowercase "secret"/"token",
    which needs a token-like value), or None (not a secret's name)."""
    last_word = key.rsplit(" ", 1)[-1]
    upper = not any(char.islower() for char in last_word)
    raw_parts = _KEY_PARTS.findall(key)
    parts = [part.lower() for part in raw_parts]
    if not parts or any(part in _NOT_SECRET_ANY for part in parts):
        return None
    found: str | None = None
    for index, part in enumerate(parts):
        previous = parts[index - 1] if index else ""
        following = parts[index + 1] if index + 1 < len(parts) else ""
        if part in _PASSWORD_PARTS or (
            part == "pass" and (upper or not previous or previous in _PASS_PREFIXES)
        ):
            found = "password"
        elif part in _TOKEN_PARTS or (
            part == "key" and (previous in _KEY_PREFIXES or (upper and len(parts) > 1))
        ):
            found = "token"
        elif part in _SESSION_PARTS or (
            part == "session" and following in {"id", "token", "key", "secret"}
        ):
            found = "session"
        elif part in {"session", "sid"} and separator == "=":
            found = found or "session"
        elif part in {"cookie", "cookies"} and separator == ":":
            found = "cookie"
        elif part in {"authorization", "auth"}:
            found = "authorization" if part == "authorization" else "token"
        elif part == "pin" and (len(parts) == 1 or following in {"code", "number"}):
            found = "pin"
        elif upper and _UPPER_PASSWORD.search(raw_parts[index]):
            found = "password"
    if found is None:
        return None
    last = parts[-1]
    if last in _NOT_SECRET_LAST and last not in _PASSWORD_PARTS | _TOKEN_PARTS:
        return None
    if (
        found == "token"
        and not upper
        and len([p for p in parts if p not in {"the", "my", "your", "our"}]) == 1
        and parts[-1] in {"secret", "token", "auth", "credential", "credentials"}
        and separator == ":"
    ):
        return "prose_token"
    return found


KEY_VALUES: Final = {
    "password": ("password", ASSIGNED),
    "token": ("token", ASSIGNED),
    "prose_token": ("token", TOKEN_PROSE),
    "session": ("token", SESSION),
    "cookie": ("token", COOKIE),
    "authorization": ("token", AUTHORIZATION),
    "pin": ("passcode", PIN),
}

# --- patterns ----------------------------------------------------------------------

# "is", "was", "is now:", or Chinese 是/为/： after an English label ("我的PIN是 7788").
_IS_WORD = (
    r"(?:\s+(?:is|was)\b(?:\s+(?:now|still|currently|actually|just|simply|literally"
    r"|probably|basically|always|also))?(?:\s*[:：]\s*|\s+)"
    r"|\s*(?:也|就|还|還|都)?(?:是|为|為)\s*|\s*：\s*)"
)
# The same or "'s" ("my email password's x"; only right after the label, as in
# "password for grandma's ipad:" the "'s" belongs to "grandma").
_IS = r"(?:\s*(?:'s|’s)\s+|" + _IS_WORD + r")"
# "for the VPN", "to my bank account", "on the router" between a label and its "is".
_FOR_THE = r"(?:\s+(?:for|to|on|of|at|in|with)(?:\s+[^\s.,;:!?\"“”()\[]+){1,4}?)?"
_PW_LABEL = (
    r"(?:pass(?:word|phrase)|passw?r?d|pas?sword|psswo?r?d|psw|pword|pwd|pw"
    r"|(?:wi-?fi|router|vpn|network|email|login|admin)\s+pass"
    r"|wi-?fi\s+key|wpa2?\s+key|network\s+key)"
)
_ZH_SEP = (
    r"(?:(?:也|就|还|還|都|其实|其實|一直|已经|已經|已|现在|現在|目前)?"
    r"(?:是|为|為|改成了?|改为|改為|换成了?|換成了?|设置为|設置為|设为|設為|设置成"
    r"|设成|变成了?|變成了?)\s*|\s*[:：=＝]\s*)"
)
_ZH_PW_LABEL = r"(?:密码|密碼|口令|密钥|密鑰|令牌|暗号|暗號)"
_ZH_PW_NEEDS: Final = ("密码", "密碼", "口令", "密钥", "密鑰", "令牌", "暗号", "暗號")
_ZH_PASSCODE = (
    r"(?:验证码|驗證碼|动态码|動態碼|校验码|校驗碼|(?i:pin)\s*[码碼]|开门密码|開門密碼"
    r"|门禁密码|門禁密碼|门禁码|門禁碼|门锁密码|門鎖密碼|开锁密码|開鎖密碼)"
)
_ZH_ANSWER = r"(?:安全问题的?答案|安全問題的?答案|密保(?:问题|問題)?的?答案)"

# Fixed formats from detect-secrets (maintained upstream, offline, pure ``re``). Its
# JWT, URL-credential and Azure patterns are replaced by ours below (the JWT one stops
# before the signature); of its AWS patterns only the access key ID is kept (the
# secret-key one takes the label with it).
# With each: its prefixes (the gate, see Rule) and whether it is 16+ characters long
# (short Slack tokens and Square secrets, which may hold a backslash, can be shorter).
# Its npm pattern (an .npmrc line, to the end of the line) is replaced by ours.
_LIBRARY: Final = (
    (
        "aws_key",
        AWSKeyDetector.denylist[:1],
        ("a3t", "abia", "acca", "akia", "asia"),
        True,
    ),
    ("discord_token", DiscordBotTokenDetector.denylist, (), True),
    (
        "github_token",
        GitHubTokenDetector.denylist,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        True,
    ),
    ("gitlab_token", GitLabTokenDetector.denylist, ("gl", "gr1348941"), True),
    ("mailchimp_key", MailchimpDetector.denylist, ("-us",), True),
    ("api_key", OpenAIDetector.denylist, ("t3blbkfj",), True),
    ("pypi_token", PypiTokenDetector.denylist, ("pypi-",), True),
    ("sendgrid_key", SendGridDetector.denylist, ("sg.",), True),
    ("slack_token", SlackDetector.denylist, ("xox", "hooks.slack.com"), False),
    ("square_secret", SquareOAuthDetector.denylist, ("sq0csp-",), False),
    ("stripe_key", StripeDetector.denylist, ("k_live_",), True),
    ("telegram_token", TelegramBotTokenDetector.denylist, (), True),
    ("twilio_key", TwilioKeyDetector.denylist, ("ac", "sk"), True),
)


# Our patterns are compiled ASCII: \b, \w and \s are ASCII, so an English label
# next to Chinese text has its word boundary ("我的CVV是321", "AWS的secret key").
def _fixed(
    kind: str,
    pattern: str,
    flags: int = 0,
    *,
    needs: tuple[str, ...],
    long_token: bool = True,
) -> Rule:
    """A fixed format: gated on its prefix and (unless it can be short) a long token."""
    compiled = re.compile(pattern, flags | re.ASCII)
    return Rule(kind, compiled, needs=needs, long_token=long_token)


def _labelled(
    kind: str,
    pattern: str,
    value: Value,
    flags: int = 0,
    *,
    needs: tuple[str, ...],
    also: tuple[str, ...] = (),
) -> Rule:
    compiled = re.compile(pattern, flags | re.ASCII)
    return Rule(kind, compiled, value, needs=needs, also=also)


_DIGITS: Final = tuple("0123456789")
_KEY_SEPARATORS: Final = (":", "=", "：")


_PASSWORD_NEEDS: Final = ("pass", "pw", "psw", "pssw", "pasw")
# Every part key_class takes for a secret's name holds one of these.
_KEY_NEEDS: Final = (
    "pass",
    "pw",
    "secret",
    "token",
    "key",
    "cred",
    "sess",
    "sid",
    "cookie",
    "auth",
    "pin",
)


_I = re.IGNORECASE

# In order of precedence: when two findings start at the same place, the earlier rule
# names the marker (GITHUB_TOKEN=ghp_... is a github_token, not a generic token).
# Patterns that look further than one character past their match (the URL host, the
# rest of a command line, "for the X") stop at "[", a marker's first character: a
# marker can make such a match fail, never appear (redact's extra pass looks only
# where a new marker touches a word character).
RULES: Final[tuple[Rule, ...]] = (
    *(
        Rule(kind, pattern, needs=needs, long_token=long_token)
        for kind, patterns, needs, long_token in _LIBRARY
        for pattern in patterns
    ),
    # Private keys: PEM (RSA, EC, DSA, OpenSSH, encrypted, PGP) and PuTTY files, whole;
    # an unterminated block runs to the end of the text. A GCP service-account JSON's
    # "private_key": "-----BEGIN ...\n..." is a PEM block with escaped newlines.
    _fixed(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        re.DOTALL,
        needs=("private key",),
        long_token=False,
    ),
    _fixed(
        "private_key",
        r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[ \t]*[0-9a-fA-F]+|\Z)",
        re.DOTALL,
        needs=("putty-user-key-file-",),
        long_token=False,
    ),
    # JWTs with their signature: header.payload.signature (signature may be empty).
    _fixed(
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{10,}={0,2}\.[A-Za-z0-9_-]{4,}={0,2}"
        r"(?:\.[A-Za-z0-9_+/-]*={0,2})?",
        needs=("eyj",),
    ),
    # Model providers: OpenAI (sk-, sk-proj-, sk-svcacct-), Anthropic (sk-ant-),
    # DeepSeek and most OpenAI-compatible hosts (sk-), Google (AIza, ya29. OAuth),
    # Hugging Face (hf_), Groq (gsk_), xAI (xai-), Replicate (r8_); GitHub fine-grained
    # PATs; Stripe test and live keys; npm tokens. "_" may come before them (an ID
    # such as sess_sk-...).
    _fixed(
        "api_key", r"(?<![A-Za-z0-9])sk-[A-Za-z0-9][A-Za-z0-9_-]{19,}", needs=("sk-",)
    ),
    _fixed("api_key", r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}", needs=("aiza",)),
    _fixed("api_key", r"(?<![A-Za-z0-9])ya29\.[0-9A-Za-z_-]{20,}", needs=("ya29.",)),
    _fixed("api_key", r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}", needs=("hf_",)),
    _fixed("api_key", r"(?<![A-Za-z0-9])gsk_[A-Za-z0-9]{20,}", needs=("gsk_",)),
    _fixed("api_key", r"(?<![A-Za-z0-9])xai-[A-Za-z0-9]{20,}", needs=("xai-",)),
    _fixed("api_key", r"(?<![A-Za-z0-9])r8_[A-Za-z0-9]{20,}", needs=("r8_",)),
    _fixed(
        "github_token",
        r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{22,}",
        needs=("github_pat_",),
    ),
    _fixed(
        "stripe_key",
        r"(?<![A-Za-z0-9])[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",
        needs=("k_live_", "k_test_"),
    ),
    _fixed("npm_token", r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}\b", needs=("npm_",)),
    _fixed(
        "npm_token",
        r"//[^\s\[]+/:_authToken=\s*(?P<secret>[^\s\[]+)",
        needs=("authtoken",),
        long_token=False,
    ),
    # AWS secret access key: 40 base64 characters after an aws...secret label.
    _fixed(
        "aws_key",
        r"\baws[^\n\"'`\[]{0,30}?(?:secret|sk)[^\n\"'`\[]{0,20}?[\"'`]?\s*"
        r"(?:[:=：]|=>|\bis\b|是|为)?\s*[\"'`]?(?P<secret>[A-Za-z0-9/+]{40})"
        r"(?![A-Za-z0-9/+=])",
        _I,
        needs=("aws",),
    ),
    # Azure storage and service-bus connection strings, SAS signatures.
    _fixed(
        "azure_key",
        r"\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*"
        r"(?P<secret>[A-Za-z0-9+/=%]{16,})",
        _I,
        needs=("accountkey", "sharedaccesskey", "sharedaccesssignature"),
    ),
    _fixed("azure_key", r"[?&]sig=(?P<secret>[A-Za-z0-9%+/=]{16,})", needs=("sig=",)),
    # Credentials in URLs (postgres://u:pw@h, mongodb+srv://, redis://:pw@h): only the
    # password goes; it may hold an unescaped "@" (the last one before the host counts)
    # or "#".
    _fixed(
        "url_credentials",
        r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@\"'<>]*:"
        r"(?P<secret>[^\s/?\"'<>]+)@(?=[^\s@/\[]*(?:[/\s?#\"'<>]|$))",
        needs=("://",),
        long_token=False,
    ),
    _fixed(
        "url_credentials",
        r"(?i:jdbc:oracle:[a-z]+):[^\s/@:]+/(?P<secret>[^\s@]+)@",
        needs=("jdbc:oracle:",),
        long_token=False,
    ),
    # Bearer tokens anywhere; Authorization and Cookie headers go through key names.
    _fixed(
        "token",
        r"(?i:\bbearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
        needs=("bearer",),
    ),
    # Card security codes, PINs, door and one-time codes: digits after the label.
    _labelled(
        "cvv",
        r"\b(?:cvv2?|cvc2?|cvn|csc|card\s+security\s+code)\b"
        r"(?:" + _IS + r"|\s*[:=#-]?\s*)",
        CVV,
        _I,
        needs=("cvv", "cvc", "cvn", "csc", "security"),
        also=_DIGITS,
    ),
    _labelled(
        "passcode",
        r"\bpin(?:[ -]?(?:code|number|no\.?|#))?"
        r"(?:" + _FOR_THE + r"(?:" + _IS + r"|\s*[:=#]\s*)|\s+)(?=\d)",
        PIN,
        _I,
        needs=("pin",),
        also=_DIGITS,
    ),
    _labelled(
        "passcode",
        r"\b(?:pass\s?code|(?:door|gate|alarm|entry|access|lock|garage|keypad|building"
        r"|safe|locker|verification|confirmation|security|login|sign[ -]?in|otp|2fa|mfa"
        r"|one[ -]time|sms|auth(?:entication|enticator)?|backup|recovery|unlock"
        r"|apartment|lockbox|key\s?box|house|front[ -]door)[ -]?code|otp"
        r"|(?:lock\s+|safe\s+)?combination|combo)"
        r"(?:" + _FOR_THE + r"(?:" + _IS + r"|\s*[:=#]\s*)|\s+)(?=[A-Za-z0-9#*-]*\d)",
        CODE,
        _I,
        needs=("code", "otp", "combination", "combo"),
        also=_DIGITS,
    ),
    _labelled(
        "passcode",
        r"\b(?:your|my)\s+(?:login\s+|sign-?in\s+|one-time\s+)?code\s+is\b\s*:?\s*",
        PIN,
        _I,
        needs=("code",),
        also=_DIGITS,
    ),
    # Security answers: one to three words after the label, ending at sentence
    # punctuation or an ordinary word ("Fluffy, my first cat" -> Fluffy).
    _labelled(
        "security_answer",
        r"\b(?:(?:security|secret|memorable)[ -](?:question[ -])?(?:answer|word)"
        r"|answer\s+to\s+(?:my|the|your)\s+(?:security|secret)\s+question"
        r"|(?:mother|mom|mum|mommy|mama)(?:'s|’s|s)?\s+maiden\s+name)"
        r"(?:" + _IS + r"|\s*[:=]\s*)",
        ANSWER,
        _I,
        needs=("security", "secret", "memorable", "maiden"),
    ),
    # Key names: KEY=value, export KEY=value, "key": "value", key: value, Header: value.
    # key_class decides whether the name is a secret's; one word before it may qualify
    # it ("API Key:", "wifi pass:").
    Rule(
        "password",
        re.compile(
            r"(?<![A-Za-z0-9_.])(?P<key>(?:[A-Za-z]{2,20}[ ])?[A-Za-z_][A-Za-z0-9_.-]{0,63}?)"
            r"[\"'`]?[ \t]*(?P<sep>:=|=>|[:=：])(?![=:/])[ \t]*"
        ),
        ASSIGNED,
        keyed=True,
        needs=_KEY_NEEDS,
        also=_KEY_SEPARATORS,
    ),
    # Prose: "my password is x", "the password for the VPN is x", "wifi password: x".
    _labelled(
        "password",
        r"\b" + _PW_LABEL + r"(?:\s*(?:'s|’s)\s+|\s*\?\s+(?:it's|it’s|its|it\s+is)\s+"
        r"|" + _FOR_THE + r"(?:" + _IS_WORD + r"|\s*[:=]\s*|\s+[-–—]\s+))",
        PROSE,
        _I,
        needs=(*_PASSWORD_NEEDS, "key"),
    ),
    _labelled(
        "password",
        r"\b(?:chang|set|updat|reset|switch)(?:e|ed|es|ing|s)?\s+"
        r"(?:(?:my|the|our|your|his|her|their|its|this)\s+)?(?:[\w-]+\s+){0,2}?"
        r"(?:pass(?:word|phrase|code)|pin|pwd)\s+(?:to|as)\s+",
        PROSE,
        _I,
        needs=("pass", "pin", "pw"),
    ),
    _labelled(
        "password",
        r"\b(?:pass(?:word|phrase|code)|pin)(?:\s+(?:has|have|had)\s+been"
        r"|\s+(?:was|is|got|been))?\s+(?:changed|set|updated|reset|switched)\s+(?:to|as)\s+",
        PROSE,
        _I,
        needs=("pass", "pin"),
    ),
    _labelled(
        "password",
        r"\b" + _PW_LABEL + r"[ \t]+",
        LOOSE,
        _I,
        needs=(*_PASSWORD_NEEDS, "key"),
        also=_DIGITS,
    ),
    _labelled(
        "password",
        r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n\[]*?\s-p(?=\S)",
        COMMAND,
        _I,
        needs=("mysql", "mariadb"),
    ),
    _labelled("password", r"\bsshpass\s+-p\s*", COMMAND, needs=("sshpass",)),
    # "login is admin / Sup3r!", "creds: bob/hunter22" (the value needs a digit).
    _labelled(
        "password",
        r"\b(?:login|creds|credentials)\s*(?:is|:|=)\s*[^\s/\[]{1,64}\s*/\s*",
        LOOSE_PAIR,
        _I,
        needs=("login", "cred"),
        also=("/",),
    ),
    # XML: <add key="DbPassword" value="x" />, <password>x</password>.
    Rule(
        "password",
        re.compile(
            r"\bkey\s*=\s*[\"'](?P<key>[^\"'<>]{1,64})[\"']\s+value\s*=\s*",
            _I | re.ASCII,
        ),
        ASSIGNED,
        keyed=True,
        needs=_KEY_NEEDS,
        also=("=",),
    ),
    Rule(
        "password",
        re.compile(r"<(?P<key>[A-Za-z_][A-Za-z0-9_.-]{0,63})>"),
        ASSIGNED,
        keyed=True,
        needs=_KEY_NEEDS,
        also=("<",),
    ),
    _labelled(
        "password",
        r"\b(?:curl|wget)\b[^\n\[]*?\s(?:-u|--user)[\s=][\"']?[^\s:\"'@\[]+:",
        COMMAND,
        needs=("curl", "wget"),
    ),
    # "the token is x" only when x looks like one (a digit), so "the token is expired"
    # and "the secret is patience" stay prose.
    _labelled(
        "token",
        r"\b(?:api[ _-]?key|access[ _-]?key|secret[ _-]?key|client[ _-]?secret"
        r"|app[ _-]?secret|signing[ _-]?key|(?:access|auth|refresh|api|bearer|bot"
        r"|session|personal[ _-]access|github|gitlab|slack|discord|telegram|hf|npm|pypi)?"
        r"[ _-]?token|secret)" + _FOR_THE + r"(?:" + _IS + r"|\s*[:=]\s*)",
        TOKEN_PROSE,
        _I,
        needs=("key", "token", "secret"),
        also=_DIGITS,
    ),
    # Chinese: 安全问题的答案是x, 验证码 123456, 开门密码是x, 密码：x, wifi密码 x, 密码x.
    _labelled("security_answer", _ZH_ANSWER + _ZH_SEP, ZH_CJK, needs=("答案",)),
    _labelled(
        "cvv",
        r"(?:安全码|安全碼|CVV码|CVV碼)(?:" + _ZH_SEP + r"|[ \t\u3000]*)",
        CVV,
        needs=("码", "碼"),
    ),
    _labelled(
        "passcode",
        _ZH_PASSCODE + r"(?:" + _ZH_SEP + r"|[ \t\u3000]*)",
        CODE,
        needs=("码", "碼"),
    ),
    _labelled(
        "password",
        r"(?:口令|暗号|暗號)" + _ZH_SEP,
        ZH_CJK,
        needs=("口令", "暗号", "暗號"),
    ),
    _labelled("password", _ZH_PW_LABEL + _ZH_SEP, ZH, needs=_ZH_PW_NEEDS),
    _labelled("password", _ZH_PW_LABEL + r"[ \t\u3000]+", ZH_LOOSE, needs=_ZH_PW_NEEDS),
    _labelled(
        "password",
        _ZH_PW_LABEL + r"(?=[A-Za-z0-9!@#$%^&*_+.-])",
        ZH_ADJACENT,
        needs=_ZH_PW_NEEDS,
    ),
)

# Card numbers: 13-19 digits (spaces or dashes between), an issuer's first digit (2-6:
# Visa, Mastercard, Amex, Discover, JCB, UnionPay) and the Luhn check.
CARD: Final = re.compile(r"(?<![\d-])[2-6](?:[ -]?\d){12,18}(?![\d-])")

# The fixed formats' gate: an unbroken token of 16+ characters.
LONG_TOKEN: Final = re.compile(r"[A-Za-z0-9_\-./+=:~%]{16,}")
# The gate words of rules that need no long token, and of those that do: a text with
# none of the first, no long token and fewer than 13 digits (a card) holds no finding,
# and most prose is that.
LABEL_WORDS: Final = tuple(
    sorted({word for rule in RULES if not rule.long_token for word in rule.needs})
)
PREFIX_WORDS: Final = tuple(
    sorted({word for rule in RULES if rule.long_token for word in rule.needs})
)
# One search for any label word in the lowercased text: the clean path's test.
ANY_LABEL_WORD: Final = re.compile(
    "|".join(map(re.escape, sorted(LABEL_WORDS, key=len, reverse=True)))
)
