# sglang-shaped crash: a launcher, one scheduler child per TP rank, a real GPU error in a child, SIGQUIT to the parent.
import argparse
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback

from shapes_common import (fault_assert, fault_illegal, fault_oom, free_gb, sglang_logger,
                           warm_gpu)

# scenario -> (fault, ranks that fail, order): order "tb_first" = child's traceback, then SIGQUIT;
# "wrapper_first" = SIGQUIT first, the child's log flushes late; "interleave" = two ranks' tracebacks
# written line by line at once (as through a slow shared pipe).
SCENARIOS = {
    "illegal_tb_first": ("illegal", [1], "tb_first"),
    "assert_wrapper_first": ("assert", [0], "wrapper_first"),
    "oom_tb_first": ("oom", [0], "tb_first"),
    "oom_wrapper_first": ("oom", [1], "wrapper_first"),
    "assert_interleave": ("assert", [0, 1], "interleave"),
    "nccl_two_ranks_one_gpu": ("nccl", [0, 1], "tb_first"),
    "gloo_mismatch_wrapper_first": ("gloo", [0, 1], "wrapper_first"),
}


def dist_fault(kind, rank, tp):
    import torch
    import torch.distributed as dist
    from datetime import timedelta
    if kind == "nccl":  # both ranks on cuda:0: NCCL refuses the communicator
        dist.init_process_group("nccl", rank=rank, world_size=tp, init_method="tcp://127.0.0.1:29517",
                                device_id=torch.device("cuda", 0), timeout=timedelta(seconds=30))
        t = torch.ones(4096, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
    else:  # gloo all_reduce whose sizes differ between ranks
        dist.init_process_group("gloo", rank=rank, world_size=tp, init_method="tcp://127.0.0.1:29518",
                                timeout=timedelta(seconds=20))
        t = torch.ones(4096 if rank == 0 else 8192)
        dist.all_reduce(t)


def scheduler(tp_rank, tp_size, scenario, barrier):
    logger = sglang_logger(tp_rank)
    fault, failing, order = SCENARIOS[scenario]
    parent = os.getppid()
    try:
        logger.info("Init torch distributed begin.")
        if fault in ("nccl", "gloo"):
            warm_gpu()
            logger.info("Init torch distributed ends. mem usage=0.00 GB")
            dist_fault(fault, tp_rank, tp_size)
        avail = warm_gpu()
        logger.info(f"Load weight begin. avail mem={avail:.2f} GB")
        time.sleep(0.3)
        logger.info(f"Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem={free_gb():.2f} GB, mem usage=0.03 GB.")
        if tp_rank not in failing:
            time.sleep(30)  # waits on the failing rank until killed
            return
        if fault == "oom":
            kv = fault_oom()
            logger.info(f"KV Cache is allocated. #tokens: {kv.shape[1]}")
        logger.info(f"Memory pool end. avail mem={free_gb():.2f} GB")
        logger.info(f"Capture cuda graph begin. This can take up to several minutes. avail mem={free_gb():.2f} GB")
        if fault == "illegal":
            fault_illegal()
        if fault == "assert":
            fault_assert()
        logger.info("Capture cuda graph end.")
    except Exception:
        tb = traceback.format_exc()
        if order == "interleave":
            # one line at a time, both ranks at once: lines of the two tracebacks interleave
            lines = f"Scheduler hit an exception: {tb}".rstrip("\n").split("\n")
            barrier.wait(timeout=60)
            time.sleep(0.01 * tp_rank)
            first = f"[{time.strftime('%Y-%m-%d %H:%M:%S')} TP{tp_rank}] {lines[0]}"
            for line in [first] + lines[1:]:
                sys.stdout.write(line + "\n")
                sys.stdout.flush()
                time.sleep(0.02)
            os.kill(parent, signal.SIGQUIT)
        elif order == "wrapper_first":
            os.kill(parent, signal.SIGQUIT)
            time.sleep(0.4)  # the child's log reaches the file late
            logger.error(f"Scheduler hit an exception: {tb}")
        else:
            logger.error(f"Scheduler hit an exception: {tb}")
            sys.stdout.flush()
            os.kill(parent, signal.SIGQUIT)
        time.sleep(30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), required=True)
    ap.add_argument("--tp", type=int, default=2)
    ap.add_argument("--port", type=int, default=30000)
    args = ap.parse_args()
    logger = sglang_logger()
    ctx = mp.get_context("spawn")
    procs = []

    def sigquit_handler(signum, frame):
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        logger.error("Received sigquit from a child process. It usually means the child failed.")
        sys.stdout.flush()
        deadline = time.time() + 1.5  # kill_process_tree, after a short grace for late output
        while time.time() < deadline:
            time.sleep(0.1)
        for p in procs:
            if p.is_alive():
                p.kill()
        os.kill(os.getpid(), signal.SIGKILL)

    signal.signal(signal.SIGQUIT, sigquit_handler)
    logger.info(f"server_args=ServerArgs(model_path='/models/Llama-3.1-8B-Instruct', tp_size={args.tp}, "
                f"host='127.0.0.1', port={args.port}, mem_fraction_static=0.88, cuda_graph_max_bs=160, "
                f"random_seed=42, log_level='info', scenario='{args.scenario}')")
    barrier = ctx.Barrier(args.tp)
    for r in range(args.tp):
        p = ctx.Process(target=scheduler, args=(r, args.tp, args.scenario, barrier), name=f"sglang::scheduler_TP{r}")
        p.start()
        procs.append(p)
    for p in procs:
        p.join()
    logger.info("All schedulers exited.")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
