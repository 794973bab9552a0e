"""Attribute keys shared by the English and Chinese rules: which tool category an object
belongs to, the normal name of a favourite's category, and the key of a planned event.

A later claim supersedes an earlier one only when both carry the same ``(subject,
predicate)`` (design/knowledge_update.md), so every phrasing of one attribute must reach
the same key: "I switched to Neovim", "I now use Vim" and "我改用Vim了" are all
``uses:editor``; "my favourite color", "my favourite colour" and "我最喜欢的颜色" are all
``favourite:colour``; "the dentist", "my dentist appointment" and "a dentist appt" are
all ``plan:dentist``. The lexicons are small and closed: an object they do not know gets
no tool predicate rather than a guessed one.
"""

from __future__ import annotations

import re

__all__ = [
    "EVENT_NOUNS_ZH",
    "favourite_category",
    "plan_key_en",
    "plan_key_zh",
    "preference_predicate",
    "product_category",
    "tool_category",
    "uses_predicate",
]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Product names per category. Lower-case names match in any case; names that are also
# ordinary words ("Go", "Edge", "Arch", "Pixel") match only as written here.
_TOOLS: dict[str, tuple[str, ...]] = {
    "editor": _words(
        "vim neovim nvim emacs vscode vs-code sublime-text sublime atom zed helix "
        "intellij pycharm webstorm goland clion rider android-studio xcode eclipse "
        "notepad++ nano kakoune textmate bbedit visual-studio-code visual-studio "
        "vs-code jetbrains spacemacs doom-emacs lapce code-editor text-editor editor "
        "ide 编辑器"
    ),
    "phone": _words(
        "iphone pixel-phone google-pixel oneplus xiaomi huawei nokia motorola "
        "galaxy-s\\d+ samsung-galaxy android-phone smartphone phone 手机 苹果手机 安卓手机"
    ),
    "laptop": _words(
        "macbook macbook-air macbook-pro thinkpad chromebook dell-xps xps "
        "surface-laptop framework-laptop zenbook laptop notebook 笔记本 笔记本电脑"
    ),
    "browser": _words(
        "firefox google-chrome chromium vivaldi duckduckgo-browser browser 浏览器"
    ),
    "os": _words(
        "linux ubuntu fedora debian macos mac-os os operating-system 操作系统 系统"
    ),
    "language": _words(
        "python javascript typescript kotlin java golang c\\+\\+ c# haskell elixir "
        "scala ruby php clojure ocaml julia programming-language 编程语言"
    ),
    "framework": _words(
        "django fastapi angular svelte laravel ruby-on-rails next\\.js nextjs nuxt "
        "express\\.js sveltekit spring-boot framework web-framework 框架"
    ),
    "car": _words(
        "tesla prius model-3 model-y car ev electric-car 汽车 电车 车 特斯拉 比亚迪 蔚来 小鹏 "
        "理想 丰田 本田 宝马 奔驰 奥迪 大众"
    ),
    "tablet": _words("ipad tablet 平板 平板电脑"),
    "watch": _words("apple-watch garmin smartwatch watch 手表"),
    "notes": _words("notion obsidian evernote logseq onenote notes-app 笔记软件"),
}
_TOOLS_AS_WRITTEN: dict[str, tuple[str, ...]] = {
    "editor": ("VS Code", "Cursor", "Helix", "Zed", "Atom"),
    "phone": ("Pixel", "Galaxy", "Samsung", "Android", "iOS"),
    "laptop": ("Surface", "Framework", "Mac"),
    "browser": ("Chrome", "Safari", "Edge", "Brave", "Opera", "Arc"),
    "os": ("Windows", "Arch", "NixOS"),
    "language": ("Go", "Rust", "Swift", "Zig", "Lua"),
    "framework": ("React", "Vue", "Rails", "Flask", "Spring", "Express", "Next.js"),
    "car": ("Model 3", "Model Y", "Civic", "Corolla", "BYD"),
}


def _word_alternation(words: tuple[str, ...]) -> str:
    parts = sorted(words, key=len, reverse=True)
    return "|".join(part.replace("-", r"[\s-]?") for part in parts)


def _matcher(words: tuple[str, ...], flags: int) -> re.Pattern[str]:
    # Latin names are whole words; CJK nouns match anywhere (Chinese has no blanks).
    latin = tuple(word for word in words if word.isascii())
    cjk = tuple(word for word in words if not word.isascii())
    parts = (
        [rf"(?<![A-Za-z0-9_.+#])(?:{_word_alternation(latin)})(?![A-Za-z0-9_+#])"]
        if latin
        else []
    )
    if cjk:
        parts.append("|".join(sorted(cjk, key=len, reverse=True)))
    return re.compile("|".join(parts), flags)


_TOOL_MATCHERS = tuple(
    (category, _matcher(tuple(words), re.IGNORECASE))
    for category, words in _TOOLS.items()
)
_TOOL_MATCHERS_AS_WRITTEN = tuple(
    (category, _matcher(tuple(re.escape(w) for w in words), 0))
    for category, words in _TOOLS_AS_WRITTEN.items()
)
# Category nouns ("editor", "手机") name a category without a product ("a new laptop");
# a product name, where there is one, decides ("switched from my old phone to a Pixel").
_CATEGORY_NOUNS = frozenset(
    _words(
        "editor code-editor text-editor ide phone smartphone android-phone laptop "
        "notebook browser os operating-system programming-language framework "
        "web-framework car ev electric-car tablet watch smartwatch notes-app 编辑器 手机 "
        "笔记本 笔记本电脑 浏览器 操作系统 系统 编程语言 框架 汽车 电车 车 平板 平板电脑 手表 笔记软件"
    )
)


def _find_tool(text: str, *, nouns: bool) -> str | None:
    best: tuple[int, str] | None = None
    for category, matcher in _TOOL_MATCHERS + _TOOL_MATCHERS_AS_WRITTEN:
        for match in matcher.finditer(text):
            is_noun = match[0].lower().replace(" ", "-") in _CATEGORY_NOUNS
            if is_noun is not nouns:
                continue
            if best is None or match.start() < best[0]:
                best = (match.start(), category)
            break
    return best[1] if best else None


def product_category(text: str) -> str | None:
    """The category of a product named in ``text`` ("Neovim", "iPhone"), not of a noun."""
    return _find_tool(text, nouns=False)


def tool_category(text: str) -> str | None:
    """The tool category a phrase names ("Neovim" → ``editor``), or ``None``."""
    return _find_tool(text, nouns=False) or _find_tool(text, nouns=True)


def uses_predicate(*objects: str | None) -> str | None:
    """``uses:<category>`` of the first object whose category is known."""
    for obj in objects:
        if obj and (category := tool_category(obj)) is not None:
            return f"uses:{category}"
    return None


# Favourite categories: one English key per category, whatever the language or spelling.
_CATEGORY_SYNONYMS = {
    "color": "colour",
    "film": "movie",
    "movies": "movie",
    "beverage": "drink",
    "tv show": "show",
    "tv series": "show",
    "series": "show",
    "meal": "food",
    "dish": "food",
    "cuisine": "food",
    "颜色": "colour",
    "电影": "movie",
    "食物": "food",
    "菜": "food",
    "美食": "food",
    "饮料": "drink",
    "运动": "sport",
    "书": "book",
    "歌": "song",
    "歌曲": "song",
    "歌手": "singer",
    "乐队": "band",
    "季节": "season",
    "城市": "city",
    "水果": "fruit",
    "动物": "animal",
    "游戏": "game",
    "电视剧": "show",
    "餐厅": "restaurant",
    "演员": "actor",
    "作家": "author",
    "花": "flower",
    "咖啡": "coffee",
    "茶": "tea",
    "编辑器": "editor",
    "浏览器": "browser",
    "手机": "phone",
    "编程语言": "language",
}
_PLURAL_KEEP = frozenset({"series", "glasses", "news", "sports"})


def favourite_category(category: str) -> str:
    """The key of a favourite's category: "Colors" → ``colour``, "颜色" → ``colour``."""
    text = " ".join(category.strip().lower().split())
    text = re.sub(r"^(?:the|a|an|my)\s+", "", text).removesuffix("的")
    if text in _CATEGORY_SYNONYMS:
        return _CATEGORY_SYNONYMS[text]
    words = text.split()
    if words and words[-1] not in _PLURAL_KEEP:
        last = words[-1]
        if last.endswith("ies") and len(last) > 4:
            last = last[:-3] + "y"
        elif last.endswith("s") and not last.endswith("ss") and len(last) > 3:
            last = last[:-1]
        words[-1] = last
    text = " ".join(words)
    return _CATEGORY_SYNONYMS.get(text, text)


# What a preference is between ("now I prefer tea", "我现在更喜欢茶"): a closed set of
# everyday choices, so a change of preference supersedes the earlier one.
_PREFERENCE_OBJECTS: dict[str, frozenset[str]] = {
    "drink": frozenset(
        [
            "tea",
            "green tea",
            "black tea",
            "herbal tea",
            "coffee",
            "espresso",
            "latte",
            "matcha",
            "beer",
            "wine",
            "red wine",
            "white wine",
            "water",
            "sparkling water",
            "juice",
            "soda",
            "cola",
            "decaf",
            "茶",
            "绿茶",
            "红茶",
            "咖啡",
            "拿铁",
            "啤酒",
            "红酒",
            "果汁",
            "可乐",
        ]
    ),
    "season": frozenset(_words("spring summer autumn fall winter 春天 夏天 秋天 冬天")),
    "colour": frozenset(
        _words(
            "red blue green yellow purple pink orange black white grey gray brown 红色 蓝色 "
            "绿色 黄色 紫色 粉色 橙色 黑色 白色 灰色"
        )
    ),
}


def preference_predicate(obj: str) -> str | None:
    """``uses:<category>`` for a tool, ``favourite:<category>`` for an everyday choice."""
    if (uses := uses_predicate(obj)) is not None:
        return uses
    lowered = obj.lower()
    first = re.split(
        r"\s+(?:over|to|rather\s+than|instead\s+of)\s+|而不是|比", lowered
    )[0]
    first = first.strip().removesuffix("了").strip()
    first = re.sub(r"^(?:a|an|the|some|my)\s+", "", first)
    first = re.sub(r"\s+(?:now|these\s+days|nowadays|instead)$", "", first)
    for category, objects in _PREFERENCE_OBJECTS.items():
        for known in objects:
            # "coffee in the morning" is coffee; Chinese has no blank to stop at.
            if first == known or first.startswith(known + " "):
                return f"favourite:{category}"
    return None


# -- planned events ---------------------------------------------------------------------------

_EVENT_HEADS_EN = frozenset(
    _words(
        "appointment appt meeting interview exam test flight trip date party game "
        "concert class lesson surgery operation presentation deadline recital match "
        "race marathon wedding conference vacation holiday shift checkup check-up "
        "session tournament audition show gig reservation dinner lunch brunch "
        "breakfast call visit ceremony graduation performance rehearsal training "
        "workshop seminar practice competition exhibition hearing procedure haircut "
        "offsite standup stand-up review demo launch retreat barbecue bbq picnic "
        "playdate sleepover viewing cleaning scan massage"
    )
)
_PROFESSIONALS_EN = frozenset(
    _words(
        "dentist doctor vet hairdresser barber therapist physio physiotherapist "
        "dermatologist optometrist orthodontist gp gynecologist pediatrician "
        "chiropractor accountant lawyer tutor"
    )
)
# Heads that say little alone: the word before them is part of the key ("piano lesson").
_GENERIC_HEADS = frozenset(
    _words(
        "appointment appt visit checkup check-up session lesson class call practice "
        "training party game match reservation shift review scan cleaning"
    )
)
_SEEING_HEADS = frozenset({"appointment", "appt", "visit", "checkup", "check-up"})
_KEY_STOP = frozenset(
    _words(
        "a an the my our your his her their this that these next upcoming new big "
        "little weekly monthly annual yearly first second usual regular"
    )
)
_KEY_END = frozenset(
    _words(
        "with at on in for to from about by before after until till this next "
        "tomorrow today tonight is was got has have had moved postponed pushed "
        "rescheduled"
    )
)


def plan_key_en(phrase: str) -> str | None:
    """The event a plan is about: "my dentist appointment" → ``dentist``, "the team
    meeting" → ``meeting``, "a piano lesson" → ``piano lesson``; ``None`` without one."""
    words: list[str] = []
    for raw in re.findall(r"[\w'’-]+", phrase.lower()):
        word = re.sub(r"['’]s?$", "", raw)
        if word in _KEY_END and words:
            break
        if word in _KEY_STOP or word in _KEY_END:
            continue
        words.append(word)
    head_index = None
    for index, word in enumerate(words):
        if word in _EVENT_HEADS_EN or word in _PROFESSIONALS_EN:
            head_index = index
    if head_index is None:
        return None
    head = (
        words[head_index].replace("check-up", "checkup").replace("appt", "appointment")
    )
    before = words[head_index - 1] if head_index > 0 else None
    if head in _PROFESSIONALS_EN:
        return head
    if before in _PROFESSIONALS_EN and head in _SEEING_HEADS:
        return before
    if head in _GENERIC_HEADS and before is not None:
        return f"{before} {head}"
    return head


# Chinese events: the noun (longest first) and the key it stands for.
_EVENTS_ZH = (
    ("牙医", "牙医"),
    ("看牙", "牙医"),
    ("医生", "医生"),
    ("复诊", "复诊"),
    ("体检", "体检"),
    ("面试", "面试"),
    ("会议", "会议"),
    ("开会", "会议"),
    ("例会", "例会"),
    ("周会", "周会"),
    ("组会", "组会"),
    ("年会", "年会"),
    ("考试", "考试"),
    ("航班", "航班"),
    ("婚礼", "婚礼"),
    ("派对", "派对"),
    ("聚会", "聚会"),
    ("聚餐", "聚餐"),
    ("饭局", "饭局"),
    ("约会", "约会"),
    ("演唱会", "演唱会"),
    ("音乐会", "音乐会"),
    ("比赛", "比赛"),
    ("手术", "手术"),
    ("讲座", "讲座"),
    ("培训", "培训"),
    ("出差", "出差"),
    ("旅行", "旅行"),
    ("答辩", "答辩"),
    ("理发", "理发"),
    ("剪头发", "理发"),
    ("预约", "预约"),
    ("课", "课"),
    ("会", "会议"),
)


def plan_key_zh(phrase: str) -> str | None:
    """The event of a Chinese plan: "牙医预约", "看牙医" → ``牙医``; "开会" → ``会议``."""
    for noun, event in _EVENTS_ZH:
        if noun in phrase:
            return event
    return None


EVENT_NOUNS_ZH = "|".join(
    sorted((noun for noun, _ in _EVENTS_ZH), key=len, reverse=True)
)
