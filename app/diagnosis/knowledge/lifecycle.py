"""Where a server is in its life: the line it prints once per launch, the statistics only a
serving engine prints, and its own word that it never came up."""

from dataclasses import dataclass

from app.diagnosis.knowledge.fact import Fact


@dataclass(frozen=True)
class Launch(Fact):
    # A literal of the line that the scanner looks for, so the line is kept wherever it is
    # (None: kept only near other lines worth reading).
    anchor: str | None = None


# Of several launches in one file, only the last one's failures and readiness count.
LAUNCHES = (
    Launch(
        r"server_args=ServerArgs\(",
        ("sglang",),
        "[2025-03-01 10:00:00] server_args=ServerArgs(model_path='/models/Llama-3.1-8B-Instruct'"
        ", tp_size=1, port=30000, mem_fraction_static=0.88, watchdog_timeout=300)",
        "sglang: its arguments, logged once at launch ('server_args=ServerArgs(...)')",
        anchor="server_args=",
    ),
    Launch(
        r"non-default args: \{",
        ("vllm",),
        "INFO 06-23 10:49:59 [cli_args.py:309] non-default args: {'model': "
        "'Qwen/Qwen2.5-0.5B-Instruct'}",
        "vLLM: its OpenAI server's arguments, logged once at launch ('non-default args: {...}')",
        anchor="non-default args",
    ),
    Launch(
        r"vLLM API server version \d",
        ("vllm",),
        "(APIServer pid=387) INFO 09-21 21:35:59 [api_server.py:1882] vLLM API server version "
        "0.10.2",
        "vLLM: vllm/entrypoints/openai/api_server.py logs its version first thing",
        anchor="API server version",
    ),
    Launch(
        r"\bStarted [A-Z][\w .-]*[Ss]ervice\.?$",
        ("systemd",),
        "Nov 15 21:48:43 host-1 systemd[1]: Started Ollama Service.",
        "systemd (re)starting a unit it supervises, under journalctl; observed in corpus case "
        "812 (Ollama)",
    ),
)

# Work only a live engine logs (a front end answering health checks is no proof): a failure
# they follow is one the server lived through.
SERVING = (
    Fact(
        r"Decode batch",
        ("sglang",),
        "[2025-02-27 04:46:39 TP0] Decode batch. #running-req: 8, #token: 62531, token usage: "
        "0.12, gen throughput (token/s): 186.64, #queue-req: 0",
        "sglang: the scheduler's statistics of each decode step it logs; observed in corpus "
        "case 579",
    ),
    Fact(
        r"Prefill batch",
        ("sglang",),
        "[2026-04-05 20:02:51] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, "
        "token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput "
        "(token/s): 559.53",
        "sglang: the scheduler's statistics of each prefill; observed in corpus case M030",
    ),
    Fact(
        r"Avg generation throughput",
        ("vllm",),
        "INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s, "
        "Avg generation throughput: 29.2 tokens/s, Running: 10 reqs, Waiting: 4 reqs, GPU KV "
        "cache usage: 57.9%, Prefix cache hit rate: 40.5%",
        "vLLM: its periodic stats logger (vllm/v1/metrics/loggers.py); observed in corpus case 004",
    ),
    Fact(
        r"\"POST /(?:v1/(?:chat/)?completions|generate) HTTP/[\d.]+\" 200\b",
        ("uvicorn", "vllm", "sglang"),
        'INFO:     127.0.0.1:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "Uvicorn's access log in front of vLLM's and sglang's OpenAI servers: a generation "
        "request answered (a health check answered by the front end alone proves nothing)",
    ),
    Fact(
        r"\bdone request: POST /\S*(?:completions?|chat|infill|embeddings?)\S* \S+ 200\b",
        ("llama.cpp",),
        "srv  log_server_r: done request: POST /completion 127.0.0.1 200",
        "llama.cpp's server (tools/server/server.cpp) logging each request it answered; "
        "observed in corpus case F112",
    ),
    Fact(
        r"\bupdate_slots: all slots are idle\b",
        ("llama.cpp",),
        "srv  update_slots: all slots are idle",
        "llama.cpp's server (tools/server/server.cpp) back in its loop with no work left, after "
        "each batch of requests it answered; observed in corpus case J048",
    ),
    Fact(
        r"^\s*(?:prompt )?eval time =\s+[\d.]+ ms /\s+\d+ tokens",
        ("llama.cpp",),
        "prompt eval time =    1062.68 ms /   551 tokens (    1.93 ms per token,   518.50 tokens "
        "per second)",
        "llama.cpp's server timing each request's prompt and generation; observed in corpus "
        "case F112",
    ),
)


# A server's own word that it never came up: a failure it names was not ready.
NEVER_STARTED = (
    Fact(
        r"\b[Ff]ailed to start\b",
        ("tgi", "vllm"),
        "2023-08-17T10:23:27.032737Z ERROR text_generation_launcher: Shard 0 failed to start",
        "Text Generation Inference's launcher (launcher/src/main.rs); vLLM's 'WorkerProc failed "
        "to start.' too; observed in corpus case 500",
    ),
    Fact(
        r"ShardCannotStart",
        ("tgi",),
        "Error: ShardCannotStart",
        "Text Generation Inference's launcher, exiting (launcher/src/main.rs); observed in "
        "corpus case 500",
    ),
    Fact(
        r"[Ii]nitialization failed",
        ("sglang", "vllm"),
        "[2024-12-13 01:47:34] Initialization failed. warmup error: Traceback (most recent call "
        "last):",
        "sglang's warm-up (python/sglang/srt/entrypoints/http_server.py; observed in corpus case "
        "002) and vLLM V1's 'Engine core initialization failed'",
    ),
    Fact(
        r"waiting for .{0,40} to start",
        ("ollama",),
        "Error: timed out waiting for llama runner to start - progress 0.00 -",
        "Ollama (llm/server.go) when its model runner never answered; observed in corpus case 866",
    ),
    Fact(
        r"failed to load all models",
        ("triton",),
        "error: creating server: Internal - failed to load all models",
        "Triton Inference Server exiting when a model of its repository failed to load (its "
        "model repository manager's status)",
    ),
)

# An operator or a scheduler stopping the process: no crash, whatever its launcher prints next.
STOPPED = (
    Fact(
        r"\bCANCELLED AT \S+ DUE [Tt][Oo] (?:TIME LIMIT|PREEMPTION|SIGNAL \w+)",
        ("slurm",),
        "slurmstepd: error: *** JOB 4242 ON host-1 CANCELLED AT 2024-04-23T12:18:08 DUE TO TIME "
        "LIMIT ***",
        "Slurm's slurmstepd (src/slurmd/slurmstepd/req.c) when the job ran past its time limit "
        "or was preempted ('... CANCELLED AT %s DUE TO TIME LIMIT ***'), and when scancel "
        "signalled it ('DUE to SIGNAL Terminated'; corpus case N176)",
    ),
    Fact(
        r"^KeyboardInterrupt: (?:MQLLMEngine )?terminated$",
        ("vllm",),
        "KeyboardInterrupt: terminated",
        "vLLM's OpenAI server (vllm/entrypoints/openai/api_server.py): its SIGTERM handler "
        "raises KeyboardInterrupt('terminated'); before V1 its MQLLMEngine's the same "
        "('MQLLMEngine terminated', corpus case N161)",
    ),
    Fact(
        r"\[shutdown\] (?:EngineCore|API server): (?:trigger )?received signal=SIG(?:TERM|INT)\b",
        ("vllm",),
        "(EngineCore pid=23397) INFO 08-01 21:34:51 [core.py:1214] [shutdown] EngineCore: "
        "trigger received signal=SIGTERM",
        "vLLM V1's engine core (vllm/v1/engine/core.py) on SIGTERM or SIGINT; what its API "
        "server logs after it (EngineDeadError) is the stop's echo; observed in corpus case F063",
    ),
    Fact(
        r"^(?:\([\w.-]+ pid=\d+\) )?KeyboardInterrupt$",
        ("python", "vllm"),
        "(EngineCore pid=3408798) KeyboardInterrupt",
        "Python's default SIGINT handler (an operator's Ctrl-C): a bare KeyboardInterrupt ends "
        "the traceback of whatever was running (with a failure after it, a launcher stopping "
        "its children because of that failure); observed in corpus case K086",
    ),
    Fact(
        r"\bDataLoader worker \(pid \d+\) is killed by signal: Terminated\b",
        ("pytorch",),
        "RuntimeError: DataLoader worker (pid 139941) is killed by signal: Terminated.",
        "PyTorch's DataLoader (torch/utils/data/_utils/signal_handling.py) when a worker got "
        "SIGTERM, as everything in the job's process group does when it is stopped (a host OOM "
        "reads 'Killed'); observed in corpus case K098",
    ),
    Fact(
        r"^Signal \((?:15|2)\) received\.?$",
        ("triton",),
        "Signal (15) received.",
        "Triton Inference Server's signal handler (src/main.cc) on SIGTERM or SIGINT, before "
        "its graceful exit (a crash's signal, 11 or 6, is a failure); observed in corpus case P017",
    ),
    Fact(
        r"\bSignalException: Process \d+ got signal: (?:15|2|1)\b",
        ("torchrun",),
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4321 got "
        "signal: 15",
        "torchrun (torch/distributed/elastic/multiprocessing/api.py, _terminate_process_handler) "
        "when SIGTERM, SIGINT or SIGHUP reached the launcher itself",
    ),
)

# A process still waiting on others when its log ends: the log of a hang, not of a crash.
WAITING = (
    Fact(
        r"Waiting in store based barrier",
        ("torch",),
        "2022-05-10 05:38:33 | INFO | torch.distributed.distributed_c10d | Waiting in store based "
        "barrier to initialize process group for rank: 0, key: store_based_barrier_key:1 "
        "(world_size=2, worker_count=3, timeout=0:30:00)",
        "PyTorch's torch/distributed/distributed_c10d.py (_store_based_barrier) every 10 s while "
        "ranks are missing; observed in corpus case 552",
    ),
    Fact(
        r"No available shared memory broadcast block found in \d+ seconds",
        ("vllm",),
        "2026-03-09 01:27:30.122744672 (MapWorker(MapBatches(vLLMEngineActor)) pid=1202, "
        "ip=10.0.0.1) (EngineCore_DP0 pid=32080) INFO 03-08 17:27:28 [shm_broadcast.py:548] "
        "No available shared "
        "memory broadcast block found in 60 seconds. This typically happens when some processes "
        "are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache "
        "quantization).",
        "vLLM's vllm/distributed/device_communicators/shm_broadcast.py while a reader has not "
        "taken its block; observed in corpus case 553",
    ),
)

# A client's request refused for what it asked: the server answers it and serves on, so such
# a line is never why a server stopped (a KV cache too small for max_model_len at start-up is
# another line, and a failure).
REQUEST_REFUSED = (
    Fact(
        r"\bmaximum context length is \d+ tokens\. However, you requested\b",
        ("vllm",),
        "ERROR 05-08 21:27:27 [serving_chat.py:198] ValueError: This model's maximum context "
        "length is 8192 tokens. However, you requested 8203 tokens (7691 in the messages, 512 "
        "in the completion). Please reduce the length of the messages or completion.",
        "vLLM's OpenAI front end (vllm/entrypoints/openai/serving_engine.py) validating a "
        "request's length, logged by its handler at ERROR and answered with a 400",
    ),
    Fact(
        r"\bis longer than the model's context length\b",
        ("sglang",),
        "[2026-03-01 10:00:30] ERROR:    The input (40000 tokens) is longer than the model's "
        "context length (32768 tokens).",
        "sglang's tokenizer manager (python/sglang/srt/managers/tokenizer_manager.py) refusing "
        "a request longer than the context",
    ),
    Fact(
        r"\bException in ASGI application\b",
        ("uvicorn", "vllm", "sglang"),
        "[2025-05-02 10:26:20] ERROR:    Exception in ASGI application",
        "Uvicorn (uvicorn/protocols/http/) on one request its application failed, then that "
        "handler's traceback: answered with a 500, and the server serves on (where the log "
        "shows it going on, the handler's exception is that request's); observed in corpus "
        "case P058",
    ),
    Fact(
        r"\bwaiting for llama runner to start: context canceled\b",
        ("ollama",),
        'time=2024-12-09T03:41:20.513Z level=ERROR source=sched.go:455 msg="error loading llama '
        'server" error="timed out waiting for llama runner to start: context canceled"',
        "Ollama's scheduler (server/sched.go) when the client that asked for a model closed its "
        "request while the runner loaded (GIN logs a 499): the load is dropped, the server "
        "serves on; observed in corpus case P087",
    ),
    Fact(
        r"\bexceeds the available context size\b",
        ("llama.cpp",),
        "13.44.247.850 E srv    send_error: task id = 1588, error: request (8805 tokens) exceeds "
        "the available context size (8192 tokens), try increasing it",
        "llama.cpp's server (tools/server/server.cpp) answering a request longer than a slot's "
        "context with an error; observed in corpus case N167",
    ),
    Fact(
        r"\bfailed for request(?: id)?[ :=]+['\"]?[\w-]{8,}['\"]?\.?\s*$",
        ("vllm", "vllm-ascend", "mooncake"),
        "(Worker pid=782969) (Worker_DP0_TP1_EP1 pid=782969) ERROR 03-31 02:49:30 "
        "[mooncake_connector.py:547] Mooncake transfer failed for request "
        "chatcmpl-ba310df4-f600-441c-a0b5-0cb772aaf8ed-8b8ee10a",
        "a KV connector (vllm-ascend's mooncake_connector.py) failing one request's transfer: "
        "that request fails, the engine serves on; observed in corpus case Q004",
    ),
    Fact(
        r"\brequestId[= ]+\d+ failed\b|\bfailed (?:to )?process requestId \d+",
        ("tensorrt-llm", "triton-inference-server"),
        "E0624 21:46:14.504165488     296 briton.cpp:205]                       Executor "
        "requestId=235 failed with error: Encountered an error in forwardAsync function: "
        "[TensorRT-LLM][ERROR] Assertion failed: decoderFinishedEvent must be nullopt. (/"
        "src/tensorrt_llm/cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp:"
        "1040) ",
        "TensorRT-LLM's executor failing one request (its C++ executor API, as Triton's "
        "tensorrtllm backend and servers over it report it): that request gets an error, the "
        "executor serves on; observed in corpus cases P010, P011",
    ),
    Fact(
        r"\bHTTPException: [45]\d\d\b",
        ("fastapi", "starlette"),
        "fastapi.exceptions.HTTPException: 500: Briton error during inference",
        "FastAPI's (and Starlette's) exception for an HTTP error answer: raised to answer one "
        "request with that status, the server serves on; observed in corpus case P011",
    ),
    Fact(
        r"\bsession \d+ finished, reason \"error\"",
        ("lmdeploy",),
        "2025-05-17 17:09:51,337 - lmdeploy - ERROR - async_engine.py:791 - session 3 finished, "
        'reason "error"',
        "LMDeploy's async engine (lmdeploy/serve/async_engine.py) ending one request's session "
        "that the engine refused (a prompt over session_len); corpus case H056 has one under "
        "journald's prefix",
    ),
)
