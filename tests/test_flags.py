"""Flag sets from launch commands and from the engines' echo of their arguments, the diff
against a baseline, and secrets kept out: on real lines and on whatever text comes."""

import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import demo_logs
from app.flags import (
    MAX_ARGS_LINE,
    ArgsLineFinder,
    FlagSet,
    command_flags,
    find_logged_args,
    flag_diff,
    masked,
    masked_diff,
    normalise,
    parse_logged_args,
)
from app.redact import SECRET

SEED_LOG = Path(__file__).parent / "data" / "seed_torch_symm_mem.log"
LAUNCH = "python -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 --tp 8"
# As the seeds' engineer types it, over SSH.
SEED_COMMAND = (
    "cd /data/eagle3 && NCCL_ALGO=Tree nohup python -m sglang.launch_server "
    "--model-path /shared/kimi-k2.5-int4 --tp 8 --mem-fraction-static=0.85 "
    "--enable-torch-symm-mem > logs/torch_symm_mem_test.log 2>&1 &"
)
# vLLM 0.9.1's line, from vllm-project/vllm issue 22341's log.
VLLM_LINE = (
    "INFO 08-06 21:23:02 [cli_args.py:309] non-default args: {'port': 8011, 'model': "
    "'/data/huggingface/models/mistralai/Mixtral-8x7B-Instruct-v0.1', 'tokenizer_mode': "
    "'mistral', 'dtype': 'float16', 'config_format': 'mistral', 'load_format': 'mistral', "
    "'tensor_parallel_size': 2}"
)


def test_a_seed_command_gives_its_flags_and_environment() -> None:
    flags = command_flags(SEED_COMMAND)
    assert flags == {
        "NCCL_ALGO": "Tree",
        "model_path": "/shared/kimi-k2.5-int4",
        "tp_size": "8",  # --tp is sglang's tp_size, the name its ServerArgs line uses
        "mem_fraction_static": "0.85",
        "enable_torch_symm_mem": True,
    }  # the redirections' targets, `2`, `&` and `cd` are no flags


@pytest.mark.parametrize(
    "command",
    [
        "python -m sglang.launch_server --port 30000 --enable-x",
        "python3 -u -X dev -W ignore -m sglang.launch_server --port 30000 --enable-x",
        "/opt/venv/bin/python3.11 -m sglang.launch_server --port 30000 --enable-x",
        "CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --port 30000 --enable-x",
        "torchrun --nproc-per-node 8 --standalone -m sglang.launch_server --port 30000 --enable-x",
        "torchrun --nproc_per_node=8 serve.py --port 30000 --enable-x",
        "python -m torch.distributed.run --nproc-per-node 2 serve.py --port 30000 --enable-x",
        "mpirun -np 8 --allow-run-as-root python -m sglang.launch_server --port 30000 --enable-x",
        "numactl --cpunodebind=0 taskset -c 0-7 python serve.py --port 30000 --enable-x",
        "uv run --with flashinfer python -m sglang.launch_server --port 30000 --enable-x",
        "conda run -n x --no-capture-output python -m sglang.launch_server --port 30000 --enable-x",
    ],
)
def test_the_interpreter_and_launchers_name_the_program_and_are_no_flags(command: str) -> None:
    """`-m sglang.launch_server` is no flag `m`; a launcher's `--nproc-per-node 8` none."""
    flags = command_flags(command)
    flags.pop("CUDA_VISIBLE_DEVICES", None)
    assert flags == {"port": "30000", "enable_x": True}


def test_inline_python_code_has_no_server_flags() -> None:
    assert command_flags("python -c 'import sglang' --tp 8") == {}


def test_spellings_of_one_flag_are_one_key() -> None:
    assert normalise("--enable-torch-symm-mem") == "enable_torch_symm_mem"
    assert normalise("enable_torch_symm_mem") == "enable_torch_symm_mem"
    assert normalise("--Enable_Torch-Symm-Mem") == "enable_torch_symm_mem"
    assert normalise("-O") == "O" and normalise("-o") == "o"
    dashed = command_flags("python -m sglang.launch_server --enable-torch-symm-mem")
    underscored = command_flags("python -m sglang.launch_server --enable_torch_symm_mem")
    assert dashed == underscored


def test_values_quoted_repeated_short_and_many() -> None:
    command = (
        "env CUDA_VISIBLE_DEVICES=0,1 vllm serve meta/Llama-3 -tp 2 -O3 "
        "--override-generation-config '{\"temperature\": 0.6}' --lora-modules a=/x "
        "--lora-modules b=/y --cuda-graph-sizes 1 2 4 --offset -1 -- positional"
    )
    assert command_flags(command) == {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "model": "meta/Llama-3",
        "tensor_parallel_size": "2",
        "compilation_config": "3",
        "override_generation_config": '{"temperature": 0.6}',
        "lora_modules": "b=/y",  # given twice: the last counts, as argparse stores it
        "cuda_graph_sizes": "1 2 4",
        "offset": "-1",
    }


def test_broken_quotes_and_empty_commands_give_what_is_there() -> None:
    assert command_flags("") == {}
    assert command_flags("   ; && |") == {}
    assert command_flags("python -m sglang.launch_server --served-model-name 'oops") == {
        "served_model_name": "oops",
    }
    # Found by the property test below: an open quote holding the other quote, a last `\`.
    assert command_flags("--name \"'") == {"name": "'"}
    assert command_flags("--name x\\") == {"name": "x"}


def test_the_seed_logs_server_args_line() -> None:
    logged = find_logged_args(SEED_LOG.read_text())
    assert logged is not None and logged.engine == "sglang" and logged.complete
    assert logged.flags["enable_torch_symm_mem"] is True
    assert logged.flags["tp_size"] == "8"
    assert logged.flags["attention_backend"] == "flashinfer"
    # None is "not set" and False a switch left off, as absent from a command.
    assert "speculative_algorithm" not in logged.flags
    assert "enable_symm_mem" not in logged.flags


def test_python_reprs_with_commas_parens_nesting_and_quotes() -> None:
    line = "[2026-02-27 13:21:27] " + demo_logs.server_args(
        {
            "json_model_override_args": '{"rope": [1, 2], "name": "a, b)"}',
            "cuda_graph_bs": [1, 2, 4],
            "hicache_storage_backend_extra_config": {"k": (1, "x)")},
            "chat_template": "it's",
            "served_model_name": 'say "hi"',
        }
    )
    flags = parse_logged_args(line)
    assert flags is not None
    assert flags.flags["json_model_override_args"] == '{"rope": [1, 2], "name": "a, b)"}'
    assert flags.flags["cuda_graph_bs"] == "[1, 2, 4]"
    assert flags.flags["hicache_storage_backend_extra_config"] == "{'k': (1, 'x)')}"
    assert flags.flags["chat_template"] == "it's"
    assert flags.flags["served_model_name"] == 'say "hi"'
    assert flags.flags["port"] == "30000" and flags.flags["mem_fraction_static"] == "0.85"


def test_vllm_non_default_args_including_reprs_that_are_no_literals() -> None:
    logged = parse_logged_args(VLLM_LINE)
    assert logged is not None and logged.engine == "vllm"
    assert logged.flags == {
        "port": "8011",
        "model": "/data/huggingface/models/mistralai/Mixtral-8x7B-Instruct-v0.1",
        "tokenizer_mode": "mistral",
        "dtype": "float16",
        "config_format": "mistral",
        "load_format": "mistral",
        "tensor_parallel_size": "2",
    }
    odd = parse_logged_args(
        "non-default args: {'enable_prefix_caching': False, 'compilation_config': "
        "CompilationConfig(level=3, sizes=[1, 2]), 'kv': <KVDtype.FP8: 1>, 'rate': inf, "
        "'big': 1e999, 'api_key': ['sk-abcdefghijklmnopqrstuvwx']}"
    )
    assert odd is not None
    assert odd.flags["enable_prefix_caching"] is False  # vLLM prints only what was asked
    assert odd.flags["compilation_config"] == "CompilationConfig(level=3, sizes=[1, 2])"
    assert odd.flags["kv"] == "<KVDtype.FP8: 1>"
    assert odd.flags["rate"] == "inf" and odd.flags["big"] == "1e999"  # text, never a float
    assert masked(odd.flags)["api_key"] == SECRET


def test_a_line_cut_short_keeps_its_whole_items() -> None:
    line = demo_logs.server_args({})
    cut = line[: line.index("tp_size=8") + len("tp_size=8")]  # cut inside the next item
    logged = parse_logged_args(cut)
    assert logged is not None and not logged.complete
    assert logged.flags["mem_fraction_static"] == "0.85"
    assert "tp_size" not in logged.flags  # the last item may be half a value


def test_the_last_of_several_lines_wins() -> None:
    first = demo_logs.server_args({"tp_size": 4})
    second = demo_logs.server_args({"tp_size": 8})
    logged = find_logged_args(f"{first}\nboot\n{second}\n")
    assert logged is not None and logged.flags["tp_size"] == "8"


def test_only_change_plus_enable_torch_symm_mem() -> None:
    baseline = FlagSet.of(LAUNCH)
    attempt = FlagSet.of(f"{LAUNCH} --enable-torch-symm-mem")
    diff = flag_diff(attempt, baseline)
    assert diff.added == {"enable_torch_symm_mem": True}
    assert not diff.removed and not diff.changed and diff.basis == "command"
    assert diff.summary() == "only change: +enable_torch_symm_mem"


def test_logs_are_compared_when_both_engines_echoed_their_arguments() -> None:
    # The typed commands differ in spelling only; the logs say what ran: one switch more,
    # a seed the engine drew itself left out.
    baseline = FlagSet.of(
        LAUNCH,
        parse_logged_args(demo_logs.server_args({"random_seed": 11, "cuda_graph_max_bs": 128})),
    )
    attempt = FlagSet.of(
        "python -m sglang.launch_server --model /shared/kimi-k2.5-int4 --tp-size 8 "
        "--enable-torch-symm-mem",
        parse_logged_args(
            demo_logs.server_args(
                {"random_seed": 99, "enable_torch_symm_mem": True, "cuda_graph_max_bs": 64}
            )
        ),
    )
    diff = flag_diff(attempt, baseline)
    assert diff.basis == "log"
    assert diff.added == {"enable_torch_symm_mem": True}
    assert diff.changed == {"cuda_graph_max_bs": ("128", "64")}
    assert not diff.removed
    assert diff.summary() == "2 changes: +enable_torch_symm_mem, cuda_graph_max_bs: 128 → 64"


def test_one_log_only_compares_the_commands() -> None:
    baseline = FlagSet.of(LAUNCH)
    attempt = FlagSet.of(
        LAUNCH, parse_logged_args(demo_logs.server_args({"enable_torch_symm_mem": True}))
    )
    diff = flag_diff(attempt, baseline)
    assert diff.basis == "command" and diff.empty
    assert diff.summary() == "no flag differs from the baseline"


def test_removed_changed_and_numbers_written_two_ways() -> None:
    baseline = FlagSet.of(f"{LAUNCH} --mem-fraction-static 0.85 --disable-cuda-graph")
    attempt = FlagSet.of(f"{LAUNCH} --mem-fraction-static 0.850 --tp 4")
    diff = flag_diff(attempt, baseline)
    assert diff.removed == {"disable_cuda_graph": True}
    assert diff.changed == {"tp_size": ("8", "4")}  # 0.85 and 0.850 are one value
    assert diff.summary() == "2 changes: -disable_cuda_graph, tp_size: 8 → 4"


def test_secrets_in_flags_are_masked_and_a_changed_key_still_shows() -> None:
    baseline = FlagSet.of(f"HF_TOKEN=hf_{'a' * 30} {LAUNCH} --api-key sk-{'b' * 24}")
    attempt = FlagSet.of(
        f"HF_TOKEN=hf_{'a' * 30} {LAUNCH} --api-key sk-{'c' * 24} "
        "--dist-init-addr https://alice:hunter2@10.0.0.1:5000"
    )
    shown = masked(attempt.effective())
    assert shown["HF_TOKEN"] == SECRET and shown["api_key"] == SECRET
    assert "hunter2" not in str(shown["dist_init_addr"])
    diff = masked_diff(flag_diff(attempt, baseline))
    assert diff.changed == {"api_key": (SECRET, SECRET)}
    assert "hunter2" not in str(diff.added) and "alice:" in str(diff.added)
    assert "bbbb" not in diff.summary() and "cccc" not in diff.summary()
    # Not every *token* is a credential.
    assert masked({"max_new_tokens": "256"}) == {"max_new_tokens": "256"}


# --- any text at all ------------------------------------------------------------------------

names = st.from_regex(r"[a-z][a-z0-9]{0,8}(?:-[a-z0-9]{1,8}){0,3}", fullmatch=True)
values = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30
).filter(lambda v: not v.startswith("-") and v.strip() == v and " " not in v)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_as_a_command_or_a_log_line_never_raises(text: str) -> None:
    flags = command_flags(text)
    assert all(isinstance(k, str) for k in flags)
    for prefix in ("", "server_args=ServerArgs(", "non-default args: {"):
        logged = parse_logged_args(prefix + text)
        assert (logged is None) == (prefix == "" and parse_logged_args(text) is None)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(names, st.one_of(st.just(True), values), max_size=8))
def test_a_command_built_from_flags_gives_them_back(flags: dict[str, bool | str]) -> None:
    words = ["python", "-m", "sglang.launch_server"]
    for name, value in flags.items():
        words.append(f"--{name}")
        if value is not True:
            words.append(str(value))
    parsed = command_flags(shlex.join(words))
    expected: dict[str, bool | str] = {}
    aliases = {
        "tp": "tp_size",
        "dp": "dp_size",
        "pp": "pp_size",
        "ep": "ep_size",
        "model": "model_path",
        "tokenizer": "tokenizer_path",
    }
    for name, value in flags.items():
        key = name.replace("-", "_")
        expected[aliases.get(key, key)] = value
    if len(expected) == len(flags):  # no two names collapsed into one key
        assert parsed == expected


literals = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True), literals))
def test_a_server_args_repr_gives_every_set_value_back(args: dict[str, object]) -> None:
    line = "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"
    logged = parse_logged_args(line)
    assert logged is not None and logged.complete
    expected = {k for k, v in args.items() if v is not None and v is not False}
    assert set(logged.flags) == expected
    for key in expected:
        value = args[key]
        shown = logged.flags[key]
        if isinstance(value, bool | str):
            assert shown == value
        elif isinstance(value, float) and value in (float("inf"), float("-inf")):
            assert shown == repr(value)
        else:
            assert shown == repr(value)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.text(max_size=200))
def test_a_diff_is_symmetric_and_nothing_differs_from_itself(a: str, b: str) -> None:
    one, other = FlagSet.of(a), FlagSet.of(b)
    assert flag_diff(one, one).empty
    forth, back = flag_diff(one, other), flag_diff(other, one)
    assert forth.added == back.removed and forth.removed == back.added
    assert {k: (y, x) for k, (x, y) in forth.changed.items()} == back.changed


# --- found once, as the log arrives ---------------------------------------------------------


def _found_in_pieces(data: bytes, cuts: list[int]) -> str | None:
    finder = ArgsLineFinder()
    start = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        finder.feed(data[start:cut])
        start = cut
    return finder.line


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=12))
def test_the_args_line_is_found_however_the_log_is_cut(cuts: list[int]) -> None:
    first = "[2026-02-27 13:21:27] " + demo_logs.server_args({"tp_size": 4})
    second = "[2026-02-27 14:02:11] " + demo_logs.server_args({"enable_torch_symm_mem": True})
    text = "\n".join(["boot", first, "crash", *demo_logs.startup({})[2:], second, "ready", ""])
    assert _found_in_pieces(text.encode(), cuts) == second  # the latest launch's
    assert find_logged_args(text) == parse_logged_args(second)
    # Not ended yet: the line is not taken half-written.
    assert _found_in_pieces(f"boot\n{first[:500]}".encode(), cuts) is None


def test_a_line_past_the_cap_is_cut_and_a_gap_drops_the_open_line() -> None:
    finder = ArgsLineFinder()
    finder.feed(b"x\nserver_args=ServerArgs(" + b"a=1, " * (MAX_ARGS_LINE // 4))
    finder.feed(b"tail)\n")
    assert finder.line is not None and len(finder.line) == MAX_ARGS_LINE
    finder = ArgsLineFinder()
    finder.feed(b"server_args=ServerArgs(tp_size=")
    finder.skip()  # the middle of the log was dropped here
    finder.feed(b"8)\nnext\n")
    assert finder.line is None
