"""Words a category question stands for: "what activities…" asks for pottery and hikes.

A list question names a category ("activities", "pets", "instruments"), and the turns that
answer it name members ("I signed up for a pottery class"). The entity-centred list
searches the named entity's turns for the category's members too. The lexicon is closed
and general (hobbies, family, pets, arts, sport, food, places, work, study), English and
Chinese; a category it does not know expands to nothing.
"""

from __future__ import annotations

import re

__all__ = ["expansion_terms"]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_ACTIVITIES = _words(
    "hobby hobbies activity class classes club camping camp hiking hike hikes running run"
    " swimming swim cycling biking yoga dance dancing painting paint pottery drawing"
    " sculpting knitting sewing gardening cooking baking reading writing photography"
    " music singing guitar piano violin drums gaming climbing skiing surfing fishing"
    " volunteering volunteer marathon race workout gym tennis soccer football basketball"
    " 爱好 活动 运动 跑步 游泳 爬山 徒步 露营 画画 绘画 做饭 烘焙 摄影 唱歌 跳舞 瑜伽"
)
_CATEGORIES: dict[str, tuple[str, ...]] = {
    "activities": _ACTIVITIES,
    "activity": _ACTIVITIES,
    "hobbies": _ACTIVITIES,
    "hobby": _ACTIVITIES,
    "interests": _ACTIVITIES,
    "pets": _words(
        "pet pets dog dogs cat cats puppy kitten bird fish turtle turtles hamster rabbit"
        " horse snake 宠物 狗 猫"
    ),
    "family": _words(
        "family kids children son daughter husband wife mom dad mother father sister"
        " brother parents grandma grandpa 家人 孩子 父母"
    ),
    "instruments": _words(
        "instrument guitar piano violin cello drums flute saxophone ukulele clarinet 乐器"
        " 吉他 钢琴 小提琴"
    ),
    "sports": _words(
        "sport soccer football basketball tennis baseball volleyball golf hockey"
        " swimming running cycling skiing surfing 运动 足球 篮球 网球"
    ),
    "books": _words("book books novel novels read reading author 书 小说"),
    "movies": _words("movie movies film films watched cinema trilogy 电影"),
    "music": _words("music song songs band concert album singer 音乐 歌"),
    "art": _words("art painting paintings drawing sculpture pottery mural 艺术 画"),
    "food": _words("food dish dishes recipe recipes cook cooking bake baking 食物 菜"),
    "places": _words("trip travel visited visit city country beach park 地方 旅行"),
    "countries": _words("country trip travel visited abroad 国家"),
    "events": _words(
        "event events festival parade conference concert fair race party meeting"
        " workshop talk 活动"
    ),
    "jobs": _words("job work career position role company office 工作"),
    "courses": _words("course class classes study studying degree school 课程"),
}
_CHINESE = {
    "爱好": "hobbies",
    "活动": "activities",
    "宠物": "pets",
    "家人": "family",
    "乐器": "instruments",
    "运动": "sports",
    "书": "books",
    "电影": "movies",
    "音乐": "music",
}
_LATIN = re.compile(r"[a-z]+")


def expansion_terms(question: str) -> list[str]:
    """Member words of every category ``question`` names, in lexicon order."""
    text = question.casefold()
    found: dict[str, None] = {}
    for word in _LATIN.findall(text):
        for member in _CATEGORIES.get(word, ()):
            found.setdefault(member, None)
    for chinese, category in _CHINESE.items():
        if chinese in text:
            for member in _CATEGORIES[category]:
                found.setdefault(member, None)
    return list(found)
