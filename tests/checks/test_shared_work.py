"""Work `tracec check` does once and shares (issue 30, speed): each result equals the work done
again from scratch."""

from __future__ import annotations

from pathlib import Path

from tracec.checks.fork import GoldFork
from tracec.checks.locate import SpecMap
from tracec.checks.probes import build_probes, replay, replay_matches, run_turns
from tracec.checks.prompt_size import first_prompt_size, first_prompt_sizes
from tracec.compiler import codegen
from tracec.compiler.api import compile_file
from tracec.harness.resolve import env_class
from tracec.runtime.world import LazyWorld, fork, state_hash

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs" / "multi_step_task_completion.tracec"  # a spec with a variant


def _classes() -> tuple[type, type]:
    result = compile_file(SPEC)
    assert result.ok and result.variants
    return env_class(result.module), env_class(result.variants[0].module)


def test_a_replay_judged_once_per_instance_equals_a_fresh_replay() -> None:
    cls, _ = _classes()
    env = cls()
    for seed in range(3):
        for task in cls.capability.tasks:
            env.reset(seed=seed, options={"task": task.name})
            box = env.toolbox
            for probe in build_probes(env.instance, box.writes, box.ends, box.tools):
                for _ in range(2):  # the second one is remembered
                    matches, done = replay_matches(env, probe.calls)
                    db, fresh = replay(env, probe.calls)
                    assert (matches, done) == (env.matches_gold(db), fresh)


def test_probes_resumed_from_the_gold_turns_equal_fresh_episodes() -> None:
    """The probes that resume from a kept state of the gold turns (the text tails on the
    shared world, the others on a copy) play what a fresh episode plays, call for call."""
    for spec in (SPEC, ROOT / "specs" / "tool_calling_precision.tracec"):
        result = compile_file(spec)
        cls = env_class(result.module)
        env = cls()
        resumed = 0
        for seed in range(4):
            for task in cls.capability.tasks:
                env.reset(seed=seed, options={"task": task.name})
                box = env.toolbox
                shared = GoldFork(env)
                results = shared.gold_results()
                resumed += len(shared.marks)
                probes = build_probes(env.instance, box.writes, box.ends, box.tools,
                                      rotate=seed, results=results)
                for i, probe in enumerate(probes):
                    got = shared.play(probe, probes[i + 1:] if seed % 2 else None)
                    calls, world = list(env.calls), state_hash(env.db)
                    env.restart()
                    fresh = run_turns(env, probe.turns)
                    assert got == fresh, (spec.name, seed, task.name, probe.name)
                    assert (calls, world) == (env.calls, state_hash(env.db))
        assert resumed  # the states before the last write were kept


def test_a_forked_world_is_equal_and_apart() -> None:
    cls, _ = _classes()
    env = cls()
    env.reset(seed=1, options={"task": cls.capability.tasks[0].name})
    db = env.initial_copy()
    assert type(db) is LazyWorld
    rid = next(iter(dict.keys(db["reservations"])))
    db["reservations"][rid]["passengers"].append({"first_name": "A"})  # read, then written
    kept = db["reservations"][rid]["passengers"][-1]  # a value the world shares with an argument
    copy, (args,) = fork(db, [{"passengers": [kept]}])
    assert copy == db and state_hash(copy) == state_hash(db)
    assert args["passengers"][0] is copy["reservations"][rid]["passengers"][-1]
    copy["reservations"][rid]["passengers"].pop()
    assert copy != db and db["reservations"][rid]["passengers"][-1] is kept
    assert fork({"a": [object()]}) is None  # what marshal cannot store: no copy


def test_prompt_sizes_of_both_schemas_from_one_reset_per_seed() -> None:
    cls, variant = _classes()
    for c in (cls, variant):
        full, compact = c(compact_tools=False), c(compact_tools=True)
        both = first_prompt_sizes(full, [None, compact.tools], seeds=3)
        assert both == [first_prompt_size(full, seeds=3), first_prompt_size(compact, seeds=3)]
        assert both[1].tokens < both[0].tokens


def test_the_envs_of_one_spec_share_one_parse() -> None:
    cls, variant = _classes()
    a, b = SpecMap(cls.capability), SpecMap(variant.capability)
    assert a.ast is not None and a.ast is b.ast
    assert a.rules == b.rules and a.tasks == b.tasks and a.max_turns == b.max_turns


def test_budget_only_agrees_with_comparing_dumps() -> None:
    result = compile_file(SPEC)
    base, variant = result.ir, result.variants[0].ir
    skip = {"name", *codegen.BUDGET_FIELDS}
    other = base.model_copy(update={"max_turns": base.max_turns + 1})
    for cap in (variant, base, other):
        assert codegen.budget_only(base, cap) == (
            base.model_dump(exclude=skip) == cap.model_dump(exclude=skip))
    assert codegen.budget_only(base, variant) and not codegen.budget_only(base, other)
