# torchrun-launched (or sbatch-launched) training scenarios for round 22; two ranks share the one GPU,
# gloo for the collectives; one real fault (or none) per --scenario:
# jit_ld: both ranks JIT-build the fused Adam extension (torch cpp_extension, one shared build folder) at
#   start-up; the setup links against the vendor's kernel library (-lfused_adam_kernels) that the image does
#   not have: rank 0 builds and the link fails (ld's own line, then collect2's summary); rank 1 waited on the
#   build lock and then cannot load the module that was never written;
# unused_params: DDP (find_unused_parameters=False) over a model with a multi-token-prediction auxiliary head;
#   the aux loss is scheduled off after the warm-up (weight 0 skips the head): the next iteration's forward
#   finds the previous reduction unfinished (both ranks);
# slurm_train: the healthy training step of an sbatch job (r22_run.sh runs the job script r22_common.py wrote:
#   `set -euo pipefail`; after training it names its archive with SLURM_ARRAY_TASK_ID, which a job outside an
#   array does not have: bash stops on the unbound variable).
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.elastic.multiprocessing.errors import record

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from r22_common import ROOT

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
ap.add_argument("--out", default=None)
args = ap.parse_args()
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
DEV = "cpu" if os.environ.get("SHAPES_DRY") == "1" else "cuda"
FUSED_ADAM_CPP = r"""
#include <torch/extension.h>
#include <vector>

// implemented in libfused_adam_kernels.so (the vendor's CUDA kernels)
void fused_adam_launcher(std::vector<at::Tensor> params, std::vector<at::Tensor> grads,
                         std::vector<at::Tensor> exp_avgs, std::vector<at::Tensor> exp_avg_sqs,
                         double lr, double beta1, double beta2, double eps, double weight_decay, int64_t step);

void fused_adam(std::vector<at::Tensor> params, std::vector<at::Tensor> grads, std::vector<at::Tensor> exp_avgs,
                std::vector<at::Tensor> exp_avg_sqs, double lr, double beta1, double beta2, double eps,
                double weight_decay, int64_t step) {
  fused_adam_launcher(params, grads, exp_avgs, exp_avg_sqs, lr, beta1, beta2, eps, weight_decay, step);
}
"""


def log(msg):
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}][rank{rank}]: {msg}", flush=True)


class LM(nn.Module):
    def __init__(self, vocab=32000, d=512, n=4, mtp=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            [
                nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True, norm_first=True)
                for _ in range(n)
            ]
        )
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.mtp = (
            nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, vocab, bias=False))
            if mtp
            else None
        )

    def forward(self, ids, aux_weight=0.0):
        mask = nn.Transformer.generate_square_subsequent_mask(ids.size(1), device=ids.device)
        h = self.embed(ids)
        for b in self.blocks:
            h = b(h, src_mask=mask, is_causal=True)
        h = self.norm(h)
        out = self.head(h)
        if self.mtp is not None and aux_weight > 0:
            return out, self.mtp(h)
        return out, None


def train_steps(model, opt, steps, bs=8, seq=256, every=10, aux_sched=None):
    t0 = time.perf_counter()
    if DEV == "cpu":  # the local dry run
        bs, seq = 2, 16
    for step in range(1, steps + 1):
        w = aux_sched(step) if aux_sched else 0.0
        ids = torch.randint(0, 32000, (bs, seq + 2), device=DEV)
        logits, aux = model(ids[:, :-2], aux_weight=w)
        loss = F.cross_entropy(logits.float().reshape(-1, 32000), ids[:, 1:-1].reshape(-1))
        if aux is not None:
            loss = loss + w * F.cross_entropy(
                aux.float().reshape(-1, 32000), ids[:, 2:].reshape(-1)
            )
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % every == 0:
            lv = loss.detach().reshape(1).cpu()
            dist.all_reduce(lv)
            if rank == 0:
                log(
                    f"step {step:5d} | loss {lv.item() / world:.4f} | aux_w {w:.2f} | "
                    f"{(time.perf_counter() - t0) / step * 1000:.0f} ms/step"
                )


@record
def main():
    sc = args.scenario
    if DEV == "cuda":
        torch.cuda.set_device(0)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    log(
        f"initialized process group: backend=gloo world_size={world} device={DEV}:0"
        + (f" ({torch.cuda.get_device_name()})" if DEV == "cuda" else "")
    )
    torch.manual_seed(0)

    if sc == "jit_ld":
        from torch.utils.cpp_extension import load_inline

        build = os.environ.get("TORCH_EXTENSIONS_DIR", f"{ROOT}/torch_extensions") + "/fused_adam"
        os.makedirs(build, exist_ok=True)
        log(f"building fused_adam extension in {build} (use_fused_adam=true)")
        ext = load_inline(
            name="fused_adam",
            cpp_sources=FUSED_ADAM_CPP,
            functions=["fused_adam"],
            build_directory=build,
            extra_ldflags=[f"-L{ROOT}/vendor/lib", "-lfused_adam_kernels"],
            verbose=rank == 0,
        )
        log(f"fused_adam loaded from {ext.__file__}")

    elif sc == "unused_params":
        model = nn.parallel.DistributedDataParallel(LM(mtp=True).to(DEV))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        if rank == 0:
            log(
                "multi-token prediction head on (mtp_loss_weight 0.3, linear decay to 0 at step 50)"
            )
        train_steps(model, opt, 120, aux_sched=lambda s: max(0.0, 0.3 * (1 - s / 50)))

    elif sc == "slurm_train":
        model = nn.parallel.DistributedDataParallel(LM(n=2).to(DEV))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        train_steps(model, opt, 60)
        dist.barrier()
        if rank == 0:
            os.makedirs(args.out, exist_ok=True)
            torch.save(model.module.state_dict(), f"{args.out}/model_final.pt")
            log(f"saved {args.out}/model_final.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
