"""The offline entity rules (cairn.entities.extract), English and Chinese."""

from __future__ import annotations

from cairn.domain.evidence import Role
from cairn.entities.extract import kin_key, mentions_in
from cairn.entities.vocabulary import (
    AliasKind,
    EntityKind,
    MentionDraft,
    MentionRole,
    fold,
)


def _by_name(drafts: list[MentionDraft]) -> dict[str, MentionDraft]:
    return {draft.name: draft for draft in drafts}


def test_the_speaker_comes_first_and_a_vocative_only_addresses() -> None:
    drafts = mentions_in(
        "Thanks, Mel! Your backing means a lot.", "Caroline", Role.USER
    )
    assert drafts[0] == MentionDraft(
        "Caroline", EntityKind.PERSON, MentionRole.SPEAKER, AliasKind.SPEAKER
    )
    assert _by_name(drafts)["Mel"].role is MentionRole.ADDRESSEE
    spoken_of = mentions_in("I saw Melanie at the park.", "Caroline", Role.USER)
    assert _by_name(spoken_of)["Melanie"].role is MentionRole.MENTION


def test_places_organisations_and_titles_get_their_kinds() -> None:
    drafts = _by_name(
        mentions_in(
            'I moved to Denver and joined Zalando Group. I read "Becoming Nicole".',
            "Ana",
            Role.USER,
        )
    )
    assert drafts["Denver"].kind is EntityKind.PLACE
    assert drafts["Zalando Group"].kind is EntityKind.ORGANISATION
    assert drafts["Becoming Nicole"].kind is EntityKind.ARTEFACT


def test_accented_names_a_following_head_and_no_redaction_marker() -> None:
    drafts = _by_name(
        mentions_in(
            "I met José in München; we went to the Pergamon museum."
            " My password is [REDACTED:password].",
            "Lena",
            Role.USER,
        )
    )
    assert drafts["José"].kind is EntityKind.PERSON
    assert drafts["München"].kind is EntityKind.PLACE
    assert drafts["Pergamon"].kind is EntityKind.ORGANISATION
    assert not any("REDACTED" in name for name in drafts)


def test_a_lone_word_opening_a_sentence_is_only_tentative() -> None:
    drafts = _by_name(mentions_in("Call me tomorrow. Luna loves it.", "Ana", Role.USER))
    assert drafts["Luna"].tentative
    assert "Call" not in drafts or drafts["Call"].tentative


def test_my_sister_in_english_and_chinese_is_one_relative_of_the_speaker() -> None:
    english = mentions_in("My sister Anna lives in Lisbon.", "Wang Fang", Role.USER)
    chinese = mentions_in("我妹妹下个月搬家。", "Wang Fang", Role.USER)
    sister = kin_key("Wang Fang", "sister")
    (english_sister,) = [d for d in english if d.key == sister]
    (chinese_sister,) = [d for d in chinese if d.key == sister]
    assert english_sister.name == "Wang Fang's sister"
    assert ("Anna", AliasKind.NAME) in english_sister.also
    assert chinese_sister.name == "Wang Fang的妹妹"
    assert kin_key("Ana", "mother") in {
        d.key for d in mentions_in("Ana's mom called.", "Bo", Role.USER)
    }


def test_a_speakerless_users_relatives_are_the_users() -> None:
    (sister,) = [
        d for d in mentions_in("my sister is visiting", None, Role.USER) if d.key
    ]
    assert sister.key == kin_key("user", "sister")
    # An assistant's "my" belongs to no one memory keeps.
    assert not [d for d in mentions_in("my sister", None, Role.ASSISTANT) if d.key]


def test_english_and_chinese_forms_of_one_name_are_one_draft() -> None:
    pair = _by_name(mentions_in("This is Li Ming (李明).", None, Role.USER))
    assert ("李明", AliasKind.TRANSLATION) in pair["Li Ming"].also
    lisbon = _by_name(mentions_in("我现在住在里斯本。", "Ana", Role.USER))["Lisbon"]
    assert lisbon.kind is EntityKind.PLACE
    assert ("里斯本", AliasKind.TRANSLATION) in lisbon.also
    english = _by_name(mentions_in("I live in Lisbon.", "Ana", Role.USER))["Lisbon"]
    assert ("里斯本", AliasKind.TRANSLATION) in english.also


def test_names_a_speaker_gives_themself() -> None:
    (speaker, *_) = mentions_in("Hi, call me Sam. 我叫王芳。", "Samantha", Role.USER)
    assert speaker.role is MentionRole.SPEAKER
    assert ("Sam", AliasKind.NICKNAME) in speaker.also
    assert ("王芳", AliasKind.NAME) in speaker.also
    (user,) = [d for d in mentions_in("My name is Li Ming.", None, Role.USER) if d.key]
    assert user.key == "self:user"
    assert user.name == "Li Ming"


def test_a_greeting_names_the_speakerless_user_and_nothing_else_does() -> None:
    """Found in a user trial through the Claude Code hooks (no speaker names): "Hi,
    I'm Mara." left Mara a stranger to the user's own entity."""
    (user,) = [
        d
        for d in mentions_in("Hi, I'm Mara. I live in Porto.", None, Role.USER)
        if d.key
    ]
    assert (user.key, user.name) == ("self:user", "Mara")
    for text in ("I'm Italian, by the way.", "Hi, I'm tired today.", "So I'm Back"):
        assert not [d for d in mentions_in(text, None, Role.USER) if d.key], text


def test_the_place_one_works_at_is_an_organisation() -> None:
    drafts = _by_name(
        mentions_in(
            "I work at Siemens in Munich; my sister's job at Bosch is in Stuttgart.",
            "Mara",
            Role.USER,
        )
    )
    assert drafts["Siemens"].kind is EntityKind.ORGANISATION
    assert drafts["Bosch"].kind is EntityKind.ORGANISATION
    assert drafts["Munich"].kind is EntityKind.PLACE
    assert drafts["Stuttgart"].kind is EntityKind.PLACE


def test_runtime_events_and_tool_output_name_no_one() -> None:
    assert mentions_in("Deploy blocked by Alice", "deploy", Role.EVENT) == []
    assert mentions_in("Ran tests for Bob", None, Role.TOOL) == []


def test_fold_matches_possessives_case_and_width() -> None:
    assert fold("Melanie's") == "melanie"
    assert fold("  MELANIE  ") == "melanie"
    assert fold("Ｍｅｌ") == "mel"
