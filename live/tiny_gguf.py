"""Write a tiny llama-architecture GGUF with random weights (for tests with a real engine).

No download: the vocabulary is 256 byte tokens plus a few hundred word pieces and
the control tokens; the chat template is a plain Jinja template. The model
produces noise, but llama.cpp loads it, tokenizes, streams and reports timings
exactly as it does for a real model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
WORDS = ["the", "a", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by", "at", "from", "it", "be", "this", "are", "an", "or", "which", "but", "not", "have", "model", "token", "prompt", "answer", "server", "speed", "cache", "write", "code", "essay", "city", "railway", "log", "request", "worker", "status", "time", "data", "value", "system", "run", "test", "case", "file", "line", "item", "stock", "class", "function", "return", "import", "python"]


def write_tiny_gguf(path: Path, seed: int = 0, n_embd: int = 64, n_layer: int = 2, n_head: int = 4,
                    n_ff: int = 128, n_ctx: int = 4096) -> Path:
    """Write the model to ``path`` (about 0.5 MB) and return ``path``."""
    import gguf

    rng = np.random.default_rng(seed)
    tokens: list[bytes] = [b"<unk>", b"<s>", b"</s>", b"<|im_start|>", b"<|im_end|>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL,
             gguf.TokenType.CONTROL]
    for b in range(256):
        tokens.append(f"<0x{b:02X}>".encode())
        types.append(gguf.TokenType.BYTE)
    pieces = [p for w in WORDS for p in (f"\u2581{w}", w)]
    pieces += [f"\u2581{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + list("abcdefghijklmnopqrstuvwxyz")
    pieces.append("\u2581")
    for piece in dict.fromkeys(pieces):  # unique, in order
        tokens.append(piece.encode())
        types.append(gguf.TokenType.NORMAL)
    scores = [0.0] * 5 + [0.0] * 256 + [-float(i) for i in range(len(tokens) - 261)]
    n_vocab = len(tokens)

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("benchcards-tiny-random")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    def t(name: str, *shape: int, scale: float = 0.08) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    # Dimension 0 of every embedding is large and positive, so it dominates the residual stream;
    # the output rows of the control tokens point the other way on it. The model therefore never
    # ends an answer by itself (no early end-of-sequence), and runs reach their token limit.
    embd = (rng.standard_normal((n_vocab, n_embd)) * 0.08).astype(np.float32)
    embd[:, 0] = 4.0
    w.add_tensor("token_embd.weight", embd)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    out = (rng.standard_normal((n_vocab, n_embd)) * 0.08).astype(np.float32)
    out[:, 0] = 1.0
    out[:5, 0] = -4.0  # <unk>, <s>, </s>, <|im_start|>, <|im_end|>
    w.add_tensor("output.weight", out)
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        t(f"blk.{i}.attn_q.weight", n_embd, n_embd)
        t(f"blk.{i}.attn_k.weight", n_embd, n_embd)
        t(f"blk.{i}.attn_v.weight", n_embd, n_embd)
        t(f"blk.{i}.attn_output.weight", n_embd, n_embd)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        t(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
