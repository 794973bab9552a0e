"""Redaction: secret-like content is replaced by a marker before anything is stored, and
ordinary prose (numbers, dates, "my password is wrong", "the token is expired") is left
alone. bench/redaction_corpus.jsonl is the larger labelled set (bench/redaction_score.py).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.ingestion import redact as redact_module
from cairn.ingestion.redact import _might_hold_secret, redact, secret_kinds


def _all_patterns(text: str) -> list[tuple[int, int, int, str]]:
    """The findings with every rule run, whatever the prefilter and the gates say."""
    return redact_module._findings(text, gated=False)


def _gates_hide_nothing(text: str) -> bool:
    ungated = _all_patterns(text)
    return (not ungated or _might_hold_secret(text)) and sorted(
        redact_module._findings(text)
    ) == sorted(ungated)


SECRETS = [
    # fixed formats
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
    ("card 4111 1111 1111 1111 thanks", "4111 1111 1111 1111", "card_number"),
    (
        "Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456",
        "abcdefghijklmnopqrstuvwxyz123456",
        "token",
    ),
    ("postgres://bob:s3cretpw@db.example.com/x", "s3cretpw", "url_credentials"),
    ("api_key=Zx81kq0aPq7Lw2", "Zx81kq0aPq7Lw2", "token"),
    # passwords in prose
    ("password = hunter2hunter2", "hunter2hunter2", "password"),
    ("my password is sunshine", "sunshine", "password"),
    ("My password for the VPN is hunter2-Ravi!99", "hunter2-Ravi!99", "password"),
    ("the password for the wifi is correcthorse.", "correcthorse", "password"),
    ("the wifi password is Tr0ub4dor&3-horse, ok?", "Tr0ub4dor&3-horse", "password"),
    ("wifi password: blue-falcon-77", "blue-falcon-77", "password"),
    ("wifi password Lagoon4471", "Lagoon4471", "password"),
    ("my email password's starfish99", "starfish99", "password"),
    ("I changed my password to Pelican$Dusk42", "Pelican$Dusk42", "password"),
    ('the password is "correct horse battery"', "correct horse battery", "password"),
    ("Password for grandma's ipad: 0412Rose", "0412Rose", "password"),
    ("My laptop password? It's Quartz-Falcon-9", "Quartz-Falcon-9", "password"),
    ("the new wifi pass is LemonTree55", "LemonTree55", "password"),
    ("psswd is bananabread7", "bananabread7", "password"),
    ("Admin login is admin / Sup3rUs3r!", "Sup3rUs3r!", "password"),
    # .env, shell, config
    ("DATABASE_PASSWORD=pg-Pr0d-2291", "pg-Pr0d-2291", "password"),
    ("DB_PASS='w1nter!sComing'", "w1nter!sComing", "password"),
    ("export PGPASSWORD=Ledger77x", "Ledger77x", "password"),
    ("MYSQL_ROOT_PASSWORD: rootpw_5531", "rootpw_5531", "password"),
    ('SESSION_SECRET="a9 b8 c7"', "a9 b8 c7", "token"),
    ("JWT_SECRET=supersecretjwtsigningvalue", "supersecretjwtsigningvalue", "token"),
    (
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_key",
    ),
    (
        "export OPENAI_API_KEY=sk-abcdefghij0123456789ABCD",
        "sk-abcdefghij0123456789ABCD",
        "api_key",
    ),
    (
        "GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "github_token",
    ),
    ('{"username": "admin", "password": "S3cure!Admin"}', "S3cure!Admin", "password"),
    ('"api_key": "abc123def456"', "abc123def456", "token"),
    ("password: 'x'", "x", "password"),
    ('client_secret = "GOCSPX-4fT9zQ2mW8kL1pR7"', "GOCSPX-4fT9zQ2mW8kL1pR7", "token"),
    ("smtpPassword: mailpass2023", "mailpass2023", "password"),
    ("spring.datasource.password=J4vaDbPw", "J4vaDbPw", "password"),
    ("pw: qwerty12", "qwerty12", "password"),
    ("pwd=letmein", "letmein", "password"),
    ("pass: opensesame", "opensesame", "password"),
    ('<add key="DbPassword" value="IISpw_2020" />', "IISpw_2020", "password"),
    ("<password>Xml-Pw-42</password>", "Xml-Pw-42", "password"),
    ("mysql -u root -pQwerty2024 mydb", "Qwerty2024", "password"),
    ("curl -u admin:hunter22 https://api.local/x", "hunter22", "password"),
    ("UPDATE users SET password = 'Temp#4455' WHERE id = 7;", "Temp#4455", "password"),
    # connection strings
    (
        "Server=tcp:db,1433;User ID=sa;Password=Sh0p!Adm1n;Encrypt=True;",
        "Sh0p!Adm1n",
        "password",
    ),
    (
        "jdbc:postgresql://db:5432/o?user=svc&password=0rd3rsSvc&sslmode=require",
        "0rd3rsSvc",
        "password",
    ),
    (
        "mongodb+srv://admin:M0ng0Pass@cluster0.ab12c.mongodb.net/shop",
        "M0ng0Pass",
        "url_credentials",
    ),
    ("redis://:c4cheS3cret@redis.local:6379/0", "c4cheS3cret", "url_credentials"),
    ("mysql://root:Root#2023@10.0.0.8:3306/app", "Root#2023", "url_credentials"),
    ("jdbc:oracle:thin:scott/Tiger99@db:1521/orcl", "Tiger99", "url_credentials"),
    # headers and sessions
    (
        "Cookie: sessionid=k2j4h6g8f0d1s3a5; csrftoken=Zx81Qq0aPq7Lw2mN",
        "k2j4h6g8f0d1s3a5",
        "token",
    ),
    ("sessionid=9f8e7d6c5b4a3210", "9f8e7d6c5b4a3210", "token"),
    ("X-Api-Key: 3b7e9f1a5c2d8e4f", "3b7e9f1a5c2d8e4f", "token"),
    (
        "curl -H 'Authorization: Basic YWRtaW46c3VwZXJzZWNyZXQ=' https://x.io",
        "YWRtaW46c3VwZXJzZWNyZXQ=",
        "token",
    ),
    ("the API token for staging is tk_9f2c81aa03", "tk_9f2c81aa03", "token"),
    # cloud keys
    (
        "the aws secret key is Hq7Lw2Pz9Kx4Mv8Nb3Rt6Yc1Uj5Se0Df2Ga7Wi4E",
        "Hq7Lw2Pz9Kx4Mv8Nb3Rt6Yc1Uj5Se0Df2Ga7Wi4E",
        "aws_key",
    ),
    (
        "AccountName=st;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;EndpointSuffix=x",
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==",
        "azure_key",
    ),
    (
        (
            '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvgIBADANBg\\n'
            '-----END PRIVATE KEY-----\\n"'
        ),
        "MIIEvgIBADANBg",
        "private_key",
    ),
    # PINs, codes, card security codes, security answers
    ("the passcode is 4471", "4471", "passcode"),
    ("door code is 1234# if you get there first", "1234#", "passcode"),
    ("my PIN is 0912", "0912", "passcode"),
    ("PIN: 4471", "4471", "passcode"),
    ("pin code 4471", "4471", "passcode"),
    ("the pin code for the bike lock is 3390", "3390", "passcode"),
    ("the alarm code is 9911, disarm it", "9911", "passcode"),
    ("Your one-time code is 739204.", "739204", "passcode"),
    ("safe combination is 12-34-56", "12-34-56", "passcode"),
    ("card ending 6467, CVV 321", "321", "cvv"),
    ("CVC: 918", "918", "cvv"),
    ("my security answer is Fluffy", "Fluffy", "security_answer"),
    ("mother's maiden name is Smith.", "Smith", "security_answer"),
    (
        "the answer to my security question is New York",
        "New York",
        "security_answer",
    ),
    # JWT with its signature
    (
        (
            "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
            ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c done"
        ),
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "jwt",
    ),
    # Chinese
    ("我的密码是abc12345。", "abc12345", "password"),
    ("wifi密码 abc12345", "abc12345", "password"),
    ("密码：Abc123456", "Abc123456", "password"),
    ("登录密码为Qwe!2345。", "Qwe!2345", "password"),
    ("口令是天王盖地虎，别外传", "天王盖地虎", "password"),
    ("支付密码是 520131", "520131", "password"),
    ("银行卡密码668899别告诉别人", "668899", "password"),
    ("我把邮箱密码改成了Mail!2024ok", "Mail!2024ok", "password"),
    ("我的VPN密码是hunter2-Ravi!99。", "hunter2-Ravi!99", "password"),
    ("PIN码是0912", "0912", "passcode"),
    ("验证码 123456，五分钟内有效", "123456", "passcode"),
    ("开门密码是#4471", "#4471", "passcode"),
    ("安全问题的答案是小白。", "小白", "security_answer"),
    ("密保答案：北京四中", "北京四中", "security_answer"),
    # English labels inside Chinese sentences
    ("卡背面的CVV是321", "321", "cvv"),
    ("信用卡安全码：458", "458", "cvv"),
    ("我的PIN是 7788", "7788", "passcode"),
    ("飞书机器人的secret：Xq8pL2mN7vR4tY1u", "Xq8pL2mN7vR4tY1u", "token"),
    ("这个接口的token是 tk_live_8f2a9c3e1d", "tk_live_8f2a9c3e1d", "token"),
    (
        "AWS的secret key是 Tq4Wm8Zp1Xr6Lv9Nb2Kc5Hd7Jf0Gs3Ae8Yu1Io4P",
        "Tq4Wm8Zp1Xr6Lv9Nb2Kc5Hd7Jf0Gs3Ae8Yu1Io4P",
        "aws_key",
    ),
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
    ("text", "expected"),
    [
        # Trailing sentence punctuation stays outside the value, "!" inside stays in.
        (
            "My password for the VPN is hunter2-Ravi!99.",
            "My password for the VPN is [REDACTED:password].",
        ),
        ("我的VPN密码是hunter2-Ravi!99。", "我的VPN密码是[REDACTED:password]。"),
        ("(pw: abc123)", "(pw: [REDACTED:password])"),
        ('{"password": "hunter2"}', '{"password": "[REDACTED:password]"}'),
        # The label and the user name stay; a URL parameter ends at "&".
        (
            "postgres://bob:s3cretpw@db/x",
            "postgres://bob:[REDACTED:url_credentials]@db/x",
        ),
        (
            "x?user=a&password=s3cret&ssl=1",
            "x?user=a&password=[REDACTED:password]&ssl=1",
        ),
        # The whole JWT goes, signature included.
        (
            "t=eyJhbGciOiJIUzI1NiJ9.eyJ1aWQiOjQyfQ.kT8vQ2pL7mN4xR1sW9yZ3aB6cD0eF5gH.",
            "t=[REDACTED:jwt].",
        ),
        # A security answer stops at punctuation or an ordinary word.
        (
            "my security answer is Fluffy, the name of my first cat",
            "my security answer is [REDACTED:security_answer], the name of my first cat",
        ),
    ],
)
def test_what_exactly_is_replaced(text: str, expected: str) -> None:
    assert redact(text).text == expected


LOOK_ALIKES = [
    "I like tea with lemon on Sundays.",
    "The token is expired, please log in again.",
    "I bought 3 apples for 12 dollars on 2024-05-01.",
    "Call me at 4111 1111 1111 1112.",  # fails the Luhn check
    "我下周三去上海出差。",
    "The password reset email never came.",
    "I forgot my password",
    "the password policy requires twelve characters",
    "reset your password at the portal",
    "my password is too weak",
    "the password was changed yesterday",
    "my password is wrong",
    "my password is too short",
    "my password is expired",
    "my password is the same",
    "my password is stored in bitwarden",
    "the password is on a sticky note",
    "the password is case-sensitive",
    "My password is 12 characters long.",
    "I'm not sure what my password is.",
    "What's the wifi password?",
    "Password: (see the note in 1Password)",
    "pass the salt",
    "Tests pass: 10 of 12",
    "boarding pass: gate 22, seat 14C",
    "PIN the tweet",
    "the pin is in the map",
    "The PIN is 4 digits.",
    "key: value pairs",
    "the key is to practise daily",
    "the secret is patience",  # "secret is" + a word without a digit is prose
    "the code is on GitHub",
    "the door code changed",
    "the alarm code is the same as the door code",
    "error code 404 on the checkout page",
    "the api key is missing from the config",
    "the token count is 4096",
    "max_tokens: 2048",
    "primary_key: id",
    "the public key is in the repo",
    "PASSWORD_MIN_LENGTH=12",
    "TOKEN_EXPIRY_SECONDS=3600",
    "AUTH_ENABLED=true",
    "password = getpass.getpass()",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "SELECT password FROM users",  # a column name, no value
    "my mother's maiden name is a security question I hate",
    "call me on 4155552671 after six",
    "my order number is 11223344556677",
    "request 550e8400-e29b-41d4-a716-446655440000 failed",
    "commit 3f2a9c1 broke the build",
    "reverted 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "antidisestablishmentarianism is a very long word",
    "see https://docs.python.org/3/library/re.html",
    "我忘了密码",
    "密码错误",
    "密码太简单了",
    "修改密码",
    "密码要求至少12位",
    "你的密码是什么？",
    "密码是8位数字",
    "验证码已发送到你的手机",
    "安全问题的答案是什么来着",
    "我的电话号码是13800138000",
    "订单号 20240501123456789 还没发货",
    "token过期了，需要重新登录",
    "CVV是卡背面的三位数字",
    "请检查AWS的secret key配置是否正确",
    "密码是你生日",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_prose_is_left_alone(text: str) -> None:
    assert redact(text).text == text
    assert secret_kinds(text) == ()


def test_secret_kinds_names_each_kind_once_in_order() -> None:
    text = "PIN: 4471, password: hunter22, and pin code 9911"
    assert secret_kinds(text) == ("passcode", "password")
    assert secret_kinds("evt-2024-05-01-0001") == ()
    assert secret_kinds("sess_sk-proj-abcDEF1234567890abcdefGHIJ") == ("api_key",)


@pytest.mark.parametrize(
    "text",
    [
        "[REDACTED:password]",
        "my password is [REDACTED:password]",
        "password: [REDACTED:password], PIN: [REDACTED:passcode]",
        "DB_PASS=[REDACTED:password]",
        '"private_key": "[REDACTED:private_key]"',
        "密码是[REDACTED:password]。",
        "token [REDACTED:api_key] and [REDACTED:token]",
    ],
)
def test_markers_are_never_redacted_again(text: str) -> None:
    assert redact(text).text == text


def _pieces(text: str) -> list[str]:
    return text.split("|")


# Pieces of secrets and of look-alikes, joined at random.
_FRAGMENTS = _pieces(
    " | |  |\n|.|,|!|:|=|: | = |\"|'|;|&|?|/|@|#|-|_|(|)|password|Password|"
    "PASSWORD|passwd|pass|pw|pwd|psswd|my|the|for|wifi|VPN|is|was|'s|It's|"
    "to|changed|PIN|pin|code|door|passcode|otp|cvv|CVC|combination|"
    "security|answer|question|maiden|name|mother's|memorable|word|token|"
    "api|key|API_KEY|secret|SECRET|DB_|export |AUTH|Authorization|Bearer|"
    "Basic|Cookie|session|sessionid|sid|login|admin|creds|curl -u |mysql|"
    " -p|sshpass|postgres://|redis://|jdbc:oracle:thin:|user|host|"
    "AccountKey|sig|aws|AKIA|-----BEGIN| PRIVATE KEY-----|"
    "PuTTY-User-Key-File-2:|eyJ|sk-|xoxb-|ghp_|<|>|key=|value=|<password>|"
    "hunter2|Ravi!99|sunshine|wrong|expired|abc123|4471|123|12345678|"
    "4111111111111111|0912|Fluffy|New York|digits|密码|口令|验证码|PIN码|开门|"
    "安全问题的答案|是|为|：|，|。|！|abc12345|小白|什么|位"
)
_FRAGMENT_TEXT = st.lists(st.sampled_from(_FRAGMENTS), max_size=14).map("".join)


@given(_FRAGMENT_TEXT)
def test_the_prefilter_never_hides_a_finding(text: str) -> None:
    assert _gates_hide_nothing(text)


@given(
    st.text(
        alphabet=st.sampled_from("abcXYZ019 -_:/=.+@#&!?'\"密码是token passwordsk-"),
        max_size=120,
    )
)
def test_the_prefilter_never_hides_a_finding_in_noise(text: str) -> None:
    assert _gates_hide_nothing(text)


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS)
def test_the_gates_hide_no_known_secret(text: str, secret: str, kind: str) -> None:
    assert _gates_hide_nothing(text)


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS)
def test_every_known_secret_passes_the_prefilter(
    text: str, secret: str, kind: str
) -> None:
    assert _might_hold_secret(text)


@given(st.one_of(st.text(max_size=300), _FRAGMENT_TEXT))
def test_redaction_never_raises_and_is_idempotent(text: str) -> None:
    once = redact(text)
    again = redact(once.text)
    assert again.text == once.text
    assert once.text.count("[REDACTED:") >= len(once.kinds)
    assert secret_kinds(text) == tuple(dict.fromkeys(once.kinds))
