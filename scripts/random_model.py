"""Write a GGUF model file with Qwen2.5-0.5B-Instruct's architecture and tokenizer and random weights.

    python scripts/random_model.py --vocab VENDOR/llama.cpp/models/ggml-vocab-qwen2.gguf \\
        --template VENDOR/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja --out random-0.5b-f16.gguf

What it is for: timing ``make smoke-local PROFILE=cpu`` where no trained model can be downloaded. A llama.cpp
server spends on each token what the architecture's shapes cost (the same matrix products, attention over the
same context), not what the weights say, so this file costs per token what Qwen2.5-Coder-0.5B-Instruct costs
(the same shapes as Qwen2.5-0.5B-Instruct). Its answers are noise: **never use it to judge a model or the
runner's reading of calls.** Every answer runs to ``max_tokens``: the embedding rows of every token that is not
ordinary text (control tokens such as ``<|im_end|>`` and ``<|endoftext|>``, ``<tool_call>``, the unused
padding ids), and of ``</s>`` (id 128247, ordinary text in Qwen's vocabulary that llama.cpp nevertheless takes
as an end of generation, warning "control-looking token"), are zero, so their logits are exactly 0 while the
largest of the ~151,000 random logits is positive, and greedy decoding (temperature 0) never picks an
end-of-generation token. So each request costs the most it can under the request's token cap.

Inputs, both from the ``llama-cpp-python`` source package (PyPI), which vendors llama.cpp:

- ``--vocab``: ``vendor/llama.cpp/models/ggml-vocab-qwen2.gguf``, llama.cpp's vocab-only test file of Qwen2's
  byte-level BPE tokenizer (151,936 ids, 151,387 merges, the ``qwen2`` pre-tokenizer). Qwen2.5 uses the same
  BPE and merges and adds the special tokens 151646-151664 (``<|object_ref_start|>`` ... ``<|file_sep|>``),
  which that file lists as ``[PAD...]``: they are written here with Qwen2.5's names, ``<tool_call>`` and
  ``</tool_call>`` as user-defined tokens and the ``<|...|>`` ones as control tokens (as llama.cpp's converter
  types them), and ids past 151664 as unused.
- ``--template``: ``vendor/llama.cpp/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja``, the Qwen2.5 Instruct
  chat template with tools (``llama-server --jinja`` renders the tools into the prompt with it).

Shapes (Qwen2.5-0.5B-Instruct's and Qwen2.5-Coder-0.5B-Instruct's ``config.json``): 24 layers, hidden 896,
14 query heads and 2 key/value heads (head size 64), FFN 4864, vocabulary 151,936, tied input/output
embeddings (no ``output.weight``), q/k/v biases, RoPE base 10^6, RMS-norm epsilon 10^-6, context 32,768;
end of generation ``<|im_end|>`` (151645), padding and BOS ``<|endoftext|>`` (151643), no BOS added.

Weights: seeded ``numpy.random.Generator`` normals (standard deviation 0.02; norms 1), written as F16
(``--type f16``, 0.99 GB; quantize it with llama.cpp's ``llama-quantize`` to the Q4_K_M that local files
usually are) or as Q8_0 (``--type q8_0``, 0.53 GB, quantized by the ``gguf`` package). Needs ``gguf`` and
``numpy`` (``pip install gguf``), not prefix-exec. The output file must not exist. Exit status 0, 2 on bad input
(one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:
    import gguf
except ImportError:  # a one-line answer, not a traceback: the package is this script's only extra need
    sys.exit("random_model.py: needs the gguf package (pip install gguf numpy)")


@dataclass(frozen=True)
class Shape:
    """A qwen2-architecture model's sizes; the defaults are Qwen2.5-0.5B-Instruct's."""

    layers: int = 24
    hidden: int = 896
    heads: int = 14
    kv_heads: int = 2
    ffn: int = 4864
    vocab: int = 151_936
    context: int = 32_768
    rope_base: float = 1_000_000.0
    rms_eps: float = 1e-6

    @property
    def kv_width(self) -> int:
        """Width of the key and value projections: key/value heads x head size (hidden / heads)."""
        return self.kv_heads * (self.hidden // self.heads)


#: Qwen2.5's added tokens past Qwen2's three (tokenizer_config.json ``added_tokens_decoder``), with the type
#: llama.cpp's converter gives them: ``<|...|>`` names are control tokens, the tool-call tags user-defined.
QWEN25_ADDED = {
    151646: "<|object_ref_start|>",
    151647: "<|object_ref_end|>",
    151648: "<|box_start|>",
    151649: "<|box_end|>",
    151650: "<|quad_start|>",
    151651: "<|quad_end|>",
    151652: "<|vision_start|>",
    151653: "<|vision_end|>",
    151654: "<|vision_pad|>",
    151655: "<|image_pad|>",
    151656: "<|video_pad|>",
    151657: "<tool_call>",
    151658: "</tool_call>",
    151659: "<|fim_prefix|>",
    151660: "<|fim_middle|>",
    151661: "<|fim_suffix|>",
    151662: "<|fim_pad|>",
    151663: "<|repo_name|>",
    151664: "<|file_sep|>",
}
ENDOFTEXT, IM_END = 151643, 151645
#: Ordinary tokens llama.cpp (0c1e570, ``llama-vocab.cpp``) ends generation on by their text alone.
END_TEXTS = frozenset({"</s>"})
WEIGHT_STD = 0.02
TYPES = {
    "f16": (gguf.GGMLQuantizationType.F16, gguf.LlamaFileType.MOSTLY_F16),
    "q8_0": (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
}


class BadInput(Exception):
    """An input the user fixes (a missing or wrong file): one line, exit 2."""


@dataclass(frozen=True)
class Vocab:
    """A byte-level BPE tokenizer as GGUF stores it: token texts, their types (gguf.TokenType), merges."""

    model: str
    pre: str
    tokens: list[str]
    types: list[int]
    merges: list[str]


def read_vocab(path: Path, size: int) -> Vocab:
    """The tokenizer of the vocab-only GGUF ``path``, with Qwen2.5's added tokens (module docstring).

    Raises BadInput when the file has no gpt2-style tokenizer of ``size`` tokens."""
    try:
        fields = gguf.GGUFReader(path).fields
    except (OSError, ValueError) as exc:
        raise BadInput(f"{path}: not a readable GGUF file ({exc})") from None
    need = ("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type")
    missing = [key for key in (*need, "tokenizer.ggml.merges") if key not in fields]
    if missing:
        raise BadInput(f"{path}: no {', '.join(missing)}: not a BPE vocab file (want ggml-vocab-qwen2.gguf)")
    model, pre, tokens, types = (fields[key].contents() for key in need)
    if model != "gpt2" or len(tokens) != size or len(types) != size:
        raise BadInput(f"{path}: a {model!r} vocab of {len(tokens)} tokens; want gpt2 (byte-level BPE) of {size}")
    tokens, types = list(tokens), list(types)
    for index in range(ENDOFTEXT + 3, size):  # Qwen2's three specials stay as they are
        name = QWEN25_ADDED.get(index)
        tokens[index] = name or f"[PAD{index}]"
        if name is None:
            types[index] = gguf.TokenType.UNUSED
        elif name.startswith("<|"):
            types[index] = gguf.TokenType.CONTROL
        else:
            types[index] = gguf.TokenType.USER_DEFINED
    return Vocab(
        str(model), str(pre), tokens, [int(t) for t in types], list(fields["tokenizer.ggml.merges"].contents())
    )


def tensors(shape: Shape, vocab: Vocab, rng: np.random.Generator) -> Iterator[tuple[str, np.ndarray, bool]]:
    """``(name, float32 array, quantizable)`` for every tensor of the model, in llama.cpp's names.

    Arrays are in numpy order (out x in; GGUF stores the reverse, which is what llama.cpp reads). Norm
    weights and biases stay F32 (not quantizable), as in converted models."""

    def normal(*dims: int) -> np.ndarray:
        return rng.standard_normal(dims, dtype=np.float32) * np.float32(WEIGHT_STD)

    def name(kind: gguf.MODEL_TENSOR, block: int | None = None, suffix: str = "weight") -> str:
        return gguf.TENSOR_NAMES[kind].format(bid=block) + "." + suffix

    embedding = normal(shape.vocab, shape.hidden)
    silent = [i for i, kind in enumerate(vocab.types) if kind != gguf.TokenType.NORMAL or vocab.tokens[i] in END_TEXTS]
    embedding[silent] = 0.0  # logits exactly 0, under the random maximum: never picked (module docstring)
    yield name(gguf.MODEL_TENSOR.TOKEN_EMBD), embedding, True
    del embedding
    yield name(gguf.MODEL_TENSOR.OUTPUT_NORM), np.ones(shape.hidden, np.float32), False
    t = gguf.MODEL_TENSOR
    for block in range(shape.layers):
        yield name(t.ATTN_NORM, block), np.ones(shape.hidden, np.float32), False
        for kind, width in ((t.ATTN_Q, shape.hidden), (t.ATTN_K, shape.kv_width), (t.ATTN_V, shape.kv_width)):
            yield name(kind, block), normal(width, shape.hidden), True
            yield name(kind, block, "bias"), normal(width), False
        yield name(t.ATTN_OUT, block), normal(shape.hidden, shape.hidden), True
        yield name(t.FFN_NORM, block), np.ones(shape.hidden, np.float32), False
        yield name(t.FFN_GATE, block), normal(shape.ffn, shape.hidden), True
        yield name(t.FFN_UP, block), normal(shape.ffn, shape.hidden), True
        yield name(t.FFN_DOWN, block), normal(shape.hidden, shape.ffn), True


def write_metadata(writer: gguf.GGUFWriter, shape: Shape, vocab: Vocab, template: str, seed: int, kind: str) -> None:
    """The architecture's hyperparameters, the tokenizer and the chat template, as llama.cpp reads them."""
    writer.add_name("random-weight model of Qwen2.5-0.5B-Instruct's shapes (not a trained model)")
    writer.add_description(
        f"Random weights (numpy seed {seed}, {kind}) for timing a server: its answers are noise. "
        "Written by prefix-exec's scripts/random_model.py."
    )
    writer.add_file_type(TYPES[kind][1])
    writer.add_context_length(shape.context)
    writer.add_embedding_length(shape.hidden)
    writer.add_block_count(shape.layers)
    writer.add_feed_forward_length(shape.ffn)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_rope_freq_base(shape.rope_base)
    writer.add_layer_norm_rms_eps(shape.rms_eps)
    writer.add_tokenizer_model(vocab.model)
    writer.add_tokenizer_pre(vocab.pre)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.types)
    writer.add_token_merges(vocab.merges)
    writer.add_bos_token_id(ENDOFTEXT)
    writer.add_eos_token_id(IM_END)
    writer.add_pad_token_id(ENDOFTEXT)
    writer.add_add_bos_token(False)
    writer.add_chat_template(template)


def write_model(out: Path, vocab: Vocab, template: str, seed: int, kind: str, shape: Shape = Shape()) -> int:
    """Write the model to ``out`` (which must not exist) and return its size in bytes."""
    quant, _ = TYPES[kind]
    writer = gguf.GGUFWriter(out, "qwen2", use_temp_file=True)
    write_metadata(writer, shape, vocab, template, seed, kind)
    rng = np.random.default_rng(seed)
    for count, (name, array, quantizable) in enumerate(tensors(shape, vocab, rng), 1):
        if quantizable:
            writer.add_tensor(name, gguf.quants.quantize(array, quant), raw_dtype=quant)
        else:
            writer.add_tensor(name, array)
        if count % 50 == 0:
            print(f"random_model.py: {count} tensors made", file=sys.stderr, flush=True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file(progress=False)
    writer.close()
    return out.stat().st_size


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="random_model.py",
        description="Write a GGUF of Qwen2.5-0.5B-Instruct's architecture, tokenizer and chat template with "
        "random weights, for timing a llama.cpp server (its answers are noise; see the module docstring).",
    )
    parser.add_argument("--vocab", type=Path, required=True, help="llama.cpp's models/ggml-vocab-qwen2.gguf")
    parser.add_argument(
        "--template", type=Path, required=True, help="llama.cpp's models/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
    )
    parser.add_argument("--out", type=Path, required=True, help="the GGUF file to write (must not exist)")
    parser.add_argument("--seed", type=int, default=0, help="numpy seed of the weights (default 0)")
    parser.add_argument("--type", choices=sorted(TYPES), default="f16", help="weight type (default f16)")
    args = parser.parse_args(argv)
    try:
        if args.out.exists():
            raise BadInput(f"{args.out} exists; give a new --out (nothing is overwritten)")
        try:
            template = args.template.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"{args.template}: cannot read the chat template ({exc})") from None
        vocab = read_vocab(args.vocab, Shape().vocab)
    except BadInput as exc:
        print(f"random_model.py: error: {exc}", file=sys.stderr)
        return 2
    size = write_model(args.out, vocab, template, args.seed, args.type)
    print(f"random_model.py: wrote {args.out} ({size:,} bytes, {args.type}, seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
