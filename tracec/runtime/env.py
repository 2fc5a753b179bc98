"""The Gymnasium base class of compiled capability environments (see "Episode semantics").

A generated module defines a :class:`Capability` (world builder, weighted task templates,
reward rules) and ``class XEnv(CapabilityEnv): capability = CAPABILITY``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import c_make_encoder, encode_basestring
from typing import Any, ClassVar

import gymnasium as gym

from tracec.domains.base import Domain, Tool, ToolError
from tracec.domains.compact import compact_schema
from tracec.domains.policy import excerpt as policy_excerpt
from tracec.runtime.lib import Unsatisfiable, fmt
from tracec.runtime.outcome import Call, Outcome, Reply, Rule, judge, spoken
from tracec.runtime.rivals import Rivals
from tracec.runtime.spaces import UnicodeText
from tracec.runtime.spans import located
from tracec.runtime.toolcall import ToolCallParseError, parse_turn
from tracec.runtime.user import STOP, ScriptedUser
from tracec.runtime.validate import Validator, compile_validator
from tracec.runtime.world import Frozen, FrozenWorld, same_json, state_hash
from tracec.runtime.world import writes as world_writes

__all__ = [
    "MAX_CALLS_PER_TURN",
    "MAX_WORLD_DRAWS",
    "Call",
    "Capability",
    "CapabilityEnv",
    "Outcome",
    "Reply",
    "Rule",
    "SpecRuntimeError",
    "TaskDef",
    "TaskInstance",
    "Toolbox",
    "register_capability_envs",
]

MAX_WORLD_DRAWS = 50
MAX_CALLS_PER_TURN = 32  # more tool calls in one turn are one error observation
WORLD_CACHE = 8  # worlds kept by `_world` for resets that force their task


def _make_encoder() -> Callable[[Any], str]:
    """A reusable JSON encoder (json.dumps rebuilds its C encoder on every call)."""
    try:
        if c_make_encoder is None:
            raise ImportError
        enc = c_make_encoder(None, str, encode_basestring, None, ": ", ", ", False, False, True)
        join = "".join

        def encode(obj: Any) -> str:
            if isinstance(obj, str):
                return encode_basestring(obj)
            return join(enc(obj, 0))

        encode({"a": [1, 2.5, None, True, "ü"]})
        return encode
    except Exception:  # noqa: BLE001 - pure-Python json: fall back
        return json.JSONEncoder(ensure_ascii=False, default=str).encode


_encode = _make_encoder()

INSTRUCTIONS = (
    "<instructions>\n"
    "You are a customer service agent that helps the user according to the <policy> provided below.\n"
    "In each turn you can either:\n"
    "- Send a message to the user.\n"
    "- Make a tool call.\n"
    "You cannot do both at the same time.\n\n"
    "Try to be helpful and always follow the policy. Always make sure you generate valid JSON only.\n"
    "</instructions>\n"
)


class SpecRuntimeError(RuntimeError):
    """Generated code failed at run time (a bug in the spec or its domain), naming task and seed."""


class GoldActionError(SpecRuntimeError):
    """A gold action failed at reset: the drawn ``instance``, the failing call's ``index`` in
    its gold, and the ``world`` it failed on (for `tracec check` to locate the cause)."""

    def __init__(self, text: str, instance: TaskInstance, index: int, world: dict) -> None:
        super().__init__(text)
        self.instance, self.index, self.world = instance, index, world


@dataclass(frozen=True)
class TaskInstance:
    """One drawn task: what the user says, the gold actions and what must be communicated."""

    task: str
    user: str
    gold: Sequence[Call] = ()
    communicate: Mapping[str, Any] = field(default_factory=dict)
    forbid: Sequence[Call] = ()
    replies: Sequence[Reply] = ()
    hint: str = ""
    values: Mapping[str, Any] = field(default_factory=dict)
    distractors: Sequence[str] = ()

    @property
    def said(self) -> list[str]:
        """What the user says: the first message (distractors' words included), then each
        scripted reply."""
        return [self.user] + [r.text for r in self.replies]

    def __post_init__(self) -> None:
        # `communicated()` without arguments (reward rules) checks every `communicate` value
        if "_communicate" not in self.values:
            object.__setattr__(self, "values", {**self.values,
                                                "_communicate": list(self.communicate.values())})


@dataclass(frozen=True)
class TaskDef:
    """A weighted task template: ``fn(rng, db, seed_vars) -> TaskInstance``."""

    name: str
    weight: float
    fn: Callable[[random.Random, dict, dict], TaskInstance]


@dataclass(frozen=True)
class Capability:
    """Everything a compiled spec defines."""

    name: str
    description: str
    domain: Domain
    max_turns: int
    build_world: Callable[[random.Random, dict], dict]
    tasks: Sequence[TaskDef]
    rules: Sequence[Rule]
    tools: Sequence[Tool] = ()
    hint: str = ""
    spec_path: str = ""
    spec_sha256: str = ""
    # prompt budget (`tools [...]`, `policy ...`, `compact_tools` in the spec)
    tool_names: Sequence[str] | None = None  # the domain tools the agent is shown; None: all
    policy_sections: Sequence[str] | None = None  # headings of the domain policy to keep
    policy: str | None = None  # an inline policy text (replaces the domain's)
    compact_tools: bool = False  # default rendering of the tool schemas
    # `communicate raw`: communicated() reads the agent's messages as written, tool-call and
    # tool-response markup it pasted included (a target-faithful env); default: its own words
    communicate_raw: bool = False

    @property
    def levels(self) -> list[float]:
        """Declared reward levels, in rule order."""
        return [float(r.level) for r in self.rules]

    def all_tools(self) -> dict[str, Tool]:
        """The agent's tools: the domain's (or the `tools [...]` subset, in domain order)
        followed by the inline tools (an inline tool overrides a domain one)."""
        if self.tool_names is None:
            tools = dict(self.domain.tools)
        else:
            keep = set(self.tool_names)
            tools = {n: t for n, t in self.domain.tools.items() if n in keep}
        tools.update({t.name: t for t in self.tools})
        return tools

    def policy_text(self) -> str:
        """The policy the agent is shown: inline text, an excerpt, or the domain's policy."""
        if self.policy is not None:
            return self.policy
        if self.policy_sections is not None:
            return policy_excerpt(self.domain.policy, self.policy_sections)
        return self.domain.policy


class Toolbox:
    """A capability's tools as its envs run them, built once per capability (``env.toolbox``).

    Public: ``tools`` (name -> :class:`~tracec.domains.base.Tool`, the inline ones included),
    ``schemas`` (the OpenAI function schemas the agent sees, compact when the env shows compact
    tools), ``policy`` (the policy text in the system prompt), ``writes`` (the names of the
    tools that change the world), ``ends`` (the names of the tools that end an episode) and
    :meth:`run`. Treat them as read-only: every env of the capability shares them.
    """

    def __init__(self, cap: Capability, compact: bool = False):
        self.tools = cap.all_tools()
        self.validators: dict[str, Validator] = {
            n: compile_validator(n, t.parameters) for n, t in self.tools.items()
        }
        self.schemas = [t.openai_schema() for t in self.tools.values()]
        if compact:
            self.schemas = [compact_schema(s) for s in self.schemas]
        self.policy = cap.policy_text()
        self.prompts: dict[str | None, str] = {}  # system prompt by hint (``system_prompt``)
        self.writes = frozenset(n for n, t in self.tools.items() if t.writes)
        self.ends = frozenset(cap.domain.ends_episode)
        self.names = ", ".join(self.tools)

    def run(self, db: dict, name: str, args: Mapping[str, Any],
            observe: bool = True) -> tuple[str, bool, str | None]:
        """Call tool ``name`` with ``args`` on ``db`` (changed in place) as the env would:
        (observation, success, domain bug message or None); without ``observe`` (a replay
        that only needs the world) a success's observation is ``""``, its result not encoded."""
        tool = self.tools.get(name)
        if tool is None:
            return f"Error: unknown tool `{name}` (available: {self.names})", False, None
        err = self.validators[name](args)
        if err is not None:
            return f"Error: {err}", False, None
        try:
            result = tool.func(db, **args)
        except ToolError as exc:
            return f"Error: {exc}", False, None
        except Exception as exc:  # noqa: BLE001 - a domain/inline-tool bug: report, don't crash
            bug = f"tool `{name}` raised {type(exc).__name__}: {exc}"
            return f"Error: internal error in {bug}", False, bug
        if isinstance(result, str) or not observe:
            return result if observe else "", True, None
        return _encode(result), True, None


def _describe_call(c: Call) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in (c.args or {}).items())
    return f"{c.name}({args})"


class CapabilityEnv(gym.Env[str, str]):
    """A text environment: observations are tool results or user replies, actions are raw turns."""

    capability: ClassVar[Capability]
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}
    # holds cap, so ids stay unique
    _toolboxes: ClassVar[dict[tuple[int, bool], tuple[Capability, Toolbox]]] = {}

    def __init__(self, render_mode: str | None = None, max_text_length: int = 1 << 20,
                 compact_tools: bool | None = None):
        """``compact_tools``: show compact tool schemas (None: the spec's `compact_tools`)."""
        if getattr(type(self), "capability", None) is None:
            raise TypeError(f"{type(self).__name__} must set the class attribute `capability`")
        if compact_tools is not None and not isinstance(compact_tools, bool):
            raise TypeError(f"compact_tools must be a bool or None, got {type(compact_tools).__name__}")
        self.render_mode = render_mode
        self.observation_space = UnicodeText(max_text_length)
        self.action_space = UnicodeText(max_text_length)
        cap = self.capability
        self.compact_tools = cap.compact_tools if compact_tools is None else compact_tools
        key = (id(cap), self.compact_tools)
        cached = CapabilityEnv._toolboxes.get(key)
        if cached is None:
            cached = CapabilityEnv._toolboxes[key] = (cap, Toolbox(cap, self.compact_tools))
        self._box = cached[1]
        self._task_names = [t.name for t in cap.tasks]
        self._done = True
        self.instance: TaskInstance | None = None
        self.messages: list[dict] = []
        self.tool_bugs: list[str] = []
        self.turn = 0
        self._resets = 0

    # ------------------------------------------------------------ prompts

    def system_prompt(self, hint: str | None = None) -> str:
        """The system prompt: instructions, the (excerpted) policy, and the hint when given."""
        prompts = self._box.prompts
        text = prompts.get(hint)
        if text is None:
            text = f"{INSTRUCTIONS}<policy>\n{self._box.policy}\n</policy>"
            if hint:
                text += f"\n<hint>\n{hint}\n</hint>"
            if len(prompts) < 256:  # one per hint text: the spec's and its tasks'
                prompts[hint] = text
        return text

    @property
    def toolbox(self) -> Toolbox:
        """The capability's tools as this env runs them (see :class:`Toolbox`): their names,
        which write and which end an episode, the policy text, and ``run`` on a world."""
        return self._box

    @property
    def tools(self) -> list[dict]:
        """OpenAI function schemas of every tool the agent may call."""
        return self._box.schemas

    # ------------------------------------------------------------ reset

    def _choose_task(self, rng: random.Random, forced: str | None) -> TaskDef:
        tasks = self.capability.tasks
        if forced is not None:
            for t in tasks:
                if t.name == forced:
                    return t
            raise ValueError(f"unknown task {forced!r}; tasks: {', '.join(self._task_names)}")
        total = sum(t.weight for t in tasks)
        x = rng.random() * total
        for t in tasks:
            x -= t.weight
            if x < 0:
                return t
        return tasks[-1]

    def _draw(self, rng: random.Random, tdef: TaskDef, where: str,
              key: int | None = None) -> tuple[dict, TaskInstance, list | None]:
        """The task's world and instance, redrawing the world while the task is unsatisfiable;
        with the cache entry of the world (see :meth:`_world`) when the task drew the reset's
        first world and wrote nothing to it (else None)."""
        cap = self.capability
        last: Unsatisfiable | None = None
        for n in range(MAX_WORLD_DRAWS):
            stage = "world generation"
            try:
                db, seed_vars, entry = self._world(rng, key if n == 0 else None)
                stage = f"task `{tdef.name}`"
                before = world_writes()
                inst = tdef.fn(rng, db, seed_vars)
            except Unsatisfiable as exc:
                last = exc
                continue
            except Exception as exc:
                raise SpecRuntimeError(
                    located(cap, exc, f"{cap.name}: {stage}", where)
                    or f"{cap.name}: task `{tdef.name}` failed at {where}: {type(exc).__name__}: {exc}"
                ) from exc
            # an earlier draw's exception: its traceback holds this frame, which holds it (a
            # cycle that kept the failed worlds alive until the garbage collector ran)
            last = None
            return db, inst, entry if world_writes() == before else None
        unsat = f"{cap.name}: task `{tdef.name}` is unsatisfiable"
        at = located(cap, last, unsat, where, message=(
            f"{unsat} at {where}: this `{str(last).split()[0]}` was empty in all "
            f"{MAX_WORLD_DRAWS} worlds drawn ({last})")) if last is not None else None
        raise SpecRuntimeError(at or (
            f"{unsat} at {where}: "
            f"{MAX_WORLD_DRAWS} worlds drawn, a `pick`/`sample` was always empty"
        ))

    def _world(self, rng: random.Random, key: int | None) -> tuple[dict, dict, list | None]:
        """``build_world`` from ``rng``'s state. A world is a pure function of that state. A reset
        that forces its task draws its first world from ``random.Random(key)`` (the task choice
        draws nothing): that world is kept under ``key`` (a copy of it, the state after it, and
        the :class:`FrozenWorld` of the first task left it unchanged) and reused when another
        task of the same seed is reset (``tracec check`` resets each task of a seed in turn).
        A redrawn world (the task was unsatisfiable in the first) is not kept: only a reset of
        the same seed and task would draw it again."""
        cap = self.capability
        cache: dict[int, list] = self.__dict__.setdefault("_worlds", {})
        entry = cache.get(key) if key is not None else None
        if entry is not None:
            rng.setstate(entry[1])
            db, seed_vars = entry[0].copy()
            return db, seed_vars, entry
        db = cap.domain.empty_db()
        seed_vars = cap.build_world(rng, db)
        if key is None:
            return db, seed_vars, None
        try:
            frozen = Frozen((db, seed_vars))  # one copy keeps seed vars pointing into db
        except Exception:  # noqa: BLE001 - an unusual seed value: just do not cache
            return db, seed_vars, None
        # the first worlds of the last few seeds
        if len(cache) >= WORLD_CACHE:
            del cache[next(iter(cache))]
        entry = cache[key] = [frozen, rng.getstate(), None]
        return db, seed_vars, entry

    def _replay_gold(self, db: dict, inst: TaskInstance, where: str) -> None:
        for n, call in enumerate(inst.gold):
            obs, ok, bug = self._box.run(db, call.name, call.arguments, observe=False)
            if not ok:
                raise GoldActionError(
                    f"{self.capability.name}: task `{inst.task}` at {where}: gold action "
                    f"{_describe_call(call)} fails: {bug or obs}", inst, n, db
                )

    def _probe_rules(self, inst: TaskInstance, where: str) -> None:
        """Evaluate every reward rule on a failed and a gold-like outcome: a rule that raises is a
        :class:`SpecRuntimeError` here, at reset, instead of at the episode's last ``step``."""
        gold = [Call(c.name, c.arguments) for c in inst.gold]
        texts = [" ".join(fmt(v) for v in inst.communicate.values())]
        probes = (
            Outcome(v=dict(inst.values)),
            Outcome.from_calls(state_matches=True, gold=inst.gold, calls=gold, forbid=inst.forbid,
                               writes=self._box.writes, texts=texts, v=dict(inst.values)),
        )
        for i, rule in enumerate(self.capability.rules):
            for o in probes:
                try:
                    rule.cond(o)
                    if rule.value is not None:
                        float(rule.value(o))
                except Exception as exc:  # noqa: BLE001 - located report of a spec bug
                    raise SpecRuntimeError(
                        located(self.capability, exc, f"{self.capability.name}: task "
                                f"`{inst.task}`: reward rule {i + 1}", where)
                        or f"{self.capability.name}: task `{inst.task}` at {where}: reward rule "
                        f"{i + 1} `{rule.text}` fails: {type(exc).__name__}: {exc}"
                    ) from exc

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        options = options or {}
        self._resets += 1
        where = f"seed {seed}" if seed is not None else f"unseeded reset #{self._resets}"
        key = int(self.np_random.integers(0, 2**63 - 1))
        rng = random.Random(key)
        tdef = self._choose_task(rng, options.get("task"))
        initial, inst, entry = self._draw(rng, tdef, where,
                                          key=key if options.get("task") is not None else None)
        # every (re)start copies the initial world (lazily: a table when first used); the world
        # of another task of this seed, unchanged, has its frozen form already
        domain = self.capability.domain
        frozen = entry[2] if entry is not None else None
        if frozen is None:
            frozen = FrozenWorld(initial, lazy=domain.read_mostly, records=domain.record_tables,
                                 originals=True)
            if entry is not None:
                entry[2] = frozen
        self._frozen_initial = frozen
        gold_db = self._frozen_initial.copy()
        self._replay_gold(gold_db, inst, where)
        self._probe_rules(inst, where)
        # the task's records (inst.values) point into this copy; read only: its tables and
        # records are also the shared originals of every copy of the initial world
        self.initial_db = initial
        self.rivals = Rivals(initial, domain.schema.enums)
        self.gold_db = gold_db
        self._gold_hash: str | None = None
        self.instance = inst
        self.hint = inst.hint or self.capability.hint
        self.show_hint = bool(options.get("hint"))
        return self._start()

    @property
    def gold_hash(self) -> str:
        """:func:`state_hash` of the world after the gold actions."""
        if self._gold_hash is None:
            self._gold_hash = state_hash(self.gold_db)
        return self._gold_hash

    def initial_copy(self) -> dict:
        """A fresh deep copy of the current task's initial world."""
        return self._frozen_initial.copy()

    def initial_for_compare(self) -> dict:
        """The initial world for comparing with the gold world, not to be written to: a lazy
        copy when copies share tables and records with the gold world (the untouched ones then
        compare by identity), else the initial world itself, uncopied."""
        return self._frozen_initial.copy() if self._frozen_initial.shares else self.initial_db

    def _current_world(self) -> dict:
        """The episode's world for comparing, without copying it when no tool ran."""
        return self._db if self._db is not None else self.initial_for_compare()

    def matches_gold(self, db: dict) -> bool:
        """``db`` equals the gold world (numbers compared numerically: 100.0 == 100, 0.1+0.2 == 0.3)."""
        return same_json(db, self.gold_db)

    def restart(self) -> tuple[str, dict]:
        """Start the current task again from its initial world (no redraw; cheap)."""
        if self.instance is None:
            raise RuntimeError("restart() needs a task: call reset() first")
        return self._start()

    _db: dict | None = None

    @property
    def db(self) -> dict:
        """The episode's world: a private copy of the initial world, made on first use (an
        episode without tool calls, such as a plain refusal, never copies it; a lazy copy
        deserialises a table or record when code first reads it)."""
        if self._db is None:
            self._db = self._frozen_initial.copy()
        return self._db

    @db.setter
    def db(self, value: dict) -> None:
        self._db = value

    def _start(self) -> tuple[str, dict]:
        inst = self.instance
        self._db: dict | None = None
        self.user = ScriptedUser(inst.replies)
        self.calls: list[Call] = []
        self.texts: list[str] = []
        self.results: list[str] = []  # every tool observation of the episode
        self.tool_bugs = []
        self.turn = 0
        self._done = False
        self.messages = [
            {"role": "system", "content": self.system_prompt(self.hint if self.show_hint else None)},
            {"role": "user", "content": inst.user},
        ]
        info = {"messages": list(self.messages), "tools": self._box.schemas, "hint": self.hint, "task": inst.task}
        return inst.user, info

    # ------------------------------------------------------------ step

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        if self._done:
            raise RuntimeError("the episode is over: call reset() first")
        if not isinstance(action, str):
            raise TypeError(f"action must be a str (one raw assistant turn), got {type(action).__name__}")
        self.turn += 1
        ended_by: str | None = None
        try:
            if len(action) > self.action_space.max_length:
                raise ToolCallParseError(
                    f"the turn has {len(action)} characters (at most {self.action_space.max_length})"
                )
            parsed = parse_turn(action)
            if len(parsed.calls) > MAX_CALLS_PER_TURN:
                raise ToolCallParseError(
                    f"{len(parsed.calls)} tool calls in one turn (at most {MAX_CALLS_PER_TURN})"
                )
        except ToolCallParseError as exc:
            obs = f"Error: {exc}"
            self.messages.append({"role": "assistant", "content": action})
            self.messages.append({"role": "user", "content": obs})
        else:
            try:
                if parsed.calls:
                    obs, ended_by = self._tool_turn(parsed.text, parsed.calls)
                else:
                    obs, ended_by = self._text_turn(parsed.text)
            except Exception as exc:  # noqa: BLE001 - never raise out of step(): report the bug
                bug = f"turn {self.turn} raised {type(exc).__name__}: {str(exc)[:200]}"
                self.tool_bugs.append(bug)
                obs, ended_by = f"Error: internal error: {bug}", None
                self.messages.append({"role": "user", "content": obs})
        terminated = ended_by is not None
        truncated = not terminated and self.turn >= self.capability.max_turns
        reward = 0.0
        info: dict[str, Any] = {"messages": list(self.messages), "task": self.instance.task}
        if terminated or truncated:
            self._done = True
            reward, breakdown = self._final(ended_by or "max_turns", truncated)
            info["reward_breakdown"] = breakdown
        return obs, reward, terminated, truncated, info

    def _tool_turn(self, text: str, calls: Sequence[Any]) -> tuple[str, str | None]:
        turn = self.turn
        ids = [f"call_{turn}_{i}" for i in range(len(calls))]
        self.messages.append({
            "role": "assistant",
            "content": text,
            "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": c.name, "arguments": _encode(c.arguments)}}
                for cid, c in zip(ids, calls)
            ],
        })
        if text:
            self.texts.append(text)
        results = []
        ended_by = None
        for cid, c in zip(ids, calls):
            obs, ok, bug = self._box.run(self.db, c.name, c.arguments)
            if bug is not None:
                self.tool_bugs.append(bug)
            if ok:
                self.calls.append(Call(c.name, c.arguments))
                if c.name in self._box.ends:
                    ended_by = "tool"
            self.messages.append({"role": "tool", "tool_call_id": cid, "name": c.name, "content": obs})
            results.append(obs)
            self.results.append(obs)
            if ended_by:
                break
        return "\n".join(results), ended_by

    def _text_turn(self, text: str) -> tuple[str, str | None]:
        self.messages.append({"role": "assistant", "content": text})
        self.texts.append(text)
        if STOP in text:
            return "", "agent"
        reply = self.user.respond(text)
        if reply is None:
            self.messages.append({"role": "user", "content": STOP})
            return STOP, "user"
        self.messages.append({"role": "user", "content": reply})
        return reply, None

    # ------------------------------------------------------------ reward

    def outcome(self) -> Outcome:
        """The outcome of the episode so far (what the rules are evaluated on)."""
        inst = self.instance
        return Outcome.from_calls(
            state_matches=self.matches_gold(self._current_world()),
            gold=inst.gold,
            calls=self.calls,
            forbid=inst.forbid,
            writes=self._box.writes,
            texts=spoken(self.texts, self.results, self.capability.communicate_raw),
            v=dict(inst.values),
            rivals=self.claim_rivals,
        )

    @property
    def claim_rivals(self) -> Rivals | None:
        """What `communicated()` refuses beside a value: the task's :class:`Rivals`, or None
        (a mention is enough) under `communicate raw`."""
        return None if self.capability.communicate_raw else self.rivals

    def _final(self, ended_by: str, truncated: bool) -> tuple[float, dict]:
        o = self.outcome()
        comm = o.communicated(*self.instance.communicate.values())
        failed = None
        if truncated:
            reward, index = 0.0, None
        else:
            try:
                reward, index = judge(self.capability.rules, o)
            except Exception as exc:  # noqa: BLE001 - reset() probes the rules; never raise here
                bug = (f"{self.capability.name}: task `{self.instance.task}`: a reward rule failed: "
                       f"{type(exc).__name__}: {exc}")
                self.tool_bugs.append(bug)
                reward, index, failed = 0.0, None, bug
        rule = self.capability.rules[index] if index is not None else None
        if rule is not None:
            rule_text = rule.text
        elif truncated:
            rule_text = "truncated at max_turns"
        else:
            rule_text = failed or "no rule holds"
        return reward, {
            "reward": reward,
            "rule": index,
            "rule_text": rule_text,
            "state_matches": o.state_matches,
            "communicated": comm,
            "progress": o.progress,
            "forbidden_called": o.forbidden_called,
            "ended_by": ended_by,
        }

    # ------------------------------------------------------------ render

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return "\n".join(f"[{m['role']}] {m.get('content') or ''}" for m in self.messages)


def register_capability_envs(envs: Mapping[str, str]) -> list[str]:
    """Register ``tracec/<name>-v0`` for each ``name -> "module:Class"`` (idempotent)."""
    ids = []
    for name, entry in envs.items():
        env_id = f"tracec/{name}-v0"
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry, disable_env_checker=True)
        ids.append(env_id)
    return ids
