"""`tracec run` checks the whole config before stage one: strict types, keys that cannot collide
with what the run sets, URLs, the spec folder, the spec mapping and the initial adapter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracec.cli import cli
from tracec.pipeline.config import ConfigError, load_config
from tracec.pipeline.preflight import problems

ROOT = Path(__file__).resolve().parents[2]
TAU2 = ROOT / "tests" / "fixtures" / "tau2" / "targets"
DEMO_SPECS = ROOT / "configs" / "cpu-demo-specs"


def _write(tmp_path: Path, body: str) -> Path:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text("{}")
    path = tmp_path / "tracec.toml"
    path.write_text(f'[target]\ndata_dir = "{TAU2}"\n[model]\nbase = "{model}"\n' + body)
    return path


@pytest.mark.parametrize("body, says", [
    ('[train.settings]\nlora = { rank = "8" }\n',
     "train.settings.lora.rank: Input should be a valid integer, got the string '8'"),
    ('[train.settings]\nsteps = 2.0\n', "train.settings.steps"),
    ('[train.settings]\ndevice = "cpu"\n', "train.settings.device: train.settings may not set device (set the top-level device)"),
    ('[train.settings]\nenv = "x"\n', "train.settings.env: train.settings may not set env"),
    ('[labeler]\nkind = "llm"\nendpoint = "file:///etc/passwd"\nmodel = "m"\n',
     "labeler.endpoint = 'file:///etc/passwd': expected an http:// or https:// URL"),
    ('[specs]\nsource = "propose"\nendpoint = "localhost:8000"\nmodel = "m"\n', "specs.endpoint"),
])
def test_config_types_and_keys_are_strict(tmp_path, body, says):
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, body))
    assert says in str(err.value) and "\n" not in str(err.value)


def test_numbers_in_toml_keep_working(tmp_path):
    cfg = load_config(_write(tmp_path, "[train.settings]\nlearning_rate = 1\ntrain_seeds = [0, 100]\n"))
    assert cfg.train.settings["train_seeds"] == [0, 100]


def _problems(tmp_path: Path, body: str) -> list[str]:
    return problems(load_config(_write(tmp_path, body)))


def test_mapping_to_a_missing_spec_is_named_before_any_stage(tmp_path):
    body = (f'[specs]\ndir = "{DEMO_SPECS}"\nmapping = {{ grounded_numbers = '
            '"reservation_amount_compactt" }\n')
    assert _problems(tmp_path, body) == [
        "specs.mapping.grounded_numbers: no spec named 'reservation_amount_compactt' in "
        f"{DEMO_SPECS}; did you mean `reservation_amount_compact`?"]
    ok = f'[specs]\ndir = "{DEMO_SPECS}"\nmapping = {{ g = "reservation_amount_compact" }}\n'
    assert _problems(tmp_path, ok) == []


def test_mapping_to_a_spec_of_another_domain(tmp_path):
    other = ROOT / "tests" / "fixtures" / "pipeline" / "specs"  # toolsandbox specs
    body = f'[specs]\ndir = "{other}"\nmapping = {{ x = "datetime_reasoning" }}\n'
    assert any("is not a airline spec" in p for p in _problems(tmp_path, body))


@pytest.mark.parametrize("folder, says", [("/", "not a spec folder"), ("empty", "no .tracec specs")])
def test_spec_folder_that_is_no_spec_folder(tmp_path, folder, says):
    (tmp_path / "empty").mkdir()
    found = _problems(tmp_path, f'[specs]\ndir = "{folder}"\n')
    assert len(found) == 1 and found[0].startswith("specs.dir:") and says in found[0]


def test_spec_that_does_not_compile_is_named_with_its_line(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "bad.tracec").write_text("capability x {\n  domian airline\n}\n")
    found = _problems(tmp_path, '[specs]\ndir = "specs"\n')
    assert len(found) == 1 and f"{specs / 'bad.tracec'}:" in found[0]


def test_missing_init_adapter_is_named_relative_to_the_config(tmp_path):
    body = f'[specs]\ndir = "{DEMO_SPECS}"\n[train.settings]\ninit_adapter = "adapters/sft"\n'
    found = _problems(tmp_path, body)
    assert found == [f"train.settings.init_adapter: {tmp_path / 'adapters' / 'sft'}: no such adapter folder"]
    assert problems(load_config(_write(tmp_path, body)), until="compile") == []  # not trained


def test_run_refuses_before_stage_one_and_writes_nothing(tmp_path):
    config = _write(tmp_path, f'[specs]\ndir = "{DEMO_SPECS}"\n[train.settings]\ndevice = "cuda"\n')
    res = CliRunner().invoke(cli, ["run", str(config), "-o", str(tmp_path / "run")])
    assert res.exit_code == 1 and "Traceback" not in res.output and "TypeError" not in res.output
    assert f"{config}:8:1: train.settings.device: train.settings may not set device" in res.output
    assert not (tmp_path / "run").exists()


def test_llm_user_url_must_be_http(tmp_path):
    cfg = _write(tmp_path, f'[specs]\ndir = "{DEMO_SPECS}"\n')
    cfg.write_text(cfg.read_text().replace("[target]\n", '[target]\nuser = "llm:m@file:///x"\n'))
    assert problems(load_config(cfg)) == [
        "target.user: target.user's URL = 'file:///x': expected an http:// or https:// URL with "
        "a host, e.g. http://localhost:8000/v1"]


@pytest.mark.parametrize("body, says", [
    ("[train.settings]\nlerning_rate = 1e-4\n", "train.settings.lerning_rate: Extra inputs are not "
     "permitted; did you mean `learning_rate`?"),
    ("[train.settings]\nlora = { rnak = 8 }\n", "did you mean `rank`?"),
    ("[target]\ndomian = 'airline'\n", "target.domian: Extra inputs are not permitted; did you "
     "mean `domain`?"),
])
def test_unknown_keys_name_the_key_meant(tmp_path, body, says):
    path = tmp_path / "t.toml"
    path.write_text(body)
    with pytest.raises(ConfigError, match=re.escape(says)):
        load_config(path)


def test_unknown_split_is_named_before_any_stage(tmp_path):
    assert _problems(tmp_path, f'[specs]\ndir = "{DEMO_SPECS}"\n') == []
    cfg = _write(tmp_path, f'[specs]\ndir = "{DEMO_SPECS}"\n')
    cfg.write_text(cfg.read_text().replace("[target]\n", '[target]\ntest_split = "tset"\n'))
    found = problems(load_config(cfg))
    assert len(found) == 1 and found[0].startswith("target.test_split: ")
    assert "unknown split 'tset'" in found[0]


def test_config_errors_name_the_line_and_column_of_the_key(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text('seed = 0\n[train]\nmax_adapters = 1\n[train.settings]\nsteps = 2\n'
                    'lora = { alpha = 16, rank = "8" }\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}:6:22: train.settings.lora.rank: ")
    path.write_text('[labeler]\nkind = "llm"\nmodel = "m"\nendpoint = "file:///x"\n')
    with pytest.raises(ConfigError, match=re.escape(f"{path}:4:1: labeler.endpoint = ")):
        load_config(path)


def test_preflight_error_names_the_line_of_the_key(tmp_path):
    from tracec.pipeline.preflight import preflight

    config = _write(tmp_path, f'[specs]\ndir = "{DEMO_SPECS}"\nmapping = {{ a = "nope" }}\n')
    with pytest.raises(ConfigError) as err:
        preflight(load_config(config), config)
    assert str(err.value).startswith(f"{config}:7:13: specs.mapping.a: no spec named 'nope'")


@pytest.mark.parametrize("name", ["cpu-demo.toml", "gpu.toml"])
def test_shipped_configs_pass_the_spec_split_and_adapter_checks(name):
    from tracec.pipeline.preflight import ORDER, init_adapter_problems, spec_problems, split_problems

    cfg = load_config(ROOT / "configs" / name)
    for check in (spec_problems, split_problems, init_adapter_problems):
        assert check(cfg, set(ORDER)) == [], check.__name__
