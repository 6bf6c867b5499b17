import torch, logging
logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("server")
log.info("Loading model weights to cuda:0")
w = torch.empty((60 * 1024**3) // 2, dtype=torch.float16, device="cuda")
log.info("Weights loaded. avail mem=%.2f GB", torch.cuda.mem_get_info()[0] / 1e9)
log.info("Allocating KV cache")
kv = [torch.empty((40 * 1024**3) // 2, dtype=torch.float16, device="cuda") for _ in range(3)]
