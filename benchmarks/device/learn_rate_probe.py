"""How fast GRPO moves the canary's model toward a reward, per learning rate, before a learning mode is built on it:
plain torch on the device's GPU, nothing of slime. The model is the canary's shape and initialisation (canary_assets:
2 Qwen3 layers of Qwen3-4B's geometry, vocabulary 4096, embeddings tied, weights N(0, 0.02) in bf16); the reward is
the share of the response's tokens in a class of 1035 of the 4096 ids (the canary tokenizer's number tokens count
1035). Adam (betas 0.9/0.98, weight decay 0.1) on fp32 weights with bf16 compute, as Megatron trains; one step per
rollout; group-normalised advantages, as slime's GRPO.

    python3 learn_rate_probe.py [LR ...]

Prints the mean reward of each iteration, per learning rate. Its figures: docs/h200/learn/.
"""

import math
import sys
import time

import torch
import torch.nn.functional as F

HIDDEN, HEADS, KV, HEAD_DIM, FFN, LAYERS, VOCAB = 2560, 32, 8, 128, 9728, 2, 4096
PROMPTS, SAMPLES, PROMPT_LEN, RESPONSE_LEN, ITERATIONS, CLASS = 8, 8, 12, 64, 16, 1035


def rms(x, weight):
    return weight * (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)


def rope(x, theta=1e6):
    t = x.shape[-2]
    freqs = 1.0 / theta ** (torch.arange(0, HEAD_DIM, 2, device=x.device).float() / HEAD_DIM)
    angles = torch.outer(torch.arange(t, device=x.device).float(), freqs)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., : HEAD_DIM // 2], x[..., HEAD_DIM // 2 :]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)

        def p(*shape):
            return torch.nn.Parameter((torch.randn(*shape, generator=g) * 0.02).to(torch.bfloat16).float())

        def ones(n):
            return torch.nn.Parameter(torch.ones(n))

        self.embed = p(VOCAB, HIDDEN)
        self.norm = ones(HIDDEN)
        self.layers = torch.nn.ModuleList()
        for _ in range(LAYERS):
            layer = torch.nn.Module()
            layer.q, layer.k, layer.v = p(HEADS * HEAD_DIM, HIDDEN), p(KV * HEAD_DIM, HIDDEN), p(KV * HEAD_DIM, HIDDEN)
            layer.o = p(HIDDEN, HEADS * HEAD_DIM)
            layer.qn, layer.kn = ones(HEAD_DIM), ones(HEAD_DIM)
            layer.gate, layer.up, layer.down = p(FFN, HIDDEN), p(FFN, HIDDEN), p(HIDDEN, FFN)
            layer.ln1, layer.ln2 = ones(HIDDEN), ones(HIDDEN)
            self.layers.append(layer)

    def forward(self, tokens):
        b, t = tokens.shape
        x = F.embedding(tokens, self.embed)
        for layer in self.layers:
            h = rms(x, layer.ln1)
            q = rope(rms((h @ layer.q.T).view(b, t, HEADS, HEAD_DIM), layer.qn).transpose(1, 2))
            k = rope(rms((h @ layer.k.T).view(b, t, KV, HEAD_DIM), layer.kn).transpose(1, 2))
            v = (h @ layer.v.T).view(b, t, KV, HEAD_DIM).transpose(1, 2)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = x + a.transpose(1, 2).reshape(b, t, -1) @ layer.o.T
            h = rms(x, layer.ln2)
            x = x + (F.silu(h @ layer.gate.T) * (h @ layer.up.T)) @ layer.down.T
        return rms(x, self.norm) @ self.embed.T


def run(lr: float, device: str) -> list[float]:
    torch.manual_seed(1)
    model = Model().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.1)
    target = torch.zeros(VOCAB, dtype=torch.bool, device=device)
    target[torch.randperm(VOCAB, generator=torch.Generator().manual_seed(2))[:CLASS].to(device)] = True
    prompts = torch.randint(0, VOCAB, (PROMPTS, PROMPT_LEN), generator=torch.Generator().manual_seed(3)).to(device)
    means = []
    for _ in range(ITERATIONS):
        seq = prompts.repeat_interleave(SAMPLES, 0)
        with torch.no_grad(), torch.autocast(device, torch.bfloat16):
            for _ in range(RESPONSE_LEN):
                logits = model(seq)[:, -1].float()
                seq = torch.cat([seq, torch.multinomial(logits.softmax(-1), 1)], 1)
        response = seq[:, PROMPT_LEN:]
        reward = target[response].float().mean(1)
        means.append(reward.mean().item())
        grouped = reward.view(PROMPTS, SAMPLES)
        adv = ((grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-6)).view(-1)
        with torch.autocast(device, torch.bfloat16):
            logits = model(seq[:, :-1])[:, PROMPT_LEN - 1 :].float()
        logp = logits.log_softmax(-1).gather(-1, response.unsqueeze(-1)).squeeze(-1)
        loss = -(adv.unsqueeze(1) * logp).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return means


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":  # a smoke run of the script itself, not a figure
        HIDDEN, HEADS, KV, FFN, ITERATIONS, RESPONSE_LEN = 256, 4, 2, 512, 3, 8
    for lr in [float(x) for x in sys.argv[1:]] or [1e-5, 3e-5, 1e-4, 3e-4, 1e-3]:
        start = time.monotonic()
        means = run(lr, device)
        first, last = sum(means[:3]) / 3, sum(means[-3:]) / 3
        rise = "nan" if math.isnan(last) else f"{last - first:+.3f}"
        print(f"lr {lr:g}: first 3 {first:.3f}, last 3 {last:.3f}, rise {rise} ({time.monotonic() - start:.0f} s)")
        print("  " + " ".join(f"{m:.3f}" for m in means), flush=True)
