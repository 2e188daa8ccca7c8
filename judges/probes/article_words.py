"""The words `diacritics_add` vocalises: a hand-checked list, because a rule cannot tell the
definite article from a word that merely starts with ال.

Unvocalised Arabic hides that difference: الذي is a relative pronoun (الّذي, the shadda on
its lam), التزام is a form VIII noun whose lam is a root letter (iltizām), and everyday text
drops the hamza of الية (آلية), الوان (ألوان) or الكترونية (إلكترونية). The sun and moon
letter rule gives each of them a wrong mark. So marks are added only to the words below,
each checked by hand to begin with the article in every reading (العلم is al-ʿilm or
al-ʿalam, the article either way), written without prefixes (والدين is "and the religion"
or "parents", so prefixed forms are never guessed). Extend the lists the same way: a word
goes in only when ال is the article in all of its readings.
"""

from __future__ import annotations

# The relative pronouns, with the shadda their lam carries (الَّذي: al-ladhī).
RELATIVE_PRONOUNS: dict[str, str] = {
    "الذي": "الّذي",
    "التي": "الّتي",
    "الذين": "الّذين",
}

# Nouns and adjectives with the definite article, frequent in explanations and answers.
_ARTICLE_WORDS = """
    البيت البيوت البحر البداية البلد البنت البخل الثقافة الثقة الثمر الجار الجيران
    الجديد الجديدة الجمال الجملة الجهل الجواب الجبل الحب الحجارة الحديد الحذر الحرب
    الحزن الحزين الحق الحكمة الحياة الخبز الخوف الخير الدار الدنيا الدهر الدين الذكاء
    الذهب الرجل الربيع الريح الزمن الزمان السؤال السر السلام السماء السوق السيئ الشاعر
    الشخص الشر الشعب الشعر الشمس الشهر الشيء الصباح الصبر الصحة الصدق الصديق الصعبة
    الصغير الصغيرة الصيد الضعف الضيف الضيق الطبيعة الطريق الطعام الطفل الطماع الظروف
    العادة العالم العبارة العجوز العقل العلاج العلم العمل العين العيوب الغد الغنى
    الفاحش الفرج الفرح الفرصة الفشل الفضة الفقر الفكرة الفوضى القرية القديم القديمة
    القرارات القصيدة القلب القليل القمر القوة القول القيامة الكبير الكثير الكذب الكرم
    الكلام الكلمة اللسان اللغة الليل الماء الماضي المال المبذر المثل المجتمع المدينة
    المرأة المرض المساء المشاكل المشكلة المصائب المصري المصريين المطر المعنى المقصود
    الموت الناس النار النتيجة النجاح النسيم النص النكتة النهاية النهار الهدف الوجه
    الوقاية الوقت الولد اليد اليوم التاريخ التجارة التجربة التسرع التعاون التعب التعلم
    التعليم التكبر
"""
ARTICLE_WORDS: frozenset[str] = frozenset(_ARTICLE_WORDS.split())
