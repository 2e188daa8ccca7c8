"""The MIDAS downstream tasks end to end (issue 30 part 1): `qadi bench run --suite
midas-downstream` generates sentences and translations and grades them with the Figure
21/22 judges; the MIDAS judges answer through POST /judge. Every model call goes to the
test double."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.integration.test_bench_generative import files, summaries  # noqa: F401  (fixture)
from tests.integration.test_service_api import Service, service  # noqa: F401  (fixture)

RECORDS = [
    {"ID": "609-1", "Idiom": ["거름발 타다"], "Meaning": "어린아이가 처음으로 걸음걸이를 익히다.",
     "Sentence": ["우리 막내가 거름발을 타기 시작했다."], "language": "KO"},
    {"ID": "734", "Idiom": ["Allah'tan"], "Meaning": "iyi ki", "Sentence": ["Allah'tan sessizdi."],
     "language": "TR", "Generated_Meaning": "neyse ki"},
    {"ID": "2542", "Idiom": ["every dog has his day"], "Meaning": "Everyone succeeds sometime.",
     "Sentence": ["Well, every dog has his day."], "language": "EN"},
]  # fmt: skip


def test_the_downstream_suite_generates_and_grades_with_the_meaning_judges(
    migrated_db,
    llm_server,
    files,  # noqa: F811
    tmp_path,
):
    models, judges = files
    data = tmp_path / "data"
    data.mkdir()
    (data / "midas.jsonl").write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in RECORDS), encoding="utf-8"
    )
    llm_server.rules(
        {"match": "Score (only number):", "reply": {"content": '{"rating": 3}'}},
        {"match": "Evaluation (score only):", "reply": {"content": '{"rating": 2}'}},
        {"match": "translate the following", "reply": {"content": "Luckily, it was quiet."}},
        {"match": "meaning: ", "reply": {"content": "뜻을 알고 쓴 예문."}},
        {"match": "idiom:", "reply": {"content": "예문 하나."}},
    )
    done = run_cli(
        "bench", "run", "--suite", "midas-downstream", "--model", "qwen",
        "--config", str(models), "--judges-config", str(judges), "--judges", "gpt-judge",
        "--data-dir", str(data),
        env={"QADI_DATABASE_URL": migrated_db},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    summary = summaries(migrated_db, done.stdout)["qwen"]
    for task, score, graded in (
        ("midas-sentence", 3.0, 2),
        ("midas-sentence-no-meaning", 3.0, 2),
        ("midas-translation", 2.0, 2),
        ("midas-translation-generated-meaning", 2.0, 1),
    ):
        cells = summary[task]
        assert (cells["graded"], cells["score"]["mean"]) == (graded, score), task
        assert cells["selected"] == 2  # the English idiom is not a case-study language
    assert summary["midas-translation-generated-meaning"]["missing_records"] == 1
    assert set(summary["midas-sentence"]["breakdowns"]["language"]) == {"KO", "TR"}
    judged = [r for r in llm_server.requests() if "response_format" in r]
    sentence = [r["messages"][0]["content"] for r in judged if "Example sentence" in str(r)]
    assert len(sentence) == 4
    # both generation settings are judged with the meaning shown (the paper's Figure 6)
    assert all("Figurative meaning: <reference-" in text for text in sentence)
    translation = [r["messages"][0]["content"] for r in judged if "English translation" in str(r)]
    assert any("Turkish sentence: <prompt-" in text for text in translation)
    generation = [r for r in llm_server.requests() if "response_format" not in r]
    assert sum("meaning: 어린아이가" in r["messages"][0]["content"] for r in generation) == 1


def test_a_midas_judge_through_post_judge(service, llm_server):  # noqa: F811
    llm_server.script({"content": '{"rating": 2}'})
    body = {
        "kind": "explanation",
        "prompt": "Allah'tan sessizdi.",
        "response": "Thank God, he was quiet.",
        "reference": "iyi ki",
        "candidate_model": "Qwen/Qwen2.5-32B-Instruct",
        "rubric_id": "midas-translation",
        "metadata": {"idiom": "Allah'tan", "language": "TR", "item_id": "midas-734"},
    }
    answer = service.post("/judge", json=body)
    assert answer.status_code == 200, answer.text
    [result] = answer.json()["results"]
    assert (result["score"], result["template"]) == (2.0, "midas-translation@1")
    sent = llm_server.requests()[-1]
    assert sent["response_format"]["json_schema"]["schema"]["properties"]["rating"]["enum"] == [
        1,
        2,
        3,
    ]
    assert "Idiom meaning: <reference-" in sent["messages"][0]["content"]
    missing = service.post("/judge", json={**body, "metadata": {"idiom": "Allah'tan"}})
    assert missing.status_code == 422
    [problem] = missing.json()["detail"]
    assert problem["loc"] == ["body", "metadata", "language"]
