"""The one way benchmarks hand back their result: an indented JSON record on stdout, and the
same text in ``--json-out`` when given (folders made as needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(record: dict[str, Any], json_out: str | None) -> None:
    text = json.dumps(record, indent=1)
    print(text, flush=True)
    if json_out:
        Path(json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(json_out).write_text(text + "\n")
