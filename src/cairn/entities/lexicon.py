"""Closed word lists of the entity rules, English and Chinese.

Kinship words map to one relation name in both languages, so "my sister" and "我妹妹"
said by the same person are one entity. Place names carry their Chinese form, so
"Lisbon" and "里斯本" are one place. Capitalised words that start sentences but name
nothing are listed so they are not taken for names.
"""

from __future__ import annotations

__all__ = [
    "KIN_EN",
    "KIN_ZH",
    "NOT_NAMES",
    "ORGANISATION_HEADS",
    "PLACES",
    "PLACE_HEADS",
    "PLACE_PREPOSITIONS",
    "VOCATIVE_OPENERS",
    "ZH_SURNAMES",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# English kinship and social words -> the relation they name.
KIN_EN: dict[str, str] = {
    **dict.fromkeys(("mom", "mum", "mother", "mommy", "mama"), "mother"),
    **dict.fromkeys(("dad", "father", "daddy", "papa"), "father"),
    **dict.fromkeys(("sister", "sis"), "sister"),
    **dict.fromkeys(("brother", "bro"), "brother"),
    "husband": "husband",
    "wife": "wife",
    "son": "son",
    "daughter": "daughter",
    **dict.fromkeys(("kids", "kid", "children", "child"), "children"),
    "parents": "parents",
    "partner": "partner",
    "boyfriend": "boyfriend",
    "girlfriend": "girlfriend",
    **dict.fromkeys(("fiance", "fiancé"), "fiance"),
    **dict.fromkeys(("fiancee", "fiancée"), "fiancee"),
    **dict.fromkeys(("grandma", "grandmother", "granny", "nana"), "grandmother"),
    **dict.fromkeys(("grandpa", "grandfather"), "grandfather"),
    "aunt": "aunt",
    "uncle": "uncle",
    "cousin": "cousin",
    "niece": "niece",
    "nephew": "nephew",
    "boss": "boss",
    "manager": "manager",
    "roommate": "roommate",
    "mentor": "mentor",
    "therapist": "therapist",
    "best friend": "best friend",
}

# Chinese kinship words -> the same relation names.
KIN_ZH: dict[str, str] = {
    **dict.fromkeys(("妈妈", "母亲", "妈", "老妈"), "mother"),
    **dict.fromkeys(("爸爸", "父亲", "爸", "老爸"), "father"),
    **dict.fromkeys(("姐姐", "妹妹", "姐", "妹"), "sister"),
    **dict.fromkeys(("哥哥", "弟弟", "哥", "弟"), "brother"),
    **dict.fromkeys(("老公", "丈夫", "先生"), "husband"),
    **dict.fromkeys(("老婆", "妻子", "太太"), "wife"),
    "儿子": "son",
    "女儿": "daughter",
    **dict.fromkeys(("孩子", "孩子们", "小孩"), "children"),
    "父母": "parents",
    "男朋友": "boyfriend",
    "女朋友": "girlfriend",
    "未婚夫": "fiance",
    "未婚妻": "fiancee",
    **dict.fromkeys(("奶奶", "外婆", "姥姥"), "grandmother"),
    **dict.fromkeys(("爷爷", "外公", "姥爷"), "grandfather"),
    **dict.fromkeys(("阿姨", "姑姑", "姨妈"), "aunt"),
    **dict.fromkeys(("叔叔", "舅舅", "伯伯"), "uncle"),
    "表妹": "cousin",
    "表姐": "cousin",
    "表哥": "cousin",
    "表弟": "cousin",
    "老板": "boss",
    "经理": "manager",
    "室友": "roommate",
    "导师": "mentor",
    "最好的朋友": "best friend",
}

# Places with their Chinese names: "moved to Lisbon" and "搬到里斯本" name one place.
PLACES: dict[str, str] = {
    "Beijing": "北京",
    "Shanghai": "上海",
    "Shenzhen": "深圳",
    "Guangzhou": "广州",
    "Hangzhou": "杭州",
    "Chengdu": "成都",
    "Nanjing": "南京",
    "Wuhan": "武汉",
    "Xi'an": "西安",
    "Hong Kong": "香港",
    "Taipei": "台北",
    "Singapore": "新加坡",
    "Tokyo": "东京",
    "Osaka": "大阪",
    "Kyoto": "京都",
    "Seoul": "首尔",
    "Bangkok": "曼谷",
    "Sydney": "悉尼",
    "Melbourne": "墨尔本",
    "London": "伦敦",
    "Paris": "巴黎",
    "Berlin": "柏林",
    "Munich": "慕尼黑",
    "Hamburg": "汉堡",
    "Vienna": "维也纳",
    "Zurich": "苏黎世",
    "Amsterdam": "阿姆斯特丹",
    "Brussels": "布鲁塞尔",
    "Madrid": "马德里",
    "Barcelona": "巴塞罗那",
    "Lisbon": "里斯本",
    "Rome": "罗马",
    "Milan": "米兰",
    "Dublin": "都柏林",
    "Stockholm": "斯德哥尔摩",
    "Copenhagen": "哥本哈根",
    "Oslo": "奥斯陆",
    "Helsinki": "赫尔辛基",
    "Prague": "布拉格",
    "Warsaw": "华沙",
    "Moscow": "莫斯科",
    "Istanbul": "伊斯坦布尔",
    "Dubai": "迪拜",
    "New York": "纽约",
    "Boston": "波士顿",
    "Chicago": "芝加哥",
    "Seattle": "西雅图",
    "San Francisco": "旧金山",
    "Los Angeles": "洛杉矶",
    "Toronto": "多伦多",
    "Vancouver": "温哥华",
    "Montreal": "蒙特利尔",
    "Mexico City": "墨西哥城",
    "China": "中国",
    "Japan": "日本",
    "Korea": "韩国",
    "Germany": "德国",
    "France": "法国",
    "Spain": "西班牙",
    "Portugal": "葡萄牙",
    "Italy": "意大利",
    "Sweden": "瑞典",
    "Norway": "挪威",
    "Canada": "加拿大",
    "Australia": "澳大利亚",
    "England": "英国",
    "America": "美国",
    "India": "印度",
}

# Last words of a place's name.
PLACE_HEADS = _words(
    "Canyon Lake Mountain Mountains Park River Beach Street St Avenue Road Island Islands"
    " Bay City County State Valley Falls Forest Hills Square Bridge Coast Peak Trail"
)

# Words after which a capitalised name is a place ("moved to Denver").
PLACE_PREPOSITIONS = _words("in at from to near visited visit visiting around across")

# Last words of an organisation's name.
ORGANISATION_HEADS = _words(
    "Inc Corp Corporation Company Ltd LLC GmbH University College School Academy"
    " Institute Hospital Clinic Church Center Centre Foundation Group Bank Studio"
    " Studios Labs Club Society Association Agency Museum Library Cafe Café"
)

# Interjections and greetings a vocative follows: "Thanks, Mel!", "Hey Caroline".
VOCATIVE_OPENERS = _words(
    "hey hi hello hiya yo thanks thank thx wow oh ooh aw aww awww yeah yes yep no nope"
    " sorry congrats congratulations omg great good nice cool sure ok okay dear well"
    " haha lol hmm woohoo woo yay hooray bye goodbye cheers morning evening night welcome right true exactly"
    " totally definitely absolutely amazing awesome glad love"
)

# Capitalised words that name nothing (sentence openers, pronouns, days and months
# are times, titles of address).
NOT_NAMES = _words(
    "i i'm i've i'll i'd me my mine we we're we've our us you you're you've your he"
    " she it it's they they're them their his her hers its this that these those there"
    " here what when where who whom whose which why how the a an and or but so if then"
    " because as at by for from in into of on onto to with without about after before"
    " also just really very too not no yes yeah yep oh wow hey hi hello thanks thank"
    " sorry please well ok okay sure great good nice cool awesome amazing glad congrats"
    " congratulations haha lol omg aw aww awww hmm ah um uh btw anyway anyways maybe"
    " actually honestly definitely totally absolutely probably perhaps still even ever"
    " never always sometimes often usually all any some every each both either neither"
    " one two three four five six seven eight nine ten first last next new old"
    " monday tuesday wednesday thursday friday saturday sunday january february march"
    " april may june july august september october november december today tomorrow"
    " mon tue tues wed thu thur thurs fri sat sun jan feb mar apr jun jul aug sep sept"
    " oct nov dec woohoo woo yay hooray"
    " yesterday tonight morning afternoon evening night weekend week month year"
    " mr mrs ms miss dr sir madam mom mum dad is are was were be been being do does did"
    " have has had can could will would should shall might must let let's lets i'd"
    " that's what's there's here's how's who's where's it'll you'll we'll they'll don't"
    " didn't doesn't can't won't isn't aren't wasn't weren't haven't hasn't couldn't"
    " wouldn't shouldn't bye goodbye cheers welcome right true exactly love hope wish"
    " take look check see go went going got get getting make made making keep kept"
    " tell told say said think thought know knew feel felt want wanted need needed"
    " like liked love loved try tried started finally recently lately since until"
    " though although while during besides plus sounds sound seems seem guess"
    " happy sad excited proud lucky super pretty kind wonderful beautiful"
    " english chinese spanish french german japanese"
)

# The most common Chinese surnames (single characters; together about 85% of people).
# A Chinese name in running text has no capital letter to mark it: two or three
# characters led by one of these are looked up as a name a person is already known by.
ZH_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于"
    "蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛"
    "闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤常温康施文牛樊葛邢安齐易乔伍"
    "庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍"
    "涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉"
    "缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师和"
    "仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明佘池查麻苑迟邝"
)
