"""Closed word lists for the English rules (regex alternations, lower case)."""

from __future__ import annotations

__all__ = [
    "CHANGE_VERBS",
    "EVENT_NOUNS",
    "IDENTITIES",
    "NUMBER_WORDS",
    "OCCUPATIONS",
    "PARTNERS",
    "PAST_VERBS",
    "PETS_AND_FAMILY",
    "PLANNED_HEADS",
    "PROGRESSIVE_VERBS",
    "RELATIONS",
    "UNCERTAIN_PAST",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _alternation(words: str) -> str:
    """Longest first, so "best friend" wins over "friend"."""
    return "|".join(sorted(words.split("|"), key=len, reverse=True)).replace(
        " ", r"\s+"
    )


OCCUPATIONS = _words(
    "teacher nurse doctor engineer developer programmer designer lawyer accountant student "
    "artist writer author musician chef cook scientist researcher professor manager "
    "consultant analyst architect dentist pharmacist therapist counselor counsellor "
    "photographer journalist editor librarian firefighter officer pilot driver mechanic "
    "electrician plumber carpenter farmer baker barista waiter waitress cashier "
    "entrepreneur founder freelancer paramedic surgeon veterinarian vet dancer singer "
    "actor actress painter sculptor coach trainer tutor translator interpreter worker "
    "clerk secretary assistant intern ceo cto director producer soldier sailor athlete "
    "graduate retiree homemaker volunteer activist psychologist psychiatrist salesman "
    "realtor banker economist mathematician physicist chemist biologist nutritionist "
    "dietitian midwife caregiver nanny technician administrator principal lecturer "
    "postdoc scholar filmmaker animator illustrator copywriter marketer recruiter "
    "programmer coder sysadmin streamer youtuber blogger podcaster"
)
IDENTITIES = _words(
    "vegetarian vegan pescatarian mom mum mother dad father parent grandmother grandfather "
    "grandma grandpa wife husband woman man christian muslim buddhist hindu jew atheist "
    "runner swimmer cyclist climber hiker gamer reader introvert extrovert twin member "
    "survivor citizen immigrant resident beginner"
)

_PETS_AND_FAMILY = (
    "dog|cat|puppy|kitten|hamster|rabbit|bunny|parrot|bird|fish|goldfish|turtle|tortoise|"
    "horse|pony|guinea pig|snake|lizard|ferret|retriever|labrador|lab|terrier|poodle|"
    "beagle|bulldog|shepherd|husky|corgi|dachshund|chihuahua|pug|spaniel|collie|"
    "kid|child|children|son|daughter|baby|"
    "brother|sister|twin|husband|wife|boyfriend|girlfriend|partner|fiancé|fiancée|"
    "fiance|fiancee|stepson|stepdaughter|grandchild|grandchildren|grandson|granddaughter|car"
)
PETS_AND_FAMILY = _alternation(_PETS_AND_FAMILY)

RELATIONS = _alternation(
    "mom|mum|mother|dad|father|brother|sister|wife|husband|son|daughter|partner|boyfriend|"
    "girlfriend|friend|best friend|dog|cat|puppy|kitten|pet|grandma|grandmother|grandpa|"
    "grandfather|aunt|uncle|cousin|niece|nephew|boss|roommate|fiancé|fiancée|kid|baby|"
    "horse|bird|fish|hamster|rabbit|parrot|turtle|therapist|doctor|coach|teacher"
)

EVENT_NOUNS = _alternation(
    "appointment|meeting|interview|exam|test|flight|trip|date|party|game|concert|class|"
    "lesson|surgery|operation|presentation|deadline|recital|match|race|marathon|wedding|"
    "conference|vacation|holiday|shift|check-up|checkup|session|tournament|audition|show|"
    "gig|reservation|dinner|lunch|call|visit|ceremony|graduation|performance|rehearsal|"
    "training|workshop|seminar|practice|competition|exhibition|hearing|procedure|"
    "doctor's appointment|dentist appointment"
)

# What a rescheduled plan can be about: an event, or whom it is with ("the dentist").
PLANNED_HEADS = _alternation(
    "appointment|appt|meeting|interview|exam|test|flight|trip|date|party|game|concert|"
    "class|lesson|surgery|operation|presentation|deadline|recital|match|race|wedding|"
    "conference|vacation|holiday|shift|check-up|checkup|session|tournament|audition|show|"
    "gig|reservation|dinner|lunch|brunch|call|visit|ceremony|graduation|performance|"
    "rehearsal|training|workshop|seminar|practice|competition|hearing|procedure|haircut|"
    "offsite|standup|stand-up|review|demo|retreat|barbecue|bbq|picnic|playdate|viewing|"
    "cleaning|scan|massage|dentist|doctor|vet|hairdresser|barber|therapist|physio|"
    "dermatologist|optometrist|orthodontist"
)
# How a plan is moved: "postponed to", "pushed back to", "moved up to".
CHANGE_VERBS = _alternation(
    "moved|postponed|pushed|rescheduled|bumped|shifted|delayed|changed|put off|moving|"
    "pushed back|brought forward"
)
# Whom "my ... is Anna" names as the speaker's partner.
PARTNERS = _alternation(
    "girlfriend|boyfriend|partner|wife|husband|fiancé|fiancée|fiance|fiancee|spouse"
)

PROGRESSIVE_VERBS = _alternation(
    "flying|traveling|travelling|going|heading|visiting|leaving|meeting|starting|moving|"
    "taking|seeing|having|attending|hosting|driving|throwing|presenting|spending|coming|"
    "returning|joining|celebrating|running|playing|performing|getting|doing|working|"
    "staying|cooking|baking|watching|giving|teaching|competing|volunteering|camping|"
    "hiking|picking|graduating|launching|submitting|signing|speaking|organizing|"
    "organising|taking off|relocating|competing|touring"
)

PAST_VERBS = _alternation(
    "went|saw|met|took|had|made|got|bought|ate|ran|gave|did|wrote|flew|drove|left|won|"
    "lost|began|came|brought|caught|taught|found|built|sang|swam|spent|sold|sent|rode|"
    "threw|broke|chose|drew|drank|held|kept|paid|read|sat|slept|spoke|stood|woke|wore|"
    "beat|became|quit|hit|fell|grew|heard back|did"
)
# Regular past forms that report a feeling, a wish or a hedge rather than something done.
UNCERTAIN_PAST = _words(
    "used supposed wanted wished hoped needed seemed wondered guessed believed imagined "
    "pretended expected considered meant liked loved hated preferred thought mentioned "
    "heard asked told said decided noticed realized realised remembered forgot "
    "need feed seed weed bleed breed speed heed shed bed red"
)

NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
