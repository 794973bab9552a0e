"""The near-duplicate rule on a labelled English and Chinese pair set: no pair of
different facts merges (precision 1.0), and the rule is what decides, since no cosine
threshold of either embedder separates the set."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cairn.maintenance.duplicates import (
    best_cosine,
    near_duplicates,
    same_wording,
    wording,
)
from cairn.testing import HashingEmbedder

PAIRS = [
    json.loads(line)
    for line in (Path(__file__).parent / "merge_pairs.jsonl")
    .read_text("utf-8")
    .splitlines()
]


def test_the_labelled_set_has_both_languages_and_both_answers() -> None:
    chinese = [p for p in PAIRS if any("\u4e00" <= c <= "\u9fff" for c in p["a"])]
    assert len(chinese) >= 15
    assert sum(p["same"] for p in PAIRS) >= 20
    assert sum(not p["same"] for p in PAIRS) >= 40


def test_no_pair_of_different_facts_merges_and_most_duplicates_do() -> None:
    merged = [p for p in PAIRS if same_wording(wording(p["a"]), wording(p["b"]))]
    wrong = [p for p in merged if not p["same"]]
    assert wrong == []
    duplicates = [p for p in PAIRS if p["same"]]
    assert len(merged) / len(duplicates) >= 0.9


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Ana has a meeting on Monday", "Ana has a meeting on Tuesday"),
        ("Ana likes Kyoto", "Ana likes Osaka"),
        ("Ana has 2 cats", "Ana has 3 cats"),
        ("Ana likes Bob", "Bob likes Ana"),
        ("Ana is allergic to peanuts", "Ana is not allergic to peanuts"),
        ("Ana was born in 1990", "Ana was born in 1991"),
        ("我周一有个会", "我周二有个会"),
        ("她不喜欢咖啡", "她喜欢咖啡"),
        ("她喜欢喝茶", "她喜欢吃茶"),
    ],
)
def test_days_places_numbers_names_and_negations_never_merge(a: str, b: str) -> None:
    assert not near_duplicates(a, b)
    assert not near_duplicates(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("The user really loves oolong tea", "The user loves drinking oolong tea"),
        ("Ana has a meeting on Monday", "On Monday Ana has a meeting"),
        ("用户非常喜欢乌龙茶", "用户很喜欢喝乌龙茶"),
    ],
)
def test_intensifiers_light_verbs_and_word_order_may_differ(a: str, b: str) -> None:
    assert near_duplicates(a, b)
    assert near_duplicates(b, a)


def test_a_low_cosine_of_the_claims_own_vectors_vetoes_a_merge() -> None:
    a, b = "Ana really loves oolong tea", "Ana loves drinking oolong tea"
    assert near_duplicates(a, b, cosine=0.9)
    assert not near_duplicates(a, b, cosine=0.1)


async def test_no_hashing_cosine_threshold_separates_the_pairs() -> None:
    embedder = HashingEmbedder()
    cosines: dict[bool, list[float]] = {True: [], False: []}
    for pair in PAIRS:
        vectors = np.asarray(await embedder.embed_documents([pair["a"], pair["b"]]))
        cosine = best_cosine([vectors[0]], [vectors[1]])
        assert cosine is not None
        cosines[pair["same"]].append(cosine)
    # Some different facts score as high as any duplicate: a threshold alone would
    # merge them, which is why the token rule decides and the cosine only vetoes.
    assert max(cosines[False]) >= min(cosines[True])
    assert max(cosines[False]) >= 0.99


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Ana doesn't really like tea", "Ana doesn't like tea"),
        ("Ana is not very tall", "Ana is not tall"),
        ("她不是很喜欢咖啡", "她不喜欢咖啡"),
    ],
)
def test_under_a_negation_an_intensifier_is_a_different_statement(
    a: str, b: str
) -> None:
    assert not near_duplicates(a, b)
