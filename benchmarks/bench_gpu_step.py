"""The ceiling of one training step on a GPU: MiniLM's shape, batches already on the device.

``bench_gpu.py`` times whole epochs (the estimator against a plain loop); this times the
step alone, so that what the GPU can give at this shape (6 layers, d=384, 12 heads of 32,
batch 256 x 128 tokens, bf16) is separated from what the data path and the host cost. Each
variant trains a copy of the same module with fused AdamW on pre-staged batches, the steps
queued back to back and synchronised once, and prints ms per step and the share of a
measured dense bf16 matmul peak (FLOPs by ``torch.utils.flop_counter``):

- ``eager``: the estimator's path (autocast bf16 over fp32 weights, an additive bias);
- ``no bias``: the attention bias left out when no token is padding (lets SDPA take flash);
- ``fused qkv``: one (3D x D) projection instead of three (D x D) ones;
- ``bf16 weights``: the module cast to bf16, no autocast (no casts; the optimizer in bf16);
- ``compiled`` (``torch.compile``, default mode, and ``max-autotune-no-cudagraphs``).

Then a ``torch.profiler`` table of the best variant's kernels. Needs CUDA.

    python benchmarks/bench_gpu_step.py [--steps 20] [--budget-s 420]
"""

from __future__ import annotations

import argparse
import copy
import time

import numpy as np
import torch
import torch.nn.functional as F

import tabformer.nn.attention as attention
from bench_gpu import matmul_peak, step_flops, sync, text_workload
from tabformer import TabFormerClassifier


def fused_qkv_forward(self, x, bias=None, need_weights=False, n_queries=None):
    # The same attention as MultiHeadSelfAttention.forward, with one GEMM for Q, K and V
    batch, length, _ = x.shape
    weight = torch.cat([self.query.weight, self.key.weight, self.value.weight])
    qkv = F.linear(x, weight, torch.cat([self.query.bias, self.key.bias, self.value.bias]))
    q, k, v = (part.view(batch, length, self.n_heads, self.d_head).transpose(1, 2) for part in qkv.split(self.d_model, -1))
    if n_queries is not None:
        q = q[:, :, :n_queries]
        if bias is not None and bias.shape[-2] > 1:
            bias = bias[:, :, :n_queries]
    p = self.attention_dropout if self.training else 0.0
    context = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p)
    return self.out(context.transpose(1, 2).reshape(batch, q.shape[2], self.d_model)), None


def run_steps(module, optimizer, batches, target, autocast, steps):
    for step in range(steps):
        inputs = batches[step % len(batches)]
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(target.device.type, torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(module(**inputs), target)
        loss.backward()
        optimizer.step()


def time_variant(base, batches, target, steps, autocast=True, bf16_weights=False, compile_mode=None):
    module = copy.deepcopy(base).to(target.device).train()
    if bf16_weights:
        module = module.to(torch.bfloat16)
        autocast = False
    optimizer = torch.optim.AdamW(module.parameters(), lr=1e-4, fused=target.device.type == "cuda")
    if compile_mode:
        module = torch.compile(module, mode=None if compile_mode == "default" else compile_mode)
    start = time.perf_counter()
    run_steps(module, optimizer, batches, target, autocast, 3)  # warm-up, compiling included
    sync(target.device)
    warm = time.perf_counter() - start
    start = time.perf_counter()
    run_steps(module, optimizer, batches, target, autocast, steps)
    sync(target.device)
    return (time.perf_counter() - start) / steps, warm, (module, optimizer, autocast)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--budget-s", type=float, default=420, help="skip the variants left after this many seconds")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument("--device", default="cuda", help="cpu only to smoke-test the script")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    torch.backends.cuda.matmul.allow_tf32 = True
    rng = np.random.default_rng(0)
    name, texts, params = text_workload(256 * 4, rng)
    y = rng.integers(0, 2, size=len(texts))
    clf = TabFormerClassifier(max_epochs=1, device=args.device, validation_fraction=None, verbose=0, random_state=0, **params)
    clf.fit(texts[:512], y[:512])
    tokens = clf.tokenize(texts)
    batches = [
        {key: torch.as_tensor(value[i : i + 256]).to(args.device) for key, value in tokens.items()}
        for i in range(0, len(texts), 256)
    ]
    target = torch.as_tensor(y[:256]).to(args.device)
    base = clf.module_
    peak = matmul_peak(args.device, torch.bfloat16, 8192 if args.device == "cuda" else 512)
    counted = copy.deepcopy(base).to(args.device)
    cpu_tokens = {k: torch.as_tensor(v) for k, v in tokens.items()}
    flops = step_flops(
        counted, cpu_tokens, torch.as_tensor(y), 256, args.device, lambda: torch.autocast(args.device, torch.bfloat16)
    )
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"{gpu}; {name}; {flops / 1e12:.3g} TFLOP per step; peak {peak / 1e12:.0f} TFLOP/s")
    original_bias, original_forward = attention.attention_bias_from_mask, attention.MultiHeadSelfAttention.forward
    import tabformer.nn.encoder as encoder_module

    def no_bias(mask, dtype):
        return None

    variants = [
        ("eager (the estimator's path)", {}, {}),
        ("eager, no bias", {"bias": no_bias}, {}),
        ("eager, fused qkv, no bias", {"bias": no_bias, "qkv": True}, {}),
        ("eager, bf16 weights, fused qkv, no bias", {"bias": no_bias, "qkv": True}, {"bf16_weights": True}),
        ("compiled", {}, {"compile_mode": "default"}),
        ("compiled, fused qkv, no bias", {"bias": no_bias, "qkv": True}, {"compile_mode": "default"}),
        (
            "compiled, bf16 weights, fused qkv, no bias",
            {"bias": no_bias, "qkv": True},
            {"compile_mode": "default", "bf16_weights": True},
        ),
        (
            "max-autotune, fused qkv, no bias",
            {"bias": no_bias, "qkv": True},
            {"compile_mode": "max-autotune-no-cudagraphs"},
        ),
    ]
    best = None
    print(f"{'variant':<45} {'ms/step':>8} {'% peak':>7} {'warm-up s':>9}")
    for label, patches, options in variants:
        if time.perf_counter() - began > args.budget_s:
            print(f"{label:<45} skipped (budget)")
            continue
        encoder_module.attention_bias_from_mask = patches.get("bias", original_bias)
        attention.MultiHeadSelfAttention.forward = fused_qkv_forward if patches.get("qkv") else original_forward
        torch._dynamo.reset()
        try:
            seconds, warm, state = time_variant(base, batches, target, args.steps, **options)
        except Exception as error:  # noqa: BLE001 - a variant that fails is reported, the others still run
            print(f"{label:<45} failed: {type(error).__name__}: {str(error)[:150]}")
            continue
        print(f"{label:<45} {seconds * 1e3:8.2f} {100 * flops / seconds / peak:7.1f} {warm:9.1f}", flush=True)
        if best is None or seconds < best[0]:
            best = (seconds, label, state, patches)
    if best is not None and not args.no_profile:
        seconds, label, (module, optimizer, autocast), patches = best
        encoder_module.attention_bias_from_mask = patches.get("bias", original_bias)
        attention.MultiHeadSelfAttention.forward = fused_qkv_forward if patches.get("qkv") else original_forward
        with torch.profiler.profile() as profiler:
            run_steps(module, optimizer, batches, target, autocast, 5)
            sync(target.device)
        print(f"\nkernels of '{label}', 5 steps:")
        print(
            profiler.key_averages().table(
                sort_by="self_cuda_time_total" if args.device == "cuda" else "self_cpu_time_total",
                row_limit=18,
                max_name_column_width=70,
            )
        )


if __name__ == "__main__":
    main()
