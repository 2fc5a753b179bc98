"""`tracec check` shares a base env's check with its variants (checks/variants.py): the shared
report is what a full check of the variant gives, and a variant that could behave otherwise is
checked in full."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich.console import Console

from tracec.checks.cli import _print_reports
from tracec.checks.report import CheckReport
from tracec.checks.run import run_checks
from tracec.checks.variants import check_sharing, why_not_shared
from tracec.compiler.api import compile_file, compile_text
from tracec.harness.resolve import env_class

ROOT = Path(__file__).parents[2]
SPEC = ROOT / "tests" / "lang" / "specs" / "with_variants.tracec"
SEEDS = 3
# what a report says about the env itself, not about the shared world, tasks and rules
OWN = {"env", "module", "seconds", "shared_with", "warnings", "problems", "findings"}


def _fields(report: CheckReport) -> dict:
    return {k: v for k, v in report.model_dump().items() if k not in OWN}


def _findings(report: CheckReport) -> list[tuple]:
    return sorted((f["code"], f["line"], f["column"], f["message"]) for f in report.findings)


def test_a_shared_variant_report_is_the_full_check_of_the_variant() -> None:
    result = compile_file(ROOT / "specs" / "structured_data_reasoning.tracec")
    base, variant = result.module, result.variants[0].module
    checked: list = []
    check_sharing(base, checked, SEEDS, True)
    shared = check_sharing(variant, checked, SEEDS, True)
    assert shared.shared_with == "structured_data_reasoning"
    full = run_checks(variant, seeds=SEEDS, check_env=True)
    assert full.shared_with is None
    assert _fields(shared) == _fields(full)
    assert _findings(shared) == _findings(full)
    assert shared.env == full.env == "structured_data_reasoning_compact"


def test_the_variant_s_own_findings_are_its_own() -> None:
    """C153 (a hint names a tool the env hides) is found for the variant that hides it, not
    for the base nor for a variant that shows it, while the probes are shared."""
    text = SPEC.read_text().replace(
        "    communicate total\n",
        "    communicate total\n    hint \"Read the cost from get_reservation_details, and "
        "ask get_user_details only if the user is unsure.\"\n", 1)
    result = compile_text(text, "specs/with_variants.tracec")
    assert result.ok, result.rendered
    checked: list = []
    base, compact, tiny = (check_sharing(m, checked, SEEDS, False)
                           for m in [result.module] + [v.module for v in result.variants])
    assert compact.shared_with == tiny.shared_with == "with_variants"
    c153 = [f for f in tiny.findings if f["code"] == "C153"]
    assert len(c153) == 1 and "`get_user_details`" in c153[0]["message"]
    hint_line = next(i for i, line in enumerate(text.splitlines(), 1) if "hint \"Read" in line)
    assert c153[0]["line"] == hint_line  # the task's hint, in the spec
    assert not [f for r in (base, compact) for f in r.findings if f["code"] == "C153"]
    assert not tiny.passed and base.passed and compact.passed


def test_a_variant_that_hides_a_probed_tool_is_checked_in_full() -> None:
    result = compile_file(SPEC)
    base_cls = env_class(result.module)
    cap = dataclasses.replace(base_cls.capability, name="hand_made",
                              tool_names=("get_reservation_details",))  # hides the forbid
    hidden = type("HandMadeEnv", (base_cls,), {"capability": cap})
    checked: list = []
    base = check_sharing(result.module, checked, SEEDS, False)
    assert "cancel_reservation" in base.probe_tools
    assert "`cancel_reservation`" in why_not_shared(hidden, base_cls, base, SEEDS)
    report = check_sharing(hidden, checked, SEEDS, False)
    assert report.shared_with is None and report.probe_runs > 0
    assert why_not_shared(hidden, base_cls, base, SEEDS + 1) is not None  # other seeds


def test_a_subclass_that_changes_behaviour_is_checked_in_full() -> None:
    result = compile_file(SPEC)
    base_cls = env_class(result.module)
    cap = dataclasses.replace(base_cls.capability, name="odd")
    odd = type("OddEnv", (base_cls,), {"capability": cap, "restart": lambda self: None})
    checked: list = []
    base = check_sharing(result.module, checked, SEEDS, False)
    assert why_not_shared(odd, base_cls, base, SEEDS) == "not a prompt-budget variant of it"
    # a plain subclass of a class that changes behaviour is not one either
    plain = type("PlainEnv", (odd,), {"capability": cap})
    assert why_not_shared(plain, base_cls, base, SEEDS) == "not a prompt-budget variant of it"
    assert why_not_shared(base_cls, base_cls, base, SEEDS) is not None


def test_a_shared_finding_is_printed_once() -> None:
    finding = "specs/x.tracec:3:5: warning: something the base and its variant share\n  | x"
    reports = [CheckReport(env="x", warnings=[finding]),
               CheckReport(env="x_compact", warnings=[finding], shared_with="x")]
    console = Console(record=True, width=200)
    _print_reports(console, reports, {})
    out = console.export_text()
    assert out.count("something the base and its variant share") == 1
    assert "x_compact: probes, determinism and meaning checks shared with x" in out


def test_a_shared_variant_checks_the_policy_sections_it_shows() -> None:
    """C154 (a task relies on a policy section the env does not show) depends on the variant's
    prompt budget: a variant that drops a section is told so though it shares the probes, and
    the base, which shows it, is not."""
    spec = ROOT / "specs" / "structured_data_reasoning.tracec"
    text = spec.read_text().replace('policy sections ["Modify flight", "Cancel flight"]',
                                    'policy sections ["Cancel flight"]', 1)
    result = compile_text(text, "specs/structured_data_reasoning.tracec", base_dir=spec.parent)
    assert result.ok, result.rendered
    checked: list = []
    base, variant = (check_sharing(m, checked, SEEDS, False)
                     for m in (result.module, result.variants[0].module))
    assert variant.shared_with == base.env
    c154 = [f for f in variant.findings if f["code"] == "C154"]
    assert c154 and '"Modify flight"' in c154[0]["message"]
    assert not [f for f in base.findings if f["code"] == "C154"]
    full = run_checks(result.variants[0].module, seeds=SEEDS, check_env=False)
    assert _findings(variant) == _findings(full)
