"""Chat rendering, in one place: prompts, turn deltas and the end-of-turn marker, all read from
the tokenizer and its chat template (the helpers spell out no special token), plus the one
template tracec installs on local models, :data:`CHAT_TEMPLATE`, and :func:`render_chatml`, its
first-turn rendering in plain Python for callers that size prompts without transformers.

``end_of_turn(tok)`` is what the template writes after an assistant message's content (ChatML's
``<|im_end|>``, Llama 3's ``<|eot_id|>``, …), found by rendering a probe conversation;
``stop_token_ids(tok)`` are the ids that end a generated turn (that marker and eos).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

TURN_START, TURN_END = "<|im_start|>", "<|im_end|>"  # ChatML's turn markers, as CHAT_TEMPLATE writes them

# Hermes/Qwen-style ChatML template with tools. Prefix-stable: every message renders to its own
# turn, so rendering ``messages + new`` extends the rendering of ``messages`` (rollouts rely on it
# to append environment tokens without re-tokenising the model's own tokens).
CHAT_TEMPLATE = (
    "{%- set sys = 'You are a helpful assistant.' -%}"
    "{%- if messages and messages[0]['role'] == 'system' -%}"
    "{%- set sys = messages[0]['content'] -%}{%- set msgs = messages[1:] -%}"
    "{%- else -%}{%- set msgs = messages -%}{%- endif -%}"
    "{{- '<|im_start|>system\\n' + sys -}}"
    "{%- if tools -%}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' -}}"
    "{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n"
    "{\"name\": <function-name>, \"arguments\": <args-json-object>}\\n</tool_call>' -}}"
    "{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- for m in msgs -%}"
    "{%- if m['role'] == 'tool' -%}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + (m['content'] or '') + '\\n</tool_response><|im_end|>\\n' -}}"
    "{%- elif m['role'] == 'assistant' -%}"
    "{{- '<|im_start|>assistant\\n' + (m['content'] or '') -}}"
    "{%- for tc in (m['tool_calls'] or []) -%}"
    "{%- set f = tc['function'] if tc['function'] is defined else tc -%}"
    "{%- set a = f['arguments'] -%}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + f['name'] + '\", \"arguments\": ' "
    "+ (a if a is string else (a | tojson)) + '}\\n</tool_call>' -}}"
    "{%- endfor -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + m['role'] + '\\n' + (m['content'] or '') + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

_PROBE = "\x1e tracec probe \x1e"  # text no template rewrites


class ChatError(ValueError):
    """A chat template tracec cannot work with; one line."""


def render_text(tok: Any, messages: list[dict], tools: list[dict] | None, gen: bool) -> str:
    """The template's text for ``messages`` (ending with the assistant header when ``gen``)."""
    return tok.apply_chat_template(messages, tools=tools or None, tokenize=False,
                                   add_generation_prompt=gen)


def encode(tok: Any, text: str) -> list[int]:
    """Token ids of rendered text (the template already wrote every special token)."""
    return tok(text, add_special_tokens=False)["input_ids"] if text else []


def render_prompt(tok: Any, messages: list[dict], tools: list[dict] | None = None) -> list[int]:
    """Prompt token ids for one conversation, ending with the assistant header."""
    return encode(tok, render_text(tok, messages, tools, gen=True))


def end_of_turn(tok: Any) -> str:
    """The marker the template writes right after an assistant message's content (stripped of
    the whitespace that follows it); cached on the tokenizer."""
    cached = getattr(tok, "_tracec_end_of_turn", None)
    if cached is not None:
        return cached
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": _PROBE}]
    text = render_text(tok, msgs, None, gen=False)
    cut = text.rfind(_PROBE)
    if cut < 0:
        raise ChatError("the chat template drops assistant content; cannot find its end-of-turn marker")
    marker = text[cut + len(_PROBE):].strip()
    if not marker:
        marker = tok.eos_token or ""
    if not marker:
        raise ChatError("the chat template ends assistant turns with no marker and the tokenizer "
                        "has no eos token")
    try:
        tok._tracec_end_of_turn = marker
    except AttributeError:
        pass
    return marker


def stop_token_ids(tok: Any) -> list[int]:
    """Token ids that end an assistant turn: the template's end-of-turn marker and eos."""
    ids = {tok.eos_token_id}
    marker = encode(tok, end_of_turn(tok))
    if len(marker) == 1 and marker[0] != tok.unk_token_id:
        ids.add(marker[0])
    return sorted(i for i in ids if i is not None)


class ChatRenderer:
    """Renders chat messages with the tokenizer's template, as text and token deltas."""

    def __init__(self, tokenizer) -> None:
        self.tok = tokenizer
        self.end = end_of_turn(tokenizer)

    def text(self, messages: list[dict], tools: list[dict] | None, gen: bool) -> str:
        return render_text(self.tok, messages, tools, gen)

    def ids(self, text: str) -> list[int]:
        return encode(self.tok, text)

    def prompt_ids(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        return self.ids(self.text(messages, tools, gen=True))

    def env_delta(self, before: list[dict], after: list[dict], tools: list[dict] | None,
                  ended_turn: bool) -> str:
        """Text that follows the model's last token: the end of its turn, the new env messages and
        the next assistant header. ``before`` ends with the assistant message just generated."""
        prev = self.text(before, tools, gen=False)
        nxt = self.text(after, tools, gen=True)
        if not nxt.startswith(prev):  # template not prefix-stable: render the new turns alone
            prev = self.text(before[:1] + before[-1:], tools, gen=False)
            nxt = self.text(before[:1] + after[len(before) - 1:], tools, gen=True)
            common = 0
            while common < min(len(prev), len(nxt)) and prev[common] == nxt[common]:
                common += 1
            delta = nxt[common:]
        else:
            delta = nxt[len(prev):]
        cut = prev.rfind(self.end)
        tail = prev[cut + len(self.end):] if cut >= 0 else ""
        return ("" if ended_turn else self.end) + tail + delta


def decode_completion(tok: Any, ids: list[int], stop_ids: list[int]) -> str:
    """Text of a completion without its stop token (tool-call tags are kept)."""
    ids = [i for i in ids if i not in stop_ids and i != tok.pad_token_id]
    return tok.decode(ids, skip_special_tokens=False)


def render_chatml(messages: list[dict], tools: list[dict] | None) -> str:
    """The first-turn rendering of :data:`CHAT_TEMPLATE` (system, user turns, assistant header).

    Pure Python, so the compiler side can size prompts without transformers; a test keeps it
    equal to the Jinja template's output.
    """
    sys_text = "You are a helpful assistant."
    msgs = messages
    if messages and messages[0]["role"] == "system":
        sys_text, msgs = messages[0]["content"], messages[1:]
    out = [TURN_START + "system\n" + sys_text]
    if tools:
        out.append("\n\n# Tools\n\nYou may call one or more functions to assist with the user "
                   "query.\n\nYou are provided with function signatures within <tools></tools> "
                   "XML tags:\n<tools>")
        for tool in tools:
            out.append("\n" + json.dumps(tool, ensure_ascii=False))
        out.append("\n</tools>\n\nFor each function call, return a json object with function name "
                   "and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
                   "{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")
    out.append(TURN_END + "\n")
    for m in msgs:
        out.append(f"{TURN_START}{m['role']}\n{m.get('content') or ''}{TURN_END}\n")
    out.append(TURN_START + "assistant\n")
    return "".join(out)


def cut_at_stop(ids: list[int], stop_ids: Collection[int], finished_by: Any = None) -> list[int]:
    """Ids up to and including the first stop id (local ``generate`` and served completions
    alike). A server that stopped on a stop id but left it out of the ids (``finished_by``,
    vLLM's ``stop_reason`` / SGLang's ``matched``) gets it back."""
    out: list[int] = []
    for t in ids:
        out.append(int(t))
        if t in stop_ids:
            return out
    if isinstance(finished_by, int) and finished_by in stop_ids:
        out.append(finished_by)
    return out
