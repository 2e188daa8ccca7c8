"""Every reader of a user's file keeps records whole (issue 16, item 9).

JSON allows U+2028, U+2029 and U+0085 raw inside a string (`json.dumps(..., ensure_ascii=False)`
writes them so), and `str.splitlines()` splits at them; a quoted CSV cell may hold a line
break. Each reader below gets one JSONL file whose strings hold those characters and, where it
reads CSV, one file with a two-line quoted cell; each must return the text unchanged.
"""

from __future__ import annotations

import json

import pytest

from benchmarks.loading import DatasetUnavailable, read_file
from calibration.formats.imports import read_lm_eval_results
from calibration.formats.interchange import GradeFormatError, parse_csv, parse_jsonl, read_grades
from service.regrading.answers import AnswerError, read_answers
from service.regrading.batch_files import read_results

# each breaks `str.splitlines()`, none is a JSON line end
SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1e"]
CELL = "line one\nline two"


def jsonl(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def grade(item: str, attribute: str) -> dict:
    return {"item_id": item, "rater": "sme-1", "rater_kind": "human", "score": 4,
            "note": attribute}


@pytest.mark.parametrize("sep", SEPARATORS, ids=ascii)
def test_grades_jsonl_keeps_separators_inside_strings(tmp_path, sep):
    path = tmp_path / "grades.jsonl"
    path.write_text(jsonl([grade("a", f"x{sep}y"), grade("b", "plain")]), encoding="utf-8")
    rows = read_grades(path)
    assert [r.item_id for r in rows] == ["a", "b"]
    assert rows[0].attributes["note"] == f"x{sep}y"
    # the API's upload path reads the same text
    assert parse_jsonl(path.read_text(encoding="utf-8"))[0].attributes["note"] == f"x{sep}y"


def test_grades_csv_keeps_a_multi_line_cell(tmp_path):
    path = tmp_path / "grades.csv"
    path.write_text(
        'item_id,rater,rater_kind,score,note\r\na,sme-1,human,4,"line one\nline two"\r\n'
        "b,sme-1,human,3,plain\r\n",
        encoding="utf-8",
    )
    rows = read_grades(path)
    assert [(r.item_id, r.attributes["note"]) for r in rows] == [("a", CELL), ("b", "plain")]
    assert parse_csv(path.read_text(encoding="utf-8"))[0].attributes["note"] == CELL


def test_grades_jsonl_still_names_a_broken_line(tmp_path):
    path = tmp_path / "grades.jsonl"
    path.write_text(jsonl([grade("a", "x")]) + "{not json\n", encoding="utf-8")
    with pytest.raises(GradeFormatError, match="row 2: not valid JSON"):
        read_grades(path)


def answer(item: str, response: str) -> dict:
    return {"item_id": item, "response": response, "candidate_model": "qwen2.5-7b"}


@pytest.mark.parametrize("sep", SEPARATORS, ids=ascii)
def test_answers_jsonl_keeps_separators_inside_strings(tmp_path, sep):
    path = tmp_path / "answers.jsonl"
    path.write_text(jsonl([answer("a", f"first{sep}second"), answer("b", "ok")]), "utf-8")
    answers = read_answers(path)
    assert [(a.item_id, a.response) for a in answers] == [("a", f"first{sep}second"), ("b", "ok")]


def test_answers_csv_keeps_a_multi_line_cell(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text(
        'item_id,response,candidate_model\na,"line one\nline two",qwen2.5-7b\nb,ok,qwen2.5-7b\n',
        encoding="utf-8",
    )
    assert [(a.item_id, a.response) for a in read_answers(path)] == [("a", CELL), ("b", "ok")]


def test_an_answers_line_that_is_not_an_object_is_named_not_a_traceback(tmp_path):
    path = tmp_path / "answers.jsonl"
    good = {"item_id": "a", "response": "ok", "candidate_model": "qwen2.5-7b"}
    path.write_text(jsonl([good]) + '["not", "an", "answer"]\n', encoding="utf-8")
    with pytest.raises(AnswerError) as caught:
        read_answers(path)
    assert caught.value.problems == ["row 2: an answer row must be a JSON object"]


def test_an_answers_csv_row_with_more_cells_than_its_header_is_refused(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("item_id,response,candidate_model\na,ok,qwen2.5-7b,lost\n", encoding="utf-8")
    with pytest.raises(AnswerError) as caught:
        read_answers(path)
    assert caught.value.problems == [
        "row 2: 1 cell(s) more than the header's columns; they would be lost"
    ]


@pytest.mark.parametrize("sep", SEPARATORS, ids=ascii)
def test_benchmark_jsonl_keeps_separators_inside_strings(tmp_path, sep):
    path = tmp_path / "records.jsonl"
    path.write_text(jsonl([{"id": "1", "question": f"q{sep}r"}, {"id": "2", "question": "s"}]),
                    encoding="utf-8")
    assert read_file(path) == [{"id": "1", "question": f"q{sep}r"}, {"id": "2", "question": "s"}]


def test_benchmark_csv_keeps_a_multi_line_cell(tmp_path):
    path = tmp_path / "records.csv"
    path.write_text('id,question\n1,"line one\nline two"\n2,s\n', encoding="utf-8")
    assert read_file(path) == [{"id": "1", "question": CELL}, {"id": "2", "question": "s"}]


def test_benchmark_jsonl_names_a_broken_line(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text('{"id": "1"}\n\n{"id": \n', encoding="utf-8")
    with pytest.raises(DatasetUnavailable, match="row 3: not valid JSON"):
        read_file(path)


@pytest.mark.parametrize("sep", SEPARATORS, ids=ascii)
def test_lm_eval_samples_keep_separators_inside_strings(tmp_path, sep):
    folder = tmp_path / "out" / "Qwen__Qwen2.5-7B-Instruct"
    folder.mkdir(parents=True)
    samples = [
        {"doc_id": n, "doc": {"question": f"q{sep}{n}"}, "filter": "none", "metrics": ["acc"],
         "acc": float(n)}
        for n in (0, 1)
    ]
    (folder / "samples_arabic_mmlu_2026-11-20T09-15-02.118034.jsonl").write_text(
        jsonl(samples), encoding="utf-8"
    )
    imported = read_lm_eval_results(tmp_path / "out")
    assert sorted((r.item_id, r.score) for r in imported.rows) == [
        ("arabic_mmlu/0", 0.0), ("arabic_mmlu/1", 1.0)
    ]


@pytest.mark.parametrize("sep", SEPARATORS, ids=ascii)
def test_batch_results_keep_separators_inside_strings(tmp_path, sep):
    path = tmp_path / "results.jsonl"
    lines = [{"custom_id": "j|1", "response": {"body": {"text": f"a{sep}b"}}},
             {"custom_id": "j|2", "response": {"body": {"text": "c"}}}]
    path.write_text(jsonl(lines), encoding="utf-8")
    first = len(jsonl(lines[:1]).encode())
    assert list(read_results(path)) == [(1, 0, lines[0]), (2, first, lines[1])]
