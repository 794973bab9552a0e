"""Evidence classes: is a turn worth recalling, or noise kept only as evidence?

Offline and deterministic, run at intake on the redacted text. A turn is noise only when
*all* of it is noise: an "ok" or "thanks" alone, a heartbeat, lines that are each a log
record, a traceback or progress output, or no words at all. One line of anything else
makes it content: "ok, my flight is at 9", "why does this fail: Traceback…", "I'm 50% done
with my thesis". Wrongly hiding a fact costs more than keeping a heartbeat, so every rule
errs towards content (the corpus in bench/evidence_noise.jsonl measures both directions).

Runtime events of tasks (``task_*``, ``needs_input``) and deletion markers keep their own
handling and are always content; plain messages and tool results are classified.
"""

from __future__ import annotations

import re
import unicodedata

from cairn.domain.evidence import EventKind, EvidenceClass

__all__ = ["classify_turn"]

_CLASSIFIED_KINDS = frozenset({EventKind.MESSAGE, EventKind.TOOL_RESULT})
# A turn of more lines, or with a longer line, is content without reading further: log
# records and frames are short, and the bound keeps the writer's work per turn small
# (about 3 ms for a 1,000-character line of the costliest shape).
_MAX_LINES = 400
_MAX_LINE_CHARS = 1_000

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Latin words (with an inner apostrophe or underscore) and CJK runs; digits and symbols
# are never words here.
_WORDS = re.compile(rf"[a-z]+(?:['’_][a-z]+)*|[{_CJK}]+")


_DIGIT = re.compile(r"\d")


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _words(text: str) -> list[str]:
    return _WORDS.findall(_normal(text))


def _consumed(run: str, lexicon: frozenset[str], longest: int) -> bool:
    """Whether a CJK run splits entirely into entries of ``lexicon`` (greedy, longest
    entry first: the lexicons are small and have no entry that only a shorter split
    would reach)."""
    position = 0
    while position < len(run):
        for size in range(min(longest, len(run) - position), 0, -1):
            if run[position : position + size] in lexicon:
                position += size
                break
        else:
            return False
    return True


def _is_cjk(word: str) -> bool:
    """For a word of :func:`_words`, which are Latin letters or CJK runs only."""
    return word[:1] > "z"


class _Lexicon:
    """Latin words and CJK entries of one noise kind; ``strong`` ones are the evidence
    the kind needs (a turn of filler words alone is not that kind)."""

    def __init__(self, words: str, strong: str) -> None:
        self.words = frozenset(words.split())
        self.strong = frozenset(strong.split())
        every = self.words | self.strong
        self._longest = max(len(word) for word in every)
        self._every = every

    def contains(self, word: str) -> bool:
        """A Latin word of the lexicon, or a CJK run made of its entries."""
        if _is_cjk(word):
            return _consumed(word, self._every, self._longest)
        return word in self._every

    def names_strong(self, words: list[str]) -> bool:
        """Whether any word is (or, a CJK run, holds) a strong entry."""
        if not self.strong.isdisjoint(words):
            return True
        return any(
            _is_cjk(word) and any(entry in word for entry in self.strong)
            for word in words
        )

    def covers(self, words: list[str]) -> bool:
        """Every word is of the lexicon, and at least one is strong."""
        strong = False
        for word in words:
            if _is_cjk(word):
                if not _consumed(word, self._every, self._longest):
                    return False
                strong = strong or any(entry in word for entry in self.strong)
            elif word not in self._every:
                return False
            else:
                strong = strong or word in self.strong
        return strong


# -- acknowledgements ------------------------------------------------------------------
# "yes", "no" and "yeah" are left out on purpose: alone they answer a question ("Are you
# vegetarian?" "Yes"), which is a fact in its context.
_ACK = _Lexicon(
    words="""
    so much very a lot again you guys all for that this the help everyone man mate
    really many and too just good
    你 您 大家 啦 呀 哦 噢 喔 的 了 呢 吧 啊 哈 嘛 哟 谢
    """,
    strong="""
    ok okay okey okk kk k thanks thank thx ty tysm tyvm cheers sure alright noted
    roger gotcha cool nice great awesome perfect lol haha hahaha lmao hmm hm mhm np
    welcome ack acknowledged understood fine bye goodbye byebye cya ttyl goodnight
    farewell
    好 好的 好滴 好哒 好嘞 谢谢 多谢 感谢 谢啦 收到 嗯 嗯嗯 明白 了解 知道 知道了 没问题 可以
    行 哈哈 辛苦 辛苦了 懂了 好吧 再见 拜拜 回头见 晚安 下次见
    """,
)
# Multi-word acknowledgements and farewells whose words alone are none ("got", "see").
_ACK_PHRASES = (
    ("got", "it"),
    ("will", "do"),
    ("sounds", "good"),
    ("no", "problem"),
    ("no", "worries"),
    ("you're", "welcome"),
    ("thank", "you"),
    ("all", "good"),
    ("makes", "sense"),
    ("sure", "thing"),
    ("take", "care"),
    ("good", "luck"),
    ("you", "too"),
    ("same", "to", "you"),
    ("see", "you"),
    ("see", "ya"),
    ("talk", "soon"),
    ("talk", "to", "you"),
    ("catch", "you"),
    ("have", "a"),
    ("good", "night"),
)
# What follows a farewell phrase and adds nothing: "see you later", "have a great day".
_FAREWELL_FILLER = frozenset(
    [
        "later",
        "soon",
        "then",
        "tomorrow",
        "around",
        "next",
        "time",
        "day",
        "night",
        "one",
        "weekend",
        "week",
        "nice",
        "great",
        "good",
        "lovely",
        "wonderful",
        "fun",
    ]
)


def _vocatives(text: str) -> frozenset[str]:
    """Names the turn addresses: a capitalised word right after an acknowledgement or
    farewell word ("Bye Joanna!", "Thanks, Mel", "See ya Nate"). Such a name says whom
    the turn is for, not a fact; any other capitalised word keeps the turn content."""
    found: set[str] = set()
    for before, name in _VOCATIVE.findall(unicodedata.normalize("NFKC", text)):
        previous = before.casefold()
        if _ACK.contains(previous) or previous in _PHRASE_WORDS:
            found.add(name.casefold())
    return frozenset(found)


_VOCATIVE = re.compile(r"([A-Za-z']+)[,!.]?\s+([A-Z][a-z]+)\b")
_PHRASE_WORDS = frozenset(word for phrase in _ACK_PHRASES for word in phrase)


def _acknowledgement(words: list[str], vocatives: frozenset[str]) -> bool:
    """The words are acknowledgement or farewell phrases, filler and names addressed,
    and at least one phrase or strong word."""
    rest: list[str] = []
    index = 0
    phrase = False
    while index < len(words):
        for entry in _ACK_PHRASES:
            if tuple(words[index : index + len(entry)]) == entry:
                index += len(entry)
                phrase = True
                break
        else:
            word = words[index]
            if word not in vocatives and not (phrase and word in _FAREWELL_FILLER):
                rest.append(word)
            index += 1
    if not rest:
        return phrase
    # After a phrase, filler alone is enough ("thank you so much").
    return _ACK.covers(rest) or (phrase and all(map(_ACK.contains, rest)))


# -- heartbeats ------------------------------------------------------------------------
_HEARTBEAT = _Lexicon(
    words="""
    ok alive still status seq ts time type check health healthy up beat i'm im here
    are you there received sent interval ms from client server agent event true at
    正常 检测 存活 在线 状态 发送 收到 你 还
    """,
    strong="""
    heartbeat heartbeats heartbeat_ok keepalive keep_alive ping pong hb tick health
    healthcheck health_check 心跳 在吗 在不在
    """,
)
_PRESENCE = frozenset({("still", "there"), ("you", "there"), ("are", "you", "there")})


def _heartbeat_line(line: str, words: list[str]) -> bool:
    """Whether a line is a heartbeat, its timestamps aside: the "t" and "z" of
    "2026-11-05T10:01:30Z" are no words of a heartbeat or of anything else. Stripping
    them is the costly part, so only a line with digits and a heartbeat's word pays it."""
    if _heartbeat(words):
        return True
    if not _DIGIT.search(line) or not _HEARTBEAT.names_strong(words):
        return False
    return _heartbeat(_words(_TIMESTAMP_ANYWHERE.sub(" ", line)))


def _heartbeat(words: list[str]) -> bool:
    if not words:
        return False
    if _HEARTBEAT.covers(words):
        return True
    return tuple(words[-2:]) in _PRESENCE and all(
        word in {"are", "you", "still", "there"} for word in words
    )


# -- progress --------------------------------------------------------------------------
_PROGRESS = _Lexicon(
    words="""
    done complete completed finished progress step steps epoch epochs eta elapsed
    remaining left of it s ms sec secs min mins mb kb gb b bytes files file items item
    records rows chunks packages dependencies tokens batches batch loss acc accuracy
    lr still please wait on it's its in total rate speed now percent test tests passed
    upload download model weights data dataset images update updates
    已完成 完成 进度 当前 剩余 请 稍候 稍等 文件 个 共 已 正在 中 约 秒 分钟
    """,
    strong="""
    downloading uploading processing loading installing compiling building indexing
    syncing working copying extracting running training fetching resolving
    下载中 上传中 处理中 加载中 安装中 编译中 同步中 请稍候 正在处理 正在下载 正在上传
    下载 上传 处理 加载 安装 编译 同步
    """,
)
# The marks of progress output: a percentage, an n/m counter, a bar, a rate or an ETA.
_PROGRESS_MARK = re.compile(
    r"\d{1,3}(?:\.\d+)?\s?%"
    r"|\b\d+\s?/\s?\d+\b"
    r"|[\[|][#=█▓▒░>\- ]{3,}[\]|]"
    r"|[█▓▒░#]{3,}"
    r"|\b\d+(?:\.\d+)?\s?(?:it/s|s/it|[kmg]b/s)"
    r"|\beta[:\s]+\d",
    re.IGNORECASE,
)


# Every progress mark has one of these; a line without any is searched no further (the
# marks' pattern costs ~15 µs on a plain sentence, this one under 1).
_PROGRESS_HINT = re.compile(r"[%/\[|█▓▒░#]|eta", re.IGNORECASE)


def _progress_mark(line: str) -> bool:
    return bool(_PROGRESS_HINT.search(line)) and bool(_PROGRESS_MARK.search(line))


def _progress_line(line: str, words: list[str]) -> bool:
    if not words:
        return _progress_mark(line)
    if _progress_mark(line):
        # Marked: the words may all be filler ("50% done", "3/10"); with a verb of
        # progress, a few may name what is being worked on ("Downloading invoices 45%").
        unknown = sum(1 for word in words if not _PROGRESS.contains(word))
        allowed = (
            _NAMED_OBJECT_WORDS
            if _PROGRESS.covers([word for word in words if _PROGRESS.contains(word)])
            else 0
        )
        return unknown <= allowed
    return _PROGRESS.covers(words)


# Words of the thing a progress line names, next to its verb and its mark.
_NAMED_OBJECT_WORDS = 2


# -- log lines -------------------------------------------------------------------------
_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL|SEVERE)"
_TIMESTAMP = (
    r"\[?(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
    r"|\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{2}:\d{2}:\d{2})\]?"
)
_TIMESTAMP_ANYWHERE = re.compile(_TIMESTAMP, re.IGNORECASE)
_LOG_LINE = re.compile(
    # A timestamp, then a level within the line's head ("2024-05-01 12:00:01 INFO …").
    rf"^\s*{_TIMESTAMP}.{{0,40}}?\b{_LEVEL}\b"
    # A bracketed level or a level with a logger name ("[ERROR] …", "INFO:root:…").
    rf"|^\s*\[{_LEVEL}\]"
    rf"|^{_LEVEL}:[\w.\-]+:"
    rf"|^{_LEVEL} +\[[^\]]+\]"
    # A timestamp, then a bracketed thread, module or process ("[12:00:01] [main] …").
    rf"|^\s*{_TIMESTAMP}\s+\[[^\]]+\]"
    # syslog: "May  3 06:25:01 host CRON[1234]: …".
    r"|^(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2} \d{2}:\d{2}:\d{2}"
    r" [\w.\-]+ [\w.\-/]+(?:\[\d+\])?:"
    # glog: "E0501 12:00:00.000123  1234 file.cc:42] …".
    r"|^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [\w.\-]+:\d+\]"
    # Common and combined access logs.
    r'|^\d{1,3}(?:\.\d{1,3}){3} - \S+ \[[^\]]+\] "'
    # logfmt with a level and a message or time.
    r"|^(?=.*\blevel=\w+)(?=.*\b(?:msg|message|ts|time|caller)=)"
    # JSON lines with a level or severity and a message.
    r'|^\s*\{(?=.*"(?:level|severity|lvl)"\s*:)(?=.*"(?:msg|message|event)"\s*:)',
)


# -- tracebacks ------------------------------------------------------------------------
_TRACE_START = re.compile(
    r"^Traceback \(most recent call last\):"
    r'|^Exception in thread "'
    r"|^panic: "
    r"|^goroutine \d+ \["
    r"|^thread '[^']*' panicked at"
    r"|^stack backtrace:"
    r"|^(?:[a-zA-Z_$][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception)(?::|$)"
)
_TRACE_LINE = re.compile(
    r'^\s+File "[^"]*", line \d+'
    r"|^During handling of the above exception"
    r"|^The above exception was the direct cause"
    r"|^\s+at \S.*(?:\)|:\d+:\d+)\s*$"
    r"|^Caused by: "
    r"|^\s*\.\.\. \d+ (?:more|common frames omitted)"
    r"|^\s+[\^~]+\s*$"
    r"|^\s+\S+\.(?:go|rs|c|cc|cpp|java|kt|js|ts|py|rb):\d+"
    r"|^\s+\d+: (?:0x[0-9a-f]+|[\w<>]+::)"
    r"|^[\w.]+\(0x[0-9a-f, ]*\)$"
    r"|^(?:[a-zA-Z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Warning|Interrupt|Exit)\b"
    r"|^[\w.]+\.[\w<>$]+\(.*\)$"
    r"|^exit status \d+$"
)


def _line_classes(text: str) -> list[EvidenceClass] | None:
    """The noise class of every non-blank line, or None when one line is content."""
    classes: list[EvidenceClass] = []
    in_trace = False
    for line in text.splitlines():
        if not line.strip():
            continue
        if _TRACE_START.search(line) or _TRACE_LINE.search(line):
            in_trace = True
            classes.append(EvidenceClass.TRACEBACK)
            continue
        if in_trace and line[:1].isspace():
            # The source line under a frame, indented.
            classes.append(EvidenceClass.TRACEBACK)
            continue
        in_trace = False
        if _LOG_LINE.search(line):
            classes.append(EvidenceClass.LOG_LINE)
            continue
        words = _words(line)
        if _heartbeat_line(line, words):
            classes.append(EvidenceClass.HEARTBEAT)
        elif _progress_line(line, words):
            classes.append(EvidenceClass.PROGRESS)
        else:
            return None
    return classes


# One class for a turn of several kinds of noise lines, most telling first.
_LINE_PRIORITY = (
    EvidenceClass.TRACEBACK,
    EvidenceClass.LOG_LINE,
    EvidenceClass.PROGRESS,
    EvidenceClass.HEARTBEAT,
)


def _has_words(text: str) -> bool:
    return any(unicodedata.category(char)[0] in "LN" for char in text)


def classify_turn(text: str, kind: EventKind) -> EvidenceClass:
    """The evidence class of one turn (its whole redacted text, before segmenting).

    The role does not count: an "ok" says as little from the user as from the assistant,
    and a log line pasted by either is the same log line.
    """
    if kind not in _CLASSIFIED_KINDS or len(text) > _MAX_LINES * _MAX_LINE_CHARS:
        return EvidenceClass.CONTENT
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > _MAX_LINES or any(len(line) > _MAX_LINE_CHARS for line in lines):
        return EvidenceClass.CONTENT
    if not _has_words(text):
        return EvidenceClass.EMPTY
    if len(lines) == 1:
        words = _words(text)
        # Digits carry information ("ok, 9"): only a turn without them is an "ok".
        if (
            words
            and not _DIGIT.search(text)
            and _acknowledgement(words, _vocatives(text))
        ):
            return EvidenceClass.ACKNOWLEDGEMENT
        if _heartbeat_line(text, words):
            return EvidenceClass.HEARTBEAT
    classes = _line_classes(text)
    if not classes:
        return EvidenceClass.CONTENT
    present = set(classes)
    return next(kind for kind in _LINE_PRIORITY if kind in present)
