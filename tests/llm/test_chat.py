"""Chat rendering reads its special tokens from the tokenizer's template."""

from __future__ import annotations

from tracec.llm.chat import ChatRenderer, end_of_turn, render_prompt, stop_token_ids
from tracec.llm.loading import load_tokenizer


def test_end_of_turn_and_stop_ids_come_from_the_template(tiny_model_dir):
    tok = load_tokenizer(str(tiny_model_dir))
    assert end_of_turn(tok) == "<|im_end|>"  # the tiny model's ChatML template
    assert tok.convert_tokens_to_ids("<|im_end|>") in stop_token_ids(tok)
    other = load_tokenizer(str(tiny_model_dir))
    other.chat_template = ("{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}</turn>"
                           "{% endfor %}{% if add_generation_prompt %}<s>assistant: {% endif %}")
    assert end_of_turn(other) == "</turn>"
    renderer = ChatRenderer(other)
    msgs = [{"role": "user", "content": "hi"}]
    after = msgs + [{"role": "assistant", "content": "yo"}, {"role": "user", "content": "ok"}]
    delta = renderer.env_delta(after[:2], after, None, ended_turn=False)
    assert delta == "</turn><s>user: ok</turn><s>assistant: "
    assert render_prompt(other, msgs) == other("<s>user: hi</turn><s>assistant: ",
                                               add_special_tokens=False)["input_ids"]
