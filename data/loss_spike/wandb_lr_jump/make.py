"""A real tiny CPU training run whose learning rate jumps ×30 mid-run, exported as W&B history.

A 2-layer MLP language model learns a random first-order Markov chain over 64 tokens (AdamW,
lr 3e-3, batch 32 × 16 tokens, grad-norm logged before clipping at 1.0). At optimizer step
LR_JUMP_STEP the learning rate is set to 30× — what a scheduler that restarts from its first
value after a resume, or a mistyped ``--lr``, does to a run. The history is written the way
``wandb.Api().run(...).history()`` exports it (``_step``, ``_runtime``, ``_timestamp`` plus the
keys the HF Trainer logs: ``train/loss``, ``train/grad_norm``, ``train/global_step``,
``train/num_input_tokens_seen``; the LR as ``lr``), with an ``eval/loss`` row every 100 steps.

    PYTHONPATH=lib python data/loss_spike/wandb_lr_jump/make.py
"""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path

import torch
from torch import nn

OUT = Path(__file__).resolve().parent / "history.csv"
VOCAB, SEQ, BATCH, STEPS = 64, 16, 32, 400
LR, LR_JUMP, LR_JUMP_STEP, CLIP = 3e-3, 30.0, 260, 1.0
COLUMNS = ["_step", "_runtime", "_timestamp", "train/loss", "train/grad_norm", "lr",
           "train/global_step", "train/num_input_tokens_seen", "eval/loss"]


def batches(gen: torch.Generator, trans: torch.Tensor) -> torch.Tensor:
    """BATCH sequences of SEQ+1 tokens drawn from the Markov chain ``trans``."""
    x = torch.empty(BATCH, SEQ + 1, dtype=torch.long)
    x[:, 0] = torch.randint(VOCAB, (BATCH,), generator=gen)
    for t in range(SEQ):
        x[:, t + 1] = torch.multinomial(trans[x[:, t]], 1, generator=gen).squeeze(1)
    return x


def main() -> None:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    trans = torch.softmax(torch.randn(VOCAB, VOCAB, generator=gen) * 3.0, dim=-1)
    model = nn.Sequential(nn.Embedding(VOCAB, 64), nn.Linear(64, 256), nn.GELU(),
                          nn.Linear(256, VOCAB))
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
    lossf = nn.CrossEntropyLoss()
    eval_x = batches(torch.Generator().manual_seed(2), trans)
    t0 = time.time()
    rows = []
    log_calls = 0
    for step in range(1, STEPS + 1):
        lr = LR * (LR_JUMP if step >= LR_JUMP_STEP else 1.0)
        for g in opt.param_groups:
            g["lr"] = lr
        x = batches(gen, trans)
        logits = model(x[:, :-1])
        loss = lossf(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP))
        opt.step()
        now = time.time()
        rows.append({"_step": log_calls, "_runtime": round(now - t0, 4), "_timestamp": now,
                     "train/loss": loss.item(), "train/grad_norm": gn, "lr": lr,
                     "train/global_step": step,
                     "train/num_input_tokens_seen": step * BATCH * SEQ})
        log_calls += 1
        if step % 100 == 0:
            with torch.no_grad():
                ev = lossf(model(eval_x[:, :-1]).reshape(-1, VOCAB), eval_x[:, 1:].reshape(-1))
            rows.append({"_step": log_calls, "_runtime": round(time.time() - t0, 4),
                         "_timestamp": time.time(), "train/global_step": step,
                         "eval/loss": float(ev)})
            log_calls += 1
    with open(OUT, "w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else
                            r[k] if isinstance(r[k], int) or not math.isfinite(r[k])
                            else f"{r[k]:.6g}" if k != "_timestamp" else f"{r[k]:.3f}")
                        for k in COLUMNS})


if __name__ == "__main__":
    main()
