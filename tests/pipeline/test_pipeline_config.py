"""Run configs: validation, shipped configs, spec choice, the CLI's error messages."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.pipeline.helpers import ROOT
from tracec.pipeline.config import ConfigError, load_config, parse_config
from tracec.pipeline.report import SECTIONS, is_run_dir, write_report
from tracec.pipeline.stages import choose_specs


@pytest.mark.parametrize("name", ["cpu-demo.toml", "gpu.toml"])
def test_shipped_configs_load(name):
    cfg = load_config(ROOT / "configs" / name)
    assert cfg.target.domain in ("airline", "retail")
    assert cfg.base_agent()


def test_cpu_demo_trains_the_selected_capabilities_and_evaluates_on_heldout_seeds():
    cfg = load_config(ROOT / "configs" / "cpu-demo.toml")
    assert not cfg.specs.train_all_specs and cfg.train.settings["warmup_sft"] > 0
    assert cfg.compose.routing == "classifier" and cfg.final_eval.env_tasks >= 20
    names = sorted(p.stem for p in (ROOT / "configs" / "cpu-demo-specs").glob("*.tracec"))
    assert sorted(cfg.specs.mapping.values()) == names  # every demo spec serves a selection


def test_new_keys_parse(tmp_path):
    cfg = parse_config({"compose": {"routing": "classifier", "top_p": 0.5,
                                    "classifier_scoring": "likelihood"},
                        "final_eval": {"env_tasks": 3, "env_cross": True},
                        "train": {"settings": {"warmup_sft": 2, "sft_batch": 1}}})
    assert cfg.compose.top_p == 0.5 and cfg.final_eval.env_first_seed == 10**9
    assert cfg.final_eval.env_cross and cfg.train.settings["warmup_sft"] == 2


def test_relative_paths_are_relative_to_the_config_file(tmp_path):
    (tmp_path / "data").mkdir()
    path = tmp_path / "tracec.toml"
    path.write_text('[target]\ndata_dir = "data"\n[specs]\ndir = "myspecs"\n')
    cfg = load_config(path)
    assert cfg.target.data_dir == str((tmp_path / "data").resolve())
    assert cfg.specs.dir == str((tmp_path / "myspecs").resolve())


@pytest.mark.parametrize("text, message", [
    ("[target\n", "invalid TOML"),
    ("[target]\ndomian = 'airline'\n", "target.domian: Extra inputs are not permitted"),
    ("[labeler]\nkind = 'llm'\n", "needs labeler.endpoint"),
    ("[train.settings]\ngroup_size = 1\n", "group_size"),
    ("[train.settings]\nmodel = 'x'\n", "may not set"),
    ("[train.settings]\nwarmup_sft = -1\n", "warmup_sft"),
    ("[compose]\nrouting = 'oracle'\n", "compose.routing"),
    ("[compose]\ntop_p = 0\n", "compose.top_p"),
    ("[final_eval]\nenv_first_seed = 5\n", "final_eval.env_first_seed"),
    ("[final_eval]\nenv_tasks = -1\n", "final_eval.env_tasks"),
])
def test_bad_configs_give_one_clear_line(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_cli_reports_config_errors_without_traceback(tmp_path):
    from tracec.pipeline.cli import run_cmd

    path = tmp_path / "bad.toml"
    path.write_text("[target]\ndomain = 'bank'\n")
    result = CliRunner().invoke(run_cmd, [str(path), "-o", str(tmp_path / "run")])
    assert result.exit_code == 1
    assert "target.domain" in result.output and "Traceback" not in result.output
    missing = CliRunner().invoke(run_cmd, [str(tmp_path / "nope.toml"), "-o", str(tmp_path / "r")])
    assert missing.exit_code == 1 and "cannot read" in missing.output


def test_choose_specs_by_name_mapping_or_all():
    specs = {"a": ROOT, "b": ROOT, "c": ROOT}
    assert choose_specs(specs, ["a", "x", "y"], {"y": "c"}, False) == {"a": ["a"], "c": ["y"]}
    assert choose_specs(specs, ["x"], {}, False) == {}
    assert choose_specs(specs, ["b"], {}, True) == {"a": [], "b": ["b"], "c": []}


def test_report_of_a_run_that_has_not_started(tmp_path):
    cfg = parse_config({}, tmp_path)
    (tmp_path / "run_config.json").write_text(cfg.model_dump_json())
    assert is_run_dir(tmp_path)
    text = write_report(tmp_path).read_text()
    assert all(f"## {t}\n" in text for t in SECTIONS)
    assert "- **baseline**: not run yet." in text


def test_runner_and_report_read_one_stage_registry(tmp_path):
    """The report's stage table and failure list name every registered stage, in run order."""
    from tracec.pipeline import registry, runner

    assert runner.STAGES is registry.STAGES
    cfg = parse_config({}, tmp_path)
    (tmp_path / "run_config.json").write_text(cfg.model_dump_json())
    text = write_report(tmp_path).read_text()
    table = [line.split("|")[1].strip() for line in text.split("## Stages\n", 1)[1].split("\n## ")[0]
             .splitlines() if line.startswith("|") and "not run" in line]
    assert table == list(registry.STAGE_NAMES)
    failures = text.split("## What failed and why\n", 1)[1]
    assert [n for n in registry.STAGE_NAMES if f"**{n}**: not run yet" in failures] == list(registry.STAGE_NAMES)
    with pytest.raises(ValueError, match="unknown stage 'nope': stages are baseline, analyze"):
        registry.stage("nope")


@pytest.mark.parametrize("name", ["cancel_on_request_compact", "reservation_amount_compact"])
def test_cpu_demo_specs_compile_and_pass_their_checks(name):
    from tracec.checks.run import run_checks
    from tracec.compiler.api import compile_file

    result = compile_file(ROOT / "configs" / "cpu-demo-specs" / f"{name}.tracec")
    assert result.ok, result.rendered
    report = run_checks(result.module.CAPABILITY, seeds=8)
    assert report.passed, report.problems
    assert result.module.CAPABILITY.domain.name == "airline"


def test_a_run_evaluates_its_local_and_composed_agents_on_its_device(monkeypatch):
    """`device = "cuda"` reaches the eval's local model (it used to load on the CPU)."""
    from types import SimpleNamespace

    from tracec.pipeline import stages

    seen = []
    monkeypatch.setattr(stages, "make_agent", lambda spec, **opts: seen.append((spec, opts)))
    ctx = SimpleNamespace(cfg=parse_config({"device": "cuda"}))
    stages.make_agent_for(ctx, "local:smollm2")
    stages.make_agent_for(ctx, "composed:runs/x")
    stages.make_agent_for(ctx, "oracle")
    assert [o["place"].target for _, o in seen[:2]] == ["cuda", "cuda"]
    assert "place" not in seen[2][1]
