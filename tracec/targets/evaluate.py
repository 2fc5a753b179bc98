"""``tracec eval`` as a library call: build jobs, run them resumably, write every output."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tracec import files
from tracec.core.seeds import (
    HELDOUT_START,
    SeedRange,
    SeedRangeError,
    adapter_training_range,
    check_eval_seeds,
    composed_adapter_dirs,
    eval_range,
)
from tracec.files import exclusive_lock
from tracec.harness.agents import AgentSpecError, make_agent, parse_agent_spec
from tracec.harness.identity import changes, compiled_env_version, tau2_version
from tracec.harness.resolve import resolve_env
from tracec.harness.results import (
    EpisodeWriter,
    build_tau2_results,
    read_episodes,
    write_json_atomic,
)
from tracec.harness.runner import Job, dedupe, pending_jobs, run_jobs
from tracec.llm.device import Placement
from tracec.targets import data as tdata
from tracec.targets.grading import Grade
from tracec.targets.metrics import summarize
from tracec.targets.overlap import instance_overlap
from tracec.targets.tau2 import Tau2Env
from tracec.targets.users import make_user_factory
from tracec.targets.world import load_world

TRAJECTORIES = "trajectories.jsonl"


ENV_TASKS = 10  # compiled-env tasks (seeds) when --tasks is not given
# the settings that define a run: a resume with any of them changed is another run
RUN_KEYS = ("user", "max_turns", "max_errors", "seed", "env_seeds", "max_new_tokens")


class EvalConfig(BaseModel):
    """One ``tracec eval`` run, as ``eval_cmd`` (or a library caller) states it."""

    agent: str
    targets: list[str] = []
    envs: list[str] = []
    split: str = "test"
    task_ids: list[str] | None = None
    num_tasks: int | None = None
    trials: int = 1
    user: str = "scripted"
    tau2_data: str | None = None
    max_turns: int = 30
    max_errors: int = 10
    batch_size: int = 4
    seed: int = 0
    env_seeds: int = HELDOUT_START  # compiled envs: task i is reset with seed env_seeds + i
    allow_train_seeds: bool = False
    max_new_tokens: int = 512  # local and composed agents
    envs_dir: str = "generated_envs"  # where capability names and gym ids are looked up first
    device: str = "cpu"  # local and composed agents: cpu, cpu:N, cuda, cuda:N, mps
    dtype: str = "auto"  # local and composed agents: auto, bf16, fp16, fp32
    out_dir: str = "runs/eval"

    @property
    def placement(self) -> Placement:
        """Where local and composed agents run, and in which dtype."""
        return Placement.parse(self.device, self.dtype)

    def env_seed_range(self) -> SeedRange:
        """The seeds compiled envs are reset with (refused when past the maximum seed)."""
        return eval_range(self.env_seeds, self.num_tasks or ENV_TASKS)


def _tau2_domain(target: str) -> str:
    kind, _, domain = target.partition(":")
    if kind != "tau2" or domain not in tdata.DOMAINS:
        raise ValueError(f"bad --target {target!r}: expected tau2:airline or tau2:retail")
    return domain


def _tau2_reward_info(env: Any, info: dict) -> dict:
    bd = {k: v for k, v in (info.get("reward_breakdown") or {}).items() if k != "ended_by"}
    if "reward" not in bd:
        return {}
    return {"reward_info": Grade.model_validate(bd).to_tau2_reward_info(),
            "domain": info.get("domain")}


def build_jobs(cfg: EvalConfig, judge: Any = None, versions: dict[str, dict] | None = None,
               ) -> tuple[list[Job], dict[str, Callable[[], Any]], dict]:
    """``(jobs, env constructors by env name, τ² worlds by env name)``; ``versions`` (when
    given) is filled with each env's version (:mod:`tracec.harness.identity`)."""
    versions = {} if versions is None else versions
    jobs: list[Job] = []
    makers: dict[str, Callable[[], Any]] = {}
    worlds: dict[str, Any] = {}
    user = make_user_factory(cfg.user) if cfg.targets else None
    for target in cfg.targets:
        domain = _tau2_domain(target)
        name = f"tau2:{domain}"
        world = load_world(domain, cfg.tau2_data)
        tasks = tdata.select_tasks(tdata.resolve_data_dir(cfg.tau2_data), domain, cfg.split,
                                   cfg.task_ids, cfg.num_tasks)
        worlds[name] = (world, tasks)
        versions[name] = tau2_version(name, [t.model_dump(mode="json") for t in tasks], world.policy)
        makers[name] = (lambda w=world: Tau2Env(world=w, task_ids=list(w.tasks), user=user,
                                                 max_turns=cfg.max_turns,
                                                 max_errors=cfg.max_errors, judge=judge))
        for trial in range(cfg.trials):
            jobs += [Job(name, t.id, trial, cfg.seed + trial, {"task_id": t.id}) for t in tasks]
    for spec in cfg.envs:
        env = resolve_env(spec, cfg.envs_dir)
        name = env.gym_id
        makers[name] = env.factory
        versions[name] = compiled_env_version(name, env.cls)
        span = cfg.env_seed_range()
        seeds = range(span.start, span.stop)
        for trial in range(cfg.trials):
            jobs += [Job(name, str(seed), trial, seed) for seed in seeds]
    return jobs, makers, worlds


LOCK = ".lock"


def spec_adapter_dirs(spec: str, strict: bool = True) -> list[str]:
    """The adapter folders behind an agent spec: ``local:M+adapter:DIR`` gives DIR,
    ``composed:DIR`` every adapter its ``moe.json`` lists; others none. ``strict=False``: a string
    that is not an agent spec (a prebuilt agent's label) has none."""
    try:
        kind, params = parse_agent_spec(spec)
    except AgentSpecError:
        if strict:
            raise
        return []
    if kind == "local":
        return [params["adapter"]] if params["adapter"] else []
    if kind == "composed":
        return [str(p) for p in composed_adapter_dirs(params["directory"])]
    return []


def check_adapter_seeds(seeds: SeedRange, adapter: str | Path) -> None:
    """Fail closed: refuse the eval unless the adapter's ``tracec.json`` is a readable record of
    its training seeds and those do not overlap ``seeds`` (``--allow-train-seeds`` skips this)."""
    meta_path = Path(adapter) / "tracec.json"
    fix = ("so tracec cannot tell which seeds it was trained on; evaluate it anyway with "
           "--allow-train-seeds")
    try:
        files.read_json(meta_path, "adapter metadata", expect=dict, limit=files.META_BYTES)
    except files.InputError as exc:
        raise SeedRangeError(f"{exc}, {fix}") from None
    try:
        trained = adapter_training_range(adapter)
    except (ValueError, TypeError, AttributeError):
        trained = None
    if trained is None:
        raise SeedRangeError(f"{meta_path}: records no training seeds (seeds.train), {fix}")
    check_eval_seeds(seeds, adapter)


def _overlap(cfg: EvalConfig, makers: dict, worlds: dict) -> dict:
    """The summary's ``instance_overlap``: evaluated instances that equal a training one."""
    compiled = {n: m for n, m in makers.items() if n not in worlds}
    if not compiled:
        return {"why": "τ² tasks are fixed, not drawn from seeds", "evaluated": 0, "repeated": 0,
                "envs": {}}
    span = cfg.env_seed_range()
    return instance_overlap(compiled, range(span.start, span.stop),
                            spec_adapter_dirs(cfg.agent, strict=False))


def run_eval(cfg: EvalConfig, judge: Any = None, progress: bool = True, agent: Any = None,
             prepare: Callable[[list[str]], None] | None = None) -> dict:
    """Run (or resume) an evaluation; returns the summary that is also written to summary.json.

    ``prepare(names)``, when given, runs once everything is validated and the agent is built,
    before any output is read or written; ``names``: the files this run writes in ``out_dir``
    (``tracec eval --fresh`` deletes its earlier outputs there)."""
    if agent is None:
        parse_agent_spec(cfg.agent)  # a bad spec fails before any data is loaded
    if cfg.envs:  # every agent kind: the same seeds, or none at all
        cfg.env_seed_range()
    if cfg.envs and not cfg.allow_train_seeds:  # also for a prebuilt agent (tracec run)
        for adapter in spec_adapter_dirs(cfg.agent, strict=agent is None):
            check_adapter_seeds(cfg.env_seed_range(), adapter)
    versions: dict[str, dict] = {}
    jobs, makers, worlds = build_jobs(cfg, judge, versions)
    out = Path(cfg.out_dir)
    with exclusive_lock(out / LOCK, f"{out}/"):  # two evals on one --out would both run all
        return _run_eval(cfg, agent, jobs, makers, worlds, out, progress, versions, prepare)


def output_names(worlds: dict) -> list[str]:
    """The files an eval writes in its folder."""
    return [LOCK, TRAJECTORIES, "summary.json",
            *(f"tau2_{world.domain_name}_results.json" for world, _ in worlds.values())]


def check_same_run(traj_path: Path, done: list, run: dict, versions: dict[str, dict]) -> None:
    """Refuse to resume into episodes of another agent, other run settings or another env
    version, in one line naming what changed."""
    what: list[str] = []
    for e in done:
        what += changes(e.info.get("run"), run)
        what += [f"{e.env}: {c}" for c in changes(e.info.get("env_version"),
                                                 versions.get(e.env) or {})]
        if what:
            break
    if what:
        raise ValueError(f"{traj_path} holds episodes of another run ({'; '.join(what)}); "
                         "use another --out or --fresh")


def _run_eval(cfg: EvalConfig, agent: Any, jobs: list, makers: dict, worlds: dict, out: Path,
              progress: bool, versions: dict[str, dict] | None = None,
              prepare: Callable[[list[str]], None] | None = None) -> dict:
    versions = versions or {}
    traj_path = out / TRAJECTORIES
    if agent is None:
        kind = parse_agent_spec(cfg.agent)[0]
        opts = ({"max_new_tokens": cfg.max_new_tokens, "place": cfg.placement}
                if kind in ("local", "composed") else {})
        agent = make_agent(cfg.agent, **opts)
    agent_name = getattr(agent, "name", cfg.agent)
    if prepare is not None:
        prepare(output_names(worlds))
    run = {"agent": agent_name, **{k: getattr(cfg, k) for k in RUN_KEYS}}
    done = read_episodes(traj_path)
    other = {e.info.get("agent") for e in done} - {agent_name, None}
    if other:
        raise ValueError(
            f"{traj_path} holds episodes of another agent ({', '.join(sorted(other))}); "
            "use another --out or --fresh"
        )
    check_same_run(traj_path, done, run, versions)
    todo = pending_jobs(jobs, done)

    def stamp(job: Job) -> dict:  # what each episode was measured on
        return {"env_version": versions.get(job.env) or {"env_id": job.env}, "run": run}

    with EpisodeWriter(traj_path) as writer:
        if progress and todo:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            with Progress(TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(),
                          TextColumn("reward {task.fields[avg]:.3f}"), TimeRemainingColumn()) as bar:
                rewards: list[float] = []
                task = bar.add_task("eval", total=len(jobs), completed=len(jobs) - len(todo), avg=0.0)

                def tick(ep: Any) -> None:
                    rewards.append(ep.reward)
                    bar.update(task, advance=1, avg=sum(rewards) / len(rewards))

                run_jobs(todo, lambda n: makers[n](), agent, writer, cfg.batch_size, tick,
                         _tau2_reward_info, stamp)
        else:
            run_jobs(todo, lambda n: makers[n](), agent, writer, cfg.batch_size, None,
                     _tau2_reward_info, stamp)

    wanted = {j.key for j in jobs}
    episodes = [e for e in dedupe(read_episodes(traj_path)) if (e.env, e.task_id, e.trial) in wanted]
    tau2_paths = []
    for name, (world, tasks) in worlds.items():
        eps = [e for e in episodes if e.env == name]
        payload = build_tau2_results(
            eps, [t.model_dump(mode="json", exclude_none=True) for t in tasks], world.domain_name,
            world.policy, agent_name, cfg.user, cfg.trials, cfg.max_turns, cfg.max_errors, cfg.seed,
        )
        path = out / f"tau2_{world.domain_name}_results.json"
        write_json_atomic(path, payload)
        tau2_paths.append(str(path))
    summary = {
        "agent": agent_name,
        "episodes": len(episodes),
        "resumed": len(jobs) - len(todo),
        "metrics": [m.model_dump() for m in summarize(episodes)],
        "trajectories": str(traj_path),
        "tau2_results": tau2_paths,
        "config": cfg.model_dump(),
        "run": run,
        "env_versions": versions,
    }
    summary["instance_overlap"] = _overlap(cfg, makers, worlds)
    chosen: dict[str, dict[str, int]] = {}  # classifier routing: env -> adapters -> episodes
    for e in episodes:
        if e.info.get("adapters_chosen") is not None:
            top = "+".join(e.info["adapters_chosen"]) or "<none>"
            chosen.setdefault(e.env, {}).setdefault(top, 0)
            chosen[e.env][top] += 1
    if chosen:
        summary["adapters_chosen"] = chosen
    write_json_atomic(out / "summary.json", summary)
    return summary
