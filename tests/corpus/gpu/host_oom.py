"""Loads a checkpoint's shards into host memory, as a server does before moving them to the
GPU, in a cgroup too small for them: the kernel's OOM killer ends it."""

import logging
import time

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
import torch  # noqa: E402

logging.info("Using device cuda:0 (%s)", torch.cuda.get_device_name())
shards, held = 8, []
for shard in range(1, shards + 1):
    logging.info("Loading safetensors checkpoint shards: %d/%d", shard, shards)
    held.append(torch.ones(256 * 2**20 // 4, dtype=torch.float32))  # 256 MiB, touched
    time.sleep(0.2)
logging.info("Loaded all shards")
