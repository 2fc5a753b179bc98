"""``tracec check``: offline checks of compiled capability environments."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tracec.checks.bands import Bands
from tracec.checks.fidelity import Fidelity
from tracec.checks.own_words import rungs_line
from tracec.checks.prompt_size import (
    CHARS_PER_TOKEN,
    DEFAULT_BUDGET,
    measure_report,
    tokenizer_counter,
)
from tracec.checks.report import CheckReport
from tracec.checks.variants import Checked, check_sharing
from tracec.harness.resolve import LoadError, load_paths
from tracec.lang.parser import keeping_trees
from tracec.llm.cli_options import device_option, dtype_option

if TYPE_CHECKING:  # calibration (--model) imports its agents and runners when it runs
    from tracec.checks.calibrate import CalibrationReport

DEFAULT_PATH = "generated_envs"


def _table(reports: list[CheckReport]) -> Table:
    table = Table(title="tracec check", box=box.SIMPLE_HEAD, pad_edge=False)
    headers = ("env", "tasks", "env_chk", "determ", "probes", "var", "std", "levels", "prompt",
               "time", "result")
    for col in headers:
        right = col in {"tasks", "var", "std", "levels", "prompt", "time"}
        table.add_column(col, justify="right" if right else "left", no_wrap=True,
                         min_width=12 if col == "env" else None)

    def mark(x: bool | None) -> str:
        return "-" if x is None else ("[green]ok[/]" if x else "[red]FAIL[/]")

    def prompt(r: CheckReport) -> str:
        if r.prompt_tokens is None:
            return "-"
        over = r.prompt_budget is not None and r.prompt_tokens > r.prompt_budget
        return f"[yellow]{r.prompt_tokens}[/]" if over else str(r.prompt_tokens)

    for r in reports:
        table.add_row(
            r.env, str(len(r.tasks)), mark(r.check_env), mark(r.determinism), mark(r.probes),
            f"{r.variance_share:.0%}", f"{r.reward_std:.3f}", f"{r.levels_reached}/{r.levels_total}",
            prompt(r), f"{r.seconds:.1f}s", "[green]pass[/]" if r.passed else "[red]FAIL[/]",
        )
    methods = sorted({r.prompt_method for r in reports if r.prompt_method})
    if methods:
        how = ("estimated as characters / " + f"{CHARS_PER_TOKEN:g}" if methods == ["estimate"]
               else "counted with " + ", ".join(methods))
        table.caption = f"prompt: tokens of the largest first prompt ({how})"
    return table


def _prompt_counter(tokenizer: str | None, model: str | None):
    """(counter, method): the tokenizer of --tokenizer or of a local --model, else the estimate."""
    name = tokenizer
    if name is None and model:
        from tracec.harness.agents import AgentSpecError, parse_agent_spec

        try:
            kind, params = parse_agent_spec(model)
        except AgentSpecError:
            kind, params = "", {}
        if kind == "local":
            name = params["model"]
    if name is None:
        return None, "estimate"
    try:
        from tracec.llm.loading import ModelNotPrepared, load_tokenizer, resolve_model
    except ImportError:  # pragma: no cover - transformers is in the train extra
        raise click.ClickException(
            "counting prompt tokens with a tokenizer needs transformers: pip install 'tracec[train]'"
        ) from None
    try:
        # a folder with only tokenizer files is enough here (no config.json needed)
        folder = Path(name).expanduser()
        tok = load_tokenizer(str(folder) if folder.is_dir() else resolve_model(name))
    except ModelNotPrepared as exc:
        raise click.ClickException(f"cannot load tokenizer {name!r}: {exc}") from None
    except ImportError:
        raise click.ClickException(
            "counting prompt tokens with a tokenizer needs transformers: pip install 'tracec[train]'"
        ) from None
    except Exception as exc:  # noqa: BLE001 - a tokenizer that cannot load is a user-facing problem
        raise click.ClickException(f"cannot load tokenizer {name!r}: {type(exc).__name__}: {exc}") from None
    return tokenizer_counter(tok), Path(name.rstrip("/")).name or name


def _band(text: str) -> tuple[float, float]:
    """``LO,HI`` -> a (lo, hi) band."""
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise click.BadParameter(f"expected LO,HI (e.g. 0.2,0.6), got {text!r}") from None
    if lo > hi:
        raise click.BadParameter(f"LO must not exceed HI in {text!r}")
    return lo, hi


def _calibration_options(fn):
    """The ``--model`` options (calibration: S seeds x G samples, judged against bands)."""
    d = Bands()
    opts = [
        click.option("--model", "model", metavar="AGENT", default=None,
                     help="Also calibrate with this agent (openai:MODEL@URL, local:PATH, ...)."),
        device_option(help="Calibration with a local/composed --model: where it runs (cpu, cpu:N, "
                           "cuda, cuda:N, mps)."),
        dtype_option(help="Calibration with a local/composed --model: weights' dtype (auto, bf16, "
                          "fp16, fp32)."),
        click.option("--samples", default=16, show_default=True, type=click.IntRange(1),
                     help="Calibration: samples per seed (G)."),
        click.option("--calib-seeds", default=100, show_default=True, type=click.IntRange(1),
                     help="Calibration: seeds (S)."),
        click.option("--temperature", default=0.7, show_default=True, type=click.FloatRange(0),
                     help="Calibration: sampling temperature."),
        click.option("--max-new-tokens", default=512, show_default=True, type=click.IntRange(1),
                     help="Calibration: tokens per model turn."),
        click.option("--success", "success", default=None, type=float,
                     help="Calibration: success threshold [default: the env's top level]."),
        click.option("--mean-band", default=",".join(map(str, d.mean_reward)), metavar="LO,HI",
                     show_default=True, callback=lambda c, p, v: _band(v), help="Band for the mean reward (LO,HI)."),
        click.option("--success-band", default=",".join(map(str, d.success_rate)), metavar="LO,HI",
                     show_default=True, callback=lambda c, p, v: _band(v), help="Band for the success rate (LO,HI)."),
        click.option("--min-std", default=d.min_std, show_default=True, type=click.FloatRange(0),
                     help="Least reward std (centred, over all episodes)."),
        click.option("--max-all-success", default=d.max_all_success, show_default=True, type=click.FloatRange(0, 1),
                     help="Most share of all-success groups."),
        click.option("--max-all-zero", default=d.max_all_zero, show_default=True, type=click.FloatRange(0, 1),
                     help="Most share of all-zero groups."),
        click.option("--max-constant", default=d.max_constant, show_default=True, type=click.FloatRange(0, 1),
                     help="Most share of constant-reward groups."),
        click.option("--min-informative", default=d.min_informative, show_default=True, type=click.FloatRange(0, 1),
                     help="Least share of informative groups (successes and failures mixed)."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


@click.command("check")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--seeds", default=64, show_default=True, type=click.IntRange(1), help="Seeds per task.")
@click.option("--json", "as_json", is_flag=True, help="Print the reports as JSON.")
@click.option("--no-env-checker", is_flag=True, help="Skip gymnasium's check_env.")
@click.option("--prompt-budget", default=DEFAULT_BUDGET, show_default=True, type=click.IntRange(1),
              metavar="N", help="Warn when an env's first prompt is longer than N tokens.")
@click.option("--tokenizer", default=None, metavar="NAME",
              help="Count prompt tokens with this tokenizer (smollm2, a path or an HF id) "
                   "[default: a local --model's, else an estimate of characters / "
                   f"{CHARS_PER_TOKEN:g}].")
@click.option("--werror", is_flag=True,
              help="Fail (exit 1) on warnings too: meaning checks, hint leaks, prompt budget.")
@_calibration_options
def check_cmd(paths: tuple[Path, ...], seeds: int, as_json: bool, no_env_checker: bool,
              prompt_budget: int, tokenizer: str | None, werror: bool, model: str | None, device: str,
              dtype: str, samples: int, calib_seeds: int, temperature: float,
              max_new_tokens: int, success: float | None, mean_band: tuple[float, float],
              success_band: tuple[float, float], min_std: float, max_all_success: float,
              max_all_zero: float, max_constant: float, min_informative: float) -> None:
    """Check compiled environments: check_env, determinism, probes, reward variance.

    PATHS are generated modules, folders of them (default: generated_envs/), or .tracec
    specs/folders (compiled on the fly).

    Every finding is located in the spec (path:line:col: error|warning: ..., at the rule,
    task, pick, forbid or call concerned, with the seed and why); --werror fails on warnings.

    With --model, each env that passes the offline checks is also calibrated (the TRACE
    reference's check): --calib-seeds seeds x --samples samples at --temperature; it passes
    when every band holds (mean reward, success rate, reward std, group shares).
    """
    bands = Bands(mean_reward=mean_band, success_rate=success_band, min_std=min_std,
                  max_all_success=max_all_success, max_all_zero=max_all_zero,
                  max_constant=max_constant, min_informative=min_informative)
    counter, method = _prompt_counter(tokenizer, model)
    agent = _load_agent(model, temperature, max_new_tokens, samples, device, dtype) if model else None
    with keeping_trees():  # the compiler's parse of each spec serves its spans (SpecMap) too
        loaded = _load_targets(paths)

    console = Console(stderr=as_json, width=None if sys.stdout.isatty() else 120)
    reports: list[CheckReport] = []
    checked: Checked = []  # a variant shares the check of its base env (checks/variants.py)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=True, disable=as_json) as bar:
        for label, module in loaded:
            if isinstance(module, Exception):
                reports.append(CheckReport(env=Path(label).stem, module=label, problems=[str(module)]))
                continue
            task = bar.add_task(Path(label).stem, total=seeds)
            try:
                report = check_sharing(module, checked, seeds, not no_env_checker,
                                       progress=lambda n, t=task: bar.advance(t, n))
            except LoadError as exc:
                report = CheckReport(env=Path(label).stem, module=label, problems=[str(exc)])
            else:
                _measure_prompt(report, module, counter, method, prompt_budget)
            reports.append(report)

    calibs: dict[str, CalibrationReport] = {}
    if agent is not None:
        calibs = _calibrate_all(loaded, reports, agent, console, as_json, calib_seeds, samples,
                                success, bands, temperature)

    if as_json:
        out = [r.to_dict() for r in reports]
        if agent is not None:
            for item, r in zip(out, reports):
                item["calibration"] = calibs[r.module].to_dict() if r.module in calibs else None
        click.echo(json.dumps(out, indent=2))
    else:
        _print_reports(console, reports, calibs)
    failed = sum(1 for r in reports
                 if not r.passed or (werror and any(f["severity"] == "warning" for f in r.findings)))
    calib_failed = sum(1 for c in calibs.values() if not c.passed)
    if failed or calib_failed:
        if not as_json:
            if failed:
                click.echo(f"{failed} of {len(reports)} environments failed", err=True)
            if calib_failed:
                click.echo(f"{calib_failed} of {len(calibs)} environments failed calibration", err=True)
        click.get_current_context().exit(1)


def _load_targets(paths: tuple[Path, ...]) -> list:
    """The (label, module or load error) pairs of PATHS (default: generated_envs/)."""
    targets = list(paths) or [Path(DEFAULT_PATH)]
    if not paths and not targets[0].is_dir():
        raise click.ClickException(
            f"no {DEFAULT_PATH}/ folder here; run `tracec compile specs/` or pass PATHS")
    try:
        loaded = load_paths(targets)
    except LoadError as exc:
        raise click.ClickException(str(exc)) from None
    if not loaded:
        raise click.ClickException("no environment modules or specs found in " + ", ".join(map(str, targets)))
    return loaded


def _print_reports(console: Console, reports: list[CheckReport], calibs: dict[str, CalibrationReport]) -> None:
    """The table, then each env's located problems and warnings, own-words rungs and tools."""
    console.print(_table(reports))
    shown: set[str] = set()  # a located finding once, though a variant shares its base's
    for r in reports:
        for p in r.problems:  # located (path:line:col: error: ...) or a load error
            if p in shown:
                continue
            if _located(p):
                shown.add(p)
            console.print(escape(p) if _located(p) else f"[red]{escape(r.env)}:[/] {escape(p)}", soft_wrap=True,
                          highlight=False)
        for w in r.warnings:
            if _located(w) and w not in shown:
                shown.add(w)
                console.print(escape(w), highlight=False, soft_wrap=True)
        if r.probe_rungs and not r.shared_with:
            console.print(f"{escape(r.env)}: own words: {escape(rungs_line(r.probe_rungs))}",
                          highlight=False, soft_wrap=True)
        if r.shared_with:
            console.print(f"{escape(r.env)}: probes, determinism and meaning checks shared with "
                          f"{escape(r.shared_with)} (a variant: same world, tasks and rules)",
                          highlight=False)
        if r.fidelity is not None:
            fid = Fidelity(**r.fidelity)
            console.print(f"{escape(r.env)}: tools {escape(fid.summary())}", highlight=False)
    for c in calibs.values():
        _print_calibration(console, c)


_LOC = re.compile(r"^\S[^\n]*?:\d+:\d+: (?:error|warning): ")


def _located(text: str) -> bool:
    return bool(_LOC.match(text))


def _measure_prompt(report: CheckReport, module, counter, method: str, budget: int) -> None:
    """The env's first-prompt size into ``report`` (a failure is a problem, never a crash)."""
    from tracec.harness.resolve import env_class
    from tracec.runtime.env import SpecRuntimeError

    try:
        measure_report(report, env_class(module), counter, method, budget)
    except (SpecRuntimeError, LoadError) as exc:
        text = str(exc)
        head = text.split("\n", 1)[0]
        if any(p.split("\n", 1)[0].startswith(head.split(" failed at ")[0]) for p in report.problems):
            return  # the same failure the probes found at reset
        report.problems.append(text if _located(text) else f"prompt size: {text}")


def _load_agent(spec: str, temperature: float, max_new_tokens: int, samples: int,
                device: str = "cpu", dtype: str = "auto"):
    from tracec.checks.calibrate import build_agent
    from tracec.harness.agents import AgentSpecError

    try:
        return build_agent(spec, temperature=temperature, max_new_tokens=max_new_tokens,
                           concurrency=min(samples, 16), device=device, dtype=dtype)
    except AgentSpecError as exc:
        raise click.ClickException(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - a model that cannot load is a user-facing problem
        raise click.ClickException(f"cannot load model {spec!r}: {type(exc).__name__}: {exc}") from None


def _calibrate_all(loaded, reports: list[CheckReport], agent, console: Console, as_json: bool,
                   calib_seeds: int, samples: int, success: float | None, bands: Bands,
                   temperature: float) -> dict[str, CalibrationReport]:
    """Calibrate every env that loaded and passed the offline checks; keyed by module."""
    from tracec.checks.calibrate import CalibrationReport, calibrate
    from tracec.llm.client import LLMError
    from tracec.runtime.env import SpecRuntimeError

    out: dict[str, CalibrationReport] = {}
    setup = {"model": agent.name, "seeds": calib_seeds, "samples": samples, "temperature": temperature}
    with Progress(TextColumn("calibrate {task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                  console=console, transient=True, disable=as_json) as bar:
        for (_, module), report in zip(loaded, reports):
            if isinstance(module, Exception):
                continue
            if not report.passed:
                out[report.module] = CalibrationReport(env=report.env, skipped="the offline checks failed",
                                                       **setup)
                continue
            task = bar.add_task(report.env, total=calib_seeds * samples)
            try:
                out[report.module] = calibrate(
                    module, agent, seeds=calib_seeds, samples=samples, success=success, bands=bands,
                    progress=lambda n, t=task: bar.advance(t, n), temperature=temperature)
            except LLMError as exc:
                raise click.ClickException(str(exc)) from None
            except SpecRuntimeError as exc:
                out[report.module] = CalibrationReport(env=report.env, error=str(exc), **setup)
    return out


def _print_calibration(console: Console, c: CalibrationReport) -> None:
    """One table per env: the statistics, pass@k and each band's verdict."""
    title = f"calibration {c.env}"
    setup = f"{c.model}, {c.seeds} seeds x {c.samples} samples"
    setup += f", T={c.temperature:g}" if c.temperature is not None else ""
    if c.stats is None:
        why = c.skipped or c.error or "no episodes"
        colour = "yellow" if c.skipped else "red"
        verdict = "skipped" if c.skipped else "FAIL"
        console.print(f"[bold]{escape(title)}[/] ({escape(setup)}): [{colour}]{verdict}[/] ({escape(why)})",
                      highlight=False)
        return
    s = c.stats
    table = Table(title=title, caption=setup, box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("measure", "value", "band", "verdict"):
        table.add_column(col, justify="right" if col == "value" else "left", no_wrap=True)
    for b in c.bands:
        table.add_row(b.name, f"{b.value:.3f}", b.bounds, "[green]ok[/]" if b.passed else "[red]FAIL[/]")
    for k, v in s.pass_at.items():
        table.add_row(f"pass@{k}", f"{v:.3f}", "", "")
    table.add_row("episodes", str(s.episodes), f"success >= {s.threshold:g}", "")
    table.add_row("result", f"{c.seconds:.1f}s", "", "[green]pass[/]" if c.passed else "[red]FAIL[/]")
    console.print(table)
