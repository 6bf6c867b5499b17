# JAX multi-host job for round 19 (absl-style log lines): --scenario coord_timeout: process 0 of 2 starts the
# coordination service and waits for process 1, whose host never launched the job; initialization times out.
import argparse
import logging
import os
import sys
import time

import jax
from absl import logging as alog

ap = argparse.ArgumentParser()
ap.add_argument("--scenario", required=True)
ap.add_argument("--port", type=int, default=12355)
args = ap.parse_args()
alog.use_absl_handler()
alog.set_verbosity(alog.INFO)
logging.root.setLevel(logging.INFO)
alog.info("JAX %s, jaxlib %s; launching process 0 of 2 (coordinator 127.0.0.1:%d)", jax.__version__,
          jax.lib.__version__ if hasattr(jax.lib, "__version__") else "?", args.port)
alog.info("Config: model=llama3_8b mesh=(data=2, fsdp=1) per_host_batch=16 seq_len=8192 steps=20000")
if args.scenario == "coord_timeout":
    jax.distributed.initialize(coordinator_address=f"127.0.0.1:{args.port}", num_processes=2, process_id=0,
                               initialization_timeout=15)
    alog.info("devices: %s", jax.devices())
