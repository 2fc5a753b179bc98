"""CLI of the analysis stage: ``tracec analyze``, ``label``, ``aggregate``, ``propose``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click
from rich.console import Console

from tracec.analysis.aggregate import Selection, Thresholds, aggregate, load_selection, write_selection
from tracec.analysis.candidates import Candidate, load_candidates, write_candidates
from tracec.analysis.errors import AnalysisError
from tracec.analysis.importers import FORMATS, load_many, write_jsonl
from tracec.analysis.runs import LabelRun, load_run, write_run
from tracec.outputs import OutputError, claim_outputs

err_console = Console(stderr=True)


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


def _client(endpoint: str | None, model: str | None, api_key: str | None,
            timeout: float = 60, retries: int = 3, who: str = "the LLM labeler (--labeler llm)"):
    if not endpoint or not model:
        raise click.UsageError(f"{who} needs --endpoint URL and --model NAME (an "
                               "OpenAI-compatible server, e.g. --endpoint "
                               "http://localhost:8000/v1 --model Qwen/Qwen3-8B)")
    from tracec.llm.client import ChatClient

    return ChatClient(endpoint, model, api_key=api_key, timeout=timeout, max_retries=retries)


def _default_k(n_runs: int) -> int:
    return max(1, math.ceil(0.8 * n_runs - 1e-9))


def _label(paths, out: Path, labeler, endpoint, model, api_key, runs, candidates_path, tasks,
           fmt, env, batch_size, concurrency, quiet, timeout: float = 60, retries: int = 3
           ) -> tuple[list, list[Candidate], list[LabelRun]]:
    trajectories = load_many(paths, fmt, env)
    if not trajectories:
        raise AnalysisError("no trajectories in the input files")
    _claim_out(out, paths)
    if labeler == "offline":
        from tracec.analysis.offline import load_task_gold, offline_candidates, offline_run

        gold = load_task_gold(tasks) if tasks else None
        candidates = offline_candidates()
        label_runs = [offline_run(trajectories, gold)]
        _check_offline_evidence(trajectories, gold, label_runs[0], tasks)
    else:
        from tracec.analysis.llm_labeler import discover, label_runs as llm_label_runs
        from tracec.llm.client import LLMError

        client = _client(endpoint, model, api_key, timeout, retries)
        try:
            if candidates_path:
                candidates = load_candidates(candidates_path)
            else:
                if not quiet:
                    err_console.print("[bold]phase 1[/]: discovering capabilities …")
                candidates = discover(client, trajectories, cache_dir=out / "cache")
            write_candidates(candidates, out / "candidates.json")  # kept even if labeling fails
            label_runs, stats = _run_llm_labeling(
                llm_label_runs, client, trajectories, candidates, runs, batch_size, concurrency,
                out / "cache", quiet)
        except LLMError as exc:
            raise AnalysisError(str(exc)) from None
    write_jsonl(trajectories, out / "trajectories.jsonl")  # only once labeling worked
    write_candidates(candidates, out / "candidates.json")
    for run in label_runs:
        write_run(run, out / "runs" / f"run_{run.attempt:02d}.json")
    return trajectories, candidates, label_runs


ANALYZE_OUTPUTS = ("trajectories.jsonl", "candidates.json", "runs", "cache", "coverage.png",
                   "capabilities.json")


def _claim_out(out: Path, inputs) -> None:
    """``-o`` as tracec's own folder (:func:`tracec.outputs.claim_outputs`) whose outputs are
    none of the input files (e.g. an eval folder's trajectories.jsonl)."""
    try:
        claim_outputs(out, "analyze", ANALYZE_OUTPUTS, inputs).record(*ANALYZE_OUTPUTS)
    except OutputError as exc:
        raise AnalysisError(str(exc)) from None


def _check_offline_evidence(trajectories, gold, run: LabelRun, tasks) -> None:
    """Say when the offline labeler had nothing to go on, instead of an empty selection."""
    from tracec.analysis.errors import warn

    n = len(trajectories)
    with_gold = sum(1 for t in trajectories
                    if t.gold_actions() is not None or (gold is not None and t.task_id in gold))
    if with_gold < n:
        where = "are not in --tasks" if tasks else "carry no gold actions"
        warn(f"{n - with_gold} of {n} trajectories {where}; their gold-based capabilities are "
             "NA" + ("" if tasks else " (pass --tasks TASKS.json: the τ² tasks with "
                     "evaluation_criteria)"))
    failed, passed = run.totals.total_failed, run.totals.total_passed
    if failed == 0 or passed == 0:
        warn(f"{failed} failed and {passed} passed trajectories: the contrast Δ needs both "
             "(check the rewards; τ² results need reward_info)")
    informative = any(cl.lacking_failed or cl.present_failed or cl.lacking_passed
                      or cl.present_passed for cl in run.labels.values())
    if not informative:
        raise AnalysisError(
            f"every label of the {n} trajectories is NA: nothing to select"
            + ("" if tasks else "; pass --tasks TASKS.json (τ² tasks with gold actions)"))


def _run_llm_labeling(fn, client, trajectories, candidates, runs, batch_size, concurrency,
                      cache_dir, quiet):
    from rich.progress import Progress

    with Progress(console=err_console, disable=quiet, transient=True) as progress:
        task = progress.add_task("phase 2: labeling", total=None)

        def tick(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return fn(client, trajectories, candidates, runs=runs, batch_size=batch_size,
                  concurrency=concurrency, cache_dir=cache_dir, progress=tick)


def _labeling_options(f):
    options = [
        click.argument("trajectories", nargs=-1, required=True, type=click.Path(path_type=Path)),
        click.option("-o", "--out", "out", required=True, type=click.Path(path_type=Path),
                     help="Output folder."),
        click.option("--labeler", type=click.Choice(["offline", "llm"]), default="offline",
                     show_default=True),
        click.option("--endpoint", help="OpenAI-compatible base URL (…/v1) for --labeler llm."),
        click.option("--model", help="Model name at the endpoint."),
        click.option("--api-key", envvar="OPENAI_API_KEY", help="API key (default $OPENAI_API_KEY)."),
        click.option("--runs", default=10, show_default=True, help="Independent labeling runs (llm)."),
        click.option("--candidates", "candidates_path", type=click.Path(path_type=Path),
                     help="Use these candidate capabilities instead of a discovery call."),
        click.option("--tasks", type=click.Path(path_type=Path),
                     help="τ² tasks.json with gold actions (offline labeler)."),
        click.option("--format", "fmt", type=click.Choice(FORMATS), default="auto", show_default=True),
        click.option("--env", help="Domain/env name when the files do not say it."),
        click.option("--batch-size", default=4, show_default=True),
        click.option("--concurrency", default=4, show_default=True),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60,
                     show_default=True, help="Seconds per LLM request (llm labeler)."),
        click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True,
                     help="Retries of a failed LLM request (llm labeler)."),
        click.option("--json", "as_json", is_flag=True, help="Machine-readable output on stdout."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


@click.command("label")
@_labeling_options
def label_cmd(trajectories, out, labeler, endpoint, model, api_key, runs, candidates_path, tasks,
              fmt, env, batch_size, concurrency, timeout, retries, as_json):
    """Import TRAJECTORIES and label every (trajectory, capability) pair into run files."""
    try:
        trajs, cands, label_runs = _label(trajectories, out, labeler, endpoint, model, api_key,
                                          runs, candidates_path, tasks, fmt, env, batch_size,
                                          concurrency, as_json, timeout, retries)
    except AnalysisError as exc:
        raise _fail(exc) from None
    files = [str(out / "runs" / f"run_{r.attempt:02d}.json") for r in label_runs]
    if as_json:
        click.echo(json.dumps({"trajectories": len(trajs), "capabilities": [c.name for c in cands],
                               "runs": files}))
    else:
        click.echo(f"labeled {len(trajs)} trajectories × {len(cands)} capabilities in "
                   f"{len(files)} run(s): {out / 'runs'}")


def _collect_runs(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(p.glob("run_*.json")) or sorted(p.glob("runs/run_*.json"))
            if not found:
                raise AnalysisError(f"{p}: no run_*.json files in this folder")
            files += found
        else:
            files.append(p)
    return files


def _descriptions(candidates_path: Path | None, run_files: list[Path]) -> dict[str, str]:
    if candidates_path is None:
        for folder in {f.parent for f in run_files} | {f.parent.parent for f in run_files}:
            for name in ("candidates.json", "candidate_capabilities.json"):
                if (folder / name).is_file():
                    candidates_path = folder / name
                    break
    if candidates_path is None:
        return {}
    return {c.name: c.description for c in load_candidates(candidates_path)}


def _emit(entries: list[Selection], out: Path, as_json: bool, total_failed: int | None,
          plot: Path | None) -> None:
    write_selection(entries, out)
    if plot is not None and total_failed is not None:
        from tracec.analysis.report import coverage_plot

        coverage_plot(entries, total_failed, plot)
    if as_json:
        click.echo(json.dumps([e.model_dump() for e in entries], indent=2))
    else:
        from tracec.analysis.report import print_selection

        print_selection(entries)
        click.echo(f"wrote {out}" + (f" and {plot}" if plot else ""))


@click.command("aggregate")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", default="capabilities.json", show_default=True,
              type=click.Path(path_type=Path))
@click.option("--candidates", "candidates_path", type=click.Path(path_type=Path),
              help="Candidates file with descriptions (default: next to the runs).")
@click.option("--rho", default=0.10, show_default=True, help="Minimum coverage per run.")
@click.option("--delta", default=0.20, show_default=True, help="Minimum Δ per run.")
@click.option("--k", type=int, help="Runs that must pass (default: 80% of the runs, 8 of 10).")
@click.option("--all", "include_all", is_flag=True, help="Also list capabilities not selected.")
@click.option("--json", "as_json", is_flag=True)
def aggregate_cmd(runs, out, candidates_path, rho, delta, k, include_all, as_json):
    """Aggregate labeling RUNS (files or folders) into capabilities.json."""
    try:
        files = _collect_runs(list(runs))
        loaded = [load_run(f) for f in files]
        th = Thresholds(rho=rho, delta=delta, k=k if k is not None else _default_k(len(loaded)))
        entries = aggregate(loaded, _descriptions(candidates_path, files), th, include_all)
    except AnalysisError as exc:
        raise _fail(exc) from None
    _emit(entries, out, as_json, None, None)


@click.command("analyze")
@_labeling_options
@click.option("--k", type=int, help="Runs that must pass (default: 80% of the runs).")
@click.option("--all", "include_all", is_flag=True, help="Also list capabilities not selected.")
def analyze_cmd(trajectories, out, labeler, endpoint, model, api_key, runs, candidates_path, tasks,
                fmt, env, batch_size, concurrency, timeout, retries, as_json, k, include_all):
    """Import → label → aggregate → report: capabilities.json, coverage.png, a table."""
    try:
        trajs, cands, label_runs = _label(trajectories, out, labeler, endpoint, model, api_key,
                                          runs, candidates_path, tasks, fmt, env, batch_size,
                                          concurrency, as_json, timeout, retries)
        th = Thresholds(k=k if k is not None else _default_k(len(label_runs)))
        desc = {c.name: c.description for c in cands}
        entries = aggregate(label_runs, desc, th, include_all)
    except AnalysisError as exc:
        raise _fail(exc) from None
    total_failed = sum(1 for t in trajs if not t.success)
    all_entries = entries if include_all else aggregate(label_runs, desc, th, True)
    from tracec.analysis.report import coverage_plot

    coverage_plot(all_entries, total_failed, out / "coverage.png")
    _emit(entries, out / "capabilities.json", as_json, None, None)
    if not as_json:
        click.echo(f"coverage plot: {out / 'coverage.png'}  "
                   f"({len(trajs)} trajectories, {total_failed} failed)")


@click.command("propose")
@click.argument("capabilities", required=False, type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", default="specs", show_default=True, type=click.Path(path_type=Path))
@click.option("--domain", default="airline", show_default=True)
@click.option("--endpoint", help="OpenAI-compatible base URL (…/v1).")
@click.option("--model", help="Model name at the endpoint.")
@click.option("--api-key", envvar="OPENAI_API_KEY")
@click.option("--max-tries", default=4, show_default=True)
@click.option("--seeds", default=64, show_default=True, help="Seeds for the offline checks.")
@click.option("--only", multiple=True, help="Only these capabilities.")
@click.option("--language", type=click.Path(path_type=Path), help="Language reference file.")
@click.option("--template", help="Write a commented skeleton spec NAME.tracec instead (offline).")
@click.option("--json", "as_json", is_flag=True)
def propose_cmd(capabilities, out, domain, endpoint, model, api_key, max_tries, seeds, only,
                language, template, as_json):
    """Have an LLM write a checked spec for each capability in CAPABILITIES (capabilities.json)."""
    from tracec.analysis.propose import (domain_tools_text, load_language_reference, propose_one,
                                         template_spec)

    if template:
        from tracec.analysis.candidates import NAME_RE

        if not NAME_RE.match(template):
            raise click.ClickException(f"template name {template!r} is not snake_case")
        desc = ""
        if capabilities:
            try:
                desc = next((s.description for s in load_selection(capabilities)
                             if s.skill == template), "")
            except AnalysisError as exc:
                raise _fail(exc) from None
        path = out / f"{template}.tracec"
        if path.exists():
            raise click.ClickException(f"{path} exists; not overwriting it")
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(template_spec(template, domain, desc), encoding="utf-8")
        click.echo(json.dumps({"written": str(path)}) if as_json else f"wrote {path}")
        return
    if capabilities is None:
        raise click.UsageError("give CAPABILITIES (capabilities.json), or --template NAME")
    try:
        selection = [s for s in load_selection(capabilities) if not only or s.skill in only]
        lang = load_language_reference(language)
        tools = domain_tools_text(domain)
    except AnalysisError as exc:
        raise _fail(exc) from None
    client = _client(endpoint, model, api_key, who="`tracec propose` (an LLM writes the specs; without one: --template NAME)")
    results = []
    for sel in selection:
        if not as_json:
            err_console.print(f"proposing [bold]{sel.skill}[/] …")
        results.append(propose_one(client, sel, domain, lang, tools, out, max_tries, seeds))
    if as_json:
        click.echo(json.dumps([r.__dict__ for r in results], indent=2))
    else:
        from rich.table import Table

        table = Table(title="Proposed specs")
        for col in ("capability", "result", "tries", "spec / last error"):
            table.add_column(col)
        for r in results:
            table.add_row(r.capability, "[green]ok[/]" if r.ok else "[red]failed[/]", str(r.tries),
                          r.path or (r.error.splitlines()[0] if r.error else ""))
        Console().print(table)
    if not all(r.ok for r in results):
        raise SystemExit(1)
