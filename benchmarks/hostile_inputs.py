"""Count hostile inputs per category and how many broke tracec (tracebacks, hangs, step exceptions).

    OMP_NUM_THREADS=1 python benchmarks/hostile_inputs.py [--fuzz 2000] [--json]

Categories (issue 13): 1. ``env.step()`` on hostile turns (the corpus in
``tests/robustness/hostile.py`` plus seeded random mutations of real tool calls, on every shipped
env); 2. specs (the hostile-spec corpus plus seeded mutations of the shipped specs): compile,
import, reset under a time limit; 3. every command on hostile files, and ``eval --agent local:``
with a missing model; 4. offline labeler attribution on injected-fault trajectories, before (the
labeler at ``--before REV``, default 6bd3761, the last commit before these fixes) and after.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.robustness.hostile import (  # noqa: E402
    SPEC_CASES,
    Hang,
    env_class,
    step_inputs,
    time_limit,
    write_hostile_files,
)

TOKENS = ["NaN", "Infinity", "-Infinity", "1e400", "9" * 5000, "[" * 3000, "{" * 3000, '"',
          "\\", "\\ud800", "\x00", "</tool_call>", "<tool_call>", "null", "true", ",", ":", "}",
          "]", "𝔘", "é" * 100, '"name"', '"arguments"', "-0", "1" * 400]


def mutate(rng: random.Random, text: str, tokens: list[str]) -> str:
    for _ in range(rng.randint(1, 4)):
        op = rng.choice(["insert", "delete", "duplicate", "truncate"])
        i = rng.randint(0, len(text))
        j = rng.randint(i, min(len(text), i + 40))
        if op == "insert":
            text = text[:i] + rng.choice(tokens) + text[i:]
        elif op == "delete":
            text = text[:i] + text[j:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] * rng.randint(1, 50) + text[j:]
        else:
            text = text[:i]
    return text


# ---------------------------------------------------------------- 1. step


def bench_step(n_fuzz: int, seed: int) -> dict:
    import generated_envs
    from tracec.runtime.toolcall import hermes

    rng = random.Random(seed)
    tried = exceptions = hangs = 0
    examples: list[str] = []
    corpus = step_inputs()
    for name, entry in generated_envs.ENVS.items():
        mod, cls = entry.split(":")
        env = getattr(importlib.import_module(mod), cls)()
        env.reset(seed=0)
        calls = [hermes(t["function"]["name"], {p: "x" for p in
                                                t["function"]["parameters"].get("properties", {})})
                 for t in env.tools]
        fuzz = [mutate(rng, rng.choice(calls) * rng.randint(1, 3), TOKENS) for _ in range(n_fuzz)]
        for i, action in enumerate(corpus + fuzz):
            env.reset(seed=i % 7)
            tried += 1
            try:
                with time_limit(10):
                    env.step(action)
            except Hang:
                hangs += 1
            except Exception as exc:  # noqa: BLE001 - counted
                exceptions += 1
                examples.append(f"{name}: {type(exc).__name__}: {str(exc)[:80]}")
    return {"inputs": tried, "step_exceptions": exceptions, "hangs": hangs,
            "examples": examples[:5]}


# ---------------------------------------------------------------- 2. specs

NAMES = ["rng", "rt", "db", "v", "o", "__class__", "len", "class", "x" * 70, "users", "r", "total",
         "a", "b", "cnt", "amount"]


def random_expr(rng: random.Random, depth: int = 3) -> str:
    """A random expression over the BASE spec's names (literals, arithmetic, nesting, calls)."""
    leaves = [str(rng.randint(-3, 3)), str(rng.randint(0, 10**6)), str(rng.randint(10**30, 10**45)),
              f"{rng.uniform(0, 1e6):.3f}", '"text"', "True", "None", "len(r.flights)",
              "r.reservation_id", "total"]
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(leaves)
    sub = lambda: random_expr(rng, depth - 1)  # noqa: E731
    forms = [
        lambda: f"{sub()} {rng.choice(['+', '-', '*', '/', '//', '%'])} {sub()}",
        lambda: "[" + ", ".join(sub() for _ in range(rng.randint(0, 3))) + "]",
        lambda: '{"k": ' + sub() + "}",
        lambda: f"[{sub()} for {rng.choice(NAMES) if rng.random() < 0.2 else 'q'} in r.flights]",
        lambda: (lambda n: "[" * n + "]" * n)(rng.randint(1, 80)),
        lambda: f'fresh_id("G", {rng.randint(0, 64)})',
        lambda: f"sum(f.price for f in r.flights) + 0 * len([{sub()}])",
    ]
    return rng.choice(forms)()


def random_spec(rng: random.Random) -> str:
    """The BASE spec with a random description, spawn count, lets and rule divisor."""
    from tests.lang.cases import BASE

    desc = "".join(rng.choice('ab "\\\n\u00e9\x00\u2028') for _ in range(rng.randint(0, 20)))
    text = BASE.replace('"A demo."', '"' + desc.replace("\\", "\\\\").replace('"', '\\"')
                        .replace("\n", "\\n") + '"')
    text = text.replace("users = user[2..3]", f"users = user[2..{rng.choice([3, 50, 999, 2000])}]")
    lets = "".join(f"\n    let {rng.choice(NAMES) if rng.random() < 0.1 else 'w'}{i} = "
                   f"{random_expr(rng)}"
                   for i in range(rng.randint(0, 4)))
    text = text.replace("let total = sum(f.price for f in r.flights)",
                        "let total = sum(f.price for f in r.flights)" + lets)
    if rng.random() < 0.5:
        divisor = rng.choice(["total", "1", "2.5", "len(r.flights)", "0"])
        text = text.replace("1.0 when progress == 1",
                            f"1.0 when progress / {divisor} >= 0 and progress == 1")
    return text


def bench_specs(n_fuzz: int, seed: int) -> dict:
    from tracec.compiler.api import compile_text
    from tracec.runtime.env import SpecRuntimeError

    rng = random.Random(seed)
    shipped = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "specs").glob("*.tracec"))]
    spec_tokens = TOKENS + ["user[100000000]", 'fresh_id("G", 99999)', "rng", "__class__",
                            "/ 0", "// 0", "% 0", "[" * 70, "list[" * 70, "{x}", "1." + "5" * 60]
    corpus = [text for text, _ in SPEC_CASES.values()]
    corpus += [mutate(rng, rng.choice(shipped), spec_tokens) for _ in range(n_fuzz)]
    corpus += [random_spec(rng) for _ in range(n_fuzz)]
    out = {"inputs": 0, "compiled": 0, "diagnosed": 0, "crashes": 0, "not_importable": 0,
           "hangs": 0, "located_reset_errors": 0, "unlocated_reset_errors": 0, "examples": []}
    for i, text in enumerate(corpus):
        out["inputs"] += 1
        stage = "compile"
        try:
            with time_limit(30):
                result = compile_text(text, "fuzz.tracec")
                if not result.ok:
                    out["diagnosed"] += 1
                    continue
                out["compiled"] += 1
                stage = "import"
                try:
                    from tracec.compiler.api import load_module_source

                    module = load_module_source(result.code, f"tracec_hostile_{i}")
                except Exception as exc:  # noqa: BLE001 - counted
                    out["not_importable"] += 1
                    out["examples"].append(f"import: {type(exc).__name__}: {str(exc)[:80]}")
                    continue
                stage = "reset"
                env = env_class(module)()
                for s in range(2):
                    try:
                        env.reset(seed=s)
                    except SpecRuntimeError as exc:
                        located = "task `" in str(exc) and f"seed {s}" in str(exc)
                        out["located_reset_errors" if located else "unlocated_reset_errors"] += 1
                        break
        except Hang:
            out["hangs"] += 1
            out["examples"].append(f"hang at {stage}")
        except Exception as exc:  # noqa: BLE001 - counted
            out["crashes"] += 1
            out["examples"].append(f"{stage}: {type(exc).__name__}: {str(exc)[:80]}")
    out["examples"] = out["examples"][:5]
    return out


# ---------------------------------------------------------------- 3. commands


def bench_commands(tmp: Path) -> dict:
    from click.testing import CliRunner

    from tests.robustness.test_cli_files import commands
    from tracec.cli import cli

    sample = json.loads((ROOT / "tests/fixtures/analysis/tau2-results-sample.json").read_text())
    files = write_hostile_files(tmp / "files", sample)
    runs = [args for path in files.values() for args in commands(path, tmp / "out")]
    env = "tracec/structured_data_reasoning-v0"
    for spec in ("local:/nonexistent/model", "local:no-such-model-id", "local:./missing",
                 "local:org/missing+adapter:/nonexistent", "scripted:/nonexistent.json"):
        if "org/missing" in spec:
            continue  # would try the network
        runs.append(["eval", "--agent", spec, "--env", env, "--tasks", "1", "--out",
                     str(tmp / "out" / "e")])
    out = {"inputs": len(runs), "tracebacks": 0, "hangs": 0, "refused": 0, "multi_line": 0,
           "examples": []}
    for args in runs:
        try:
            with time_limit(120):
                res = CliRunner().invoke(cli, args)
        except Hang:
            out["hangs"] += 1
            continue
        if (res.exception is not None and not isinstance(res.exception, SystemExit)) \
                or "Traceback" in res.output:
            out["tracebacks"] += 1
            out["examples"].append(f"{args[0]} {Path(args[1]).name}: {res.exception!r}"[:120])
        elif res.exit_code != 0:
            out["refused"] += 1
            errors = [ln for ln in res.output.splitlines() if ln.startswith("Error")]
            out["multi_line"] += not errors and ": error:" not in res.output
    out["examples"] = out["examples"][:5]
    return out


# ---------------------------------------------------------------- 4. attribution


def bench_attribution(tmp: Path, before: str | None) -> dict:
    import tracec.analysis.offline as after
    from tests.robustness.faults import attribution, fault_cases

    cases = fault_cases(20)
    result = {"trajectories": len(cases)}
    impls = {"after": after}
    if before:
        try:
            src = subprocess.run(["git", "show", f"{before}:tracec/analysis/offline.py"],
                                 capture_output=True, text=True, check=True, cwd=ROOT).stdout
            path = tmp / "offline_before.py"
            path.write_text(src)
            spec = importlib.util.spec_from_file_location("offline_before", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)  # type: ignore[union-attr]
            impls = {"before": mod, **impls}
        except (subprocess.CalledProcessError, OSError, ImportError) as exc:
            result["before_error"] = str(exc)[:100]
    for name, mod in impls.items():
        score = attribution(mod.label_trajectory, mod.load_task_gold, cases, tmp)
        correct = sum(c for c, _ in score.values())
        total = sum(t for _, t in score.values())
        result[name] = {"correct": correct, "labels": total,
                        "by_fault": {k: f"{c}/{t}" for k, (c, t) in score.items()}}
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fuzz", type=int, default=300, help="random inputs per env / specs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--before", default="6bd3761",
                    help="git revision of the offline labeler to compare with ('' for none)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    before = args.before or None
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        report = {
            "1_step": bench_step(args.fuzz, args.seed),
            "2_specs": bench_specs(args.fuzz, args.seed),
            "3_commands": bench_commands(tmp),
            "4_attribution": bench_attribution(tmp, before),
            "seconds": round(time.perf_counter() - t0, 1),
        }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    s, c, m, a = (report[k] for k in ("1_step", "2_specs", "3_commands", "4_attribution"))
    print(f"1 step:     {s['inputs']} turns, {s['step_exceptions']} step exceptions, "
          f"{s['hangs']} hangs")
    print(f"2 specs:    {c['inputs']} specs ({c['compiled']} compiled, {c['diagnosed']} diagnosed), "
          f"{c['crashes']} crashes, {c['not_importable']} not importable, {c['hangs']} hangs, "
          f"{c['located_reset_errors']} located / {c['unlocated_reset_errors']} unlocated "
          "reset errors")
    print(f"3 commands: {m['inputs']} runs ({m['refused']} refused), {m['tracebacks']} tracebacks, "
          f"{m['hangs']} hangs, {m['multi_line']} without an error line")
    for name in ("before", "after"):
        if name in a:
            print(f"4 offline attribution {name}: {a[name]['correct']}/{a[name]['labels']} "
                  f"{a[name]['by_fault']}")
    print(f"({report['seconds']} s)")
    for part in (s, c, m):
        for e in part.get("examples", []):
            print("  example:", e)


if __name__ == "__main__":
    main()
