"""Keep library chatter out of user output: transformers' deprecation warnings
(``is_gradient_checkpointing``, ``past_key_values … deprecated``), its info logs and its
"Loading weights" progress bar. ``TRACEC_DEBUG=1`` leaves them on."""

from __future__ import annotations

import os
import sys
import warnings

NOISE = (r".*is_gradient_checkpointing.*", r".*past_key_values.*deprecated.*",
         r".*`torch_dtype` is deprecated.*", r".*generation flags are not valid.*")


def quiet_libraries() -> None:
    """Silence known library noise for this process (idempotent; no heavy import)."""
    if os.environ.get("TRACEC_DEBUG"):
        return
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for pattern in NOISE:
        warnings.filterwarnings("ignore", message=pattern)
    transformers = sys.modules.get("transformers")
    if transformers is not None:  # already imported: its env-var defaults were read
        logging = transformers.utils.logging
        logging.set_verbosity_error()
        logging.disable_progress_bar()
