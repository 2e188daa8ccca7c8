"""Issue 42 finding 1: what a template may compute is bounded. Each hostile template below
ran for seconds to hours before (four nested `**` took 13 s of CPU holding the GIL; the
doublings would fill memory); each is now refused, naming the limit, in milliseconds, and an
ordinary template renders as before."""

from __future__ import annotations

import time

import pytest
from jinja2.sandbox import SecurityError

from judges.sandbox import TemplateSourceError, render
from judges.template_budget import MAX_NODES, MAX_NUMBER_BITS, MAX_WORK

DOUBLE_40 = "{% set a = 'xxxxxxxxxx' %}" + "{% set a = a OP a %}" * 40 + "{{ a|length }}"
HOSTILE = {
    "nested powers": ("{{ ((((10)**64)**64)**64)**64 }}", f"over {MAX_NUMBER_BITS} bits"),
    "products doubling": ("{% set n = 10**60 %}" + "{% set n = n * n %}" * 30 + "{{ n }}",
                          f"over {MAX_NUMBER_BITS} bits"),  # fmt: skip
    "concatenation doubling": (DOUBLE_40.replace("OP", "~"), "over 2,000,000 characters"),
    "sum of texts doubling": (DOUBLE_40.replace("OP", "+"), "over 2,000,000 characters"),
    "list doubling": ("{% set a = [1, 2] %}" + "{% set a = a + a %}" * 40,
                      "over 2,000,000 characters or items"),  # fmt: skip
    "indent width": ("{{ 'x\ny'|indent(1000000000) }}", "indent: the width is over 1000"),
    "round precision": ("{{ 5|round(-1000000000) }}", "round: the precision is over 20"),
    "join separator": ("{{ [1, 2, 3]|join(answer) }}", "over 2,000,000 characters"),
    "text formatting": ("{{ '%0999999999d' % 1 }}", "cannot format text with '%'"),
    "text repetition": ("{{ 'ab' * 1000000000 }}", "cannot repeat text"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_template_is_refused_naming_the_limit_in_milliseconds(name):
    source, message = HOSTILE[name]
    started = time.process_time()
    with pytest.raises(SecurityError, match=message):
        render(source, {"answer": "a" * 1_500_000})
    assert time.process_time() - started < 1.0  # CPU seconds; before: 13 s to hours


def test_scanning_a_long_answer_at_every_node_runs_out_of_budget():
    """No value grows, but each `in` scans a 1 MB answer: 250 of them would cost seconds
    at 2,000 nodes; the meter stops the render after MAX_WORK characters scanned."""
    source = "{% if 'ab' in answer %}x{% endif %}" * 250
    started = time.process_time()
    with pytest.raises(SecurityError, match=f"over {MAX_WORK:,} characters made or scanned"):
        render(source, {"answer": "a" * 1_000_000})
    assert time.process_time() - started < 1.0


def test_a_template_with_too_many_nodes_is_refused_when_read():
    source = "{{ answer }}" * MAX_NODES  # a Name each, in one Output
    with pytest.raises(TemplateSourceError, match=f"the limit is {MAX_NODES:,}"):
        render(source, {"answer": "a"})


@pytest.mark.parametrize(
    "source",
    [
        "{% set a = [1] %}{% set a = [a, a] %}",
        "{% set d = {'k': answer} %}{{ d }}",
        "{{ (answer, answer)|join }}",
    ],
)
def test_lists_and_dicts_may_hold_only_constants(source):
    with pytest.raises(TemplateSourceError, match="may hold only constants"):
        render(source, {"answer": "a"})


def test_only_tests_that_look_at_a_kind_are_allowed():
    with pytest.raises(TemplateSourceError, match="test 'in' is not allowed"):
        render("{{ 'a' is in answer }}", {"answer": "abc"})


def test_ordinary_templates_render_as_before():
    source = (
        "{% set a, b = 2, 3 %}{{ a * b + 2**10 - 7 // 2 }} {{ 'x' ~ answer ~ 'y' }} "
        "{{ 1 < a < 5 }} {{ 6 < a < 5 }} {{ answer in ['abc', 'd'] }} "
        "{{ [1, 2]|join('-') }} {{ answer|upper|indent(2) }} {{ 3.14159|round(2) }} "
        "{% if reference is defined %}R{% else %}no reference{% endif %}"
    )
    assert render(source, {"answer": "abc"}) == (
        "1027 xabcy True False True 1-2 ABC 3.14 no reference"
    )


def test_each_render_has_its_own_budget():
    """A render near the limit leaves the next one a whole budget (the meter is per render,
    also when renders run on several threads)."""
    source = "{% if 'ab' in answer %}x{% endif %}" * 18  # 18 MB scanned: under 20
    for _ in range(3):
        assert render(source, {"answer": "a" * 1_000_000}) == ""
