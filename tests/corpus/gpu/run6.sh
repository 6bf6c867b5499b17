#!/bin/bash
# Sixth batch: tiny_server.py after ready, meeting one odd request (the 4th): a batch whose KV
# cache does not fit, refused while the server goes on serving (request_oom) or ending it
# (oom_after_ready); token ids past the vocabulary (bad_token).
cd "$(dirname "$0")"; mkdir -p logs
up() { for i in $(seq 120); do python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$1/health', timeout=1)" 2>/dev/null && return 0; sleep 0.5; done; return 1; }
M=/tmp/models
python3 tiny_server.py --mode make --model $M/good > logs/make.txt 2>&1; tail -3 logs/make.txt
for mode in request_oom oom_after_ready bad_token; do
  port=$((8120 + ${#mode})); echo "== $mode"
  python3 tiny_server.py --model $M/good --port $port --mode $mode --seconds 25 > logs/server_$mode.log 2>&1 & s=$!
  up $port && python3 tiny_server.py --model $M/good --port $port --mode requests --seconds 10 --odd-at 3 > logs/requests_$mode.txt 2>&1
  wait $s; echo "exit=$?" >> logs/server_$mode.exit; tail -3 logs/server_$mode.log | cut -c1-200
done
tar czf "$OUT/gpu-logs6.tgz" logs
