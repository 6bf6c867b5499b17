# Training/eval-shaped scenarios of round 31, one real fault (or none) per --scenario:
# sub_eval:        (parent) an eval sweep runs one child per checkpoint with subprocess.run(check=True); the second
#                  eval set was exported as RGBA PNGs: the child's stem conv gets 4 channels where its weight has 3
#                  (conv2d's "expected input ... to have 3 channels, but got 4 channels instead"), then the parent's
#                  CalledProcessError traceback after it;
# sigterm_kbi:     pretraining loop whose SIGTERM handler raises KeyboardInterrupt("terminated"); the operator's kill
#                  (r31_run.sh) lands mid-run: the loop saves an interrupt checkpoint and re-raises (no crash: stopped);
# long_eval:       long-context eval that r31_run.sh's eval_suite.sh runs under `timeout 20` (SIGTERM, rc 124; the
#                  suite goes on: no crash); quick_eval is the suite's other tasks;
# lt_devices2:     Lightning Trainer(devices=2, strategy="ddp") on a one-GPU machine -> MisconfigurationException;
# dynamo_fallback: torch.compile(mode="max-autotune-no-cudagraphs") with only Triton GEMM templates on a float64 model
#                  and dynamo's suppress_errors on: Inductor finds no GEMM choice, dynamo logs the failure and runs
#                  the frame eagerly, training finishes (no crash);
# dcp_resume:      resume with torch.distributed.checkpoint into a model that gained an untied lm_head since the
#                  checkpoint was saved: the planner's "Missing key in checkpoint state_dict", wrapped in
#                  CheckpointException (`--make-ckpt` writes the old checkpoint first, silently, from r31_run.sh);
# ctypes_abort:    a data pipeline remaps ids through libvocabmap.so (ctypes); four new special tokens are past the
#                  remap table: std::out_of_range thrown through the C boundary, terminate, "Fatal Python error:
#                  Aborted" with faulthandler's Python stack;
# tr_exit3:        (torchrun, 2 ranks, gloo) at epoch 2 rank 1's shard is missing: the rank logs an ERROR line and
#                  exits with status 3 (no Python traceback); rank 0 waits in its all-reduce; ChildFailedError.
# ruff: noqa: E501
import argparse
import datetime
import logging
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
R = os.environ.get("R31_ROOT", "/tmp/r31_files")


def logger(name, fmt="%(asctime)s - %(levelname)s - %(name)s - %(message)s"):
    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(logging.Formatter(fmt, datefmt="%m/%d/%Y %H:%M:%S"))
    lg = logging.getLogger(name)
    lg.handlers[:] = [h]
    lg.setLevel(logging.INFO)
    lg.propagate = False
    return lg


# ================================================================ eval sweep over subprocesses
def small_resnet():
    import torch.nn as nn

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, 2, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

    return nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                         block(64, 128), block(128, 256), block(256, 512), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(512, 1000))


def eval_child(a):
    import numpy as np
    import torch

    log = logger("eval_cls")
    torch.manual_seed(0)
    model = small_resnet().cuda().eval().to(memory_format=torch.channels_last)
    log.info(f"checkpoint {a.ckpt}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params")
    channels = 4 if a.split.endswith("rgba") else 3  # PIL keeps the alpha band of RGBA PNGs
    log.info(f"eval set {a.split}: 2000 images, decoded with mode={'RGBA' if channels == 4 else 'RGB'}")
    correct = 0
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        for b in range(8):
            x = torch.from_numpy(np.random.default_rng(b).random((250, 224, 224, channels), dtype=np.float32)).cuda()
            x = x.permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
            y = torch.randint(0, 1000, (250,), device="cuda")
            correct += (model(x).argmax(-1) == y).sum().item()
    log.info(f"top-1 {100 * correct / 2000:.2f}%")


def sub_eval(a):
    log = logger("sweep")
    runs = [("ckpt/convnext-ft/epoch-10", "imagenet-val-224"), ("ckpt/convnext-ft/epoch-20", "inat-val-224-rgba"),
            ("ckpt/convnext-ft/epoch-30", "imagenet-val-224")]
    for ckpt, split in runs:
        cmd = [sys.executable, os.path.abspath(__file__), "--scenario", "eval_child", "--ckpt", ckpt, "--split", split]
        log.info(f"running: {' '.join(cmd[1:])}")
        subprocess.run(cmd, check=True)
    log.info("sweep finished")


# ================================================================ operator's SIGTERM -> KeyboardInterrupt
def sigterm_kbi(a):
    import torch
    from tqdm import tqdm

    def on_term(signum, frame):
        raise KeyboardInterrupt("terminated")

    signal.signal(signal.SIGTERM, on_term)
    log = logger("pretrain")
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU()) for _ in range(8)]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    log.info(f"resumed from step 0; {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params; run=mlp-mixer-pt-3")
    step = 0
    try:
        for step in tqdm(range(1, 200001), desc="train", mininterval=1.0, file=sys.stderr):
            x = torch.randn(256, 1024, device="cuda")
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = (model(x).float() - x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if step % 100 == 0:
                tqdm.write(f"step {step} loss {loss.item():.4f}", file=sys.stdout)
    except KeyboardInterrupt:
        path = f"{R}/ckpt/interrupt-step{step}.pt"
        log.warning(f"interrupted at step {step}; saving {path}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        torch.save({"model": model.state_dict(), "step": step}, path)
        log.warning("checkpoint saved; exiting")
        raise


# ================================================================ eval suite tasks (one runs under `timeout`)
def quick_eval(a):
    import torch

    torch.manual_seed(1)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) * 0.01
    x = torch.randn(512, 4096, device="cuda", dtype=torch.bfloat16)
    nll = torch.log_softmax((x @ w).float(), -1)[:, :100].mean().neg().item()
    print(f"[{a.task}] examples=512 ppl={min(nll, 20) * 1.7:.3f}", flush=True)


def long_eval(a):
    import torch

    torch.manual_seed(2)
    print("[needle] model=/models/llama-3.1-8b-longctx-sft, depths=10, lengths=4k..128k", flush=True)
    d = 4096
    wq = torch.randn(d, d, device="cuda", dtype=torch.bfloat16) * 0.02
    for ctx in (4096, 8192, 16384, 32768, 65536, 131072):
        t0 = time.time()
        hits = 0
        for depth in range(10):
            x = torch.randn(ctx, d, device="cuda", dtype=torch.bfloat16)
            q = x @ wq
            for _ in range(ctx // 4096):
                s = torch.softmax((q[-64:] @ x.T).float(), -1)
                hits += int(s.argmax(-1)[0].item() == depth)
            torch.cuda.synchronize()
            time.sleep(ctx / 65536)  # the tokenizer and the cache rebuild of each sample
        print(f"[needle] ctx={ctx:>6} acc={hits / 10:.2f} took {time.time() - t0:.1f}s", flush=True)


# ================================================================ Lightning on a one-GPU machine
def lt_devices2(a):
    import lightning as L
    import torch

    class LitSeg(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(32, 21, 1))

        def training_step(self, batch, i):
            x, y = batch
            loss = torch.nn.functional.cross_entropy(self.net(x), y)
            self.log("train/loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    print("config: experiments/deeplab_voc.yaml (trainer.devices=2, trainer.strategy=ddp, trainer.precision=bf16-mixed)", flush=True)
    L.seed_everything(42)
    model = LitSeg()
    trainer = L.Trainer(accelerator="gpu", devices=2, strategy="ddp", precision="bf16-mixed", max_epochs=2, log_every_n_steps=5)
    x = torch.randn(64, 3, 64, 64)
    y = torch.randint(0, 21, (64, 64, 64))
    trainer.fit(model, torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8))


# ================================================================ dynamo's suppress_errors on a float64 model
def dynamo_fallback(a):
    import torch
    import torch._dynamo
    import torch._inductor.config as ic

    torch._dynamo.config.suppress_errors = True
    ic.max_autotune_gemm_backends = "TRITON"
    log = logger("pinn")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 256), torch.nn.Tanh(), torch.nn.Linear(256, 256), torch.nn.Tanh(),
                                torch.nn.Linear(256, 1)).cuda().double()
    step_fn = torch.compile(model, mode="max-autotune-no-cudagraphs")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    log.info("PINN (heat equation), float64, torch.compile mode=max-autotune-no-cudagraphs")
    t0 = time.time()
    for step in range(1, 301):
        xy = torch.rand(4096, 2, device="cuda", dtype=torch.float64)
        target = torch.sin(3.14159 * xy[:, :1]) * torch.exp(-xy[:, 1:])
        loss = torch.nn.functional.mse_loss(step_fn(xy), target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            log.info(f"step {step} loss {loss.item():.3e} ({(time.time() - t0) / 50 * 1000:.1f} ms/step)")
            t0 = time.time()
    log.info("training done")


# ================================================================ DCP resume into a changed model
class TinyLM:
    @staticmethod
    def build(untied):
        import torch.nn as nn

        class LM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(32000, 512)
                self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True) for _ in range(2))
                self.norm = nn.LayerNorm(512)
                if untied:
                    self.lm_head = nn.Linear(512, 32000, bias=False)

            def forward(self, ids):
                h = self.embed(ids)
                for b in self.blocks:
                    h = b(h)
                h = self.norm(h)
                w = self.lm_head.weight if hasattr(self, "lm_head") else self.embed.weight
                return h @ w.T

        return LM()


def dcp_resume(a):
    import warnings

    import torch
    import torch.distributed.checkpoint as dcp

    ckpt = f"{R}/ckpt/tinylm-step1200"
    if a.make_ckpt:
        warnings.simplefilter("ignore")
        m = TinyLM.build(untied=False).cuda()
        dcp.save({"model": m.state_dict()}, checkpoint_id=ckpt)
        return
    log = logger("accelerate.checkpointing")
    log.info("config: untie_word_embeddings=True (new), resume_from_checkpoint=" + ckpt)
    model = TinyLM.build(untied=True).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    log.info(f"Loading states from {ckpt}")
    state = {"model": model.state_dict()}
    dcp.load(state, checkpoint_id=ckpt)
    model.load_state_dict(state["model"])
    log.info("All model weights loaded successfully")
    for step in range(1201, 1301):
        ids = torch.randint(0, 32000, (8, 256), device="cuda")
        loss = torch.nn.functional.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()


# ================================================================ ctypes into a C++ library that throws
def ctypes_abort(a):
    import ctypes
    import faulthandler

    import numpy as np
    import torch

    faulthandler.enable()
    log = logger("dataprep", "[%(asctime)s] %(levelname)s %(name)s: %(message)s")
    lib = ctypes.CDLL(f"{R}/native/vocab/libvocabmap.so")
    lib.vm_load.restype = ctypes.c_int
    n = lib.vm_load(f"{R}/native/vocab/remap.bin".encode())
    log.info(f"remap table: {n} ids (tokenizer: 50281 ids incl. 4 added chat tokens)")
    emb = torch.nn.Embedding(50304, 768).cuda()
    proj = torch.nn.Linear(768, 50304).cuda()
    opt = torch.optim.AdamW(list(emb.parameters()) + list(proj.parameters()), lr=1e-4)
    rng = np.random.default_rng(5)
    P = ctypes.POINTER(ctypes.c_int32)
    for step in range(1, 200):
        ids = rng.integers(0, 50277, size=(16, 512), dtype=np.int32)
        if step == 37:  # the first batch from the chat-formatted subset
            ids[3, 100:104] = [50277, 50278, 50279, 50280]
        out = np.empty_like(ids)
        lib.vm_remap(ids.ctypes.data_as(P), ctypes.c_int64(ids.size), out.ctypes.data_as(P))
        x = torch.from_numpy(out).long().cuda()
        loss = torch.nn.functional.cross_entropy(proj(emb(x[:, :-1])).flatten(0, 1), x[:, 1:].flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 10 == 0:
            log.info(f"step {step} loss {loss.item():.4f}")


# ================================================================ torchrun: a rank that exits quietly with status 3
def tr_exit3(a):
    from torch.distributed.elastic.multiprocessing.errors import record

    @record
    def main():
        import numpy as np
        import torch
        import torch.distributed as dist

        rank = int(os.environ["RANK"])
        world = int(os.environ["WORLD_SIZE"])
        log = logger("train", f"[rank{rank}] %(asctime)s %(levelname)s %(message)s")
        torch.cuda.set_device(0)
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
        log.info(f"world_size={world}, backend=gloo, data={R}/shards")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for epoch in (1, 2):
            path = f"{R}/shards/part-{rank:05d}-epoch{epoch}.npy"
            try:
                data = np.load(path)
            except FileNotFoundError:
                log.error(f"epoch {epoch}: shard {path} not found (listing has {len(os.listdir(R + '/shards'))} files); this rank cannot continue")
                sys.exit(3)
            log.info(f"epoch {epoch}: {len(data)} samples from {os.path.basename(path)}")
            x_all = torch.from_numpy(data).cuda()
            for step in range(1, 41):
                x = x_all[(step * 64) % len(data):][:64]
                loss = (model(x) - x).pow(2).mean()
                loss.backward()
                for p in model.parameters():
                    g = p.grad.cpu()
                    dist.all_reduce(g)
                    p.grad.copy_(g / world)
                opt.step()
                opt.zero_grad()
                if step % 10 == 0:
                    log.info(f"epoch {epoch} step {step} loss {loss.item():.4f}")
                    time.sleep(0.05)
        dist.destroy_process_group()

    main()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--ckpt", default="")
    ap.add_argument("--split", default="")
    ap.add_argument("--task", default="wikitext")
    ap.add_argument("--make-ckpt", action="store_true")
    a = ap.parse_args()
    globals()[a.scenario](a)


if __name__ == "__main__":
    main()
