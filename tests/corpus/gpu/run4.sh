#!/bin/bash
# Fourth batch: Triton kernels failing to compile and trapping on the GPU.
cd "$(dirname "$0")"; mkdir -p logs
run() { name=$1; shift; echo "== $name"; timeout 150 "$@" > logs/$name.log 2>&1; echo "exit=$?" >> logs/$name.exit; tail -2 logs/$name.log | cut -c1-200; }
run triton_compile_error python3 triton_arange.py
run triton_trap python3 triton_trap.py
tar czf "$OUT/gpu-logs4.tgz" logs
