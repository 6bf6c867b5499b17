# Round 18: shared helpers for the r18_* scenarios. Loggers come from shapes_common; this adds
# - a Triton "wait for the peers' flag" kernel (a custom all-reduce / KV-transfer handshake) that spins on the
#   GPU until a flag reaches a count no peer ever writes: a real hang of one SM;
# - a small random-weight decoder (embedding, 4 MLP blocks, lm head) that really runs on the GPU;
# - the prep step (`python3 r18_common.py --prep`, CPU only) that writes the files some scenarios load:
#   a DDP job's per-rank checkpoints (rank 1's from an older model revision) and an HF-Trainer checkpoint
#   whose optimizer.pt was saved with another set of LoRA target modules.
# SHAPES_DRY=1: no GPU (a local check of the process shapes; faults become plain exceptions).
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from shapes_common import DRY, add_prefix, sglang_logger, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = "/tmp/r18_files"
DDP_CKPT = f"{ROOT}/ddp-run-1121"
HF_CKPT = f"{ROOT}/lora-sft-qwen2.5-7b/checkpoint-500"


def spin_until_peers(world=2):
    """Increment our own flag, then spin until `world` arrivals are counted. The peers write their arrival
    into their own process's buffer, so the count never reaches `world`: the kernel never ends."""
    if DRY:
        time.sleep(3600)
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def barrier_kernel(flag_ptr, world):
        tl.atomic_add(flag_ptr, 1)
        cnt = tl.atomic_add(flag_ptr, 0)
        while cnt < world:
            cnt = tl.atomic_add(flag_ptr, 0)

    flag = torch.zeros(1, device="cuda", dtype=torch.int32)
    barrier_kernel[(1,)](flag, world, num_warps=1)
    torch.cuda.synchronize()


class Decoder:
    """Random-weight decoder stand-in on the GPU."""

    def __init__(self, vocab=32000, hidden=2048, inter=5632, layers=4, tp=1):
        self.vocab, self.hidden = vocab, hidden
        if DRY:
            return
        import torch
        torch.manual_seed(0)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        self.emb = torch.randn(vocab, hidden, **kw) * 0.02
        self.layers = [{"gate_up": torch.randn(2 * inter // tp, hidden, **kw) * 0.02,
                        "down": torch.randn(hidden, inter // tp, **kw) * 0.02} for _ in range(layers)]
        self.head = torch.randn(vocab, hidden, **kw) * 0.02

    def forward(self, n_tokens, seed=0):
        if DRY:
            time.sleep(0.01)
            return 7
        import torch
        g = torch.Generator(device="cuda").manual_seed(seed)
        ids = torch.randint(0, self.vocab, (n_tokens,), device="cuda", generator=g)
        h = self.emb[ids]
        for L in self.layers:
            gu = h @ L["gate_up"].T
            g_, u = gu.chunk(2, dim=-1)
            h = h + (torch.nn.functional.silu(g_) * u) @ L["down"].T
        logits = h[-1:] @ self.head.T
        return int(logits.argmax().item())

    def gib(self):
        if DRY:
            return 0.61
        import torch
        return torch.cuda.memory_allocated() / 2**30


def ts():
    return time.strftime("%Y-%m-%d %H:%M:%S")


# ---------------------------------------------------------------- prep (CPU)
def make_ddp_ckpt():
    import torch
    import torch.nn as nn

    def model(rev):
        torch.manual_seed(0)
        blocks = [nn.Sequential(nn.LayerNorm(512), nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))
                  for _ in range(4)]
        m = nn.ModuleDict({"embed": nn.Embedding(8192, 512), "blocks": nn.ModuleList(blocks),
                           "head": nn.Linear(512, 8192, bias=False)})
        if rev == "old":  # the older revision had no final norm and a tied head
            del m["head"]
        else:
            m["final_norm"] = nn.LayerNorm(512)
        return m

    os.makedirs(DDP_CKPT, exist_ok=True)
    torch.save({"step": 12000, "model": model("new").state_dict()}, f"{DDP_CKPT}/model_rank0.pt")
    torch.save({"step": 12000, "model": model("old").state_dict()}, f"{DDP_CKPT}/model_rank1.pt")


def make_hf_ckpt():
    """optimizer.pt of a LoRA run on q_proj,v_proj (2 adapters x 2 matrices x 4 layers = 16 params / group)."""
    import torch
    os.makedirs(HF_CKPT, exist_ok=True)
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(16, 256) * 0.01) for _ in range(16)]
    opt = torch.optim.AdamW([{"params": params, "weight_decay": 0.0}], lr=2e-4)
    for p in params:
        p.grad = torch.randn_like(p)
    opt.step()
    torch.save(opt.state_dict(), f"{HF_CKPT}/optimizer.pt")
    torch.save({"last_lr": [2e-4]}, f"{HF_CKPT}/scheduler.pt")
    with open(f"{HF_CKPT}/trainer_state.json", "w") as f:
        f.write('{"global_step": 500, "epoch": 0.41, "best_metric": null}\n')


if __name__ == "__main__":
    if "--prep" in sys.argv:
        make_ddp_ckpt()
        make_hf_ckpt()
        print("prep done")
