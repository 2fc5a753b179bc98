"""Chat rendering, in one place: prompts, turn deltas and the end-of-turn marker, all read from
the tokenizer and its chat template (no special token is spelled out here).

``end_of_turn(tok)`` is what the template writes after an assistant message's content (ChatML's
``<|im_end|>``, Llama 3's ``<|eot_id|>``, …), found by rendering a probe conversation;
``stop_token_ids(tok)`` are the ids that end a generated turn (that marker and eos).
"""

from __future__ import annotations

from typing import Any

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
