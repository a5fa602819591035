"""Which template library renders Herald's named templates (issue 39): python-liquid
against Jinja2's ``SandboxedEnvironment``, by render speed and by what each does with
an untrusted template.

``python -m bench.template_engines [ROUNDS]`` prints two tables (Markdown):

- speed: µs per render of a three-variable text (and of one with a date filter), the
  median of ROUNDS interleaved rounds (default 9; each round renders each engine
  ``RENDERS`` times, the order rotating), for python-liquid as Herald configures it
  (``core.render``'s sandboxed Environment, a full Liquid render), Jinja2's
  ``SandboxedEnvironment`` (``StrictUndefined``, no loader), and Herald's own
  ``core.render.compiled(...).render`` (the plain fast path, which joins a template's
  literal text and values without Liquid when it only fills in variables);
- safety: the escape and exhaustion probes of tests/unit/test_render.py, each written
  in both engines' syntax (the same attack), and what each engine did: refused (with
  its error), rendered N characters, or not run because nothing would stop it (the
  size it would reach is said instead). Liquid's column is ``core.render.compiled``:
  python-liquid with Herald's limits (loops, output, nesting, assigned names, no
  include/render) and its 4,000-character source limit.

bench/RESULTS.md's section of that name quotes a run (``make bench`` keeps it)."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

RENDERS = 2000
JINJA = "Jinja2 SandboxedEnvironment"
SECTION = "## Template engines (issue 39): python-liquid against Jinja2's sandbox"

#: The speed workloads: each engine's source, and the values given.
SPEED: dict[str, tuple[str, str, dict[str, Any]]] = {
    "three variables": (
        "Deploy {{ service }} v{{ version }} to {{ region }}",
        "Deploy {{ service }} v{{ version }} to {{ region }}",
        {"service": "api", "version": 1.4, "region": "eu-west-1"},
    ),
    "three variables and a date filter": (
        "Deploy {{ service }} v{{ version }} to {{ region }} on {{ date | date: '%A' }}",
        "Deploy {{ service }} v{{ version }} to {{ region }} on {{ date.strftime('%A') }}",
        {"service": "api", "version": 1.4, "region": "eu-west-1", "date": date(2026, 9, 30)},
    ),
}


@dataclass(frozen=True)
class Probe:
    """One attack, in Liquid and in Jinja2 (None: not written in that engine's syntax
    because the engine has no such thing; ``unbounded``: why it is not run)."""

    name: str
    liquid: str | None
    jinja: str | None
    values: dict[str, Any]
    jinja_unbounded: str | None = None
    jinja_loader: dict[str, str] | None = None


_NEST = 30
PROBES = (
    Probe("attribute `x.__class__`", "{{ x.__class__ }}", "{{ x.__class__ }}", {"x": "s"}),
    Probe(
        "`x.__class__.__mro__`",
        "{{ x.__class__.__mro__ }}",
        "{{ x.__class__.__mro__ }}",
        {"x": "s"},
    ),
    Probe("`''.__class__`", "{{ ''.__class__ }}", "{{ ''.__class__ }}", {}),
    Probe("format string `{0.__class__}` as text", "{0.__class__}", "{0.__class__}", {}),
    Probe(
        'format string in an output `{{ "{0.__globals__}" }}`',
        '{{ "{0.__globals__}" }}',
        '{{ "{0.__globals__}" }}',
        {},
    ),
    Probe(
        "a format string applied to a value (Liquid has no `format`: `append`)",
        '{{ "{0.__globals__}" | append: x }}',
        '{{ "{0.__globals__}".format(x) }}',
        {"x": "s"},
    ),
    Probe("`include` another template", "{% include 'x' %}", "{% include 'x' %}", {}),
    Probe("`render` another template", "{% render 'x' %}", "{% render 'x' %}", {}),
    Probe(
        "a template that includes itself (engine given a loader)",
        "{% include 'self' %}",
        "x{% include 'self' %}",
        {},
        jinja_loader={"self": "x{% include 'self' %}"},
    ),
    Probe(
        "a loop of 1,000,000",
        "{% for i in (1..1000000) %}x{% endfor %}",
        "{% for i in range(1000000) %}x{% endfor %}",
        {},
    ),
    Probe(
        "nested loops 1,000 × 1,000",
        "{% for i in (1..1000) %}{% for j in (1..1000) %}x{% endfor %}{% endfor %}",
        "{% for i in range(1000) %}{% for j in range(1000) %}x{% endfor %}{% endfor %}",
        {},
    ),
    Probe(
        "nested loops 100,000 × 100,000",
        "{% for i in (1..100000) %}{% for j in (1..100000) %}x{% endfor %}{% endfor %}",
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        {},
        jinja_unbounded="10,000,000,000 iterations, 10 GB of output: nothing stops it",
    ),
    Probe(
        "output flood: 100 × 100 × 100 characters",
        "{% for i in (1..100) %}{% for j in (1..100) %}" + "y" * 100 + "{% endfor %}{% endfor %}",
        "{% for i in range(100) %}{% for j in range(100) %}"
        + "y" * 100
        + "{% endfor %}{% endfor %}",
        {},
    ),
    Probe(
        "a string doubled 40 times in a loop (assign)",
        "{% assign s = 'xxxxxxxxxx' %}{% for i in (1..40) %}{% assign s = s | append: s %}"
        "{% endfor %}{{ s | size }}",
        "{% set ns = namespace(s='xxxxxxxxxx') %}{% for i in range(40) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
        {},
        jinja_unbounded="10 × 2^40 characters (11 TB): nothing stops it",
    ),
    Probe(
        "a string doubled 40 times in a loop (capture)",
        "{% assign s = 'xxxxxxxxxx' %}{% for i in (1..40) %}{% capture s %}{{ s }}{{ s }}"
        "{% endcapture %}{% endfor %}{{ s | size }}",
        None,
        {},
    ),
    Probe(
        "a string multiplied: `'x' * 100000000`",
        "{{ 'x' * 100000000 }}",
        "{{ 'x' * 100000000 }}",
        {},
    ),
    Probe(
        f"{_NEST} nested blocks",
        "{% if true %}" * _NEST + "x" + "{% endif %}" * _NEST,
        "{% if true %}" * _NEST + "x" + "{% endif %}" * _NEST,
        {},
    ),
    Probe("a 5,000-character template", "x" * 5000, "x" * 5000, {}),
    Probe(
        "`{% liquid %}` tag",
        "{% liquid\nassign y = 'ok'\necho y\n%}",
        "{% liquid assign y = 'ok' %}",
        {},
    ),
    Probe(
        "`{% liquid %}` tag with include",
        "{% liquid\ninclude 'x'\n%}",
        None,
        {},
    ),
    Probe(
        "an unknown filter", "{{ x | undefined_filter }}", "{{ x | undefined_filter }}", {"x": 1}
    ),
    Probe("an undefined name", "{{ nothing }}", "{{ nothing }}", {}),
)


def _jinja(loader: dict[str, str] | None = None) -> Any:
    from jinja2 import DictLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        loader=DictLoader(loader) if loader else None,
    )


def _said(exc: BaseException) -> str:
    first = (str(exc).splitlines() or [""])[0][:90].replace("|", "\\|")
    return f"{type(exc).__name__}: {first}"


def _outcome(render: Callable[[], str]) -> str:
    try:
        out = render()
    except RecursionError as exc:
        return f"refused only by Python's recursion limit ({_said(exc)})"
    except Exception as exc:  # noqa: BLE001 - each engine's refusal, as it says it
        return f"refused ({_said(exc)})"
    return f"rendered {len(out):,} character{'' if len(out) == 1 else 's'}"


def liquid_outcome(probe: Probe) -> str:
    from core import render

    if probe.liquid is None:
        return "—"
    return _outcome(lambda: render.compiled(probe.liquid or "").render(probe.values))


def jinja_outcome(probe: Probe) -> str:
    if probe.jinja is None:
        return "— (no such construct)"
    if probe.jinja_unbounded is not None:
        return f"not run: unbounded ({probe.jinja_unbounded})"
    env = _jinja(probe.jinja_loader)
    return _outcome(lambda: env.from_string(probe.jinja or "").render(**probe.values))


def safety() -> list[tuple[str, str, str]]:
    return [(p.name, liquid_outcome(p), jinja_outcome(p)) for p in PROBES]


def _renderers(liquid_src: str, jinja_src: str) -> dict[str, Callable[[dict[str, Any]], Any]]:
    from core import render

    liquid = render.compiled(liquid_src).template
    jinja = _jinja().from_string(jinja_src)
    return {
        "python-liquid (Herald's sandbox)": lambda v: liquid.render(**v),
        JINJA: lambda v: jinja.render(**v),
        "Herald: core.render.compiled(...).render": lambda v: render.compiled(liquid_src).render(v),
    }


def speed(rounds: int) -> dict[str, dict[str, list[float]]]:
    """µs per render, each round's figure, per workload and engine."""
    got: dict[str, dict[str, list[float]]] = {}
    for workload, (liquid_src, jinja_src, values) in SPEED.items():
        engines = _renderers(liquid_src, jinja_src)
        outputs = {name: render(values) for name, render in engines.items()}
        if len(set(outputs.values())) != 1:
            raise SystemExit(f"the engines disagree on {workload!r}: {outputs}")
        names = list(engines)
        per: dict[str, list[float]] = {name: [] for name in names}
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                render = engines[name]
                started = time.perf_counter()
                for _ in range(RENDERS):
                    render(values)
                per[name].append((time.perf_counter() - started) * 1e6 / RENDERS)
        got[workload] = per
    return got


def tables(rounds: int) -> str:
    measured = speed(rounds)
    lines = [
        "| template | engine | µs per render (median) | range of rounds "
        "| ÷ Jinja2 (median of each round's ratio) |",
        "|---|---|---|---|---|",
    ]
    for workload, per in measured.items():
        jinja = per[JINJA]
        for name, figures in per.items():
            lo, hi = min(figures), max(figures)
            ratio = statistics.median(a / b for a, b in zip(figures, jinja, strict=True))
            lines.append(
                f"| {workload} | {name} | {statistics.median(figures):.1f} | {lo:.1f}–{hi:.1f} "
                f"| {ratio:.2f}× |"
            )
    lines += [
        "",
        "| probe | python-liquid (as core.render runs it) | Jinja2 SandboxedEnvironment |",
    ]
    lines += ["|---|---|---|"]
    lines += [f"| {name} | {liquid} | {jinja} |" for name, liquid, jinja in safety()]
    return "\n".join(lines)


def _versions() -> str:
    from importlib.metadata import version

    return (
        f"python-liquid {version('python-liquid')}, Jinja2 {version('jinja2')}, "
        f"Python {platform.python_version()}"
    )


def section(rounds: int, body: str) -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"{SECTION}\n\n`python -m bench.template_engines {rounds}` ({_versions()}; "
        f"{RENDERS:,} renders per engine per round, {rounds} interleaved rounds, {when}, "
        f"load average {load}):\n\n{body}\n"
    )


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 9
    text = section(rounds, tables(rounds))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
