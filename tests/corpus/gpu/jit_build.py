from torch.utils.cpp_extension import load_inline
print("JIT compiling fused_rmsnorm extension", flush=True)
src = "torch::Tensor rms(torch::Tensor x) { return x * undefined_scale; }"
load_inline(name="fused_rmsnorm", cpp_sources=src, functions=["rms"], verbose=True)
