"""LLM labeling, TRACE's protocol: a discovery call proposes capabilities, then N independent
runs label every (trajectory, capability) pair NA / PRESENT / LACKING.

Calls are batched, run concurrently, cached on disk by (endpoint, model, temperature, prompt
text, capability set, trajectory, run), and retried with the parse error fed back when the
reply is malformed; a batch that still fails is retried one trajectory at a time, so one bad
trajectory costs only its own labels. Discovery is cached the same way.
"""

from __future__ import annotations

import hashlib
import json
import random
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from pydantic import ValidationError

from tracec.analysis.candidates import Candidate
from tracec.analysis.errors import AnalysisError
from tracec.analysis.jsonreply import ReplyError, parse_json_object
from tracec.analysis.prompts import PROMPT_VERSION, load_prompt
from tracec.analysis.render import render_many
from tracec.analysis.runs import LABELS, LabelRun, build_run
from tracec.analysis.trajectory import Trajectory
from tracec.llm.client import LLMError


class Chat(Protocol):
    model: str

    def chat(self, messages: list[dict], **kwargs): ...


def chat_json(
    client: Chat, prompt: str, validate: Callable[[dict], object], max_tries: int = 3,
    temperature: float = 0.0, max_tokens: int = 4096,
):
    """Ask for JSON; on a malformed/invalid reply feed the error back, up to ``max_tries``."""
    messages = [{"role": "user", "content": prompt}]
    error = ""
    for _ in range(max_tries):
        reply = client.chat(messages, temperature=temperature, max_tokens=max_tokens).content
        try:
            return validate(parse_json_object(reply))
        except ReplyError as exc:
            error = str(exc)
        messages += [
            {"role": "assistant", "content": reply},
            {"role": "user", "content": load_prompt("retry").format(error=error)},
        ]
    raise ReplyError(f"no usable reply after {max_tries} tries; last error: {error}")


# -- phase 1: discovery ------------------------------------------------------------------------


def _endpoint(client: Chat) -> str:
    return str(getattr(client, "base_url", "") or "")


def discover(
    client: Chat, trajectories: list[Trajectory], n_failed: int = 12, n_passed: int = 6,
    max_caps: int = 10, seed: int = 0, max_tries: int = 3, cache_dir: Path | None = None,
) -> list[Candidate]:
    """Propose up to ``max_caps`` capabilities from a sample of failed and successful runs
    (cached in ``cache_dir`` by endpoint, model and prompt text)."""
    rng = random.Random(seed)
    failed = [t for t in trajectories if not t.success]
    passed = [t for t in trajectories if t.success]
    sample = rng.sample(failed, min(n_failed, len(failed))) + rng.sample(passed, min(n_passed, len(passed)))
    if not sample:
        raise AnalysisError("no trajectories to analyse")
    prompt = load_prompt("discover").format(
        domain=_domains(trajectories), n_failed=min(n_failed, len(failed)),
        n_passed=min(n_passed, len(passed)), max_caps=max_caps, trajectories=render_many(sample),
    )

    cache = LabelCache(cache_dir / "discovery") if cache_dir else None
    key = _digest([PROMPT_VERSION, _endpoint(client), client.model, 0.0, prompt, max_caps])
    if cache is not None:
        hit = cache.get(key)
        if isinstance(hit, list):
            try:
                return [Candidate.model_validate(c) for c in hit]
            except ValidationError:
                pass

    def validate(obj: dict) -> list[Candidate]:
        caps = obj.get("capabilities")
        if not isinstance(caps, list) or not caps:
            raise ReplyError("'capabilities' must be a non-empty list")
        try:
            out = [Candidate.model_validate(c) for c in caps]
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ReplyError(f"capability {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        names = [c.name for c in out]
        if len(set(names)) != len(names):
            raise ReplyError("capability names must be distinct")
        return out[:max_caps]

    found = chat_json(client, prompt, validate, max_tries)
    if cache is not None:
        cache.put(key, [c.model_dump() for c in found])
    return found


def _domains(trajectories: list[Trajectory]) -> str:
    return ", ".join(sorted({t.env for t in trajectories})) or "unknown domain"


# -- phase 2: labeling runs --------------------------------------------------------------------


def _digest(material: list) -> str:
    return hashlib.sha256(json.dumps(material).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class LabelCache:
    """One JSON file per (endpoint, model, temperature, prompt text, capability set,
    trajectory, run)."""

    root: Path

    def key(self, model: str, caps: list[Candidate], t: Trajectory, run: int,
            endpoint: str = "", temperature: float = 0.7, prompt: str = "") -> str:
        caps_text = json.dumps([[c.name, c.description] for c in caps])
        return _digest([PROMPT_VERSION, endpoint, model, temperature, prompt, caps_text, t.id,
                        t.model_dump_json(), run])

    def get(self, key: str):
        path = self.root / key[:2] / f"{key}.json"
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, labels) -> None:
        path = self.root / key[:2] / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(labels))
        tmp.replace(path)


@dataclass
class LabelStats:
    calls: int = 0
    cached: int = 0
    failures: list[str] = field(default_factory=list)


def _validate_labels(ids: list[str], caps: list[str]) -> Callable[[dict], dict]:
    def validate(obj: dict) -> dict[str, dict[str, str]]:
        labels = obj.get("labels")
        if not isinstance(labels, dict):
            raise ReplyError("'labels' must be an object keyed by trajectory id")
        out: dict[str, dict[str, str]] = {}
        for tid in ids:
            per = labels.get(tid)
            if not isinstance(per, dict):
                raise ReplyError(f"missing labels for trajectory {tid!r}")
            row = {}
            for cap in caps:
                value = str(per.get(cap, "")).upper()
                if value not in LABELS:
                    raise ReplyError(
                        f"trajectory {tid!r}, capability {cap!r}: label must be NA, PRESENT or "
                        f"LACKING, got {per.get(cap)!r}")
                row[cap] = value
            out[tid] = row
        return out

    return validate


def label_runs(
    client: Chat, trajectories: list[Trajectory], candidates: list[Candidate], runs: int = 10,
    batch_size: int = 4, concurrency: int = 4, cache_dir: Path | None = None,
    temperature: float = 0.7, max_tries: int = 3,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[LabelRun], LabelStats]:
    """``runs`` independent labeling runs; raises AnalysisError if some batch never succeeded
    (the batches that did are cached, so re-running pays only for the rest)."""
    cache = LabelCache(cache_dir) if cache_dir else None
    caps = [c.name for c in candidates]
    caps_text = "\n".join(f"- {c.name}: {c.description}" for c in candidates)
    stats = LabelStats()
    results: dict[int, dict[str, dict[str, str]]] = {r: {} for r in range(1, runs + 1)}
    jobs: list[tuple[int, list[Trajectory]]] = []
    template = load_prompt("label")

    def key(t: Trajectory, run: int) -> str:
        assert cache is not None
        return cache.key(client.model, candidates, t, run, _endpoint(client), temperature,
                         template)

    for run in range(1, runs + 1):
        todo = []
        for t in trajectories:
            hit = cache.get(key(t, run)) if cache else None
            if isinstance(hit, dict) and set(hit) == set(caps):
                results[run][t.id] = hit
                stats.cached += 1
            else:
                todo.append(t)
        jobs += [(run, todo[i : i + batch_size]) for i in range(0, len(todo), batch_size)]

    def ask(run: int, batch: list[Trajectory]) -> dict[str, dict[str, str]]:
        prompt = template.format(
            domain=_domains(batch), run=run, capabilities=caps_text, trajectories=render_many(batch))
        return chat_json(client, prompt, _validate_labels([t.id for t in batch], caps),
                         max_tries, temperature=temperature)

    def work(run: int, batch: list[Trajectory]) -> tuple[dict[str, dict[str, str]], list[str]]:
        """Labels of a batch; when the batch fails, each trajectory on its own."""
        try:
            return ask(run, batch), []
        except ReplyError as exc:
            if len(batch) == 1:
                return {}, [f"run {run}, trajectory {batch[0].id!r}: {exc}"]
        labels: dict[str, dict[str, str]] = {}
        errors: list[str] = []
        for t in batch:
            got, err = work(run, [t])
            labels.update(got)
            errors += err
        return labels, errors

    done = 0
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = {pool.submit(work, run, batch): (run, batch) for run, batch in jobs}
        for fut in as_completed(futures):
            run, batch = futures[fut]
            stats.calls += 1
            try:
                labels, errors = fut.result()
            except LLMError as exc:
                labels, errors = {}, [f"run {run}, trajectories {[t.id for t in batch]}: {exc}"]
            stats.failures += errors
            for t in batch:
                if t.id in labels:
                    results[run][t.id] = labels[t.id]
                    if cache:
                        cache.put(key(t, run), labels[t.id])
            done += 1
            if progress:
                progress(done, len(jobs))
    if stats.failures:
        raise AnalysisError(
            f"{len(stats.failures)} labeling batch(es) failed (finished ones are cached; "
            "re-run to retry the rest):\n  " + "\n  ".join(stats.failures[:5]))
    outcomes = {t.id: t.success for t in trajectories}
    out = []
    for run in range(1, runs + 1):
        per_cap = {cap: {tid: row[cap] for tid, row in results[run].items()} for cap in caps}
        out.append(build_run(run, outcomes, per_cap))
    return out, stats
