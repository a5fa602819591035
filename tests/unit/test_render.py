"""core.render: the sandbox holds against escapes and exhaustion, the plain fast path
renders what Liquid renders, and the checks when saved refuse in one sentence.

The sandbox probes only assert what happens (refused with a sentence, or rendered as
harmless text): none is timed."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from liquid.exceptions import UndefinedError

from core import render
from core.errors import InvalidInput
from core.render import MAX_OUTPUT, MAX_SOURCE, MAX_VALUE, Parts, RenderError, compiled

#: What Python shows of an object it reached: ``<class 'str'>``, ``(<class 'str'>, ...``,
#: ``<function ...>``, ``{'__builtins__': ...``.
PYTHON = re.compile(r"<class |<function |<built-in |<module |__builtins__|object at 0x")


def one_sentence(message: str) -> None:
    """A refusal a person reads: one line, ending as a sentence, not a traceback."""
    assert "\n" not in message, message
    assert message.endswith("."), message
    assert "Traceback" not in message and len(message) < 400, message


def refused(source: str, values: dict[str, Any] | None = None) -> str:
    """The sentence ``source`` is refused with (when read, or when rendered)."""
    with pytest.raises(RenderError) as caught:
        compiled(source).render(values or {})
    one_sentence(str(caught.value))
    return str(caught.value)


# --- escapes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "values", "said"),
    [
        ("{{ x.__class__ }}", {"x": "api"}, r"x\.__class__ has no value"),
        ("{{ x.__class__.__mro__ }}", {"x": "api"}, r"x\.__class__\.__mro__ has no value"),
        ("{{ x.__init__.__globals__ }}", {"x": "api"}, "has no value"),
        ("{{ x['__class__'] }}", {"x": "api"}, "has no value"),
        ("{{ x.__len__ }}", {"x": "api"}, "has no value"),
        # the same paths through Liquid itself (a filter makes it the slow path)
        ("{{ x.__class__ | upcase }}", {"x": "api"}, "could not be filled in"),
        ("{{ x.__class__.__mro__ | first }}", {"x": "api"}, "could not be filled in"),
        ("{{ d.__class__ | size }}", {"d": date(2026, 3, 2)}, "could not be filled in"),
        ("{{ d.year | plus: 1 }}", {"d": date(2026, 3, 2)}, "could not be filled in"),
        # no attribute syntax on a literal at all
        ("{{ ''.__class__ }}", {}, "cannot be read"),
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", {}, "cannot be read"),
    ],
)
def test_attribute_access_to_python_objects_is_refused(
    source: str, values: dict[str, Any], said: str
) -> None:
    assert re.search(said, refused(source, values))


@pytest.mark.parametrize(
    ("source", "values"),
    [
        ("{{ x | map: '__class__' }}", {"x": ["a", "b"]}),
        ("{{ x | where: '__class__' }}", {"x": ["a", "b"]}),
        ("{{ x | sort: '__class__' | join: ',' }}", {"x": ["b", "a"]}),
        ("{{ x | map: 'upper' | join: ',' }}", {"x": ["a"]}),
        ("{% for c in x %}{{ c }}{% endfor %}", {"x": "abc"}),
    ],
)
def test_filters_that_take_a_property_reach_no_python_attribute(
    source: str, values: dict[str, Any]
) -> None:
    out = compiled(source).render(values)
    assert not PYTHON.search(out), out
    assert "upper" not in out and "A" not in out  # 'upper' is not str.upper


@pytest.mark.parametrize(
    ("source", "values", "expected"),
    [
        ("{0.__class__}", {}, "{0.__class__}"),
        ('{{ "{0.__globals__}" }}', {}, "{0.__globals__}"),
        ('{{ "{0.__class__.__mro__}" | append: x }}', {"x": "!"}, "{0.__class__.__mro__}!"),
        ("{x.__class__} {{ x }}", {"x": "{0.__init__.__globals__}"}, None),
        ("{date} {schedule.id}", {}, "{date} {schedule.id}"),
        ("{{ d | date: '{0.__class__} %A' }}", {"d": date(2026, 3, 2)}, "{0.__class__} Monday"),
    ],
)
def test_format_string_tricks_stay_literal_text(
    source: str, values: dict[str, Any], expected: str | None
) -> None:
    out = compiled(source).render(values)
    if expected is None:  # a value is never formatted: it is written as given
        expected = "{x.__class__} {0.__init__.__globals__}"
    assert out == expected
    assert not PYTHON.search(out)


@pytest.mark.parametrize(
    "source",
    [
        "{% include 'x' %}",
        "{% render 'x' %}",
        "{% include 'deploy' with service %}",
        "{% render 'self' for items as item %}",
        "{% liquid\ninclude 'x'\n%}",
        "{% liquid\nrender 'self'\n%}",
    ],
)
def test_no_template_reaches_another_so_none_includes_itself(source: str) -> None:
    said = refused(source)
    assert re.search(r"cannot be read: unexpected tag '(include|render)'", said), said


LOOPS = [
    "{% for i in (1..1000000) %}x{% endfor %}",
    "{% for i in (1..1000000000000) %}{% endfor %}",
    "{% for i in (1..999) %}{% for j in (1..999) %}x{% endfor %}{% endfor %}",
    "{% for i in (1..40) %}{% for j in (1..40) %}{% for k in (1..40) %}{% endfor %}"
    "{% endfor %}{% endfor %}",
    "{% tablerow i in (1..100000) %}{{ i }}{% endtablerow %}",
    "{% liquid\nfor i in (1..100000)\necho i\nendfor\n%}",
    "{% for i in (1..1001) %}{% endfor %}",
]


@pytest.mark.parametrize("source", LOOPS)
def test_huge_and_nested_loops_are_refused(source: str) -> None:
    assert "loop iteration limit reached" in refused(source)


def test_a_loop_within_the_limit_renders() -> None:
    assert compiled("{% for i in (1..1000) %}x{% endfor %}").render({}) == "x" * 1000


@pytest.mark.parametrize(
    ("source", "said"),
    [
        # 1,000 iterations of 3,900 characters: 3.9 MB, stopped at MAX_OUTPUT
        ("{% for i in (1..1000) %}" + "y" * 3900 + "{% endfor %}", "output stream limit"),
        # 100 × 100 × 100 characters
        (
            "{% for i in (1..100) %}{% for j in (1..100) %}"
            + "y" * 100
            + "{% endfor %}{% endfor %}",
            "limit reached",
        ),
        # a string doubled 40 times (10 × 2^40 characters) by assign, and by capture
        (
            "{% assign s = 'xxxxxxxxxx' %}{% for i in (1..40) %}{% assign s = s | append: s %}"
            "{% endfor %}{{ s | size }}",
            "local namespace limit reached",
        ),
        (
            "{% assign s = 'xxxxxxxxxx' %}{% for i in (1..40) %}{% capture s %}{{ s }}{{ s }}"
            "{% endcapture %}{% endfor %}{{ s | size }}",
            "local namespace limit reached",
        ),
        # doubled without a loop: 20 assigns written out
        (
            "{% assign s = 'xxxxxxxxxx' %}" + "{% assign s = s | append: s %}" * 20 + "{{ s }}",
            "local namespace limit reached",
        ),
        # the output doubled without assigning: each capture writes what the last held
        (
            "{% capture a %}" + "z" * 1000 + "{% endcapture %}" + "{{ a }}" * 60,
            "output stream limit",
        ),
    ],
)
def test_output_floods_are_refused(source: str, said: str) -> None:
    assert len(source) <= MAX_SOURCE
    assert said in refused(source)


def test_output_up_to_the_limit_renders() -> None:
    source = "{% for i in (1.." + str(MAX_OUTPUT // 100) + ") %}" + "y" * 100 + "{% endfor %}"
    assert compiled(source).render({}) == "y" * MAX_OUTPUT


def test_a_string_cannot_be_multiplied() -> None:
    assert "cannot be read" in refused("{{ 'x' * 100000000 }}")
    assert "cannot be read" in refused("{% assign s = 'x' * 100000000 %}")


@pytest.mark.parametrize("depth", [11, 30, 200])
def test_deep_nesting_is_refused(depth: int) -> None:
    source = "{%if 1%}" * depth + "x" + "{%endif%}" * depth
    assert len(source) <= MAX_SOURCE
    assert "block nesting limit reached" in refused(source)


def test_nesting_up_to_the_limit_renders() -> None:
    depth = render._env().block_nesting_limit
    source = "{% if true %}" * depth + "x" + "{% endif %}" * depth
    assert compiled(source).render({}) == "x"


def test_a_template_over_the_source_limit_is_refused() -> None:
    assert refused("x" * (MAX_SOURCE + 1)) == f"A template part is over {MAX_SOURCE:,} characters."
    assert compiled("x" * MAX_SOURCE).render({}) == "x" * MAX_SOURCE


def test_the_liquid_tag_renders_harmlessly_under_the_same_limits() -> None:
    assert compiled("{% liquid\nassign y = 'ok'\necho y\n%}").render({}) == "ok"
    assert compiled("{% liquid\necho x | upcase\n%}").render({"x": "api"}) == "API"
    assert "has no value" not in refused("{% liquid\necho x.__class__\n%}", {"x": "api"})
    assert "cannot be read" in refused("{% liquid\necho '' * 9\n%}")


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("{{ x | undefined_filter }}", "unknown filter 'undefined_filter'"),
        ("{{ x | system: 'ls' }}", "unknown filter 'system'"),
        ("{{ nothing }}", "nothing has no value"),
        ("{{ nothing | upcase }}", "'nothing' is undefined"),
        ("{{ x.y.z }}", "x.y.z has no value"),
        ("{% if nothing %}x{% endif %}", "'nothing' is undefined"),
        ("{% macro m %}{% endmacro %}", "unexpected tag 'macro'"),
        ("{{ x", "cannot be read"),
    ],
)
def test_unknown_filters_tags_and_names_are_refused(source: str, said: str) -> None:
    assert said in refused(source, {"x": "api"})


# --- the plain fast path renders exactly what Liquid renders ----------------------------

NAMES = ("a", "b", "service", "v_2")
#: Literal text: braces and percent signs included, never a tag or output opening.
LITERAL = st.text(alphabet=st.sampled_from(list("ab {}%-#\n\t.:|'\"é✓😀")), max_size=12).filter(
    lambda s: "{{" not in s and "{%" not in s and not s.endswith("{")
)
VALUES = st.one_of(
    st.text(max_size=20),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False),
    st.none(),
    st.booleans(),
    st.dates(),
)


@st.composite
def variable(draw: st.DrawFn) -> str:
    path = draw(st.sampled_from([*NAMES, "schedule.id", "recipient.name"]))
    left = draw(st.sampled_from(["{{", "{{-"]))
    right = draw(st.sampled_from(["}}", "-}}"]))
    inner = draw(st.sampled_from([" ", "", "  ", "\n"]))
    return f"{left}{inner}{path}{inner}{right}"


TEMPLATES = st.lists(st.one_of(LITERAL, variable()), min_size=1, max_size=8).map("".join)


@settings(max_examples=400, deadline=None)
@given(source=TEMPLATES, values=st.fixed_dictionaries({n: VALUES for n in NAMES}), n=VALUES)
def test_the_plain_fast_path_renders_what_liquid_renders(
    source: str, values: dict[str, Any], n: Any
) -> None:
    values = {**values, "schedule": {"id": 2**63 - 1}, "recipient": {"name": n}}
    part = compiled(source)
    assert part.plain is not None  # only literal text and variables: the fast path
    assert part.render(values) == part.template.render(**values)


@settings(max_examples=100, deadline=None)
@given(source=TEMPLATES)
def test_the_fast_path_refuses_a_missing_value_as_liquid_does(source: str) -> None:
    part = compiled(source)
    if not part.paths:
        assert part.render({}) == part.template.render()
        return
    with pytest.raises(RenderError) as caught:
        part.render({})
    one_sentence(str(caught.value))
    with pytest.raises(UndefinedError):
        part.template.render()


@pytest.mark.parametrize(
    ("source", "values"),
    [("line 1\r\nline 2 {{ x }}", {"x": "a"}), ("{{ x }}", {"x": "a\r\nb"})],
)
def test_the_fast_path_writes_line_ends_as_liquid_does(source: str, values: dict[str, Any]) -> None:
    part = compiled(source)
    assert part.render(values) == part.template.render(**values)


@pytest.mark.parametrize(
    "source", ["{{ x | upcase }}", "{% if x %}{{ x }}{% endif %}", "{{ 'lit' }}", "{{ x[0] }}"]
)
def test_anything_but_variables_goes_through_liquid(source: str) -> None:
    assert compiled(source).plain is None


@pytest.mark.parametrize(
    ("source", "values"),
    [
        ("{{ x.size }}", {"x": "hello"}),
        ("{{ x.first }}-{{ x.last }}", {"x": ["a", "b"]}),
    ],
)
def test_the_fast_path_knows_liquids_special_properties(
    source: str, values: dict[str, Any]
) -> None:
    part = compiled(source)
    assert part.render(values) == part.template.render(**values)


# --- declarations, parts and data: refused in one sentence -------------------------------


def refusal(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(InvalidInput) as caught:
        call(*args, **kwargs)
    one_sentence(str(caught.value))
    return str(caught.value)


@pytest.mark.parametrize(
    ("declared", "said"),
    [
        ({"Service": "text"}, "Variable 'Service': a name is a lower-case letter"),
        ({"1st": "text"}, "Variable '1st'"),
        ({"my-var": "text"}, "Variable 'my-var'"),
        ({"x" * 41: "text"}, "up to 39 letters"),
        ({"date": "text"}, "'date' is a field Herald fills in itself"),
        ({"time": "date"}, "'time' is a field Herald fills in itself"),
        ({"schedule": "text"}, "'schedule' is a field Herald fills in itself"),
        ({"recipient": "number"}, "'recipient' is a field Herald fills in itself"),
        ({"service": "json"}, "Variable 'service' has kind 'json': use text, number, date."),
        ({"service": "str"}, "has kind 'str'"),
        ({f"v{i}": "text" for i in range(31)}, "at most 30 variables"),
    ],
)
def test_bad_declarations_are_refused(declared: dict[str, str], said: str) -> None:
    assert said in refusal(render.check_variables, declared)


def test_good_declarations_are_kept() -> None:
    declared = {"service": "text", "version": "number", "on": "date", "_x": "text"}
    assert render.check_variables(declared) == declared


@pytest.mark.parametrize(
    ("parts", "said"),
    [
        (Parts("{{ region }}"), "uses {{ region }}, which is not declared (declared: service)"),
        (Parts("ok", subject="{{ region }}"), "{{ region }}, which is not declared"),
        (
            Parts(
                "ok", blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": "{{ r }}"}}]
            ),
            "{{ r }}, which is not declared",
        ),
        (Parts("ok", embeds=[{"title": "{{ r.x }}"}]), "{{ r.x }}, which is not declared"),
        (Parts("{{ schedule.name }}"), "{{ schedule.name }} is not a field Herald knows"),
        (Parts("{{ recipient.email }}"), "{{ recipient.email }} is not a field Herald knows"),
        (Parts("{{ date.year }}"), "{{ date.year }} is not a field Herald knows"),
        (Parts("   \n"), "The template's text is empty"),
        (Parts("{% include 'x' %}"), "cannot be read"),
        (Parts("{{ service | nope }}"), None),
    ],
)
def test_bad_parts_are_refused(parts: Parts, said: str | None) -> None:
    if said is None:  # an unknown filter is found when rendered: see check_data's callers
        assert render.check_parts(parts, {"service": "text"}) == {"service"}
        return
    assert said in refusal(render.check_parts, parts, {"service": "text"})


def test_parts_using_declared_and_built_in_fields_are_accepted() -> None:
    parts = Parts(
        "{{ service }} {{ date | date: '%A' }} {{ time }} #{{ schedule.id }} {{ recipient.name }}",
        subject="{{ service }}",
    )
    used = render.check_parts(parts, {"service": "text"})
    assert used == {"service", "date", "time", "schedule.id", "recipient.name"}


VARIABLES = {"service": "text", "version": "number", "on": "date"}


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"version": "1.4.2"}, "'version' must be a number, not '1.4.2'."),
        ({"version": "one"}, "'version' must be a number"),
        ({"version": True}, "'version' must be a number, not True."),
        ({"version": "nan"}, "'version' must be a number"),
        ({"version": "inf"}, "'version' must be a number"),
        ({"version": [1]}, "'version' must be a number"),
        ({"on": "2026-13-01"}, "'on' must be a date as YYYY-MM-DD, not '2026-13-01'."),
        ({"on": "next monday"}, "'on' must be a date as YYYY-MM-DD"),
        ({"on": 20260301}, "'on' must be a date as YYYY-MM-DD, not 20260301."),
        ({"service": 3}, "'service' must be text, not 3."),
        ({"service": None}, "'service' must be text, not None."),
        ({"service": "x" * (MAX_VALUE + 1)}, f"'service' is over {MAX_VALUE:,} characters."),
        ({"region": "eu"}, "Template 'deploy' has no variable 'region' (its variables: "),
        ({"__class__": "x"}, "has no variable '__class__'"),
    ],
)
def test_bad_data_is_refused(data: dict[str, Any], said: str) -> None:
    full = {"service": "api", "version": 1, "on": "2026-03-01", **data}
    assert said in refusal(render.check_data, VARIABLES, full, template="deploy")


def test_a_missing_value_is_refused_naming_it_and_whose_data_it_is() -> None:
    said = refusal(
        render.check_data, VARIABLES, {"service": "api"}, template="deploy", where=" for ann"
    )
    assert said.startswith("Template 'deploy' needs a value for 'version' for ann")
    assert render.check_data(VARIABLES, {"service": "api"}, template="deploy", needs=()) == {
        "service": "api"
    }


def test_good_data_is_read_as_its_kind() -> None:
    data = {"service": "x" * MAX_VALUE, "version": "1.4", "on": "2026-02-28"}
    checked = render.check_data(VARIABLES, data, template="deploy")
    assert checked == {"service": "x" * MAX_VALUE, "version": 1.4, "on": "2026-02-28"}
    assert render.check_data(VARIABLES, {**data, "version": "3"}, template="d")["version"] == 3
    assert render.check_data(VARIABLES, {**data, "version": 2.5}, template="d")["version"] == 2.5


@pytest.mark.parametrize("name", ["Deploy", "", "-x", "a" * 65, "dé", "a b", "../x"])
def test_bad_template_names_are_refused(name: str) -> None:
    assert "A template's name is 1 to 64 lower-case letters" in refusal(render.check_name, name)


# --- the longest rendering --------------------------------------------------------------


def test_the_longest_rendering_takes_the_longest_weekday_month_and_id() -> None:
    parts = Parts("{{ date | date: '%A %B' }} #{{ schedule.id }} {{ time }}")
    out = render.longest(parts, render.Use(), 0, "Ann")
    assert out.body == f"Wednesday September #{render.LONGEST_ID} " + out.body[-5:]
    assert re.fullmatch(r"\d\d:\d\d", out.body[-5:])


def test_a_preview_shows_a_variable_without_a_value_as_written() -> None:
    from datetime import UTC, datetime

    parts = Parts("{{ service }} v{{ version }} for {{ recipient.name }} #{{ schedule.id }}")
    at = datetime(2026, 3, 2, 9, tzinfo=UTC)
    shown = render.sample(parts, {"service": "api"}, {"service": "text", "version": "number"}, at)
    assert shown.body == "api v{{ version }} for Ann #123"


@pytest.mark.parametrize(
    "source",
    [
        '{{ (1..30000000) | join: "" | size }}',
        '{{ "aaaaaaaaaa" | split: "" | join: "'
        + "a" * 60
        + '" | split: "" | join: "'
        + "a" * 60
        + '" | split: "" | join: "'
        + "a" * 60
        + '" | size }}',
        "{{ n | floor }}",
    ],
)
def test_the_work_inside_a_filter_is_bounded_too(source: str) -> None:
    """Liquid bounds loops and output, not what one filter builds: a range or a text
    past Herald's bounds, or arithmetic that overflows, is refused in one sentence."""
    with pytest.raises(RenderError) as caught:
        compiled(source).render({"n": 1e308 * 10})
    one_sentence(str(caught.value))


def test_a_number_that_is_not_finite_is_refused() -> None:
    from core.errors import InvalidInput
    from core.render import check_data

    for value in (float("nan"), float("inf")):
        with pytest.raises(InvalidInput, match="must be a number"):
            check_data({"n": "number"}, {"n": value}, template="t")
