"""The stages of ``tracec run``: each reads earlier stages' folders and fills its own.

Every stage is ``run(ctx, resume) -> outputs`` (a JSON-able dict recorded in its manifest) plus
``inputs(ctx)``: the settings it depends on, hashed with the previous stage's hash so that a change
upstream re-runs everything after it. Stages call the library, never the CLIs.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracec.analysis.aggregate import Thresholds, aggregate, load_selection, write_selection
from tracec.analysis.candidates import write_candidates
from tracec.analysis.importers import load_many, write_jsonl
from tracec.analysis.llm_labeler import discover, label_runs
from tracec.analysis.offline import offline_candidates, offline_run
from tracec.analysis.propose import domain_tools_text, load_language_reference, propose_one
from tracec.analysis.report import coverage_plot
from tracec.analysis.runs import write_run
from tracec.checks.variants import Checked, check_sharing
from tracec.compiler import build as env_build
from tracec.compiler.api import compile_file, find_specs
from tracec.core.seeds import SeedRangeError
from tracec.harness.agents import make_agent, parse_agent_spec
from tracec.harness.resolve import EnvTarget, resolve_env
from tracec.llm.client import ChatClient, LLMError
from tracec.outputs import write_atomic
from tracec.pipeline.config import RunConfig
from tracec.pipeline.demos import write_demos
from tracec.pipeline.manifest import hash_files
from tracec.pipeline.memplan import train_settings
from tracec.targets import data as tdata
from tracec.targets.evaluate import EvalConfig, run_eval
from tracec.targets.tau2 import Tau2Env
from tracec.targets.users import make_user_factory
from tracec.targets.world import load_world
from tracec.train.config import TrainConfig
from tracec.train.plots import read_metrics, report_training


class StageSkipped(Exception):
    """The stage has nothing to do (or is not supported); its message goes into the report."""


class StageError(Exception):
    """A stage failed for a reason the user can act on."""


@dataclass
class RunContext:
    cfg: RunConfig
    run_dir: Path
    quiet: bool = False
    log: Callable[[str], None] = print
    outputs: dict[str, dict] = field(default_factory=dict)  # stage -> outputs of finished stages
    agents: dict[str, Any] = field(default_factory=dict)  # agent spec -> agent built in this run

    def dir(self, stage: str) -> Path:
        return self.run_dir / stage

    def out(self, stage: str) -> dict:
        return self.outputs.get(stage) or {}


# ---------------------------------------------------------------------------- helpers
def agent_for(ctx: RunContext, spec: str) -> Any:
    """The run's agent for a spec, built once: the baseline, held-out and final evals reuse one
    model (and its cached prompt prefixes: the τ² system prompt is prefilled once per model)."""
    if spec not in ctx.agents:
        ctx.agents[spec] = make_agent_for(ctx, spec)
    return ctx.agents[spec]


def make_agent_for(ctx: RunContext, spec: str) -> Any:
    """An agent from a spec, with the run's generation settings; a local or composed model on the
    run's device (``device = "cuda"`` evaluates on the GPU, not on the CPU)."""
    kind, _ = parse_agent_spec(spec)
    m = ctx.cfg.model
    if kind in ("local", "composed"):
        return make_agent(spec, max_new_tokens=m.max_new_tokens, temperature=m.temperature,
                          place=ctx.cfg.placement)
    if kind == "openai":
        return make_agent(spec, max_tokens=m.max_new_tokens, temperature=m.temperature)
    return make_agent(spec)


def _eval(ctx: RunContext, agent_spec: str, out_dir: Path, split: str, num_tasks: int | None,
          agent: Any = None, envs: list[str] | None = None) -> dict:
    t = ctx.cfg.target
    ecfg = EvalConfig(
        agent=agent_spec, targets=[] if envs else [f"tau2:{t.domain}"], envs=envs or [],
        split=split, num_tasks=num_tasks, trials=1 if envs else t.trials, user=t.user,
        tau2_data=t.data_dir, max_turns=t.max_turns, max_errors=t.max_errors,
        batch_size=t.batch_size, seed=ctx.cfg.seed, out_dir=str(out_dir))
    summary = run_eval(ecfg, progress=not ctx.quiet,
                       agent=agent if agent is not None else agent_for(ctx, agent_spec))
    return {"agent": summary["agent"], "episodes": summary["episodes"],
            "resumed": summary["resumed"], **_overall(summary),
            "trajectories": summary["trajectories"], "tau2_results": summary["tau2_results"]}


def _overall(summary: dict) -> dict:
    """An eval summary's overall pass rate and mean reward (its "all" row; 0 when empty)."""
    rows = summary["metrics"]
    overall = next((r for r in rows if r["group"] == "all"), rows[0] if rows else None)
    return {"pass_rate": overall["pass_rate"] if overall else 0.0,
            "avg_reward": overall["avg_reward"] if overall else 0.0}


def _api_key(env_name: str) -> str | None:
    return os.environ.get(env_name)


# ---------------------------------------------------------------------------- 1. baseline
def baseline_inputs(ctx: RunContext) -> Any:
    return {"target": ctx.cfg.target.model_dump(), "agent": ctx.cfg.base_agent(),
            "model": ctx.cfg.model.model_dump(), "seed": ctx.cfg.seed}


def run_baseline(ctx: RunContext, resume: bool) -> dict:
    """Evaluate the base agent on the target's train split (resumable per episode)."""
    t = ctx.cfg.target
    return _eval(ctx, ctx.cfg.base_agent(), ctx.dir("baseline"), t.train_split, t.train_tasks)


# ---------------------------------------------------------------------------- 2. analyze
def analyze_inputs(ctx: RunContext) -> Any:
    return {"labeler": ctx.cfg.labeler.model_dump(), "thresholds": ctx.cfg.thresholds.model_dump()}


def run_analyze(ctx: RunContext, resume: bool) -> dict:
    """Import the baseline trajectories, label them, aggregate into capabilities.json."""
    out = ctx.dir("analyze")
    sources = ctx.out("baseline").get("tau2_results") or []
    if not sources:
        raise StageError("the baseline stage wrote no τ² results to analyze")
    trajs = load_many(sources)
    if not trajs:
        raise StageError("no trajectories in the baseline results")
    write_jsonl(trajs, out / "trajectories.jsonl")
    lab = ctx.cfg.labeler
    if lab.kind == "offline":
        candidates = offline_candidates()
        runs = [offline_run(trajs)]
    else:
        client = ChatClient(lab.endpoint, lab.model, api_key=_api_key(lab.api_key_env))
        try:
            candidates = discover(client, trajs)
            runs, _ = label_runs(client, trajs, candidates, runs=lab.runs,
                                 batch_size=lab.batch_size, concurrency=lab.concurrency,
                                 cache_dir=out / "cache")
        except LLMError as exc:
            raise StageError(f"LLM labeler: {exc}") from None
    write_candidates(candidates, out / "candidates.json")
    for r in runs:
        write_run(r, out / "runs" / f"run_{r.attempt:02d}.json")
    th = ctx.cfg.thresholds
    k = th.k if th.k is not None else max(1, -(-4 * len(runs) // 5))
    thresholds = Thresholds(rho=th.rho, delta=th.delta, k=k)
    desc = {c.name: c.description for c in candidates}
    everything = aggregate(runs, desc, thresholds, include_all=True)
    selected = [e for e in everything if e.passes_consistency]
    write_selection(selected, out / "capabilities.json")
    write_selection(everything, out / "capabilities_all.json")
    failed = sum(1 for t in trajs if not t.success)
    coverage_plot(everything, failed, out / "coverage.png")
    return {"trajectories": len(trajs), "failed": failed, "runs": len(runs), "k": k,
            "selected": [e.skill for e in selected],
            "capabilities": str(out / "capabilities.json")}


# ---------------------------------------------------------------------------- 3. specs
def _spec_files(directory: str) -> list[Path]:
    path = Path(directory)
    if not path.is_dir():
        raise StageError(f"specs.dir {directory} is not a folder")
    return find_specs([path])


def specs_inputs(ctx: RunContext) -> Any:
    s = ctx.cfg.specs
    files = _spec_files(s.dir) if s.source == "dir" and Path(s.dir).is_dir() else []
    return {"specs": s.model_dump(), "files": hash_files(files),
            "domain": ctx.cfg.target.domain}


def choose_specs(spec_caps: dict[str, Path], selected: list[str], mapping: dict[str, str],
                 train_all: bool) -> dict[str, list[str]]:
    """Spec capability -> the selected capabilities it serves (every spec when ``train_all``)."""
    chosen: dict[str, list[str]] = {name: [] for name in spec_caps} if train_all else {}
    for cap in selected:
        target = mapping.get(cap, cap)
        if target in spec_caps:
            chosen.setdefault(target, []).append(cap)
    return dict(sorted(chosen.items()))


def run_specs(ctx: RunContext, resume: bool) -> dict:
    """Take specs from a folder (matched to the selection) or propose them with an LLM."""
    s = ctx.cfg.specs
    out = ctx.dir("specs")
    out.mkdir(parents=True, exist_ok=True)
    for f in out.glob("*.tracec"):
        f.unlink()
    selected = ctx.out("analyze").get("selected") or []
    if s.source == "propose":
        return _propose(ctx, selected, out)
    spec_caps: dict[str, Path] = {}
    for path in _spec_files(s.dir):
        res = compile_file(path)
        if not res.ok or res.ir is None:
            raise StageError(f"spec {path} does not compile:\n{res.rendered}")
        if s.match_domain and res.ir.domain != ctx.cfg.target.domain:
            continue
        spec_caps[res.ir.name] = path
        for variant in res.variants:  # `variant NAME { ... }`: its env comes with the spec
            assert variant.ir is not None
            spec_caps[variant.ir.name] = path
    chosen = choose_specs(spec_caps, selected, s.mapping, s.train_all_specs)
    unmatched = [c for c in selected if s.mapping.get(c, c) not in spec_caps]
    for name in chosen:
        shutil.copy2(spec_caps[name], out / spec_caps[name].name)
    write_atomic(out / "selection.json", json.dumps(
        {"chosen": chosen, "unmatched": unmatched, "train_all_specs": s.train_all_specs},
        indent=2) + "\n")
    return {"specs": sorted(chosen), "serves": chosen, "unmatched": unmatched, "dir": str(out)}


def _propose(ctx: RunContext, selected: list[str], out: Path) -> dict:
    s = ctx.cfg.specs
    entries = load_selection(Path(ctx.out("analyze")["capabilities"]))
    client = ChatClient(s.endpoint, s.model, api_key=_api_key(s.api_key_env))
    lang = load_language_reference(None)
    tools = domain_tools_text(ctx.cfg.target.domain)
    chosen, failed = {}, {}
    for sel in entries:
        r = propose_one(client, sel, ctx.cfg.target.domain, lang, tools, out, s.max_tries,
                        s.check_seeds)
        if r.ok:
            chosen[sel.skill] = [sel.skill]
        else:
            failed[sel.skill] = (r.error or "").splitlines()[0] if r.error else "failed"
    write_atomic(out / "selection.json", json.dumps({"chosen": chosen, "failed": failed}, indent=2))
    return {"specs": sorted(chosen), "serves": chosen, "unmatched": sorted(failed),
            "propose_failed": failed, "dir": str(out)}


# ---------------------------------------------------------------------------- 4. compile + check
def compile_inputs(ctx: RunContext) -> Any:
    return {"check_seeds": ctx.cfg.specs.check_seeds}


def run_compile(ctx: RunContext, resume: bool) -> dict:
    """Compile the chosen specs into ``compile/envs/`` and run the offline checks on each env."""
    specs_dir = Path(ctx.out("specs").get("dir") or ctx.dir("specs"))
    files = sorted(specs_dir.glob("*.tracec"))
    out = ctx.dir("compile")
    envs_dir = out / "envs"
    if envs_dir.exists():
        shutil.rmtree(envs_dir)
    if not files:
        raise StageSkipped("no specs were chosen, nothing to compile")
    bp = env_build.plan(files, envs_dir)
    if not bp.ok:
        raise StageError("specs do not compile:\n" + "\n".join(r.rendered for r in bp.results if not r.ok))
    env_build.write(bp, envs_dir)
    checks, envs, rejected = {}, {}, {}
    shared: Checked = []  # a variant shares its base's check (tracec.checks.variants)
    for r in bp.results:
        rep = check_sharing(r.module, shared, ctx.cfg.specs.check_seeds, check_env=True)
        checks[r.ir.name] = rep.to_dict()
        if rep.passed:
            envs[r.ir.name] = str(envs_dir / f"{r.ir.name}.py")
        else:
            rejected[r.ir.name] = rep.problems
    write_atomic(out / "checks.json", json.dumps(checks, indent=2) + "\n")
    return {"envs": envs, "rejected": rejected, "checks": str(out / "checks.json")}


# ---------------------------------------------------------------------------- 5. train
def train_inputs(ctx: RunContext) -> Any:
    return {"train": ctx.cfg.train.model_dump(), "budget": ctx.cfg.budget.model_dump(),
            "base": ctx.cfg.model.base, "device": ctx.cfg.device, "seed": ctx.cfg.seed}


def train_config(ctx: RunContext, env_name: str, n_adapters: int, budget: int | None = None,
                 index: int = 0):
    """The TrainConfig of one adapter; a rollout budget caps the steps (at least one).

    Adapter ``index`` gets seed ``seed + index``: distinct LoRA inits and rollout seeds.
    """
    settings = train_settings(ctx.cfg)  # on a GPU: memory_gb from the device
    settings["seed"] += index
    cfg = TrainConfig(model=ctx.cfg.model.base, env=env_name, device=ctx.cfg.device, **settings)
    budget = budget if budget is not None else ctx.cfg.budget.train_rollouts
    if budget is not None:
        per_step = cfg.group_size * cfg.groups_per_step
        steps = max(1, budget // (max(1, n_adapters) * per_step))
        cfg = cfg.model_copy(update={"steps": min(cfg.steps, steps)})
    return cfg


def _step_metrics(adapter_dir: Path) -> list[dict]:
    """The GRPO steps of an adapter's metrics.jsonl (none when the file is absent or empty; a
    line that is not JSON is an error naming ``path:line``)."""
    path = adapter_dir / "metrics.jsonl"
    if not path.is_file() or not path.read_text().strip():
        return []
    return read_metrics(adapter_dir)


def rollouts_spent(adapter_dir: Path) -> int:
    """Training episodes recorded in an adapter's metrics.jsonl."""
    return sum(r.get("episodes", 0) for r in _step_metrics(adapter_dir))


def fit_adapter(ctx: RunContext, env: Any, config: Any, out: Path, resume: bool) -> dict:
    """Train (or finish, or reuse) one adapter; returns its summary."""
    from tracec.train.trainer import GRPOTrainer

    meta_path = out / "tracec.json"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("config") == config.model_dump(mode="json") and meta.get("steps_done") == config.steps:
            ctx.log(f"  adapter {env.capability}: already trained, reused")
            return _adapter_summary(env.capability, out, meta)
    has_ckpt = (out / "checkpoints" / "last" / "state.json").exists()
    trainer = GRPOTrainer(config, env, out)

    def on_step(m: dict) -> None:
        ctx.log(f"  {env.capability} step {m['step']}/{config.steps}: reward {m['reward_mean']:.3f} "
                f"kept {m['kept_share']:.0%} ({m['step_seconds']:.0f}s)")

    def on_sft_step(m: dict) -> None:
        ctx.log(f"  {env.capability} sft {m['sft_step']}/{config.warmup_sft}: loss {m['sft_loss']:.3f} "
                f"token acc {m['sft_token_accuracy']:.0%} ({m['step_seconds']:.0f}s)")

    trainer.fit(resume=resume and has_ckpt, on_step=on_step, on_sft_step=on_sft_step)
    try:
        report_training(out)
    except Exception as exc:  # noqa: BLE001 - a plot is nice to have, never fatal
        ctx.log(f"  (no training plot: {exc})")
    return _adapter_summary(env.capability, out, json.loads(meta_path.read_text()))


def _adapter_summary(cap: str, out: Path, meta: dict) -> dict:
    sft = meta.get("sft") or None
    return {"capability": cap, "dir": str(out), "steps": meta.get("steps_done"),
            "final": meta.get("metrics") or {}, "rollouts": rollouts_spent(out),
            "curves": str(out / "training_curves.png"), "grpo": grpo_summary(out),
            "sft": {k: sft.get(k) for k in ("steps", "demos", "loss_first", "loss_last",
                                            "token_accuracy_first", "token_accuracy_last")}
            if sft else None,
            "update": update_norms(out)}


def grpo_summary(adapter_dir: Path) -> dict:
    """GRPO steps, sampled and kept groups (groups with reward variance), steps that updated."""
    rows = _step_metrics(adapter_dir)
    return {"steps": len(rows), "groups": sum(r.get("groups", 0) for r in rows),
            "kept_groups": sum(r.get("kept_groups", 0) for r in rows),
            "updates": sum(1 for r in rows if r.get("kept_groups", 0) > 0),
            "trained_tokens": sum(r.get("trained_tokens", 0) for r in rows),
            "rollout_success": [r.get("success_rate") for r in rows]}


def _lora_tensors(folder: Path) -> dict | None:
    f = folder / "adapter_model.safetensors"
    if not f.is_file():
        return None
    from safetensors.torch import load_file

    return load_file(str(f))


def update_norms(adapter_dir: Path) -> dict:
    """How far training moved the adapter: Frobenius norm of the LoRA weight change ΔW = B·A
    summed over layers (0 means the adapter computes the base model's function), and of the GRPO
    part: the LoRA parameters after GRPO minus those after the SFT warm start (``sft/``)."""
    final = _lora_tensors(adapter_dir)
    if final is None:
        return {}
    out: dict[str, Any] = {}
    sq = 0.0
    for name, b in final.items():
        if "lora_B" in name:
            a = final.get(name.replace("lora_B", "lora_A"))
            if a is not None:
                sq += float((b.float() @ a.float()).pow(2).sum())
    out["delta_w_norm"] = math.sqrt(sq)
    sft = _lora_tensors(adapter_dir / "sft")
    if sft is not None and sft.keys() == final.keys():
        diff = math.sqrt(sum(float((final[k].float() - sft[k].float()).pow(2).sum()) for k in final))
        base = math.sqrt(sum(float(v.float().pow(2).sum()) for v in sft.values()))
        out["grpo_param_change"] = diff
        out["grpo_param_change_rel"] = diff / base if base else 0.0
    return out


def run_train(ctx: RunContext, resume: bool) -> dict:
    """Train one GRPO LoRA adapter per checked capability env (resumable from checkpoints)."""
    envs = ctx.out("compile").get("envs") or {}
    names = sorted(envs)[: ctx.cfg.train.max_adapters] if ctx.cfg.train.max_adapters else sorted(envs)
    if not names:
        raise StageSkipped("no capability env passed the checks, nothing to train")
    adapters = {}
    for i, name in enumerate(names):
        env = resolve_env(envs[name])
        config = train_config(ctx, env.name, len(names), index=i)
        sft = f"{config.warmup_sft} SFT step(s) × {config.sft_batch} demos, then " if config.warmup_sft else ""
        ctx.log(f"training {name}: {sft}{config.steps} GRPO step(s) × {config.groups_per_step} "
                f"group(s) × G={config.group_size}")
        adapters[name] = fit_adapter(ctx, env, config, ctx.dir("train") / name, resume)
    return {"adapters": adapters, "rollouts": sum(a["rollouts"] for a in adapters.values())}


# ---------------------------------------------------------------------------- 6. compose
def compose_inputs(ctx: RunContext) -> Any:
    return {"compose": ctx.cfg.compose.model_dump(), "seed": ctx.cfg.seed}


def run_compose(ctx: RunContext, resume: bool) -> dict:
    """Train a token router over the adapters on oracle demonstrations in each capability env."""
    from tracec.compose.api import train_composed
    from tracec.compose.errors import ComposeError
    from tracec.compose.training import ComposeTrainConfig, read_trajectories, select_successful

    c = ctx.cfg.compose
    adapters = ctx.out("train").get("adapters") or {}
    if not c.enabled:
        raise StageSkipped("composition disabled in the config (compose.enabled = false)")
    if not adapters:
        raise StageSkipped("no adapters were trained, nothing to compose")
    out = ctx.dir("compose")
    envs = ctx.out("compile")["envs"]
    classes = {n: resolve_env(envs[n]).factory for n in sorted(adapters)}
    demos = write_demos(classes, c.demo_episodes, ctx.cfg.seed, out / "demos.jsonl")
    rows = read_trajectories([demos["trajectories"]])
    if c.routing == "classifier":
        return _compose_classifier(ctx, [adapters[n]["dir"] for n in sorted(adapters)], rows, out)
    if not select_successful(rows):
        raise StageError(f"none of the {len(rows)} oracle demonstrations succeeded; no gate data")
    tcfg = ComposeTrainConfig(epochs=c.epochs, max_steps=c.max_steps, batch_size=c.batch_size,
                              lr=c.lr, alpha=c.alpha, max_length=c.max_length, seed=ctx.cfg.seed)
    try:
        result = train_composed([adapters[n]["dir"] for n in sorted(adapters)], rows, out / "model",
                                tcfg, data=[demos["trajectories"]], top_k=c.top_k,
                                routing=c.routing, holdout=c.holdout, place=ctx.cfg.placement)
    except ComposeError as exc:
        raise StageError(f"compose: {exc}") from None
    return {"dir": result.out, "steps": result.steps, "demos": demos["episodes"],
            "demos_used": result.examples, "skipped_long": result.skipped_long,
            "routing": result.routing, "ce": result.ce, "slots": result.slots}


def _compose_classifier(ctx: RunContext, adapter_dirs: list[str], rows: list[dict], out: Path) -> dict:
    """The paper's routing: no gates to train; the base model classifies each task over the
    adapters' descriptions. Records the classifier's choice on every oracle demonstration."""
    from tracec.compose.api import build_composed
    from tracec.compose.classify import classify
    from tracec.compose.config import ClassifierSpec
    from tracec.compose.errors import ComposeError

    c = ctx.cfg.compose
    spec = ClassifierSpec(top_p=c.top_p, scoring=c.classifier_scoring)
    try:
        cm = build_composed(adapter_dirs, top_k=c.top_k, place=ctx.cfg.placement)
    except ComposeError as exc:
        raise StageError(f"compose: {exc}") from None
    cm.config = cm.config.model_copy(update={"routing": "classifier", "classifier": spec})
    path = cm.save(out / "model")
    slot_of = {Path(d).name: s for d, s in zip(adapter_dirs, cm.slots[1:])}
    choices: dict[str, dict[str, int]] = {}
    right = 0
    for row in rows:
        env = str(row.get("env", "")).removeprefix("tracec/").removesuffix("-v0")
        chosen = classify(cm, row["messages"], spec).chosen
        top = chosen[0] if len(chosen) == 1 else "+".join(chosen)
        choices.setdefault(env, {}).setdefault(top, 0)
        choices[env][top] += 1
        right += int(chosen == [slot_of.get(env)])
    write_atomic(out / "classifier_choices.json", json.dumps(choices, indent=2) + "\n")
    return {"dir": str(path), "steps": 0, "demos": len(rows), "demos_used": 0, "skipped_long": 0,
            "routing": "classifier", "classifier": spec.model_dump(), "slots": list(cm.slots),
            "classifier_choices": choices, "classifier_right": right}


# ---------------------------------------------------------------------------- 7. final eval
def final_inputs(ctx: RunContext) -> Any:
    return {"final_eval": ctx.cfg.final_eval.model_dump(), "target": ctx.cfg.target.model_dump()}


def final_agents(ctx: RunContext) -> list[tuple[str, str]]:
    """``(label, agent spec)`` of every model the final eval compares."""
    fe = ctx.cfg.final_eval
    out = []
    if fe.base:
        out.append(("base", ctx.cfg.base_agent()))
    if fe.adapters:
        for cap, a in sorted((ctx.out("train").get("adapters") or {}).items()):
            out.append((f"adapter-{cap}", ctx.cfg.adapter_agent(a["dir"], cap)))
    if fe.composed and ctx.out("compose").get("dir"):
        out.append(("composed", f"composed:{ctx.out('compose')['dir']}"))
    return out


def env_eval_plan(ctx: RunContext) -> list[tuple[str, str, list[str]]]:
    """``(label, agent spec, env files)`` of the held-out env evals: base and composed on every
    trained env, each adapter on its own env (on every env with ``final_eval.env_cross``)."""
    fe = ctx.cfg.final_eval
    envs = ctx.out("compile").get("envs") or {}
    adapters = ctx.out("train").get("adapters") or {}
    trained = [envs[n] for n in sorted(adapters) if n in envs]
    if not fe.env_tasks or not trained:
        return []
    plan = []
    for label, spec in final_agents(ctx):
        cap = label.removeprefix("adapter-") if label.startswith("adapter-") else None
        own = [envs[cap]] if cap in envs and not fe.env_cross else trained
        plan.append((label, spec, own if cap else trained))
    return plan


def _env_eval(ctx: RunContext, label: str, spec: str, env_files: list[str]) -> dict:
    fe, t = ctx.cfg.final_eval, ctx.cfg.target
    ecfg = EvalConfig(agent=spec, envs=env_files, num_tasks=fe.env_tasks, max_turns=t.max_turns,
                      max_errors=t.max_errors, batch_size=fe.env_batch_size, seed=ctx.cfg.seed,
                      env_seeds=fe.env_first_seed, max_new_tokens=ctx.cfg.model.max_new_tokens,
                      out_dir=str(ctx.dir("heldout_eval") / label))
    summary = run_eval(ecfg, progress=not ctx.quiet, agent=agent_for(ctx, spec))
    return {"agent": summary["agent"], "episodes": summary["episodes"], "envs": env_files,
            "first_seed": fe.env_first_seed, **_overall(summary),
            "trajectories": summary["trajectories"],
            "instance_overlap": summary.get("instance_overlap")}


def run_heldout_eval(ctx: RunContext, resume: bool) -> dict:
    """Evaluate base, each adapter and the composed model on held-out seeds of the trained
    capability envs (``final_eval.env_tasks``; resumable per episode)."""
    plan = env_eval_plan(ctx)
    if not plan:
        raise StageSkipped("no held-out env eval (final_eval.env_tasks = 0, or no adapter trained)")
    env_results = {}
    for label, spec, env_files in plan:
        ctx.log(f"held-out eval: {label}")
        try:
            env_results[label] = _env_eval(ctx, label, spec, env_files)
        except SeedRangeError as exc:
            raise StageError(str(exc)) from None
    return {"env_results": env_results}


def run_final_eval(ctx: RunContext, resume: bool) -> dict:
    """Evaluate base, each adapter and the composed model on the target's test split."""
    t = ctx.cfg.target
    results = {}
    for label, spec in final_agents(ctx):
        ctx.log(f"final eval: {label}")
        results[label] = _eval(ctx, spec, ctx.dir("final_eval") / label, t.test_split, t.test_tasks)
    ctx.agents.clear()  # the last stage that evaluates these models: free them
    if not results:
        raise StageSkipped("final_eval selects no model")
    return {"results": results}


# ---------------------------------------------------------------------------- 8. GRPO baseline
def grpo_inputs(ctx: RunContext) -> Any:
    return {"baseline": ctx.cfg.baseline.model_dump(), "train": ctx.cfg.train.model_dump(),
            "budget": ctx.cfg.budget.model_dump()}


def run_grpo_target(ctx: RunContext, resume: bool) -> dict:
    """GRPO on the τ² target's train split with the adapters' rollout budget, then a test eval."""
    if not ctx.cfg.baseline.grpo_on_target:
        raise StageSkipped("GRPO on the target is off (baseline.grpo_on_target = false)")

    t = ctx.cfg.target
    world = load_world(t.domain, t.data_dir)
    tasks = tdata.select_tasks(tdata.resolve_data_dir(t.data_dir), t.domain, t.train_split, None,
                               t.train_tasks)
    user = make_user_factory(t.user)
    ids = [x.id for x in tasks]
    env = EnvTarget(f"tau2:{t.domain}", "tau2_target",
                    lambda: Tau2Env(world=world, task_ids=ids, user=user, max_turns=t.max_turns,
                                    max_errors=t.max_errors))
    budget = ctx.cfg.budget.train_rollouts or ctx.out("train").get("rollouts") or None
    config = train_config(ctx, env.name, 1, budget)
    out = ctx.dir("grpo_target")
    adapter = fit_adapter(ctx, env, config, out / "adapter", resume)  # a failure is an error, not a skip
    spec = ctx.cfg.adapter_agent(adapter["dir"], "tau2_target")
    result = _eval(ctx, spec, out / "eval", t.test_split, t.test_tasks)
    return {"adapter": adapter, "rollouts": adapter["rollouts"], "budget": budget, "eval": result}
