"""Writes the bundled demo set (answers.jsonl, grades.csv, sme_grades.csv beside this file):
GENERATED data.

No public package on the registry ships human grades of judge-graded answers (SummEval,
MT-Bench and the like are downloaded from a hub at run time), so the demo's are generated,
and labelled so in the files, the README and the rater names (`generated-expert-*`).

- 50 Arabic proverbs, each with its literal gloss and an English explanation (`reference`),
  written for qadi; three candidate models "answer" each one with an explanation assembled
  from that material at a quality the model's profile draws (faithful, close, partial,
  literal only, or another proverb's meaning): 150 answers under `kinayat-explanation`.
- Their true rating is `judges.standins.rating_for(answer, reference)` (the agreement of the
  answer with the reference on 1-5). Three generated experts grade answers: the true
  rating plus the expert's own bias and N(0, 0.45) noise, rounded and kept on the scale.
  They grade a minority: a stratified random sample of 20 of each candidate model's 50
  answers (60 items, 180 grades), each row carrying its inclusion probability (0.4) and its
  stratum, as a `qadi sme queue` round would write them; the stand-ins grade all 150, so the
  corrected scores (PPI++) lean on the judges for the other 90.
- The stand-in judges start from the same true rating (judges/standins.py), so the trust map
  of the demo is known: `stand-in-good` agrees with the experts better than they agree with
  each other (it may replace them), `stand-in-noisy` and `stand-in-lenient` do not.
- The six Arabic SME answers and their two SMEs' grades per dialect (0-100 rubrics,
  sme_grades.csv) are hand-written examples, kept as they are (`SME_ANSWERS`, `SME_GRADES`).

Run `python -m service.sample.generate` to rewrite the files; tests/unit/test_demo_sample.py
checks that the committed files are exactly what this writes.
"""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

from judges.standins import rating_for

HERE = Path(__file__).resolve().parent
SEED = 26
RUBRIC = "kinayat-explanation"

# (proverb, literal gloss, meaning, variety)
PROVERBS: tuple[tuple[str, str, str, str], ...] = (
    ("الصبر مفتاح الفرج", "Patience is the key to relief",
     "waiting calmly through hardship is what brings it to an end", "msa"),
    ("يد واحدة لا تصفق", "One hand does not clap",
     "nothing great is achieved alone; people must cooperate", "msa"),
    ("اللي فات مات", "What has passed has died",
     "let go of past quarrels and troubles and move on", "egyptian"),
    ("القرد في عين أمه غزال", "In his mother's eyes the monkey is a gazelle",
     "love makes people blind to the faults of those dear to them", "egyptian"),
    ("العين ما تعلاش على الحاجب", "The eye does not rise above the eyebrow",
     "one should respect those older or higher in rank", "egyptian"),
    ("ابن الوز عوام", "The son of the goose is a swimmer",
     "children take after their parents and inherit their skills", "egyptian"),
    ("على قد لحافك مد رجليك", "Stretch your legs as far as your blanket reaches",
     "live within your means and do not spend more than you have", "levantine"),
    ("الباب اللي يجيلك منه الريح سده واستريح", "Close the door the wind comes from and rest",
     "avoid the source of trouble instead of fighting it", "egyptian"),
    ("اللي بيته من زجاج ما يحدفش الناس بالطوب",
     "Whoever lives in a glass house should not throw stones at people",
     "do not criticise others for faults you have yourself", "egyptian"),
    ("الطيور على أشكالها تقع", "Birds land with their own kind",
     "people keep company with those who resemble them", "msa"),
    ("من حفر حفرة لأخيه وقع فيها", "Whoever digs a pit for his brother falls into it",
     "harm planned against others comes back on the schemer", "msa"),
    ("رب ضارة نافعة", "Perhaps a harmful thing is useful",
     "a misfortune can turn out to be a blessing", "msa"),
    ("الجار قبل الدار", "The neighbour before the house",
     "choose good neighbours before you choose a home", "msa"),
    ("زي الأطرش في الزفة", "Like the deaf man in the wedding procession",
     "someone who is present but has no idea what is going on", "egyptian"),
    ("إذا كان الكلام من فضة فالسكوت من ذهب", "If speech is silver, silence is gold",
     "it is often wiser to keep quiet than to speak", "msa"),
    ("كل إناء بما فيه ينضح", "Every vessel seeps what it holds",
     "a person's words and deeds reveal their true nature", "msa"),
    ("عصفور في اليد خير من عشرة على الشجرة", "A bird in the hand is better than ten on the tree",
     "a small sure gain is worth more than a large uncertain one", "msa"),
    ("الوقت كالسيف إن لم تقطعه قطعك", "Time is a sword; if you do not cut it, it cuts you",
     "use your time well or it will be wasted and work against you", "msa"),
    ("درهم وقاية خير من قنطار علاج", "A dirham of prevention is better than a qintar of cure",
     "preventing a problem is far easier than repairing it later", "msa"),
    ("لكل جواد كبوة", "Every steed stumbles",
     "even the most skilled person sometimes makes a mistake", "msa"),
    ("القرش الأبيض ينفع في اليوم الأسود", "The white piastre helps on the black day",
     "save money in good times to be ready for hard times", "egyptian"),
    ("اللي يحضر العفريت يصرفه", "Whoever summons the demon must send it away",
     "whoever starts a problem is responsible for ending it", "egyptian"),
    ("جحا أولى بلحم ثوره", "Juha has the first right to the meat of his ox",
     "one's own family has the first claim on what one owns", "egyptian"),
    ("ما كل ما يتمنى المرء يدركه", "Not everything a man wishes for does he attain",
     "people cannot always get what they want, so accept it", "msa"),
    ("خير الكلام ما قل ودل", "The best speech is brief and telling",
     "say what you mean clearly in few words", "msa"),
    ("الغايب حجته معاه", "The absent one has his excuse with him",
     "do not blame someone who is not here to explain himself", "egyptian"),
    ("امشي عدل يحتار عدوك فيك", "Walk straight and your enemy will be puzzled by you",
     "behave honestly and your enemies find nothing to use against you", "egyptian"),
    ("دخول الحمام مش زي خروجه", "Entering the bathhouse is not like leaving it",
     "getting into a situation is much easier than getting out of it", "egyptian"),
    ("الحلو ما يكملش", "The sweet thing is never complete",
     "nothing good is ever perfect; every joy has a flaw", "egyptian"),
    ("اللي في القدر تطلعه المغرفة", "What is in the pot comes up in the ladle",
     "what is hidden inside eventually shows itself", "egyptian"),
    ("ضربتين في الراس توجع", "Two blows to the head hurt",
     "misfortunes that come one after another are hard to bear", "egyptian"),
    ("ما حك جلدك مثل ظفرك", "Nothing scratches your skin like your own nail",
     "rely on yourself rather than waiting for others to help", "msa"),
    ("الكتاب يبان من عنوانه", "A book shows from its title",
     "the first signs of something reveal what it really is", "egyptian"),
    ("الشمس ما تتغطاش بغربال", "The sun cannot be covered with a sieve",
     "an obvious truth cannot be hidden for long", "egyptian"),
    ("اتق شر من أحسنت إليه", "Beware the evil of the one you have been kind to",
     "ingratitude often comes from those you have helped", "msa"),
    ("إن غاب القط العب يا فار", "When the cat is away, play, mouse",
     "people misbehave when no one with authority is watching", "egyptian"),
    ("ما طار طير وارتفع إلا كما طار وقع", "No bird flew high but fell as it had flown",
     "whoever rises high will one day come down again", "msa"),
    ("كل تأخيرة فيها خيرة", "Every delay holds some good",
     "a delay may turn out to be for the best", "egyptian"),
    ("يا ما تحت السواهي دواهي", "How many calamities lie under the quiet ones",
     "quiet people may hide surprising plans and tricks", "egyptian"),
    ("بلادي وإن جارت علي عزيزة", "My country is dear to me even when it wrongs me",
     "loyalty to the homeland survives hardship and injustice", "msa"),
    ("الحركة بركة", "Movement is a blessing",
     "activity and effort bring good fortune", "egyptian"),
    ("من جد وجد", "Whoever strives finds",
     "hard work leads to success", "msa"),
    ("اللي إيده في المية مش زي اللي إيده في النار",
     "The one whose hand is in water is not like the one whose hand is in fire",
     "those who are comfortable cannot understand those who suffer", "egyptian"),
    ("مش كل مرة تسلم الجرة", "The jar does not come back whole every time",
     "a risk that worked once may fail the next time", "egyptian"),
    ("من زرع حصد", "Whoever sows reaps",
     "people receive the results of their own efforts", "msa"),
    ("الدم عمره ما يبقى مية", "Blood never turns into water",
     "family ties remain strong whatever happens", "egyptian"),
    ("اللسان ما فيه عظم", "The tongue has no bone",
     "it is easy to say things and to break promises", "levantine"),
    ("يا مستعجل عطلك الله", "You who are in a hurry, God will delay you",
     "haste leads to delay; do things calmly", "levantine"),
    ("الطمع ضر ما نفع", "Greed harmed and did not help",
     "wanting too much leads to losing what you have", "levantine"),
    ("اللي ما يشوف من الغربال أعمى", "Whoever cannot see through a sieve is blind",
     "someone who misses what is obvious refuses to see it", "levantine"),
)

# Candidate models and how often each writes each kind of answer (faithful, close, partial,
# literal only, wrong proverb): a strong, a middling and a weak model.
PROFILES: dict[str, tuple[int, int, int, int, int]] = {
    "gpt-4o": (45, 30, 15, 10, 0),
    "Qwen/Qwen2.5-7B-Instruct": (25, 25, 25, 15, 10),
    "meta-llama/Llama-3.1-8B-Instruct": (10, 15, 25, 25, 25),
}
KINDS = ("faithful", "close", "partial", "literal", "wrong")
EXPERTS = {"generated-expert-1": 0.0, "generated-expert-2": 0.2, "generated-expert-3": -0.2}
EXPERT_NOISE = 0.45
# The experts grade a stratified random sample: this many of each candidate model's 50 answers
# (a minority, as a team affords), so the judges' grades of the rest carry the estimate (PPI).
LABELLED_PER_MODEL = 20

SME_ANSWERS: tuple[dict[str, str], ...] = (
    {"item_id": "egy-001", "rubric_id": "egyptian-cultural-sham-el-nessim", "prompt": "إيه هو شم النسيم وبيحتفلوا بيه إزاي في مصر؟", "response": "شم النسيم عيد الربيع، بيجي يوم الاتنين بعد عيد القيامة، وبيحتفل بيه المصريين كلهم مسلمين ومسيحيين. الناس بتاكل فسيخ ورنجة وبيض ملون وبتخرج الجناين.", "candidate_model": "gpt-4o", "dialect": "egyptian", "category": "cultural"},  # noqa: E501
    {"item_id": "egy-002", "rubric_id": "egyptian-cultural-sham-el-nessim", "prompt": "إيه هو شم النسيم وبيحتفلوا بيه إزاي في مصر؟", "response": "شم النسيم عيد إسلامي بيجي بعد رمضان، والناس بتاكل كحك.", "candidate_model": "Qwen/Qwen2.5-7B-Instruct", "dialect": "egyptian", "category": "cultural"},  # noqa: E501
    {"item_id": "egy-003", "rubric_id": "egyptian-cultural-sham-el-nessim", "prompt": "إيه هو شم النسيم وبيحتفلوا بيه إزاي في مصر؟", "response": "Sham El-Nessim is a spring holiday on the Monday after Coptic Easter; families go to parks and eat fesikh and coloured eggs.", "candidate_model": "claude-3-5-sonnet", "dialect": "egyptian", "category": "cultural"},  # noqa: E501
    {"item_id": "irq-001", "rubric_id": "iraqi-linguistic-shaku-maku", "prompt": "شنو معنى شكو وماكو باللهجة العراقية؟", "response": "شكو يعني شنو اكو، يعني شنو الأخبار، وماكو يعني ما في شي. نكول: شكو ماكو؟", "candidate_model": "gpt-4o", "dialect": "iraqi", "category": "linguistic"},  # noqa: E501
    {"item_id": "irq-002", "rubric_id": "iraqi-linguistic-shaku-maku", "prompt": "شنو معنى شكو وماكو باللهجة العراقية؟", "response": "شكو تعني شكراً بالعامية، وماكو تعني لا.", "candidate_model": "Qwen/Qwen2.5-7B-Instruct", "dialect": "iraqi", "category": "linguistic"},  # noqa: E501
    {"item_id": "irq-003", "rubric_id": "iraqi-linguistic-shaku-maku", "prompt": "شنو معنى شكو وماكو باللهجة العراقية؟", "response": "These are standard Arabic words: shaku means 'what is there' and maku means 'there is not'.", "candidate_model": "claude-3-5-sonnet", "dialect": "iraqi", "category": "linguistic"},  # noqa: E501
)
# (item, SME, score): two SMEs per dialect, written for qadi's first sample
SME_GRADES: tuple[tuple[str, str, float], ...] = (
    ("egy-001", "sme-eg-1", 100), ("egy-001", "sme-eg-2", 87.5),
    ("egy-002", "sme-eg-1", 0), ("egy-002", "sme-eg-2", 0),
    ("egy-003", "sme-eg-1", 75), ("egy-003", "sme-eg-2", 62.5),
    ("irq-001", "sme-iq-1", 100), ("irq-001", "sme-iq-2", 100),
    ("irq-002", "sme-iq-1", 0), ("irq-002", "sme-iq-2", 16.7),
    ("irq-003", "sme-iq-1", 50), ("irq-003", "sme-iq-2", 50),
)


# Each model's way of writing each kind of answer ({literal}, {meaning}, {half}: the first
# half of the meaning, {other}: another proverb's meaning), so no two answers are the same.
STYLES: dict[str, dict[str, str]] = {
    "gpt-4o": {
        "faithful": "It means: {meaning}.",
        "close": "The proverb says: {literal}. In other words, {meaning}.",
        "partial": "{literal}. Roughly: {half}...",
        "literal": "It literally says: {literal}.",
        "wrong": "It means: {other}.",
    },
    "Qwen/Qwen2.5-7B-Instruct": {
        "faithful": "Meaning: {meaning}.",
        "close": 'Word for word, "{literal}"; the meaning is: {meaning}.',
        "partial": '"{literal}" - roughly, {half}...',
        "literal": 'Literally: "{literal}".',
        "wrong": "Meaning: {other}.",
    },
    "meta-llama/Llama-3.1-8B-Instruct": {
        "faithful": "The idea is: {meaning}.",
        "close": "In plain words: {literal}. The idea: {meaning}.",
        "partial": "{literal}, which is about: {half}...",
        "literal": "The words say: {literal}.",
        "wrong": "The idea is: {other}.",
    },
}


def explanation(model: str, kind: str, index: int) -> str:
    """Candidate `model`'s explanation of proverb `index`, of the given kind."""
    _, literal, meaning, _ = PROVERBS[index]
    words = meaning.split()
    return STYLES[model][kind].format(
        literal=literal,
        meaning=meaning,
        half=" ".join(words[: max(2, len(words) // 2)]),
        other=PROVERBS[(index + 17) % len(PROVERBS)][2],
    )


def demo_items(rng: random.Random) -> list[dict[str, str]]:
    items = []
    for index, (proverb, _, meaning, variety) in enumerate(PROVERBS):
        for number, (model, weights) in enumerate(PROFILES.items(), start=1):
            kind = rng.choices(KINDS, weights=weights)[0]
            items.append(
                {
                    "item_id": f"proverb-{index + 1:02d}-{number}",
                    "rubric_id": RUBRIC,
                    "prompt": f"Explain the Arabic proverb «{proverb}».",
                    "response": explanation(model, kind, index),
                    "reference": f"{meaning[0].upper()}{meaning[1:]}.",
                    "candidate_model": model,
                    "variety": variety,
                }
            )
    return items


def expert_grade(truth: int, bias: float, rng: random.Random) -> int:
    return min(5, max(1, round(truth + bias + rng.gauss(0.0, EXPERT_NOISE))))


def _csv(rows: list[dict], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def write(directory: Path = HERE) -> None:
    """answers.jsonl; grades.csv (the generated experts, 1-5); sme_grades.csv (the SMEs,
    0-100): one grades file per scale, so each calibrates as it is."""
    rng = random.Random(SEED)
    items = demo_items(rng)
    answers = [*SME_ANSWERS, *items]
    with (directory / "answers.jsonl").open("w", encoding="utf-8") as handle:
        for answer in answers:
            handle.write(json.dumps(answer, ensure_ascii=False) + "\n")
    by_item = {a["item_id"]: a for a in SME_ANSWERS}
    sme = [
        {"item_id": item, "rater": rater, "rater_kind": "human", "score": score,
         **{k: by_item[item][k] for k in ("candidate_model", "dialect", "category")}}
        for item, rater, score in SME_GRADES
    ]
    columns = ["item_id", "rater", "rater_kind", "score", "candidate_model"]
    (directory / "sme_grades.csv").write_text(
        _csv(sme, [*columns, "dialect", "category"]), encoding="utf-8"
    )
    experts = [
        {"item_id": item["item_id"], "rater": rater, "rater_kind": "human",
         "score": expert_grade(rating_for(item["response"], item["reference"]), bias, rng),
         "candidate_model": item["candidate_model"], "variety": item["variety"],
         "inclusion_prob": LABELLED_PER_MODEL / len(profile),
         "inclusion_stratum": f"candidate_model={item['candidate_model']}"}
        for profile in _by_model(items).values()
        for item in sorted(rng.sample(profile, LABELLED_PER_MODEL), key=lambda i: i["item_id"])
        for rater, bias in EXPERTS.items()
    ]
    design = ["variety", "inclusion_prob", "inclusion_stratum"]
    (directory / "grades.csv").write_text(_csv(experts, [*columns, *design]), encoding="utf-8")


def _by_model(items: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    """The answers of each candidate model (the strata the experts' sample is drawn in)."""
    grouped: dict[str, list[dict[str, str]]] = {}
    for item in items:
        grouped.setdefault(item["candidate_model"], []).append(item)
    return grouped


if __name__ == "__main__":
    write()
