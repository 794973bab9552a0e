"""Whether a statement restates an attribute's value or says a new one
(cairn.domain.values): what succession and challenge read to keep a restated value
current beside its restatement."""

from __future__ import annotations

import pytest

from cairn.domain.values import restates, same_value


@pytest.mark.parametrize(
    ("older", "newer", "subject"),
    [
        ("Mei moved to Lisbon last month", "Mei lives in Lisbon now", "Mei"),
        ("Ana lives in Lisbon", "Ana lives in Lisbon now", "Ana"),
        ("Mei住在上海", "Mei现在住在上海", "Mei"),
        ("The user really loves oolong tea", "The user loves oolong tea", "user"),
    ],
)
def test_a_restatement_is_the_same_value(older: str, newer: str, subject: str) -> None:
    assert restates(older, newer, subject)


@pytest.mark.parametrize(
    ("older", "newer", "subject"),
    [
        ("Mei lives in Berlin", "Mei lives in Lisbon", "Mei"),
        # The value a change leaves behind is not the one it states.
        ("Tom lives in Manchester", "Tom moved from Manchester to Leeds", "Tom"),
        ("Marco uses Java at work", "Marco switched from Java to Kotlin", "Marco"),
        ("Mei住在上海", "Mei从上海搬到了北京", "Mei"),
        ("I use vim", "I use neovim instead of vim", "user"),
        ("Mei lives in Paris", "Mei no longer lives in Paris", "Mei"),
        # Nothing but the subject's name: no value to compare, so a new one.
        ("Mei moved", "Mei lives in Oslo", "Mei"),
        ("Mei lives in Oslo", "Mei moved", "Mei"),
    ],
)
def test_a_new_value_is_not_a_restatement(older: str, newer: str, subject: str) -> None:
    assert not restates(older, newer, subject)


def test_same_value_is_the_looser_test() -> None:
    # A statement with no readable value differs from none: challenge raises nothing
    # for it, while succession takes it as a new value.
    assert same_value("The user moved", "The user lives in Oslo")
    assert not restates("The user moved", "The user lives in Oslo", "user")
