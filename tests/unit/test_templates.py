"""Issue 26 item 2: neutral templates that render the user's own rubric, user templates
(inline and from files, versioned and hashed), refusals instead of silently dropped fields,
the Arabic SME prompt only where a rubric declares it, shared parts of a prompt first."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil

import pytest
import yaml

from judges import GradeRequest, RequestError, TemplateError, build_call, load_template
from judges.config import JudgeConfigError, load_config
from judges.fit import template_of
from judges.templates import BUNDLED, TemplateRegistry
from rubrics import RubricError, library_rubric, parse_rubric
from tests.conftest import ROOT

ARABIC_SME = "SME) in Arabic Sociolinguistics and Dialects"
FENCE = re.compile(r"<([a-z_]+)-([0-9a-f]{16})>\n(.*?)\n</\1-\2>", re.DOTALL)

MY_SCALE = {
    "kind": "scale",
    "id": "support-reply",
    "title": "Customer support reply",
    "scale": {"min": 1, "max": 5},
    "dimensions": [
        {"id": "helpfulness", "anchors": {1: "Does not address the problem", 5: "Solves it"}},
        {"id": "tone", "anchors": {1: "Rude", 3: "Neutral", 5: "Warm and professional"}},
    ],
}
MY_CRITERIA = {
    "kind": "penalty_weighted",
    "id": "refund-policy",
    "criteria": [
        {"id": "window", "kind": "positive", "weight": 2, "text": "States the 30-day window"},
        {"id": "promise", "kind": "negative", "weight": 1, "text": "Promises a refund anyway"},
    ],
}


def request(rubric, templates=BUNDLED, **fields) -> GradeRequest:
    defaults = {"prompt": "Can I return my order?", "response": "Yes, within 30 days."}
    return GradeRequest(rubric=rubric, candidate_model="qwen-2.5", **{**defaults, **fields})


def call(req: GradeRequest, templates=BUNDLED):
    return build_call(template_of(req.rubric, templates, req.template), req)


def unfenced(text: str) -> str:
    """The text with every fenced section replaced by its content."""
    return FENCE.sub(lambda m: m.group(3), text)


# --- neutral defaults -------------------------------------------------------------------


def test_a_scale_rubric_without_template_gets_the_neutral_one_with_its_own_anchors():
    rubric = parse_rubric(MY_SCALE)
    assert rubric.template == "neutral-scale@1"
    sent = call(request(rubric, reference="Returns within 30 days."))
    system, user = (m["content"] for m in sent.messages)
    assert ARABIC_SME not in system and "idiom" not in (system + user).lower()
    text = unfenced(user)
    for anchor in ("Does not address the problem", "Solves it", "Rude", "Warm and professional"):
        assert anchor in text
    assert "Customer support reply" in text and "Scale: 1 (lowest) to 5 (highest)" in text
    assert "QUESTION:\nCan I return my order?" in text
    assert "REFERENCE:\nReturns within 30 days." in text
    assert "ANSWER:\nYes, within 30 days." in text
    assert '{"helpfulness_score": <whole number from 1 to 5>, "tone_score"' in text
    schema = sent.response_format["json_schema"]["schema"]
    assert schema["required"] == ["helpfulness_score", "tone_score"]
    assert schema["properties"]["tone_score"] == {"type": "integer", "minimum": 1, "maximum": 5}


def test_any_min_max_scale_is_rendered_as_declared():
    rubric = parse_rubric({**MY_SCALE, "scale": {"min": 0, "max": 10}, "dimensions": [{"id": "q"}]})
    text = unfenced(call(request(rubric)).messages[1]["content"])
    assert "Scale: 0 (lowest) to 10 (highest)" in text
    assert "q: no anchors; use the whole scale" in text
    assert '{"q_score": <whole number from 0 to 10>}' in text


def test_a_criteria_rubric_without_template_gets_the_neutral_one():
    rubric = parse_rubric(MY_CRITERIA)
    assert rubric.template == "neutral-criteria@1"
    system, user = (m["content"] for m in call(request(rubric)).messages)
    assert ARABIC_SME not in system
    text = unfenced(user)
    assert "- [positive] window: States the 30-day window" in text
    assert "- [negative] promise: Promises a refund anyway" in text
    assert "QUESTION:\nCan I return my order?" in text and "ANSWER:\nYes, within 30 days." in text
    assert "REFERENCE" not in text  # none given: no empty section either


def test_the_arabic_sme_prompt_goes_only_to_rubrics_that_declare_it():
    from benchmarks import sme

    declared = [
        library_rubric("iraqi-linguistic-shaku-maku"),
        library_rubric("egyptian-cultural-sham-el-nessim"),
        parse_rubric({**MY_CRITERIA, "template": "rubric-criteria@1"}),
    ]
    with open(sme.BUNDLED, encoding="utf-8") as lines:
        record = json.loads(next(lines))
    [item] = sme.build(record, record["item_id"], 0)
    declared.append(item.meta["rubric"])  # the SME suite's records name no template
    for rubric in declared:
        assert ARABIC_SME in call(request(rubric)).messages[0]["content"], rubric.id
    assert ARABIC_SME not in call(request(parse_rubric(MY_CRITERIA))).messages[0]["content"]


# --- shared parts first (prefix caching) -------------------------------------------------


@pytest.mark.parametrize(
    "rubric",
    [
        parse_rubric(MY_SCALE),
        parse_rubric(MY_CRITERIA),
        library_rubric("iraqi-linguistic-shaku-maku"),
    ],
)
def test_requests_with_one_rubric_share_the_prompt_up_to_the_item(rubric):
    first = call(request(rubric, prompt="q1", response="first answer")).messages
    second = call(request(rubric, prompt="q2", response="another answer", reference="r")).messages
    assert first[0] == second[0]  # the system prompt
    user1, user2 = first[1]["content"], second[1]["content"]
    shared = len(os.path.commonprefix([user1, user2]))
    block = "criteria" if rubric.kind == "penalty_weighted" else "anchors"
    closing = re.search(rf"</{block}-[0-9a-f]{{16}}>", user1)
    assert closing is not None and closing.end() <= shared  # the whole rubric is shared
    for item in ("q1", "first answer"):
        assert user1.index(item) > closing.end()



def test_the_service_kinayat_judge_shares_its_scale_and_puts_the_explanations_last():
    rubric = library_rubric("kinayat-explanation")
    assert rubric.template == "kinayat-explanation@3"
    first = call(GradeRequest(rubric=rubric, reference="gold one", response="answer one",
                              candidate_model="m")).messages[-1]["content"]
    second = call(GradeRequest(rubric=rubric, reference="gold two", response="answer two",
                               candidate_model="m")).messages[-1]["content"]
    shared = len(os.path.commonprefix([first, second]))
    closing = "Only output a numerical rating and nothing else.\n\nGold Explanation: <"
    assert "- 1 = Very Poor: Completely incorrect" in first[:shared]
    assert first.index(closing) + len(closing) <= shared < first.index("gold one")
    # the same words as version 2 (Figure 12), in another order
    v2 = load_template("kinayat-explanation@2").user
    v3 = load_template("kinayat-explanation@3").user
    assert sorted(v2.splitlines()) == sorted(v3.splitlines())

# --- published templates stay verbatim -----------------------------------------------------


def test_bundled_templates_written_before_jinja2_keep_their_hashes():
    # sha256 of each template's canonical JSON as computed on main before this change
    assert {ref: load_template(ref).hash for ref in LEGACY_HASHES} == LEGACY_HASHES


LEGACY_HASHES = {
    "kinayat-explanation@1": "sha256:3aaa40035778906472200a0a59ad9d18c94210baf544a6c3e73792a6a6648f00",
    "kinayat-explanation@2": "sha256:23e80bbe766f9a8a3ea7c9590be12314e48fea289a59a4f2772877fa11ecfc9b",
    "fann-or-flop-explanation@1": "sha256:2030001c5d628ee4fee8bcf4fbe4a2573401ebe03429c79546282a72079fa646",
    "rubric-criteria@1": "sha256:515c4681837d346b2dc177d33e159c03fbadb674de4604028ea0dd0f1551f45a",
}


# --- refusals instead of dropped fields ----------------------------------------------------


def test_a_published_scale_template_refuses_a_rubric_with_other_anchors():
    mine = parse_rubric({**MY_SCALE, "dimensions": MY_SCALE["dimensions"][:1]})
    for template in ("kinayat-explanation@2", "midas-sentence@1"):
        with pytest.raises(TemplateError, match="^anchors: .* rubric 'support-reply' has others"):
            template_of(mine.model_copy(update={"template": template}), BUNDLED)


def test_a_one_rating_template_refuses_a_rubric_with_several_dimensions():
    rubric = parse_rubric({**MY_SCALE, "template": "kinayat-explanation@2"})
    with pytest.raises(TemplateError, match="^dimensions: .* 2 dimensions"):
        template_of(rubric, BUNDLED)


def test_a_template_of_the_other_kind_is_refused():
    rubric = parse_rubric({**MY_CRITERIA, "template": "neutral-scale@1"})
    with pytest.raises(TemplateError, match="grades scale rubrics; 'refund-policy' is penalty"):
        template_of(rubric, BUNDLED)


USER_TEMPLATE = {
    "id": "support-judge",
    "version": 1,
    "output": "scores_json",
    "system": "You grade customer support replies.",
    "user": "{{ anchors }}\nReply with {{ reply_format }}\n"
    "Customer asked: {{ prompt }}\nAgent replied: {{ answer }}",
}


def test_a_user_template_that_never_shows_the_anchors_is_refused():
    data = {**USER_TEMPLATE, "user": "Customer asked: {{ prompt }}\nAgent replied: {{ answer }}"}
    rubric = parse_rubric({**MY_SCALE, "template": data})
    with pytest.raises(TemplateError, match=r"^anchors: support-judge@1 never shows"):
        template_of(rubric, TemplateRegistry())


def test_a_user_template_that_never_shows_the_answer_is_refused():
    data = {**USER_TEMPLATE, "user": "{{ anchors }} {{ prompt }}"}
    with pytest.raises(TemplateError, match="^answer: support-judge@1 never shows the answer"):
        template_of(parse_rubric({**MY_SCALE, "template": data}), TemplateRegistry())


def test_a_template_that_needs_a_reference_the_request_lacks_is_refused():
    data = {**USER_TEMPLATE, "user": USER_TEMPLATE["user"] + "\nPolicy: {{ reference }}"}
    rubric = parse_rubric({**MY_SCALE, "template": data})
    with pytest.raises(RequestError, match="^reference: template support-judge@1 needs it") as e:
        call(request(rubric), TemplateRegistry())
    assert e.value.field == "reference"
    assert call(request(rubric, reference="30 days"), TemplateRegistry()).messages


def test_a_question_or_reference_the_template_does_not_show_is_refused():
    data = {**USER_TEMPLATE, "user": "{{ anchors }} {{ reply_format }} {{ answer }}"}
    rubric = parse_rubric({**MY_SCALE, "template": data})
    with pytest.raises(RequestError, match="^prompt: template support-judge@1 does not show it"):
        call(request(rubric), TemplateRegistry())
    with pytest.raises(RequestError, match="^reference: template support-judge@1 does not show"):
        call(request(rubric, prompt="", reference="r"), TemplateRegistry())
    declared = parse_rubric({**MY_SCALE, "template": {**data, "ignores": ["prompt"]}})
    assert call(request(declared), TemplateRegistry()).messages  # left out on purpose


# --- user templates: inline, from files, versioned and hashed ------------------------------


def test_an_inline_template_renders_the_users_text_and_is_hashed_by_content():
    rubric = parse_rubric({**MY_SCALE, "template": USER_TEMPLATE})
    registry = TemplateRegistry()
    template = template_of(rubric, registry)
    assert template.ref == "support-judge@1"
    # by hand: sha256 of the canonical JSON of the template's fields (later fields at their
    # defaults are left out, so they cannot change an older template's hash)
    canonical = {
        **USER_TEMPLATE,
        "syntax": "jinja2",
        "user_builder": None,
        "fenced": [],
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert template.hash == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    system, user = (m["content"] for m in call(request(rubric), registry).messages)
    assert system == "You grade customer support replies."
    assert "Customer asked: <prompt-" in user and "Warm and professional" in user
    changed = template_of(
        parse_rubric({**MY_SCALE, "template": {**USER_TEMPLATE, "version": 2, "system": "x"}}),
        registry,
    )
    assert changed.ref == "support-judge@2" and changed.hash != template.hash


def test_inline_templates_are_kept_for_the_most_recently_used_only():
    """Every request may send a new inline text: the parsed ones are an LRU cache, so a
    long-lived service does not keep them all (issue 26 audit)."""
    registry = TemplateRegistry()
    kept = 256  # TemplateRegistry.INLINE_KEPT
    texts = [{**USER_TEMPLATE, "system": f"You grade support reply {i}."} for i in range(kept + 2)]
    first, second = registry.resolve(texts[0]), registry.resolve(texts[1])
    for text in texts[2:kept]:
        registry.resolve(text)
    assert registry.resolve(texts[0]) is first  # used again: now the most recent
    registry.resolve(texts[kept])  # one over the bound: the least recently used goes
    registry.resolve(texts[kept + 1])
    assert registry.resolve(texts[0]) is first
    again = registry.resolve(texts[1])
    assert again is not second and again.hash == second.hash  # parsed anew, the same template


def test_a_request_can_name_another_template_for_the_same_rubric():
    rubric = parse_rubric(MY_SCALE)
    req = request(rubric, template=USER_TEMPLATE)
    assert template_of(rubric, TemplateRegistry(), req.template).ref == "support-judge@1"
    assert call(req, TemplateRegistry()).messages[0]["content"].startswith("You grade customer")


def test_templates_from_files_named_in_the_judges_config(tmp_path):
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "support.yaml").write_text(yaml.safe_dump(USER_TEMPLATE))
    config = {
        "model_list": [{"model_name": "j", "litellm_params": {"model": "openai/gpt-4.1"}}],
        "qadi": {"templates": ["prompts"]},  # relative to the config file
    }
    (tmp_path / "judges.yaml").write_text(yaml.safe_dump(config))
    registry = load_config(tmp_path / "judges.yaml").templates
    rubric = parse_rubric({**MY_SCALE, "template": "support-judge@1"})
    assert template_of(rubric, registry).hash == registry.get("support-judge@1").hash
    with pytest.raises(TemplateError, match="^rubric.template: no template 'support-judge@1'"):
        template_of(rubric, BUNDLED)  # not known where the config does not name it
    broken = {**USER_TEMPLATE, "id": "b", "user": "{{ anwser }}"}
    (folder / "broken.yaml").write_text(yaml.safe_dump(broken))
    with pytest.raises(JudgeConfigError, match=r"qadi.templates: .*broken.yaml: user: unknown"):
        load_config(tmp_path / "judges.yaml")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": "neutral-scale"}, "neutral-scale@1 is a bundled template"),
        ({"output": "first_integer"}, "first_integer is a paper's parsing rule"),
        ({"syntax": "braces"}, "syntax: your templates are jinja2"),
        ({"fenced": ["answer"]}, "a jinja2 template fences every value"),
        ({"user": "{{ answer[3:] }} {{ anchors }}"}, "may not use slices"),
        ({"user": "{% include 'x' %}"}, "may not use 'include'"),
        ({"user": "{% for x in anchors %}{{ x }}{% endfor %}"}, "may not use 'for' loops"),
        ({"user": "{{ answer|replace('<', '') }}"}, "filter 'replace' is not allowed"),
        ({"user": "{{ answer.__class__ }} {{ anchors }}"}, "may only read attributes of"),
        ({"user": "{{ anwser }} {{ anchors }}"}, "unknown name 'anwser'"),
        ({"user": "{{ answer }"}, "user: line 1"),
    ],
)
def test_user_templates_are_checked_when_read(change, message):
    with pytest.raises(TemplateError, match=re.escape(message)):
        TemplateRegistry().resolve({**USER_TEMPLATE, **change})


def test_a_template_cannot_take_a_fenced_value_apart_at_render_time():
    data = {**USER_TEMPLATE, "user": "{{ anchors }} {{ reply_format }} {{ answer * 2 }}"}
    with pytest.raises(TemplateError, match="cannot repeat text"):
        call(request(parse_rubric({**MY_SCALE, "template": data}), prompt=""), TemplateRegistry())


@pytest.mark.parametrize("ref", ["../../../etc/passwd@1", "a/b@1", "nope", "x@1.0", ".hidden@1"])
def test_a_template_reference_is_a_name_never_a_path(ref):
    with pytest.raises(RubricError, match="is not a template reference"):
        parse_rubric({**MY_SCALE, "template": ref})
    with pytest.raises(TemplateError, match="is not a template reference"):
        BUNDLED.resolve(ref)


def test_an_unknown_template_is_named_with_the_known_ones():
    with pytest.raises(TemplateError, match=r"^rubric.template: no template 'nope@1' \(known: "):
        template_of(parse_rubric({**MY_SCALE, "template": "nope@1"}), BUNDLED)


def test_the_example_judges_file_loads_wherever_it_is_copied(tmp_path):
    """The README says to copy examples/judges.yaml: the copy must load where it lands
    (a `templates` folder named in it would be read beside the copy, where none is)."""
    copy = tmp_path / "judges.yaml"
    copy.write_text((ROOT / "examples/judges.yaml").read_text())
    assert load_config(copy).names == ["gpt-judge", "claude-judge", "local-qwen-judge"]


def test_the_example_template_and_rubric_of_the_readme_work_together(tmp_path):
    """With its `templates` line uncommented and examples/templates beside it, as the
    file's comment says."""
    example = (ROOT / "examples/judges.yaml").read_text()
    assert "  # templates: [templates]\n" in example
    (tmp_path / "judges.yaml").write_text(example.replace("# templates:", "templates:"))
    shutil.copytree(ROOT / "examples/templates", tmp_path / "templates")
    config = load_config(tmp_path / "judges.yaml")
    rubric = parse_rubric(
        yaml.safe_load((ROOT / "examples/rubrics/support-reply.yaml").read_text())
    )
    req = request(rubric, reference="Refunds within 30 days.")
    text = unfenced(call(req, config.templates).messages[1]["content"])
    assert "Company policy that applies:\nRefunds within 30 days." in text
    assert "5: Solves the problem or gives the exact next step" in text
    assert "The customer wrote:\nCan I return my order?" in text
