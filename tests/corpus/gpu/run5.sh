#!/bin/bash
# Fifth batch: a small transformers model server (tiny_server.py) failing as real ones do: a
# truncated checkpoint, a config its weights do not match, its port in use, a batch of a
# million rows after it served (SDPA's cuDNN kernel refuses it); a healthy one serving; and a
# loader the kernel's OOM killer ends (a cgroup of 1 GiB). MODES=... runs only those servers.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd "$(dirname "$0")"; mkdir -p logs
run() { name=$1; shift; echo "== $name"; timeout 150 "$@" > logs/$name.log 2>&1; echo "exit=$?" >> logs/$name.exit; tail -2 logs/$name.log | cut -c1-200; }
up() { for i in $(seq 120); do python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$1/health', timeout=1)" 2>/dev/null && return 0; sleep 0.5; done; return 1; }
M=/tmp/models
python3 tiny_server.py --mode make --model $M/good > logs/make.txt 2>&1; tail -3 logs/make.txt
cp -r $M/good $M/truncated && python3 -c "import os,sys; p=sys.argv[1]; os.truncate(p, os.path.getsize(p)//2)" $M/truncated/model.safetensors
cp -r $M/good $M/mismatch && python3 -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); c['n_embd']=128; json.dump(c, open(p,'w'), indent=2)" $M/mismatch/config.json
run ckpt_truncated python3 tiny_server.py --model $M/truncated
run config_mismatch python3 tiny_server.py --model $M/mismatch
python3 tiny_server.py --model $M/good --port 8101 --seconds 60 > logs/holder.txt 2>&1 & holder=$!
up 8101 && run port_in_use python3 tiny_server.py --model $M/good --port 8101
kill $holder; wait $holder
for mode in ${MODES:-serve cudnn_after_ready}; do
  port=$((8110 + ${#mode})); echo "== $mode"
  python3 tiny_server.py --model $M/good --port $port --mode $mode --seconds $([ $mode = serve ] && echo 20 || echo 60) > logs/server_$mode.log 2>&1 & s=$!
  up $port && python3 tiny_server.py --model $M/good --port $port --mode requests --seconds 8 > logs/requests_$mode.txt 2>&1
  wait $s; echo "exit=$?" >> logs/server_$mode.exit; tail -2 logs/server_$mode.log | cut -c1-200
done
if mkdir -p /sys/fs/cgroup/cd_oom 2>/dev/null && echo 1G > /sys/fs/cgroup/cd_oom/memory.max && echo 0 > /sys/fs/cgroup/cd_oom/memory.swap.max 2>/dev/null; then
  run host_oom_killed bash -c 'echo $$ > /sys/fs/cgroup/cd_oom/cgroup.procs; python3 host_oom.py; echo "loader exit status $?"'
else echo "no cgroup: $(cat /proc/self/cgroup)"; ls /sys/fs/cgroup | head; fi
tar czf "$OUT/gpu-logs5.tgz" logs
