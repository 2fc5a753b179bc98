"""A tiny random Llama chat model for tests: no downloads, a few MB, built in about a second.

The tokenizer is a byte-level BPE trained on a small built-in corpus, with ChatML special
tokens and the Hermes/Qwen tool-call chat template that tracec also installs on real models
(:data:`tracec.llm.chat.CHAT_TEMPLATE`, ``tracec model prepare``).
"""

from __future__ import annotations

import json
from pathlib import Path

from tracec.llm.chat import CHAT_TEMPLATE, TURN_END, TURN_START

SPECIAL_TOKENS = ("<|endoftext|>", TURN_START, TURN_END)
TOOL_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")

_CORPUS = [
    "You are a helpful assistant. You may call one or more functions to assist with the user query.",
    "Hi, what did I pay for reservation ABC123? Yes, please go ahead. Thank you, goodbye.",
    "The total is 1234.56 dollars for 2 passengers on 3 flights. Error: unknown tool.",
    ('For each function call, return a json object: {"name": "get_user_details", "arguments": '
    '{"user_id": "mia_li_3668"}}'),
    ('{"type": "function", "function": {"name": "lookup", "description": "Look up a record.", '
    '"parameters": {"type": "object", "properties": {"id": {"type": "string"}}, '
    '"required": ["id"]}}}'),
    "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789 .,:;!?'\"()[]{}<>/_-+=*#@$%&|~",
    "order item product price quantity status cancel exchange return refund address payment",
    "flight cabin economy business basic date origin destination baggage insurance passenger",
]


def build_tokenizer(vocab_size: int = 512):
    """A byte-level BPE ``PreTrainedTokenizerFast`` with ChatML/Hermes special tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TOOL_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=TURN_END,
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
        clean_up_tokenization_spaces=False,
    )


def make_tiny_model(out_dir: str | Path, seed: int = 0, hidden_size: int = 64, layers: int = 2) -> Path:
    """Write a tiny random Llama causal LM + tokenizer to ``out_dir`` and return the path."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids(TURN_START),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(generator_state)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "tracec_model.json").write_text(
        json.dumps({"kind": "tiny", "seed": seed, "hidden_size": hidden_size, "layers": layers}) + "\n"
    )
    return out
