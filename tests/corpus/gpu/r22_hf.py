# Training scripts in the HF-accelerate / Trainer shapes for round 22 (tqdm bars, dict logs), one real
# fault per --scenario:
# vocab_pad_assert: an on-policy RL loop (GRPO-style) on a policy whose embedding and LM head were padded to a
#   multiple of 64 (32064 rows) while the tokenizer has 32000 tokens; sampling runs over the full head, so the
#   untrained padding rows are sometimes drawn; the repetition statistics are a per-row count table sized
#   len(tokenizer): the scatter of a sampled id >= 32000 trips the device-side bounds assert;
# weights_only: a Trainer-style NLI fine-tune with load_best_model_at_end; the best checkpoint's
#   training_state.pt holds numpy values (the best metric, the RNG state); after the last epoch the reload
#   runs torch.load with its default weights_only=True, which refuses numpy's globals;
# mask_dtype: an accelerate SFT loop whose collator builds the padding mask with numpy (float64 additive mask,
#   -inf on padding) and hands it to scaled_dot_product_attention beside bf16 q/k/v.
# SHAPES_DRY=1: on the CPU (a local check; the GPU-only faults do not happen there).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r22_common import DRY, HF_OUT

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
args = ap.parse_args()
DEV = "cpu" if DRY else "cuda"


def now():
    return time.strftime("%Y-%m-%d %H:%M:%S")


def tiny_lm(vocab, d=512, n=4):
    import torch.nn as nn

    layer = nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True, norm_first=True)
    return nn.ModuleDict(
        {
            "embed": nn.Embedding(vocab, d),
            "body": nn.TransformerEncoder(layer, n),
            "head": nn.Linear(d, vocab, bias=False),
        }
    )


def lm_forward(m, ids):
    import torch.nn as nn

    mask = nn.Transformer.generate_square_subsequent_mask(ids.size(1), device=ids.device)
    return m["head"](m["body"](m["embed"](ids), mask=mask, is_causal=True))


# ---------------------------------------------------------------- vocab_pad_assert
def vocab_pad_assert():
    import torch
    from tqdm import tqdm

    n_tok, padded = 32000, 32064
    torch.manual_seed(0)
    policy = tiny_lm(padded).to(DEV)
    opt = torch.optim.AdamW(policy.parameters(), lr=1e-6)
    print(
        f"{now()} - INFO - __main__ - len(tokenizer)={n_tok}, policy vocab (padded to 64)={padded}"
    )
    print(
        f"{now()} - INFO - __main__ - GRPO: 8 prompts x 8 generations, max_new_tokens=64, temperature=1.0, "
        f"repetition_penalty=1.1"
    )
    steps = 200
    bar = tqdm(total=steps, desc="grpo", dynamic_ncols=True)
    for step in range(1, steps + 1):
        prompts = torch.randint(0, n_tok, (64, 32), device=DEV)
        seq = prompts
        counts = torch.zeros(64, n_tok, device=DEV)  # repetition statistics, one row per sequence
        with torch.no_grad():
            for _ in range(16 if DRY else 64):
                logits = lm_forward(policy, seq[:, -128:])[:, -1].float()
                logits[:, :n_tok] = torch.where(
                    counts > 0, logits[:, :n_tok] / 1.1, logits[:, :n_tok]
                )
                nxt = torch.multinomial(torch.softmax(logits, -1), 1)
                counts.scatter_add_(1, nxt, torch.ones_like(nxt, dtype=counts.dtype))
                seq = torch.cat([seq, nxt], 1)
        rewards = (counts > 1).float().sum(1)
        adv = (rewards - rewards.mean()) / (rewards.std() + 1e-4)
        lp = torch.log_softmax(lm_forward(policy, seq[:, :-1]).float(), -1)
        tok_lp = lp.gather(-1, seq[:, 1:, None]).squeeze(-1)[:, 31:]
        loss = -(adv[:, None] * tok_lp).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        bar.update(1)
        if step % 2 == 0:
            bar.write(
                str(
                    {
                        "loss": round(loss.item(), 4),
                        "reward": round(rewards.mean().item(), 3),
                        "kl": 0.0,
                        "step": step,
                    }
                )
            )
    bar.close()


# ---------------------------------------------------------------- weights_only
def weights_only():
    import numpy as np
    import torch
    import torch.nn as nn
    from tqdm import tqdm

    torch.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True), 4)
    model = nn.ModuleDict(
        {"embed": nn.Embedding(30522, 768), "enc": enc, "cls": nn.Linear(768, 3)}
    ).to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    steps_per_epoch, epochs = 125, 2
    if DRY:
        steps_per_epoch = 5
    print("***** Running training *****")
    print(
        "  Num examples = 8,000\n  Num Epochs = 2\n  Instantaneous batch size per device = 32\n"
        f"  Total optimization steps = {steps_per_epoch * epochs}"
    )
    bar = tqdm(total=steps_per_epoch * epochs)
    best = None
    for epoch in range(epochs):
        model.train()
        for step in range(steps_per_epoch):
            ids = torch.randint(0, 30522, (32 if not DRY else 2, 128), device=DEV)
            y = torch.randint(0, 3, (ids.size(0),), device=DEV)
            logits = model["cls"](model["enc"](model["embed"](ids))[:, 0])
            loss = nn.functional.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            bar.update(1)
            if (step + 1) % 50 == 0:
                bar.write(
                    str(
                        {
                            "loss": round(loss.item(), 4),
                            "learning_rate": 2e-5 * (1 - bar.n / bar.total),
                            "epoch": round(bar.n / steps_per_epoch, 2),
                        }
                    )
                )
        model.eval()
        with torch.no_grad():
            ids = torch.randint(0, 30522, (256 if not DRY else 4, 128), device=DEV)
            acc = float(
                (model["cls"](model["enc"](model["embed"](ids))[:, 0]).argmax(-1) == 1)
                .float()
                .mean()
            )
        metric = np.float64(0.80 + 0.03 * epoch + acc * 0.01)
        bar.write(
            str(
                {
                    "eval_loss": 0.41 - 0.02 * epoch,
                    "eval_accuracy": float(metric),
                    "epoch": epoch + 1.0,
                }
            )
        )
        if best is None or metric > best:
            best = metric
            ck = (
                HF_OUT
                if epoch == 0
                else HF_OUT.replace("checkpoint-best", f"checkpoint-{(epoch + 1) * 125}")
            )
            os.makedirs(ck, exist_ok=True)
            torch.save(model.state_dict(), f"{ck}/pytorch_model.bin")
            if epoch > 0:
                torch.save(
                    {
                        "epoch": epoch + 1,
                        "global_step": bar.n,
                        "best_metric": metric,
                        "best_model_checkpoint": ck,
                    },
                    f"{ck}/training_state.pt",
                )
            best_ck = ck
            bar.write(f"Saving model checkpoint to {ck}")
    bar.close()
    print(
        "\n\nTraining completed. Do not forget to share your model on huggingface.co/models =)\n\n"
    )
    print(f"Loading best model from {best_ck} (score: {float(best)}).")
    state = torch.load(f"{best_ck}/training_state.pt", map_location=DEV)
    model.load_state_dict(torch.load(f"{best_ck}/pytorch_model.bin", map_location=DEV))
    print(f"best metric {state['best_metric']}")


# ---------------------------------------------------------------- mask_dtype
def mask_dtype():
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from tqdm import tqdm

    class Attn(nn.Module):
        def __init__(self, d=1024, h=16):
            super().__init__()
            self.h = h
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)

        def forward(self, x, mask):
            B, T, D = x.shape
            q, k, v = self.qkv(x).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
            return self.o(
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                .transpose(1, 2)
                .reshape(B, T, D)
            )

    def collate(lengths, T=512):
        ids = np.zeros((len(lengths), T), dtype=np.int64)
        mask = np.zeros((len(lengths), 1, T, T))
        causal = np.triu(np.full((T, T), -np.inf), 1)
        for i, n in enumerate(lengths):
            ids[i, :n] = np.random.randint(0, 32000, n)
            mask[i, 0] = causal
            mask[i, 0, :, n:] = -np.inf
            mask[i, 0, np.arange(n, T), np.arange(n, T)] = 0.0  # padding rows attend to themselves
        return torch.from_numpy(ids), torch.from_numpy(mask)

    torch.manual_seed(0)
    model = nn.ModuleDict(
        {
            "embed": nn.Embedding(32000, 1024),
            "attn": nn.ModuleList([Attn() for _ in range(4)]),
            "head": nn.Linear(1024, 32000),
        }
    ).to(DEV, torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    print(
        f"{now()} - INFO - accelerate.accelerator - Mixed precision type: bf16 (model cast to bfloat16)"
    )
    print(
        f"{now()} - INFO - __main__ - ***** Running training *****  Num examples = 51200, batch size = 8"
    )
    for _step in tqdm(range(200), desc="Steps"):
        ids, mask = collate(np.random.randint(100, 512, 8))
        ids, mask = ids.to(DEV), mask.to(DEV)
        h = model["embed"](ids)
        for a in model["attn"]:
            h = h + a(h, mask)
        loss = F.cross_entropy(model["head"](h).float().view(-1, 32000)[:-1], ids.view(-1)[1:])
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    {"vocab_pad_assert": vocab_pad_assert, "weights_only": weights_only, "mask_dtype": mask_dtype}[
        args.scenario
    ]()
