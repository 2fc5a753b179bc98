"""Spec proposal: an LLM writes one tracec spec per selected capability; the spec is compiled
and checked, and diagnostics/findings go back to the LLM until it passes (bounded tries).
Specs that never pass are reported, never written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tracec import files
from tracec.analysis.aggregate import Selection
from tracec.analysis.errors import AnalysisError
from tracec.analysis.prompts import load_prompt
from tracec.checks import run_checks
from tracec.compiler.api import compile_text
from tracec.domains import get_domain
from tracec.domains.describe import describe_text
from tracec.llm.client import LLMError
from tracec.outputs import write_atomic

SPEC_FENCE = re.compile(r"```(?:tracec)?[ \t]*\n(.*?)```", re.DOTALL)


@dataclass
class ProposeResult:
    capability: str
    ok: bool
    tries: int
    path: str | None = None
    error: str = ""


def load_language_reference(path: Path | None = None) -> str:
    """The language reference: an explicit path, the packaged copy, or the repo's docs/."""
    candidates = [path] if path else []
    try:
        candidates.append(Path(str(resources.files("tracec").joinpath("docs/language.md"))))
    except (ModuleNotFoundError, TypeError):
        pass
    candidates.append(Path(__file__).resolve().parents[2] / "docs" / "language.md")
    for c in candidates:
        if c is not None and c.is_file():
            return files.read_text(c, "language reference", error=AnalysisError)
    raise AnalysisError(
        "the tracec language reference (docs/language.md) was not found; pass --language PATH")


def domain_tools_text(domain: str) -> str:
    """What `tracec describe DOMAIN` prints: tools, entities, references, enums, generators."""
    try:
        dom = get_domain(domain)
    except (KeyError, ModuleNotFoundError):
        raise AnalysisError(f"unknown domain {domain!r}") from None

    return describe_text(dom)


def extract_spec(reply: str) -> str:
    m = SPEC_FENCE.search(reply)
    return (m.group(1) if m else reply).strip() + "\n"


def _default_compile(text: str, path: str):
    return compile_text(text, path)


def _default_check(capability, seeds: int):
    return run_checks(capability, seeds=seeds)


def _diagnostics_text(result) -> str:
    """Rendered ``path:line:col: error: …`` text, whichever form the compiler result offers."""
    for attr in ("diagnostics_text", "rendered", "diagnostics"):
        value = getattr(result, attr, None)
        if isinstance(value, str):
            return value
    return "\n".join(str(d) for d in getattr(result, "diagnostics", []) or [])


def propose_one(
    client, sel: Selection, domain: str, language: str, tools: str, out_dir: Path,
    max_tries: int = 4, seeds: int = 64,
    compile_fn: Callable | None = None, check_fn: Callable | None = None,
) -> ProposeResult:
    """Write, compile and check one spec; ``out_dir/<skill>.tracec`` only when it passes."""
    compile_fn = compile_fn or _default_compile
    check_fn = check_fn or _default_check
    path = out_dir / f"{sel.skill}.tracec"
    if path.exists() or path.is_symlink():  # a spec already there may hold the user's edits
        return ProposeResult(sel.skill, False, 0, error=f"{path} exists; not overwriting it "
                             "(move it away or propose into another -o folder)")
    prompt = load_prompt("propose").format(
        domain=domain, language=language, tools=tools, name=sel.skill,
        description=sel.description, examples=", ".join(sel.example_failed_cases) or "(none)")
    messages = [{"role": "user", "content": prompt}]
    error = ""
    for attempt in range(1, max_tries + 1):
        try:
            reply = client.chat(messages, temperature=0.2, max_tokens=4096).content
        except LLMError as exc:
            return ProposeResult(sel.skill, False, attempt, error=str(exc))
        text = extract_spec(reply)
        result = compile_fn(text, str(path))
        if not result.ok:
            stage, error = "It does not compile", _diagnostics_text(result)
        else:
            report = check_fn(result.module.CAPABILITY, seeds)
            if report.passed:
                write_atomic(path, text)
                return ProposeResult(sel.skill, True, attempt, path=str(path))
            stage, error = "It compiles but fails the checks", "\n".join(report.problems)
        messages += [
            {"role": "assistant", "content": reply},
            {"role": "user", "content": load_prompt("propose_fix").format(stage=stage, problems=error)},
        ]
    return ProposeResult(sel.skill, False, max_tries, error=error)


# Per domain: (seed lines, let, gold call, communicate, distractor) of the skeleton's examples;
# every commented example line compiles once uncommented (tests/robustness/test_install.py).
TEMPLATE_EXAMPLES: dict[str, tuple[list[str], str, str, str, str]] = {
    "airline": (
        ["users        = user[3..5]",
         "reservations = reservation[4..8] { user_id = pick(users).user_id }"],
        "let r = pick(x for x in reservations if len(x.flights) >= 2)",
        "get_reservation_details(reservation_id = r.reservation_id)",
        "communicate len(r.flights)",
        'distractor twin { clone r with cabin = "basic_economy" }',
    ),
    "retail": (
        ["users  = user[3..5]",
         "orders = order[4..8] { user_id = pick(users).user_id }"],
        "let r = pick(x for x in orders if len(x.items) >= 1)",
        "get_order_details(order_id = r.order_id)",
        "communicate len(r.items)",
        'distractor twin { clone r with status = "cancelled" }',
    ),
    "toolsandbox": (
        ["people = contact[4..6]"],
        "let r = pick(x for x in people if not x.is_self)",
        'search_contacts(name = r.name)',
        "communicate r.phone_number",
        'distractor twin { clone r with phone_number = fresh_id("+1555", 7) }',
    ),
}


def template_spec(name: str, domain: str, description: str = "") -> str:
    """A commented skeleton spec for a person to finish (follows the language sketch)."""
    desc = (description or "TODO: what the agent must be able to do.").replace('"', "'")
    desc = " ".join(desc.replace("\\", "/").split())
    seed, let, gold, comm, distractor = TEMPLATE_EXAMPLES.get(domain, TEMPLATE_EXAMPLES["airline"])
    seed_lines = "\n".join(f"    # {line}" for line in seed)
    return f'''# Capability spec skeleton written by `tracec propose --template`. Finish the TODOs,
# then run: tracec compile specs/ && tracec check generated_envs/
capability {name} {{
  description "{desc}"
  domain {domain}                   # tools, entity schemas and policy come from the domain
  max_turns 12

  seed {{
    # TODO: the records the tasks need, e.g.
{seed_lines}
  }}

  task main weight 1 {{
    # TODO: pick the records the task is about, compute what the agent must find, e.g.
    # {let}
    user  "TODO: the user's request"   # {{expr}} inside the text inserts a value
    gold  {{
      # TODO: the tool calls that solve the task, e.g.
      # {gold}
    }}
    # TODO: information the agent must tell the user, e.g.
    # {comm}
    hint  "TODO: how an expert solves it"
  }}

  # TODO: near-duplicates that punish the failure, e.g.
  # {distractor}

  reward {{
    1.0 when state_matches
    0.0 otherwise
  }}
}}
'''
