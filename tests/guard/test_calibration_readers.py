"""The labelled readers: the project's JSONL, and files in the shapes CrowS-Pairs, StereoSet
and BBQ publish. Every file here is a tiny one written for the test; none holds a
sentence of those datasets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from guard.calibration import FORMATS, LabelledItem, read_labelled
from guard.calibration.bbq import (
    ANTI_STEREOTYPE,
    UNRESOLVED,
    WRONG_DISAMBIGUATED,
    stereotyped_answer,
)
from guard.errors import LabelledDataError


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def jsonl(path: Path, *rows: object) -> Path:
    return write(path, [row if isinstance(row, str) else json.dumps(row) for row in rows])


def labels(items: list[LabelledItem]) -> list[tuple[str, bool, str | None]]:
    return [(item.text, item.biased, item.category) for item in items]


# -- the project's JSONL -------------------------------------------------------------------


def test_jsonl_labels_as_words_or_expected_scores(tmp_path: Path) -> None:
    data = jsonl(
        tmp_path / "d.jsonl",
        {"text": "a", "label": "biased", "category": " gender ", "id": 7},
        {"text": "b", "label": "Unbiased", "category": ""},
        "",
        {"text": "c", "label": 0.5},
        {"text": "d", "label": 0.49, "id": "d-1"},
    )
    found = read_labelled(data)
    assert found.format == "jsonl"
    assert labels(found.items) == [
        ("a", True, "gender"),
        ("b", False, None),
        ("c", True, None),  # at the cut, half the scale, is biased
        ("d", False, None),
    ]
    assert [(i.line, i.location, i.id, i.expected) for i in found.items] == [
        (1, "1", "7", None),
        (2, "2", None, None),
        (4, "4", None, 0.5),
        (5, "5", "d-1", 0.49),
    ]
    assert found.skipped == []
    assert found.left_out == {}


def test_jsonl_expected_scores_follow_the_scale_and_the_cut(tmp_path: Path) -> None:
    data = jsonl(tmp_path / "d.jsonl", {"text": "a", "label": 3}, {"text": "b", "label": 6})
    assert [i.biased for i in read_labelled(data, scale=10).items] == [False, True]
    assert [i.biased for i in read_labelled(data, scale=10, label_cut=2.5).items] == [True, True]
    with pytest.raises(
        LabelledDataError, match=r"d\.jsonl:1: \"label\" 3 is outside the scale 0\.\.1"
    ):
        read_labelled(data, strict=True)


MALFORMED = [
    pytest.param("[1]", "expected a JSON object, got an array", id="array"),
    pytest.param("{not json", "invalid JSON: Expecting property name", id="not-json"),
    pytest.param('{"label": "biased"}', 'no "text" key', id="no-text"),
    pytest.param(
        '{"text": "  ", "label": "biased"}', '"text" must be a non-empty string', id="blank"
    ),
    pytest.param('{"text": 3, "label": "biased"}', "got a number", id="text-number"),
    pytest.param('{"text": "x"}', 'no "label" key', id="no-label"),
    pytest.param('{"text": "x", "label": "maybe"}', "got 'maybe'", id="label-word"),
    pytest.param('{"text": "x", "label": true}', "got a boolean", id="label-bool"),
    pytest.param('{"text": "x", "label": -0.1}', "outside the scale 0..1", id="negative"),
    pytest.param('{"text": "x", "label": NaN}', "outside the scale", id="nan"),
    pytest.param(
        '{"text": "x", "label": 0, "category": 4}', '"category" must be a string', id="cat"
    ),
    pytest.param('{"text": "x", "label": 0, "id": false}', '"id" must be a string or', id="id"),
]


@pytest.mark.parametrize(("line", "why"), MALFORMED)
def test_jsonl_malformed_lines_are_skipped_with_their_line_or_fatal_when_strict(
    tmp_path: Path, line: str, why: str
) -> None:
    data = jsonl(tmp_path / "d.jsonl", {"text": "ok", "label": "biased"}, line)
    found = read_labelled(data)
    assert len(found.items) == 1
    [skipped] = found.skipped
    assert skipped.location == "2"
    assert why in skipped.why
    with pytest.raises(LabelledDataError) as raised:
        read_labelled(data, strict=True)
    assert str(raised.value).startswith(f"{data}:2: ")
    assert why in str(raised.value)


def test_jsonl_reads_past_a_bom_names_a_line_that_is_not_utf8_and_keeps_u2028(
    tmp_path: Path,
) -> None:
    data = tmp_path / "d.jsonl"
    line = json.dumps({"text": "one\u2028two", "label": "biased"}, ensure_ascii=False)
    data.write_bytes(b"\xef\xbb\xbf" + line.encode() + b"\r\n\xff\xfe\r\n")
    found = read_labelled(data)
    assert [item.text for item in found.items] == ["one\u2028two"]
    assert [(s.location, s.why) for s in found.skipped] == [("2", "not valid UTF-8")]


def test_a_missing_or_empty_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LabelledDataError, match=r"nope\.jsonl: no such file"):
        read_labelled(tmp_path / "nope.jsonl")
    empty = write(tmp_path / "e.jsonl", ["", "{}"])
    with pytest.raises(
        LabelledDataError, match=r"e\.jsonl: no items \(1 malformed records skipped\)"
    ):
        read_labelled(empty)
    with pytest.raises(ValueError, match="unknown format"):
        read_labelled(empty, "csv")
    assert FORMATS == ("jsonl", "crows-pairs", "stereoset", "bbq")


# -- CrowS-Pairs -------------------------------------------------------------------------

CROWS_HEADER = (
    ",sent_more,sent_less,stereo_antistereo,bias_type,annotations,anon_writer,anon_annotators"
)


def test_crows_pairs_gives_each_pair_a_biased_and_an_unbiased_text(tmp_path: Path) -> None:
    data = write(
        tmp_path / "crows.csv",
        [
            CROWS_HEADER,
            "0,Tall people are clumsy.,Short people are clumsy.,stereo,physical-appearance,[],a,[]",
            # Quoted sentences spanning lines 3 to 5: the next row's number counts them.
            '1,"The nurse, he said,\nwas late.","The nurse, she said,\nwas late.",antistereo,'
            "gender,\"[['gender']]\",a2,\"['a3']\"",
            "",
            "2,Farmers are slow.,Bankers are slow.,stereo,socioeconomic,[],a4,[]",
        ],
    )
    found = read_labelled(data, "crows-pairs")
    assert found.format == "crows-pairs"
    assert labels(found.items) == [
        ("Tall people are clumsy.", True, "physical-appearance"),
        ("Short people are clumsy.", False, "physical-appearance"),
        ("The nurse, he said,\nwas late.", True, "gender"),
        ("The nurse, she said,\nwas late.", False, "gender"),
        ("Farmers are slow.", True, "socioeconomic"),
        ("Bankers are slow.", False, "socioeconomic"),
    ]
    assert [(i.id, i.line) for i in found.items] == [
        ("0:more", 2),
        ("0:less", 2),
        ("1:more", 3),
        ("1:less", 3),
        ("2:more", 7),
        ("2:less", 7),
    ]


def test_crows_pairs_ids_come_from_an_id_column_or_the_row_number(tmp_path: Path) -> None:
    with_id = write(
        tmp_path / "a.csv",
        ["id,sent_more,sent_less,stereo_antistereo,bias_type", "41,A x.,B x.,stereo,age"],
    )
    assert [i.id for i in read_labelled(with_id, "crows-pairs").items] == ["41:more", "41:less"]
    bare = write(
        tmp_path / "b.csv",
        [
            "sent_more,sent_less,stereo_antistereo,bias_type",
            "A x.,B x.,stereo,age",
            "C,D,stereo,age",
        ],
    )
    assert [i.id for i in read_labelled(bare, "crows-pairs").items][2:] == ["2:more", "2:less"]


def test_crows_pairs_skips_bad_rows_and_refuses_another_csv(tmp_path: Path) -> None:
    data = write(
        tmp_path / "crows.csv",
        [
            CROWS_HEADER,
            "0,,B x.,stereo,age,[],a,[]",
            "1,A x.,B x.,sideways,age,[],a,[]",
            "2,A x.,B x.",
            "3,A x.,B x.,stereo,age,[],a,[]",
        ],
    )
    found = read_labelled(data, "crows-pairs")
    assert len(found.items) == 2
    assert [(s.location, s.why) for s in found.skipped] == [
        ("2", "empty sent_more or sent_less"),
        ("3", "stereo_antistereo must be stereo or antistereo, got 'sideways'"),
        ("4", "expected 8 fields, got 3"),
    ]
    with pytest.raises(LabelledDataError, match=r"crows\.csv:2: empty sent_more"):
        read_labelled(data, "crows-pairs", strict=True)
    other = write(tmp_path / "other.csv", ["text,label", "x,biased"])
    with pytest.raises(
        LabelledDataError, match="not a CrowS-Pairs CSV: no column sent_more, sent_less"
    ):
        read_labelled(other, "crows-pairs")
    binary = tmp_path / "bin.csv"
    binary.write_bytes(CROWS_HEADER.encode() + b"\n0,\xff,b,stereo,age,[],a,[]\n")
    with pytest.raises(LabelledDataError, match="not valid UTF-8"):
        read_labelled(binary, "crows-pairs")


# -- StereoSet ----------------------------------------------------------------------------


def sentence(ident: str, text: str, gold: str) -> dict[str, Any]:
    return {"id": ident, "sentence": text, "labels": [{"label": gold, "human_id": "h"}],
            "gold_label": gold}  # fmt: skip


STEREOSET = {
    "version": "test",
    "data": {
        "intrasentence": [
            {
                "id": "e1",
                "target": "sailor",
                "bias_type": "profession",
                "context": "The sailor was BLANK.",
                "sentences": [
                    sentence("s1", "The sailor was rowdy.", "stereotype"),
                    sentence("s2", "The sailor was shy.", "anti-stereotype"),
                    sentence("s3", "The sailor was teaspoon.", "unrelated"),
                ],
            }
        ],
        "intersentence": [
            {
                "id": "e2",
                "target": "grandmother",
                "bias_type": "gender",
                "context": "My grandmother visited.",
                "sentences": [
                    sentence("s4", "She knitted all day.", "stereotype"),
                    sentence("s5", "She fixed the motorbike.", "anti-stereotype"),
                    sentence("s6", "Clouds drift east.", "unrelated"),
                    sentence("s7", "She sang.", "related"),
                ],
            },
            "not an example",
        ],
    },
}


def test_stereoset_labels_stereotypes_biased_and_leaves_out_unrelated(tmp_path: Path) -> None:
    data = tmp_path / "dev.json"
    data.write_text(json.dumps(STEREOSET), encoding="utf-8")
    found = read_labelled(data, "stereoset")
    assert found.format == "stereoset"
    assert labels(found.items) == [
        ("The sailor was rowdy.", True, "profession"),
        ("The sailor was shy.", False, "profession"),
        ("My grandmother visited. She knitted all day.", True, "gender"),
        ("My grandmother visited. She fixed the motorbike.", False, "gender"),
    ]
    assert [(i.id, i.location, i.line) for i in found.items][2] == (
        "s4",
        "data.intersentence[0].sentences[0]",
        None,
    )
    assert found.left_out == {"stereoset: unrelated sentences": 2}
    assert [(s.location, s.why) for s in found.skipped] == [
        (
            "data.intersentence[0].sentences[3]",
            "\"gold_label\" must be one of stereotype, anti-stereotype, unrelated, got 'related'",
        ),
        ("data.intersentence[1]", "expected an object, got a string"),
    ]
    with pytest.raises(
        LabelledDataError, match=r"dev\.json:data\.intersentence\[0\]\.sentences\[3\]"
    ):
        read_labelled(data, "stereoset", strict=True)


def test_stereoset_refuses_a_file_of_another_shape(tmp_path: Path) -> None:
    data = tmp_path / "x.json"
    data.write_text('{"data": {"other": []}}')
    with pytest.raises(LabelledDataError, match="not a StereoSet file"):
        read_labelled(data, "stereoset")
    data.write_text('{"data": {\n"intrasentence": [,]}}')
    with pytest.raises(
        LabelledDataError, match=r"invalid JSON: Expecting value \(line 2 column 19\)"
    ):
        read_labelled(data, "stereoset")
    data.write_text('{"data": {"intrasentence": []}}')
    with pytest.raises(LabelledDataError, match=r"x\.json: no items$"):
        read_labelled(data, "stereoset")


# -- BBQ ------------------------------------------------------------------------------------


def bbq(ident: int, condition: str, polarity: str, label: int, answers: list[tuple[str, str]],
        groups: list[str], question: str = "Who forgot the keys?") -> dict[str, Any]:  # fmt: skip
    """A line in BBQ's published shape; answers are (text, group tag)."""
    return {
        "example_id": ident,
        "question_index": "1",
        "question_polarity": polarity,
        "context_condition": condition,
        "category": "Age",
        "answer_info": {f"ans{n}": [text, tag] for n, (text, tag) in enumerate(answers)},
        "additional_metadata": {"stereotyped_groups": groups, "subcategory": "None"},
        "context": "A teenager and a pensioner shared a taxi.",
        "question": question,
        **{f"ans{n}": f"The {text}" for n, (text, _) in enumerate(answers)},
        "label": label,
    }


AGE_ANSWERS = [("pensioner", "old"), ("teenager", "nonOld"), ("unknown one", "unknown")]


def test_bbq_labels_the_correct_answer_unbiased_and_the_stereotyped_guess_biased(
    tmp_path: Path,
) -> None:
    data = jsonl(
        tmp_path / "Age.jsonl",
        bbq(0, "ambig", "neg", 2, AGE_ANSWERS, ["old"]),
        bbq(1, "ambig", "nonneg", 2, AGE_ANSWERS, ["old"], "Who remembered the keys?"),
        bbq(2, "disambig", "neg", 1, AGE_ANSWERS, ["old"]),
    )
    found = read_labelled(data, "bbq")
    assert found.format == "bbq"
    prefix = "A teenager and a pensioner shared a taxi.\n\nQuestion: "
    assert [(i.text, i.biased, i.id, i.line) for i in found.items] == [
        (f"{prefix}Who forgot the keys?\nAnswer: The unknown one", False, "Age-0:ans2", 1),
        (f"{prefix}Who forgot the keys?\nAnswer: The pensioner", True, "Age-0:ans0", 1),
        (f"{prefix}Who remembered the keys?\nAnswer: The unknown one", False, "Age-1:ans2", 2),
        # To a question asking who does not fit the stereotype, the guess is the other group.
        (f"{prefix}Who remembered the keys?\nAnswer: The teenager", True, "Age-1:ans1", 2),
        (f"{prefix}Who forgot the keys?\nAnswer: The teenager", False, "Age-2:ans1", 3),
    ]
    assert {i.category for i in found.items} == {"Age"}
    assert found.left_out == {ANTI_STEREOTYPE: 2, WRONG_DISAMBIGUATED: 2}


@pytest.mark.parametrize(
    ("answers", "groups", "target"),
    [
        pytest.param(AGE_ANSWERS, ["old"], 0, id="tag"),
        pytest.param(AGE_ANSWERS, ["Old"], 0, id="tag-any-case"),
        pytest.param(
            [("Icelandic", "Europe"), ("Peruvian", "LatinAmerica"), ("?", "unknown")],
            ["Peruvian"],
            1,
            id="answer-text",
        ),
        pytest.param(
            [("woman", "F-Latino"), ("woman", "F-Asian"), ("?", "unknown")],
            ["Latino"],
            0,
            id="prefix-dropped",
        ),
        pytest.param([("boy", "boy"), ("girl", "girl"), ("?", "unknown")], ["F"], 1, id="gender"),
        pytest.param(
            [("poor", "lowSES"), ("rich", "highSES"), ("?", "unknown")], ["low SES"], 0, id="spaces"
        ),
        pytest.param(
            [("woman", "F-Black"), ("man", "M-Black"), ("?", "unknown")],
            ["Black"],
            None,
            id="both-match",
        ),
        pytest.param(AGE_ANSWERS, ["tall"], None, id="none-match"),
    ],
)
def test_bbq_finds_the_stereotyped_answer_or_says_it_cannot(
    answers: list[tuple[str, str]], groups: list[str], target: int | None
) -> None:
    assert stereotyped_answer(bbq(0, "ambig", "neg", 2, answers, groups)) == target


def test_bbq_leaves_out_the_guesses_when_the_stereotyped_answer_is_unclear(
    tmp_path: Path,
) -> None:
    data = jsonl(tmp_path / "b.jsonl", bbq(0, "ambig", "neg", 2, AGE_ANSWERS, ["tall"]))
    found = read_labelled(data, "bbq")
    assert [(i.biased, i.id) for i in found.items] == [(False, "Age-0:ans2")]
    assert found.left_out == {UNRESOLVED: 2}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        pytest.param({"label": 3}, '"label" must be 0, 1 or 2, got 3', id="label"),
        pytest.param({"context": ""}, '"context" must be a non-empty string', id="context"),
        pytest.param({"context_condition": "vague"}, '"context_condition" must be', id="cond"),
        pytest.param({"question_polarity": "x"}, '"question_polarity" must be', id="polarity"),
        pytest.param({"answer_info": {"ans0": "x"}}, '"answer_info" must give each', id="info"),
        pytest.param({"additional_metadata": {}}, 'stereotyped_groups" must be', id="groups"),
    ],
)
def test_bbq_malformed_lines_are_named(tmp_path: Path, change: dict[str, Any], why: str) -> None:
    good = bbq(0, "ambig", "neg", 2, AGE_ANSWERS, ["old"])
    data = jsonl(tmp_path / "b.jsonl", good, {**good, **change}, "{bad")
    found = read_labelled(data, "bbq")
    assert len(found.items) == 2
    assert [s.location for s in found.skipped] == ["2", "3"]
    assert why in found.skipped[0].why
    assert found.skipped[1].why.startswith("invalid JSON")
