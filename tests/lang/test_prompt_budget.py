"""Prompt budget: `tools [...]`, `policy sections [...]` / `policy "..."`, `compact_tools`."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest

from tests.lang.cases import BASE, mutate
from tracec.compiler.api import compile_file, compile_text
from tracec.domains import get_domain
from tracec.domains import policy as P
from tracec.domains.compact import compact_parameters, compact_schema, first_sentence
from tracec.harness.resolve import env_class, load_paths
from tracec.runtime.toolcall import hermes, parse_turn
from tracec.runtime.validate import compile_validator

DOMAINS = ("airline", "retail", "toolsandbox")


def build(source: str):
    """Compile a spec in memory and return its env class."""
    result = compile_text(source, "specs/demo.tracec")
    assert result.ok, result.rendered
    namespace: dict = {}
    exec(compile(result.code, "<demo>", "exec"), namespace)  # noqa: S102 - generated code
    return namespace["DemoEnv"]


RESTRICTED = mutate("domain airline", 'domain airline\n  tools [get_reservation_details]\n'
                    '  policy sections ["Cancel flight"]\n  compact_tools')


# ------------------------------------------------------------------ policy excerpts


def test_policy_headings_are_the_markdown_sections() -> None:
    heads = P.headings(get_domain("airline").policy)
    assert heads[:2] == ["Domain Basic", "User"]
    assert {"Book flight", "Modify flight", "Cancel flight", "Refunds and Compensation"} <= set(heads)
    assert "Airline Agent Policy" not in heads  # the title belongs to the preamble
    assert P.headings(get_domain("toolsandbox").policy) == []


def test_excerpt_keeps_preamble_and_chosen_sections_in_document_order() -> None:
    policy = get_domain("airline").policy
    text = P.excerpt(policy, ["Cancel flight", "domain basic"])  # case-insensitive
    assert text.startswith("# Airline Agent Policy")
    assert "obtain explicit user confirmation" in text  # preamble rule
    assert "### Reservation" in text  # a subsection of Domain Basic comes along
    assert "## Book flight" not in text and "## Modify flight" not in text
    assert text.index("## Domain Basic") < text.index("## Cancel flight")
    assert "\n\n\n" not in text
    # a subsection alone, without its parent
    sub = P.excerpt(policy, ["Flight"])
    assert "### Flight" in sub and "### User" not in sub and "## Cancel flight" not in sub
    assert len(P.excerpt(policy, [])) < len(P.excerpt(policy, ["Cancel flight"])) < len(policy)


def test_markdown_sections_of_a_synthetic_policy() -> None:
    doc = "# T\nintro\n## A\na1\n### A1\nx\n## B\nb\n```\n## not a heading\n```\n"
    secs = P.sections(doc)
    assert [(s.level, s.heading) for s in secs] == [(2, "A"), (3, "A1"), (2, "B")]
    assert P.excerpt(doc, ["B"]) == "# T\nintro\n## B\nb\n```\n## not a heading\n```\n"
    assert P.excerpt(doc, ["A1"]) == "# T\nintro\n### A1\nx\n"


# ------------------------------------------------------------------ compact schemas


def test_first_sentence() -> None:
    assert first_sentence("Get the details. Then more.") == "Get the details."
    assert first_sentence("Use e.g. this one. Next.") == "Use e.g. this one."
    assert first_sentence("No full stop") == "No full stop"
    long = "word " * 60
    short = first_sentence(long)
    assert len(short) <= 100 and short.endswith("...")


def _strip(schema):
    """The full schema without annotations, written independently of compact_parameters."""
    if isinstance(schema, dict):
        return {k: (_strip_props(v) if k in ("properties", "$defs") else _strip(v))
                for k, v in schema.items() if k not in ("description", "title", "examples")}
    if isinstance(schema, list):
        return [_strip(v) for v in schema]
    return schema


def _strip_props(props):
    return {name: _strip(v) for name, v in props.items()}


@pytest.mark.parametrize("domain", DOMAINS)
def test_compact_keeps_the_call_interface_of_every_tool(domain: str) -> None:
    for tool in get_domain(domain).tools.values():
        full = tool.openai_schema()
        small = compact_schema(full)
        fn, sfn = full["function"], small["function"]
        assert sfn["name"] == fn["name"]
        # names, types, required, enums, $defs/$ref structure: all equal to the full schema's
        assert sfn["parameters"] == _strip(fn["parameters"])
        assert list(sfn["parameters"].get("properties", {})) == list(fn["parameters"].get("properties", {}))
        assert sfn["parameters"].get("required", []) == fn["parameters"].get("required", [])
        assert len(sfn["description"]) <= max(100, 0) and len(str(small)) <= len(str(full))
        assert compact_parameters(fn["parameters"]) == sfn["parameters"]


def _example(schema: dict, defs: dict):
    """A value satisfying a (compact) schema, built from the compact schema only."""
    if "$ref" in schema:
        return _example(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:
        return _example(schema["anyOf"][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        return {k: _example(v, defs) for k, v in schema.get("properties", {}).items()
                if k in schema.get("required", [])}
    if kind == "array":
        return [_example(schema.get("items", {"type": "string"}), defs)]
    return {"string": "x1", "integer": 1, "number": 1.5, "boolean": True, "null": None}.get(kind, "x1")


@pytest.mark.parametrize("domain", DOMAINS)
def test_calls_written_from_compact_schemas_parse_and_validate(domain: str) -> None:
    """A call built from the compact schema goes through the same parser and full validator."""
    for tool in get_domain(domain).tools.values():
        params = compact_schema(tool.openai_schema())["function"]["parameters"]
        args = _example(params, params.get("$defs", {}))
        parsed = parse_turn(hermes(tool.name, args))
        assert [(c.name, c.arguments) for c in parsed.calls] == [(tool.name, args)]
        assert compile_validator(tool.name, tool.parameters)(args) is None, (tool.name, args)


# ------------------------------------------------------------------ the env


def test_defaults_stay_faithful() -> None:
    cls = build(BASE)
    env = cls()
    _, info = env.reset(seed=0)
    domain = get_domain("airline")
    assert [t["function"]["name"] for t in info["tools"]] == list(domain.tools)
    assert info["tools"] == domain.tool_schemas()
    assert domain.policy in info["messages"][0]["content"]
    assert not env.compact_tools


def test_restricted_env_shows_the_subset_excerpt_and_compact_schemas() -> None:
    cls = build(RESTRICTED)
    env = cls()
    _, info = env.reset(seed=1)
    domain = get_domain("airline")
    assert [t["function"]["name"] for t in info["tools"]] == ["get_reservation_details"]
    assert info["tools"] == [compact_schema(domain.tools["get_reservation_details"].openai_schema())]
    system = info["messages"][0]["content"]
    assert "## Cancel flight" in system and "## Book flight" not in system
    assert "obtain explicit user confirmation" in system
    # a domain tool that is not shown is unknown to the agent
    obs, *_ = env.step(hermes("cancel_reservation", {"reservation_id": "ABC123"}))
    assert obs.startswith("Error: unknown tool `cancel_reservation`")
    assert env.calls == []


def test_compact_tools_kwarg_overrides_the_spec() -> None:
    cls = build(RESTRICTED)
    full = cls(compact_tools=False)
    _, info = full.reset(seed=1)
    schema = get_domain("airline").tools["get_reservation_details"].openai_schema()
    assert info["tools"] == [schema]
    compact = build(BASE)(compact_tools=True)
    assert all("title" not in str(t["function"]["parameters"]) for t in compact.tools)
    with pytest.raises(TypeError, match="compact_tools"):
        cls(compact_tools="yes")


def test_compact_and_full_envs_give_the_same_rewards() -> None:
    """Same gold turns, same parser, same reward under both renderings."""
    cls = build(RESTRICTED)
    for seed in range(5):
        rewards = []
        for flag in (False, True):
            env = cls(compact_tools=flag)
            env.reset(seed=seed)
            for call in env.instance.gold:
                env.step(hermes(call.name, call.arguments))
            value = env.instance.communicate["total"]
            _, reward, *_ = env.step(f"It cost {value}. ###STOP###")
            rewards.append(reward)
        assert rewards == [1.0, 1.0]


def test_inline_policy_text() -> None:
    cls = build(mutate("domain airline", 'domain airline\n  policy """Be brief.\nConfirm first."""'))
    env = cls()
    _, info = env.reset(seed=0)
    assert "<policy>\nBe brief.\nConfirm first.\n</policy>" in info["messages"][0]["content"]


def test_inline_tools_are_always_shown() -> None:
    spec = mutate("domain airline", "domain airline\n  tools [get_reservation_details]").replace(
        "  reward {", "  tool shout(text: str) \"Say it loudly.\" {\n    return upper(text)\n  }\n"
        "  reward {")
    env = build(spec)()
    assert [t["function"]["name"] for t in env.tools] == ["get_reservation_details", "shout"]


def test_generated_code_holds_the_budget_as_literals() -> None:
    result = compile_text(RESTRICTED, "specs/demo.tracec")
    assert 'tool_names=("get_reservation_details",),' in result.code
    assert 'policy_sections=("Cancel flight",),' in result.code
    assert "compact_tools=True," in result.code
    assert result.ir.shown_tools == ["get_reservation_details"]
    assert result.ir.policy_sections == ["Cancel flight"] and result.ir.compact_tools
    # a default spec generates none of them (existing envs stay byte-identical)
    plain = compile_text(BASE, "specs/demo.tracec").code
    assert "tool_names" not in plain and "policy_sections" not in plain and "compact_tools" not in plain


def test_hostile_policy_text_stays_data() -> None:
    stmt = r'policy "\"\"\" + __import__(\"os\").system(\"true\") + \"\"\" \\ {{x}}"'
    spec = mutate("domain airline", "domain airline\n  " + stmt)
    result = compile_text(spec, "specs/demo.tracec")
    assert result.ok, result.rendered
    assert "__import__" not in result.code.split("policy=", 1)[0]
    env = build(spec)()
    assert '<policy>\n""" + __import__("os").system("true") + """ \\ {x}\n</policy>' in env.system_prompt()


def test_shipped_compact_spec_registers_and_shows_its_budget() -> None:
    loaded = dict(load_paths([Path("generated_envs")]))
    module = next(m for label, m in loaded.items() if label.endswith("structured_data_reasoning_compact.py"))
    cls = env_class(module)
    assert cls.capability.compact_tools \
        and cls.capability.policy_sections == ("Modify flight", "Cancel flight")
    env = gym.make("tracec/structured_data_reasoning_compact-v0", compact_tools=False)
    _, info = env.reset(seed=0)
    assert len(info["tools"]) == 4 and "description" in str(info["tools"][0]["function"]["parameters"])


VARIANT_SPEC = mutate("domain airline", """domain airline
  variant compact {
    tools [get_reservation_details, cancel_reservation]
    policy sections ["Cancel flight"]
    compact_tools
  }""")


def test_a_variant_compiles_to_a_second_env_with_the_same_worlds() -> None:
    """`variant compact { ... }`: env `demo_compact`, its prompt budget, every world and task
    instance the capability's own."""
    result = compile_text(VARIANT_SPEC, "specs/demo.tracec")
    assert result.ok, result.rendered
    assert [v.ir.name for v in result.variants] == ["demo_compact"]
    variant = result.variants[0]
    assert "Source: specs/demo.tracec" in variant.code
    full, small = env_class(result.module)(), env_class(variant.module)()
    assert small.compact_tools and not full.compact_tools
    for seed in range(10):
        _, info_full = full.reset(seed=seed)
        _, info_small = small.reset(seed=seed)
        assert full.db == small.db
        assert (full.instance.user, full.instance.gold, full.instance.values) == \
            (small.instance.user, small.instance.gold, small.instance.values)
        assert len(info_small["tools"]) == 2 < len(info_full["tools"])


def test_variant_inherits_the_budget_it_does_not_give() -> None:
    spec = mutate("domain airline", "domain airline\n  tools [get_reservation_details]\n"
                  "  variant compact { compact_tools }")
    result = compile_text(spec, "specs/demo.tracec")
    assert result.ok, result.rendered
    cap = env_class(result.variants[0].module).capability
    assert cap.tool_names == ("get_reservation_details",) and cap.compact_tools


def test_a_variant_is_checked_against_its_own_budget() -> None:
    spec = mutate("domain airline", "domain airline\n  variant small { tools [get_user_details] }")
    result = compile_text(spec, "specs/demo.tracec")
    assert not result.ok and not result.variants
    # at the variant's own `tools` line (4): the task's gold holds in the base spec
    assert "specs/demo.tracec:4:" in result.rendered
    assert "error: variant `small`'s `tools` list lacks `get_reservation_details`, which the spec " \
           "calls on line 13" in result.rendered


def test_shipped_specs_use_variants_not_copies() -> None:
    specs = Path("specs")
    for p in sorted(specs.glob("*_compact.tracec")):
        assert not (specs / (p.stem[: -len("_compact")] + ".tracec")).exists(), \
            f"{p} copies a spec: declare `variant compact {{ ... }}` in it instead"
    with_variant = [p for p in sorted(specs.glob("*.tracec")) if "variant compact {" in p.read_text()]
    assert len(with_variant) >= 4
    for p in with_variant:
        assert Path("generated_envs", p.stem + "_compact.py").exists()


@pytest.mark.parametrize("name", ["multi_step_task_completion", "precondition_verification",
                                  "structured_data_reasoning", "tool_calling_precision"])
def test_shipped_compact_variant_has_its_spec_s_worlds(name: str) -> None:
    """Replaces the copies kept equal by hand: the variant env draws the spec's own worlds and
    task instances, seed for seed; only what the agent is shown is smaller."""
    result = compile_file(Path("specs") / f"{name}.tracec")
    assert result.ok, result.rendered
    (variant,) = result.variants
    assert variant.ir.name == f"{name}_compact"
    full, small = env_class(result.module)(), env_class(variant.module)()
    for seed in range(6):
        _, info_full = full.reset(seed=seed)
        _, info_small = small.reset(seed=seed)
        assert full.db == small.db
        assert (full.instance.task, full.instance.user, full.instance.gold) == \
            (small.instance.task, small.instance.user, small.instance.gold)
        assert len(info_small["tools"]) < len(info_full["tools"])
