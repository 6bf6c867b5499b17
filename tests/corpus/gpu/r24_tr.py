# torchrun-launched training scenarios for round 24; two ranks share the one GPU, gloo for the collectives; one
# real fault per --scenario:
# segv_rank: rank 1 (the rank that logs data statistics) hands a host C routine (libtokstats.so, through ctypes)
#   the data_ptr() of a batch that the prefetcher has already moved to the GPU: the host dereferences a device
#   address (SIGSEGV, no Python traceback); rank 0 waits in the next all-reduce; torchrun reports the signal;
# sigkill_rank: the job runs in a memory-limited cgroup (r24_run.sh: the scheduler's --mem); rank 1 builds the
#   in-memory sample index of its shard (numpy arrays appended in a list, then concatenated): the kernel's OOM
#   killer ends it (SIGKILL), torchrun reports the signal;
# interleave_keys: both ranks resume (after a barrier) from a checkpoint saved from the torch.compile'd module
#   (keys `_orig_mod.*`) into the plain module: both fail at once in load_state_dict; the job's error handler
#   logs the traceback line by line through the rank-tagged logger, so the two ranks' lines interleave in the
#   shared console; both exit 1 and torchrun reports the failure.
# ruff: noqa: E501  (log lines and kernel sources kept as servers and compilers print them)
import argparse
import datetime
import logging
import os
import sys
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
DEV = "cpu" if os.environ.get("SHAPES_DRY") == "1" else "cuda"
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))


def log(msg):
    logging.getLogger("train").info(msg)


_h = logging.StreamHandler(sys.stdout)
_h.setFormatter(logging.Formatter(f"[%(asctime)s][rank{rank}][%(levelname)s] %(message)s"))
logging.getLogger("train").handlers[:] = [_h]
logging.getLogger("train").setLevel(logging.INFO)
logging.getLogger("train").propagate = False


class LM(nn.Module):
    def __init__(self, vocab=32000, d=768, n=6, small=False):
        super().__init__()
        if small:
            d, n = 64, 1
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(d, 12 if d % 12 == 0 else 8, 4 * d, batch_first=True,
                                                                norm_first=True) for _ in range(n)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        mask = nn.Transformer.generate_square_subsequent_mask(ids.size(1), device=ids.device)
        h = self.embed(ids)
        for b in self.blocks:
            h = b(h, src_mask=mask, is_causal=True)
        return self.head(self.norm(h))


class Prefetcher:
    """background-copies the next batch to the GPU (non_blocking from pinned memory)"""

    def __init__(self, bs, seq):
        self.bs, self.seq = bs, seq
        self.g = torch.Generator().manual_seed(rank)

    def next(self):
        cpu = torch.randint(0, 32000, (self.bs, self.seq + 1), dtype=torch.int32, generator=self.g)
        if DEV == "cuda":
            cpu = cpu.pin_memory()
        return cpu.to(DEV, non_blocking=True)


def token_stats(batch, lib):
    import ctypes

    import numpy as np

    hist = np.zeros(32000, dtype=np.int64)
    flat = batch.reshape(-1)
    seen = lib.count_tokens(ctypes.c_void_p(flat.data_ptr()), ctypes.c_long(flat.numel()), 32000,
                            ctypes.c_void_p(hist.ctypes.data))
    top = hist.argsort()[-3:][::-1]
    return seen, top


def main():
    from torch.distributed.elastic.multiprocessing.errors import record

    import torch.distributed as dist

    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    args = ap.parse_args()
    sc = args.scenario

    @record
    def run():
        if DEV == "cuda":
            torch.cuda.set_device(0)
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        log(f"initialized process group: backend=gloo world_size={world} device={DEV}:0"
            + (f" ({torch.cuda.get_device_name()})" if DEV == "cuda" else ""))
        torch.manual_seed(0)
        if sc == "interleave_keys":
            from r24_common import CKPT

            model = LM(small=DEV == "cpu").to(DEV)
            log(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters; resuming from {CKPT}")
            state = torch.load(CKPT, map_location="cpu", weights_only=True)
            log(f"checkpoint step {state['step']}, {state['tokens_seen'] / 1e9:.2f}B tokens seen")
            dist.barrier()
            try:
                model.load_state_dict(state["model"])
            except Exception:
                # the job's error handler: every line of the traceback through the rank-tagged logger
                lg = logging.getLogger("train")
                for line in traceback.format_exc().rstrip().splitlines():
                    lg.error(line)
                mk, ck = list(model.state_dict()), list(state["model"])
                lg.error(f"model expects {len(mk)} keys, checkpoint has {len(ck)}; first 16 side by side:")
                for a, b in zip(mk[:16], ck[:16]):
                    lg.error(f"  model: {a:<42} checkpoint: {b}")
                sys.exit(1)
            return
        model = nn.parallel.DistributedDataParallel(LM(small=DEV == "cpu").to(DEV))
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        if rank == 0:
            log(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, DDP over {world} ranks")
        lib = None
        if sc == "segv_rank":
            import ctypes

            from r24_common import TOKSTATS

            lib = ctypes.CDLL(TOKSTATS)
            lib.count_tokens.restype = ctypes.c_long
        if sc == "sigkill_rank":
            import numpy as np

            # each rank indexes its shard: per-document (offset, length) pairs plus the token stream itself
            log(f"building sample index for shard {rank:05d} of the pretraining mix")
            parts, total = [], 0
            rng = np.random.default_rng(rank)
            n_chunks = 12 if rank == 0 else 400
            for c in range(n_chunks):
                parts.append(rng.integers(0, 32000, size=(64 << 20) // 8, dtype=np.int64))  # 64 MiB of token ids
                total += parts[-1].nbytes
                if (c + 1) % 25 == 0:
                    log(f"indexed {c + 1} chunks ({total / 2**30:.1f} GiB of token ids)")
            tokens = np.concatenate(parts)
            del parts
            log(f"sample index ready: {tokens.size / 1e9:.2f}B tokens")
        bs, seq = (8, 256) if DEV == "cuda" else (2, 16)
        pf = Prefetcher(bs, seq)
        t0 = time.perf_counter()
        for step in range(1, 400):
            batch = pf.next()
            ids = batch.long()
            loss = F.cross_entropy(model(ids[:, :-1]).float().reshape(-1, 32000), ids[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if step % 10 == 0:
                lv = loss.detach().reshape(1).cpu()
                dist.all_reduce(lv)
                if rank == 0:
                    dt = (time.perf_counter() - t0) / step
                    log(f"step {step:4d} | loss {lv.item() / world:.4f} | {dt * 1000:.0f} ms/step | "
                        f"{bs * seq * world / dt:,.0f} tok/s")
            if lib is not None and step % 25 == 0 and rank == world - 1:
                seen, top = token_stats(batch, lib)
                log(f"data stats step {step}: {seen} ids, most frequent {top.tolist()}")
        dist.destroy_process_group()

    run()


if __name__ == "__main__":
    main()
