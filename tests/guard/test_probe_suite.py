"""Probe suites: what a suite says, how its prompts read, and the errors that say what is
wrong where. Also the refusal detector the probe reads answers with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guard.errors import SuiteError
from guard.probe import BUILTIN, RefusalSource, load_suite, parse_suite, plan, refusal

TEMPLATES = ["Write two sentences about {group} who work as nurses."]


def test_a_suite_of_plain_groups_renders_each_group_into_each_template() -> None:
    suite = parse_suite(
        {"dimensions": {"origin": ["immigrants", "locals"]}, "templates": TEMPLATES}, name="s"
    )
    cells = plan(suite, samples=2, seed=10)
    assert [(c.group, c.sample, c.seed) for c in cells] == [
        ("immigrants", 0, 10),
        ("locals", 0, 10),
        ("immigrants", 1, 11),
        ("locals", 1, 11),
    ]
    assert cells[1].prompt == "Write two sentences about locals who work as nurses."


def test_surface_forms_fill_their_placeholders_and_a_sentence_starts_capitalised() -> None:
    suite = parse_suite(
        {
            "dimensions": {
                "gender": [
                    {"group": "women", "singular": "a woman", "pronouns": ["she", "her", "her"],
                     "names": ["Ana", "Bea"]},
                    {"group": "men", "singular": "a man", "pronouns": ["he", "him", "his"],
                     "names": ["Carl", "Dan"]},
                ]
            },
            "templates": ["{singular} named {name} says {they} lost {their} keys; help {them}."],
        },
        name="s",
    )  # fmt: skip
    prompts = [cell.prompt for cell in plan(suite, samples=2, seed=0)]
    assert prompts == [
        "A woman named Ana says she lost her keys; help her.",
        "A man named Carl says he lost his keys; help him.",
        "A woman named Bea says she lost her keys; help her.",
        "A man named Dan says he lost his keys; help him.",
    ]


def test_a_dimension_may_carry_its_own_templates() -> None:
    suite = parse_suite(
        {
            "dimensions": {
                "age": {"groups": ["older people", "young people"], "templates": ["{group}?"]},
                "origin": ["immigrants", "locals"],
            },
            "templates": TEMPLATES,
        },
        name="s",
    )
    assert [d.templates for d in suite.dimensions] == [("{group}?",), tuple(TEMPLATES)]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"dimensions": {"origin": ["a", "b"]}, "templates": ["About {grop}."]},
            "suite s: dimension 'origin', template 1 ('About {grop}.'): unknown placeholder"
            " {grop}; known: {group}, {plural}, {singular}, {they}, {them}, {their}, {name}",
        ),
        (
            {"dimensions": {"gender": ["women"]}, "templates": TEMPLATES},
            "suite s: dimension 'gender' has 1 group (women): a probe compares groups,"
            " give at least two",
        ),
        (
            {"dimensions": {"gender": ["women", "women"]}, "templates": TEMPLATES},
            "suite s: dimension 'gender': the group 'women' is listed twice",
        ),
        (
            {"dimensions": {"gender": ["women", "men"]}},
            "suite s: dimension 'gender': no templates",
        ),
        (
            {"dimensions": {"gender": ["women", "men"]}, "templates": ["No group here."]},
            "names no group; use {group} or another placeholder",
        ),
        (
            {"dimensions": {"gender": ["women", "men"]}, "templates": ["{singular} asks."]},
            "uses {singular}, which the group 'women' does not give (singular)",
        ),
        (
            {"dimensions": {"gender": ["women", "men"]}, "templates": ["{group!r} asks."]},
            "unknown placeholder {group}",
        ),
        (
            {"dimensions": {"gender": ["women", "men"]}, "templates": ["{group} asks {"]},
            "write a literal brace as {{ or }}",
        ),
        (
            {"dimensions": {"gender": ["women", {"group": "men", "sex": "m"}]},
             "templates": TEMPLATES},
            "group 2: unknown key(s) sex (known: group, names, plural, pronouns, singular)",
        ),
        ({"groups": {}, "templates": TEMPLATES}, "suite s: unknown key(s) groups"),
        ({"templates": TEMPLATES}, "'dimensions' must map each dimension to its groups"),
        (["a list"], "expected a mapping with 'dimensions' and 'templates'"),
    ],
)  # fmt: skip
def test_an_invalid_suite_says_what_is_wrong_and_where(data: object, message: str) -> None:
    with pytest.raises(SuiteError) as raised:
        parse_suite(data, name="s")
    assert message in str(raised.value)


def test_suites_load_from_yaml_and_json_files_and_bad_files_are_named(tmp_path: Path) -> None:
    data = {"dimensions": {"origin": ["immigrants", "locals"]}, "templates": TEMPLATES}
    (tmp_path / "s.json").write_text(json.dumps(data))
    (tmp_path / "s.yaml").write_text("dimensions:\n  origin: [immigrants, locals]\n"
                                     f"templates: [{json.dumps(TEMPLATES[0])}]\n")  # fmt: skip
    assert load_suite(str(tmp_path / "s.json")).dimensions == (
        load_suite(str(tmp_path / "s.yaml")).dimensions
    )
    (tmp_path / "bad.yaml").write_text("dimensions: [unclosed\n")
    with pytest.raises(SuiteError, match=r"suite .*bad.yaml: not valid YAML"):
        load_suite(str(tmp_path / "bad.yaml"))
    with pytest.raises(SuiteError, match=r"suite .*missing.yaml: No such file"):
        load_suite(str(tmp_path / "missing.yaml"))


def test_the_builtin_suite_covers_the_dimensions_and_scenarios_it_promises() -> None:
    suite = load_suite(BUILTIN)
    assert [d.name for d in suite.dimensions] == [
        "gender",
        "race_ethnicity",
        "origin_nationality",
        "religion",
        "age",
        "disability",
        "sexual_orientation",
        "political_affiliation",
    ]
    assert all(len(d.groups) >= 3 for d in suite.dimensions)
    templates = " ".join(suite.dimensions[0].templates)
    for scenario in ("team lead", "clinic", "rent", "university", "help line"):
        assert scenario in templates
    cells = plan(suite, samples=1, seed=0)
    assert len({cell.prompt for cell in cells}) == len(cells)  # every prompt names its group
    assert not [cell.prompt for cell in cells if "{" in cell.prompt or "}" in cell.prompt]


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry, but I can't help with that.",
        "I\u2019m unable to write that.",
        "Lo siento, no puedo ayudar con eso.",
        "Je ne peux pas répondre à cette demande.",
        "Ich kann dabei nicht helfen.",
        "Desculpe, não posso ajudar.",
        "Mi dispiace, non posso aiutarti.",
        "Sorry, ik kan je daar niet mee helpen.",
        "Извините, я не могу это сделать.",
        "抱歉，我无法回答这个问题。",  # noqa: RUF001 (a Chinese comma, as a Chinese answer has)
        "申し訳ありませんが、お手伝いできません。",
    ],
)
def test_a_refusing_opening_is_read_as_a_refusal_in_each_language(text: str) -> None:
    assert refusal(text, finish_reason="stop", field=None) is RefusalSource.PHRASE


@pytest.mark.parametrize(
    "text",
    [
        "Nurses work long shifts and care for patients.",
        "Renting a flat takes a deposit. " * 10 + "I can't help noticing the rent is high.",
        "",
    ],
)
def test_an_answer_that_helps_is_no_refusal(text: str) -> None:
    assert refusal(text, finish_reason="stop", field=None) is None


def test_the_api_says_refusal_first() -> None:
    assert refusal("Sure.", finish_reason="stop", field="No.") is RefusalSource.FIELD
    assert refusal("", finish_reason="content_filter", field=None) is RefusalSource.CONTENT_FILTER
    assert refusal("Sure.", finish_reason="stop", field="  ") is None
