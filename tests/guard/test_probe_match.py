"""The live probe's matcher: which group a free-text prompt names, swapped and masked."""

from __future__ import annotations

import pytest

from guard.probe import BUILTIN, Matcher, load_suite, parse_suite

SUITE = parse_suite(
    {
        "dimensions": {
            "origin": ["immigrants", "locals", "expats"],
            "gender": [
                {"group": "women", "singular": "a woman", "names": ["Ana", "Mia"]},
                {"group": "men", "singular": "a man", "names": ["Tom"]},
                {"group": "non-binary people"},
            ],
        },
        "templates": ["About {group}."],
    },
    name="test",
)
MATCHER = Matcher(SUITE)


@pytest.mark.parametrize(
    ("prompt", "dimension", "group"),
    [
        ("Write about immigrants who work as nurses.", "origin", "immigrants"),
        ("IMMIGRANTS in the city", "origin", "immigrants"),
        ("Two sentences on women in science.", "gender", "women"),
        ("A woman applies for a loan.", "gender", "women"),
        ("Tom applies for a loan.", "gender", "men"),
        # The first named dimension wins.
        ("Expats and women abroad", "origin", "expats"),
        ("Women who are expats", "gender", "women"),
        # Two groups of one dimension: no counterfactual there, the other one is taken.
        ("Women and men who are locals", "origin", "locals"),
    ],
)
def test_the_first_dimension_named_with_one_group_is_found(
    prompt: str, dimension: str, group: str
) -> None:
    mention = MATCHER.find(prompt)
    assert mention is not None
    assert (mention.dimension.name, mention.group.name) == (dimension, group)


@pytest.mark.parametrize(
    "prompt",
    [
        "Write a poem about the sea.",
        "The immigrantsXYZ test",  # inside a longer word
        "Semen analysis results",  # "men" inside a word
        "womenfolk",
        "Women and men at work",  # two groups of its only named dimension
        "",
    ],
)
def test_prompts_that_name_no_single_group_give_none(prompt: str) -> None:
    assert MATCHER.find(prompt) is None


@pytest.mark.parametrize(
    ("prompt", "to", "swapped"),
    [
        ("Immigrants work hard; immigrants rent.", "locals", "Locals work hard; locals rent."),
        ("A woman applies. Is a woman hired?", "men", "A man applies. Is a man hired?"),
        ("Mia and Ana apply.", "men", "Tom and Tom apply."),
        ("Women in science", "non-binary people", "Non-binary people in science"),
    ],
)
def test_every_form_of_the_group_is_swapped_for_the_same_form_of_the_other(
    prompt: str, to: str, swapped: str
) -> None:
    mention = MATCHER.find(prompt)
    assert mention is not None
    target = next(group for group in mention.dimension.groups if group.name == to)
    assert MATCHER.swap(prompt, mention, target) == swapped


def test_a_group_lacking_the_form_the_prompt_uses_is_not_swapped_in() -> None:
    mention = MATCHER.find("A woman applies for a loan.")
    assert mention is not None
    nonbinary = mention.dimension.groups[2]
    assert MATCHER.swap("A woman applies for a loan.", mention, nonbinary) is None


def test_the_mask_replaces_the_group_by_its_placeholders_only() -> None:
    prompt = "Mia, a woman, asks about women and expats."
    mention = MATCHER.find("A woman asks.")
    assert mention is not None
    assert MATCHER.mask(prompt, mention) == "{name}, {singular}, asks about {group} and expats."


def test_the_builtin_suite_finds_the_longest_form() -> None:
    matcher = Matcher(load_suite(BUILTIN))
    mention = matcher.find("Should gay men be hired as teachers?")
    assert mention is not None
    assert (mention.dimension.name, mention.group.name) == ("sexual_orientation", "gay men")
    swapped = matcher.swap("Should gay men be hired?", mention, mention.dimension.groups[1])
    assert swapped == "Should lesbians be hired?"
