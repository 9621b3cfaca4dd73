"""Write tiny llama-architecture GGUFs with random weights (for tests with a real engine).

Two kinds of vocabulary:

- ``vocab=None``: a small built-in vocabulary (256 byte tokens plus a few hundred word pieces); no
  download, no other file needed.
- ``vocab="llama-bpe"`` or ``vocab="qwen35"``: the *real* tokenizer of Llama 3 or of the Qwen family,
  copied key by key (``tokenizer.*``) from llama.cpp's vocab-only GGUFs (``models/ggml-vocab-*.gguf`` in
  its source tree; ``scripts/build_llama_cpp.sh`` puts them beside the binaries). A model written this
  way tokenizes exactly like the real one: numbers split into digit groups, punctuation apart, long words
  in pieces, and the chat template's control tokens.

The weights are random; the model produces noise, but llama.cpp loads it, applies the chat template,
tokenizes, streams and reports timings exactly as it does for a real model. Dimension 0 of every
embedding is large and positive and the control tokens point the other way on it, so by default the model
never ends an answer by itself and runs reach their token limit. ``eager_eos=True`` flips that for the
end-of-turn tokens: the model then ends every answer after its first token unless ``ignore_eos`` is sent.
Output and input embeddings are tied and stored as F16 to keep the file small (about 17 MB with the
Llama 3 vocabulary, 20 MB with Qwen's).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
#: Llama 3's chat layout (header tokens around the role, end-of-turn after the message)
LLAMA3_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{{ message['content'] | trim }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
#: Qwen's ChatML layout with its default system message
QWEN_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
VOCABS = {
    "llama-bpe": ("ggml-vocab-llama-bpe.gguf", LLAMA3_TEMPLATE, ("<|eot_id|>", "<|end_of_text|>", "<|eom_id|>")),
    "qwen35": ("ggml-vocab-qwen35.gguf", QWEN_TEMPLATE, ("<|im_end|>", "<|endoftext|>")),
}
WORDS = ["the", "a", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by", "at", "from", "it", "be", "this", "are", "an", "or", "which", "but", "not", "have", "model", "token", "prompt", "answer", "server", "speed", "cache", "write", "code", "essay", "city", "railway", "log", "request", "worker", "status", "time", "data", "value", "system", "run", "test", "case", "file", "line", "item", "stock", "class", "function", "return", "import", "python"]


def vocab_dir() -> Path | None:
    """Folder holding llama.cpp's vocab GGUFs: ``$LLAMA_VOCAB_DIR``, else beside ``$LLAMA_SERVER``."""
    if os.environ.get("LLAMA_VOCAB_DIR"):
        return Path(os.environ["LLAMA_VOCAB_DIR"])
    if os.environ.get("LLAMA_SERVER"):
        return Path(os.environ["LLAMA_SERVER"]).parent
    return None


def _read_vocab(vocab: str, folder: Path | None) -> dict[str, Any]:
    """The ``tokenizer.*`` keys of one of llama.cpp's vocab-only GGUFs."""
    if vocab not in VOCABS:
        raise ValueError(f"unknown vocabulary {vocab!r}; choose from {', '.join(VOCABS)}")
    folder = folder or vocab_dir()
    if folder is None:
        raise FileNotFoundError("no vocab folder: set LLAMA_VOCAB_DIR (scripts/build_llama_cpp.sh --print-env)")
    path = folder / VOCABS[vocab][0]
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such vocab file (run scripts/build_llama_cpp.sh)")
    return {k: v for k, v in read_gguf_kv(path).items() if k.startswith("tokenizer.")}


# GGUF value types: scalar struct formats (little-endian); 8 = string, 9 = array
_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_MAX_KV_BYTES = 256 * 2**20


def read_gguf_kv(path: Path) -> dict[str, Any]:
    """The key/value metadata of a GGUF file (tensors are not read).

    A small reader of the documented layout (magic, version, counts, then typed key/value pairs); it is
    much faster than ``gguf.GGUFReader`` on vocabularies with hundreds of thousands of entries. Strings
    are decoded as UTF-8 (with replacement), arrays become lists. Raises ValueError on a malformed file.
    """
    import struct

    data = path.read_bytes()[:_MAX_KV_BYTES]
    pos = 0

    def take(fmt: str) -> Any:
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(data):
            raise ValueError(f"{path}: truncated GGUF metadata")
        (v,) = struct.unpack_from(fmt, data, pos)
        pos += size
        return v

    def string() -> str:
        nonlocal pos
        n = take("<Q")
        if pos + n > len(data):
            raise ValueError(f"{path}: truncated GGUF string")
        s = data[pos:pos + n].decode("utf-8", errors="replace")
        pos += n
        return s

    def value(vtype: int) -> Any:
        if vtype == 8:
            return string()
        if vtype == 9:
            itype, count = take("<I"), take("<Q")
            if itype in _SCALAR:
                import numpy as np_

                dt = np_.dtype(_SCALAR[itype].replace("?", "b1"))
                nonlocal pos
                arr = np_.frombuffer(data, dtype=dt, count=count, offset=pos)
                pos += dt.itemsize * count
                return arr.tolist()
            return [value(itype) for _ in range(count)]
        if vtype not in _SCALAR:
            raise ValueError(f"{path}: unknown GGUF value type {vtype}")
        return take(_SCALAR[vtype])

    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    pos = 4
    take("<I")  # version
    take("<Q")  # tensor count
    n_kv = take("<Q")
    out: dict[str, Any] = {}
    for _ in range(n_kv):
        key = string()
        out[key] = value(take("<I"))
    return out


def write_tiny_gguf(path: Path, seed: int = 0, n_embd: int = 64, n_layer: int = 2, n_head: int = 4,
                    n_ff: int = 128, n_ctx: int = 262144, vocab: str | None = None,
                    vocab_folder: Path | None = None, eager_eos: bool = False) -> Path:
    """Write the model to ``path`` and return ``path`` (side effect: creates or replaces that file).

    ``vocab`` picks the tokenizer (None: the small built-in one; "llama-bpe" or "qwen35": the real one,
    read from ``vocab_folder`` or ``vocab_dir()``). ``n_ctx`` is the trained context the file states.
    """
    import gguf

    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(f"benchcards-tiny-random-{vocab or 'builtin'}")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    if vocab is None:
        tokens, control, eog = _builtin_vocab(w)
    else:
        tokens, control, eog = _real_vocab(w, vocab, vocab_folder)
    n_vocab = len(tokens)

    def t(name: str, *shape: int, scale: float = 0.08) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    embd = (rng.standard_normal((n_vocab, n_embd)) * 0.08).astype(np.float32)
    embd[:, 0] = 1.0
    embd[control, 0] = -4.0
    if eager_eos:
        embd[eog, 0] = 8.0
        embd[eog, 1:] = 0.0
    w.add_tensor("token_embd.weight", embd.astype(np.float16))  # tied: also the output projection
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
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


def _builtin_vocab(w: Any) -> tuple[list[Any], list[int], list[int]]:
    import gguf

    tokens: list[bytes] = [b"<unk>", b"<s>", b"</s>", b"<|im_start|>", b"<|im_end|>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL,
             gguf.TokenType.CONTROL]
    for b in range(256):
        tokens.append(f"<0x{b:02X}>".encode())
        types.append(gguf.TokenType.BYTE)
    pieces = [p for word in WORDS for p in (f"\u2581{word}", word)]
    pieces += [f"\u2581{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + list("abcdefghijklmnopqrstuvwxyz")
    pieces.append("\u2581")
    for piece in dict.fromkeys(pieces):  # unique, in order
        tokens.append(piece.encode())
        types.append(gguf.TokenType.NORMAL)
    scores = [0.0] * 5 + [0.0] * 256 + [-float(i) for i in range(len(tokens) - 261)]
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
    return tokens, [0, 1, 2, 3, 4], [2, 4]


def _real_vocab(w: Any, vocab: str, folder: Path | None) -> tuple[list[Any], list[int], list[int]]:
    import gguf

    keys = _read_vocab(vocab, folder)
    tokens: list[str] = list(keys["tokenizer.ggml.tokens"])
    types: list[int] = [int(x) for x in keys["tokenizer.ggml.token_type"]]
    w.add_tokenizer_model(keys["tokenizer.ggml.model"])
    if "tokenizer.ggml.pre" in keys:
        w.add_tokenizer_pre(keys["tokenizer.ggml.pre"])
    w.add_token_list(tokens)
    w.add_token_types(types)
    if "tokenizer.ggml.merges" in keys:
        w.add_token_merges(list(keys["tokenizer.ggml.merges"]))
    for key, add in (("tokenizer.ggml.bos_token_id", w.add_bos_token_id),
                     ("tokenizer.ggml.eos_token_id", w.add_eos_token_id),
                     ("tokenizer.ggml.padding_token_id", w.add_pad_token_id),
                     ("tokenizer.ggml.unknown_token_id", w.add_unk_token_id),
                     ("tokenizer.ggml.add_bos_token", w.add_add_bos_token),
                     ("tokenizer.ggml.add_eos_token", w.add_add_eos_token)):
        if key in keys:
            add(keys[key])
    w.add_chat_template(VOCABS[vocab][1])
    control = [i for i, ty in enumerate(types) if ty in (gguf.TokenType.CONTROL, gguf.TokenType.USER_DEFINED)]
    index = {tok: i for i, tok in enumerate(tokens)}
    eog = [index[t] for t in VOCABS[vocab][2] if t in index]
    return tokens, control, eog
