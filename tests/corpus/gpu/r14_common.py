# Round 14: shared helpers (loggers come from shapes_common) and the prep step that builds the files the
# scenarios load: tokenizers (one good, one whose tokenizer.json was cut short), a chat template with a
# Jinja nesting mistake, a TP=4 pre-sharded checkpoint, a stale-ABI extension module, a stale lock file.
# `python3 r14_common.py --prep` (run once by r14_run.sh before the scenarios).
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from shapes_common import add_prefix, sglang_logger, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = "/tmp/r14_models"
TOK_GOOD = f"{ROOT}/Llama-3.1-8B-Instruct-sft"
TOK_CUT = f"{ROOT}/Qwen2.5-7B-Instruct-awq"
CHAT_TEMPLATE = f"{ROOT}/tool_chat_template_llama3.1_json.jinja"
SHARDED = f"{ROOT}/Mixtral-8x7B-Instruct-tp4-sharded"
EXT_DIR = "/tmp/r14_ext/site-packages"
LOCK = "/tmp/r14_cache/tokenized_c4_en_4096.lock"

BAD_TEMPLATE = """{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- for message in messages %}
    {%- if message['role'] == 'system' %}
        {{- '<|start_header_id|>system<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}
    {%- elif message.tool_calls is defined %}
        {%- for tool_call in message.tool_calls %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
            {{- '{"name": "' + tool_call.function.name + '", "parameters": ' }}
            {{- tool_call.function.arguments | tojson }}
            {{- '}' }}
        {%- endfor %}
    {%- else %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}
    {%- if tools is not none and message['role'] == 'user' %}
        {{- 'Given the following functions, please respond with a JSON for a function call.' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

STALE_EXT_SRC = r"""
// fused_layer_norm_cuda, built against an older libtorch: it still calls
// c10::TensorImpl::is_contiguous_nondefault_policy_impl(c10::MemoryFormat) const.
namespace c10 {
enum class MemoryFormat : signed char { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };
struct TensorImpl {
  bool is_contiguous_nondefault_policy_impl(MemoryFormat memory_format) const;
};
}  // namespace c10

extern "C" int fused_layer_norm_is_contiguous(const c10::TensorImpl* t) {
  return t->is_contiguous_nondefault_policy_impl(c10::MemoryFormat::ChannelsLast) ? 1 : 0;
}

extern "C" void* PyInit_fused_layer_norm_cuda() { return nullptr; }
"""


def make_tokenizer(path, cut=False):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    words = ["<unk>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"]
    words += [f"tok{i}" for i in range(6000)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    ptf = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                  unk_token="<unk>")
    ptf.chat_template = ("{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|> "
                         "{{ m['content'] }}<|eot_id|>{% endfor %}")
    ptf.save_pretrained(path)
    if cut:  # what an interrupted download leaves
        fn = f"{path}/tokenizer.json"
        data = open(fn, "rb").read()
        open(fn, "wb").write(data[: int(len(data) * 0.62)])


def make_sharded():
    import torch
    from safetensors.torch import save_file
    os.makedirs(SHARDED, exist_ok=True)
    hidden, inter = 1024, 5504
    for rank in range(4):  # saved with tensor_parallel_size=4
        t = {}
        for i in range(2):
            p = f"model.layers.{i}"
            t[f"{p}.self_attn.qkv_proj.weight"] = torch.randn(3 * hidden // 4, hidden, dtype=torch.bfloat16)
            t[f"{p}.self_attn.o_proj.weight"] = torch.randn(hidden, hidden // 4, dtype=torch.bfloat16)
            t[f"{p}.mlp.gate_up_proj.weight"] = torch.randn(2 * inter // 4, hidden, dtype=torch.bfloat16)
            t[f"{p}.mlp.down_proj.weight"] = torch.randn(hidden, inter // 4, dtype=torch.bfloat16)
        save_file(t, f"{SHARDED}/model-rank-{rank}-part-0.safetensors")


def make_stale_ext():
    import subprocess
    os.makedirs(EXT_DIR, exist_ok=True)
    src = "/tmp/r14_ext/fused_layer_norm_cuda.cpp"
    with open(src, "w") as f:
        f.write(STALE_EXT_SRC)
    so = f"{EXT_DIR}/fused_layer_norm_cuda.cpython-{sys.version_info.major}{sys.version_info.minor}-x86_64-linux-gnu.so"
    subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-o", so, src], check=True)


def prep():
    os.makedirs(ROOT, exist_ok=True)
    make_tokenizer(TOK_GOOD)
    make_tokenizer(TOK_CUT, cut=True)
    with open(CHAT_TEMPLATE, "w") as f:
        f.write(BAD_TEMPLATE)
    make_sharded()
    make_stale_ext()
    os.makedirs(os.path.dirname(LOCK), exist_ok=True)
    with open(LOCK, "w") as f:  # left by a run that was killed while tokenizing
        f.write("12345\n")
    print("prep done")


if __name__ == "__main__" and "--prep" in sys.argv:
    prep()
