# Round 16: shared helpers (loggers come from shapes_common) and the prep step that builds the files the
# scenarios load: a Qwen3-style model folder whose tokenizer_config.json was cut short by an interrupted
# copy (the weights and tokenizer.json are whole).
# `python3 r16_common.py --prep` (run once by r16_run.sh before the scenarios).
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from shapes_common import add_prefix, sglang_logger, uvicorn_log, vllm_logger  # noqa: E402,F401

ROOT = "/tmp/r16_models"
TOKCUT = f"{ROOT}/Qwen3-8B"

CHAT_TEMPLATE = (
    "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n    {%- if messages[0].role == 'system' %}\n"
    "        {{- messages[0].content + '\\n\\n' }}\n    {%- endif %}\n"
    "    {{- \"# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}\n"
    "    {%- for tool in tools %}\n        {{- \"\\n\" }}\n        {{- tool | tojson }}\n    {%- endfor %}\n"
    "    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"arguments\\\": "
    "<args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n{%- else %}\n"
    "    {%- if messages[0].role == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}\n    {%- endif %}\n{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if message.role == \"user\" or (message.role == \"system\" and not loop.first) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- elif message.role == \"assistant\" %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content }}\n"
    "        {{- '<|im_end|>\\n' }}\n    {%- endif %}\n{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n"
    "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
    "        {{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}\n{%- endif %}"
)

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
           "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
           "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
           "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>",
           "</tool_response>", "<think>", "</think>"]


def make_tokcut():
    os.makedirs(TOKCUT, exist_ok=True)
    with open(f"{TOKCUT}/config.json", "w") as f:
        json.dump({"architectures": ["Qwen3ForCausalLM"], "bos_token_id": 151643, "eos_token_id": 151645,
                   "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 12288,
                   "max_position_embeddings": 40960, "model_type": "qwen3", "num_attention_heads": 32,
                   "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
                   "rope_theta": 1000000, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                   "vocab_size": 151936}, f, indent=2)
    vocab = {f"tok{i}": i for i in range(2000)}
    added = [{"id": 151643 + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": i < 14 or i >= 22} for i, s in enumerate(SPECIAL)]
    with open(f"{TOKCUT}/tokenizer.json", "w") as f:
        json.dump({"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
                   "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
                   "decoder": None, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "tok0"}}, f)
    cfg = {"add_bos_token": False, "add_prefix_space": False,
           "added_tokens_decoder": {str(a["id"]): {k: v for k, v in a.items() if k != "id"} for a in added},
           "additional_special_tokens": SPECIAL[1:14], "bos_token": None, "chat_template": CHAT_TEMPLATE,
           "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>", "errors": "replace",
           "model_max_length": 131072, "pad_token": "<|endoftext|>", "split_special_tokens": False,
           "tokenizer_class": "Qwen2Tokenizer", "unk_token": None}
    text = json.dumps(cfg, indent=2, ensure_ascii=False)
    # the copy from the shared model store was interrupted: the first 4 KiB of the file arrived
    with open(f"{TOKCUT}/tokenizer_config.json", "w") as f:
        f.write(text[:4096])
    with open(f"{TOKCUT}/generation_config.json", "w") as f:
        json.dump({"bos_token_id": 151643, "do_sample": True, "eos_token_id": [151645, 151643],
                   "pad_token_id": 151643, "temperature": 0.6, "top_k": 20, "top_p": 0.95}, f, indent=2)


def line_buffer_c_stdout():
    """Make the C library's stdout line-buffered, as on a terminal (CUDA's device printf goes through it)."""
    import ctypes
    libc = ctypes.CDLL(None)
    stdout_p = ctypes.c_void_p.in_dll(libc, "stdout")
    libc.setvbuf(stdout_p, None, 1, 0)  # _IOLBF


if __name__ == "__main__":
    if "--prep" in sys.argv:
        make_tokcut()
        print("prep done")
