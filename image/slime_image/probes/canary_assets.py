"""Make what slime-canary's job reads, offline and the same every time, under the folder given: a Qwen3 model with
random weights and the pairing's reference attention geometry (Qwen3-4B: hidden 2560, 32 heads, 8 KV heads, head_dim
128; SGLang's and TransformerEngine's kernels are chosen by it) but few layers and a small vocabulary, a byte-level
BPE tokenizer trained here, arithmetic prompts with their answers, and a rule-based reward.

    canary_assets.py FOLDER LAYERS VOCAB PROMPTS

Prints one line of JSON: what it wrote.
"""

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 2560, 32, 8, 128, 9728
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

REWARD = '''"""slime-canary's rewards, each writing what it scored as a line `CANARY {{json}}` with the weight
versions the sample was generated with (slime's Sample.weight_versions).

reward: 1 when the answer is in the response, plus the share of the response's characters that are digits.
Continuous, so that the samples of one prompt score differently and GRPO has an advantage, and so a gradient.

numbers (--learn): the share of the response's tokens that are numbers (ids below, the tokenizer's all-digit
tokens). A random model samples about one in four; it is a preference a model can learn from scratch.
"""
import json
import sys
import time

NUMBER_TOKENS = frozenset({numbers})


def scored(start, sample, value):
    line = {{"event": "reward", "t0": start, "t1": time.time(), "reward": value, "versions": sample.weight_versions}}
    sys.stdout.write(f"CANARY {{json.dumps(line)}}\n")  # one write, as canary_train's
    sys.stdout.flush()
    return value


async def reward(args, sample, **kwargs):
    start = time.time()
    response, label = sample.response or "", str(sample.label)
    return scored(start, sample, float(label in response) + sum(c.isdigit() for c in response) / max(len(response), 1))


async def numbers(args, sample, **kwargs):
    start = time.time()
    tokens = sample.tokens[len(sample.tokens) - sample.response_length :] if sample.response_length else []
    return scored(start, sample, sum(t in NUMBER_TOKENS for t in tokens) / max(len(tokens), 1))
'''


def prompts(count: int) -> list[dict]:
    rows = []
    for i in range(count):
        a, b = 3 + 7 * i % 41, 5 + 11 * i % 37
        rows.append({"prompt": f"Compute {a} + {b}. Answer with the number only.", "label": str(a + b)})
    return rows


def tokenizer(vocab: int, corpus: list[str]) -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab - 8,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    # every id the model can sample must decode: fill the vocabulary up to the embedding's rows
    tok.add_tokens([f"<|fill_{i}|>" for i in range(vocab - tok.get_vocab_size())])
    return tok


def number_tokens(tok: Tokenizer) -> set[int]:
    """The ids that decode to digits alone ("7", "42", " 300"): the --learn reward's target."""
    return {i for i in range(tok.get_vocab_size()) if (text := tok.decode([i]).strip()).isascii() and text.isdigit()}


def weights(layers: int, vocab: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)

    def normal(*shape):
        return (torch.randn(*shape, generator=generator) * 0.02).to(torch.bfloat16)

    ones = lambda n: torch.ones(n, dtype=torch.bfloat16)  # noqa: E731
    tensors = {"model.embed_tokens.weight": normal(vocab, HIDDEN), "model.norm.weight": ones(HIDDEN)}
    for i in range(layers):
        p = f"model.layers.{i}."
        tensors |= {
            p + "self_attn.q_proj.weight": normal(HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.k_proj.weight": normal(KV_HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.v_proj.weight": normal(KV_HEADS * HEAD_DIM, HIDDEN),
            p + "self_attn.o_proj.weight": normal(HIDDEN, HEADS * HEAD_DIM),
            p + "self_attn.q_norm.weight": ones(HEAD_DIM),
            p + "self_attn.k_norm.weight": ones(HEAD_DIM),
            p + "mlp.gate_proj.weight": normal(FFN, HIDDEN),
            p + "mlp.up_proj.weight": normal(FFN, HIDDEN),
            p + "mlp.down_proj.weight": normal(HIDDEN, FFN),
            p + "input_layernorm.weight": ones(HIDDEN),
            p + "post_attention_layernorm.weight": ones(HIDDEN),
        }
    return tensors


def main(folder: Path, layers: int, vocab: int, count: int) -> dict:
    model = folder / "model"
    model.mkdir(parents=True, exist_ok=True)
    rows = prompts(count)
    corpus = [f"{r['prompt']} {r['label']}" for r in rows] + [str(n) for n in range(1000)]
    tok = tokenizer(vocab, corpus)
    tok.save(str(model / "tokenizer.json"))
    eos = tok.token_to_id("<|endoftext|>")
    (model / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "eos_token": "<|endoftext|>",
                "pad_token": "<|endoftext|>",
                "model_max_length": 4096,
            }
        )
    )
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "hidden_size": HIDDEN,
        "intermediate_size": FFN,
        "num_hidden_layers": layers,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "max_position_embeddings": 4096,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0,
        "tie_word_embeddings": True,
        "vocab_size": vocab,
        "bos_token_id": eos,
        "eos_token_id": eos,
        "torch_dtype": "bfloat16",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "use_cache": True,
    }
    (model / "config.json").write_text(json.dumps(config, indent=1))
    (model / "generation_config.json").write_text(json.dumps({"eos_token_id": eos, "bos_token_id": eos}))
    save_file(weights(layers, vocab), str(model / "model.safetensors"), metadata={"format": "pt"})
    with open(folder / "prompts.jsonl", "w") as out:
        out.writelines(json.dumps(r) + "\n" for r in rows)
    numbers = number_tokens(tok)
    (folder / "canary_reward.py").write_text(REWARD.format(numbers=sorted(numbers)))
    return {
        "model": str(model),
        "prompts": len(rows),
        "vocab": tok.get_vocab_size(),
        "layers": layers,
        "number_tokens": len(numbers),
    }


if __name__ == "__main__":
    folder, layers, vocab, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    print(json.dumps(main(folder, layers, vocab, count)), flush=True)
