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
        r"\bllamafactory\.hparams\.parser:\d+ >> Process rank: \d+, world size: \d+",
        ("llamafactory",),
        "[INFO|2026-04-06 21:32:29] llamafactory.hparams.parser:511 >> Process rank: 0, world "
        "size: 1, device: cpu, distributed training: False, compute dtype: None",
        "LLaMA-Factory's argument parser once its arguments parsed, each rank at the start of a "
        "run (a pipeline's second `llamafactory-cli train` after its first failed); observed in "
        "corpus case AV405",
        anchor=">> Process rank: ",
    ),
    Launch(
        r"\bStarted [A-Z][\w .-]*[Ss]ervice\.?$",
        ("systemd",),
        "Nov 15 21:48:43 host-1 systemd[1]: Started Ollama Service.",
        "systemd (re)starting a unit it supervises, under journalctl; observed in corpus case "
        "812 (Ollama)",
    ),
    Launch(
        r"\bAgent Starting Run: \w+ with config:",
        ("wandb",),
        "wandb: Agent Starting Run: em3qtl1s with config:",
        "a Weights & Biases sweep agent (wandb/agents/pyagent.py) starting its next run, after "
        "the last one finished or errored (its agent logs the error and goes on); observed in "
        "corpus case BE307",
        anchor="Agent Starting Run: ",
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
        # (any POST answered: an application's own inference endpoint, behind Werkzeug too)
        r"\"POST /[^\"\s]+ HTTP/[\d.]+\" 200\b",
        ("flask", "uvicorn"),
        '127.0.0.1 - - [29/Sep/2025 12:36:57] "POST /api/search HTTP/1.1" 200 -',
        "Werkzeug's access log in front of a Flask application serving a model: a request "
        "answered after the one that failed; observed in corpus case AR308",
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
    Fact(
        r"\bstop processing: n_(?:past|tokens) = \d+, truncated = \d",
        ("llama.cpp",),
        "slot      release: id  0 | task 0 | stop processing: n_tokens = 1045, truncated = 0",
        "ggml-org/llama.cpp tools/server/server-context.cpp (server_slot::release: "
        'SLT_INF(*this, "stop processing: n_tokens = %d, truncated = %d\\n"); n_past in '
        "2024-2025 versions); read in the engine's source: A slot releasing after it "
        "finished generating one request: only a serving llama-server prints it.",
    ),
    Fact(
        r"\blaunch_slot_: id +\d+ \| task -?\d+ \| processing task\b",
        ("llama.cpp",),
        "slot launch_slot_: id  0 | task 12 | processing task",
        "ggml-org/llama.cpp tools/server/server-context.cpp (launch_slot_with_task: "
        'SLT_INF(slot, "processing task\\n")); read in the engine\'s source: A slot taking a '
        "new request: printed once per request by a live server.",
    ),
    Fact(
        r"\bprompt processing progress, n_(?:past|tokens) = \d+",
        ("llama.cpp",),
        "slot update_slots: id  0 | task 12 | prompt processing progress, n_tokens = 2048, "
        "batch.n_tokens = 2048, progress = 0.512000",
        "ggml-org/llama.cpp tools/server/server-context.cpp (update_slots: SLT_INF(slot, "
        '"prompt processing progress, n_tokens = %d, batch.n_tokens = %d, progress = '
        "%f\\n\")); read in the engine's source: Prefill progress of a request in a slot: the "
        "server is doing work for clients.",
    ),
    Fact(
        r"\bselected slot by (?:LRU|lcs similarity|LCP similarity)\b",
        ("llama.cpp",),
        "slot get_availabl: id  0 | task -1 | selected slot by LRU, t_last = 2371850918",
        "ggml-org/llama.cpp tools/server/server-context.cpp (get_available_slot: "
        'SLT_INF(*ret, "selected slot by LRU, t_last = %" PRId64 "\\n") and the similarity '
        "variant); read in the engine's source: Slot selection for an incoming request, "
        "printed once per request by a serving llama-server.",
    ),
    Fact(
        r"\[\s*update_slots\] all slots are idle\b",
        ("llama.cpp",),
        'INFO [            update_slots] all slots are idle | tid="140234567890" '
        "timestamp=1718000000",
        "ggml-org/llama.cpp examples/server/server.cpp before the late-2024 logging rewrite "
        '(update_slots: LOG_INFO("all slots are idle", {})); read in the engine\'s source: '
        "The old text-format form of 'update_slots: all slots are idle' (not matched by the "
        "existing row, which needs the colon): back in the loop after answering requests.",
    ),
    Fact(
        r"\[\s*log_server_request\] request \|.*\bstatus=200\b.*\bmethod=\"POST\"",
        ("llama.cpp",),
        'INFO [      log_server_request] request | tid="140234567890" timestamp=1718000000 '
        'remote_addr="127.0.0.1" remote_port=51234 status=200 method="POST" '
        'path="/completion" params={}',
        "ggml-org/llama.cpp examples/server/server.cpp before the late-2024 logging rewrite "
        '(log_server_request: LOG_INFO("request", {remote_addr, remote_port, status, method, '
        "path, params})); read in the engine's source: The old access line of a POST "
        "answered 200: a request served.",
    ),
    Fact(
        r"\[\s*print_timings\]\s+(?:prompt )?eval time\s+=\s+[\d.]+ ms",
        ("llama.cpp",),
        "INFO [           print_timings] prompt eval time     =     123.45 ms /    42 tokens "
        '(    2.94 ms per token,   340.21 tokens per second) | tid="140234567890" '
        "timestamp=1718000000 id_slot=0 id_task=5",
        "ggml-org/llama.cpp examples/server/server.cpp before the late-2024 logging rewrite "
        "(server_slot::print_timings: LOG_INFO(buffer, {...})); read in the engine's source: "
        "The old per-request timing line (the existing eval-time row is anchored at the line "
        "start and misses this prefix).",
    ),
    Fact(
        r"\|\s+(?:prompt )?eval time = +[\d.]+ ms / +\d+ tokens",
        ("llama.cpp",),
        "slot print_timing: id  0 | task 12 | prompt eval time =     512.33 ms /  1024 "
        "tokens (    0.50 ms per token,  1998.71 tokens per second)",
        "ggml-org/llama.cpp tools/server/server-context.cpp (server_slot::print_timings: "
        'SLT_INF(*this, "prompt eval time = %10.2f ms / %5d tokens ...\\n") without the '
        "leading newline); read in the engine's source: Per-request timings on the slot's "
        "own line, which the existing row (anchored at the line start) misses.",
    ),
    Fact(
        r"\[GIN\] [\d/]+ - [\d:]+ \|\s*200\s*\|[^|]*\|[^|]*\|"
        r"\s*POST\s+\"/(?:api/(?:generate|chat|embed(?:dings)?)|v1/(?:chat/)?completions|"
        r"v1/(?:embeddings|responses|messages))\"",
        ("ollama",),
        "[GIN] 2025/03/01 - 10:00:05 | 200 |  3.412876102s |       127.0.0.1 | POST     "
        '"/api/chat"',
        "ollama/ollama server/routes.go (GenerateRoutes: gin.Default() access logger, gin's "
        'defaultLogFormatter "[GIN] %v |%s %3d %s| %13v | %15s |%s %-7s %s %#v"); read in '
        "the engine's source: Ollama's access line of a generation request answered 200: the "
        "model served it.",
    ),
    Fact(
        r"msg=\"truncating input prompt\" limit=\d+ prompt=\d+",
        ("ollama",),
        'time=2024-11-30T10:00:00.000Z level=WARN source=runner.go:153 msg="truncating input '
        'prompt" limit=2048 prompt=3015 keep=5 new=2048',
        "ollama/ollama runner/llamarunner/runner.go, runner/ollamarunner/runner.go, "
        'llm/llama_server.go (slog.Warn("truncating input prompt", "limit", ...)); read in '
        "the engine's source: A live runner fitting one request's prompt into num_ctx: a "
        "warning about that request, proof the model is serving.",
    ),
    Fact(
        r"text_generation_router::server: router/src/server\.rs:\d+: Success\s*$",
        ("tgi",),
        "2024-05-01T10:02:11.123456Z  INFO compat_generate{default_return_full_text=true "
        'compute_type=Extension(ComputeType("1-nvidia-a100-sxm4-80gb"))}:generate{parameters='
        'GenerateParameters { max_new_tokens: Some(20) } total_time="1.2s" '
        'validation_time="1ms" queue_time="100µs" inference_time="1.1s" '
        'time_per_token="55ms" seed="None"}: text_generation_router::server: '
        "router/src/server.rs:432: Success",
        "huggingface/text-generation-inference router/src/server.rs (generate / "
        'generate_stream: tracing::info!("Success") with the request\'s timing span); read in '
        "the engine's source: The router's line for each request it answered, with its "
        "timings: the shards are serving.",
    ),
    Fact(
        r"\bsession \d+ finished, reason \"(?:stop|length)\"",
        ("lmdeploy",),
        "2025-05-17 17:09:51,337 - lmdeploy - INFO - async_engine.py:779 - session 3 "
        'finished, reason "stop", input_tokens 20, output_tokens 100',
        "InternLM/lmdeploy lmdeploy/serve/core/async_engine.py (generate: "
        'logger.info(f\'session {session_id} finished, reason "{finish_reason}", input_tokens '
        "..., output_tokens ...')); read in the engine's source: A request completed "
        "normally: the engine is serving (the 'reason \"error\"' form is already a "
        "REQUEST_REFUSED row).",
    ),
    Fact(
        r"\bsession(?:_id)?=\d+, (?:history_tokens=\d+, )?input_tokens=\d+, "
        r"max_new_tokens=\d+",
        ("lmdeploy",),
        "2025-05-17 17:09:50,101 - lmdeploy - INFO - async_engine.py:718 - session=3, "
        "history_tokens=0, input_tokens=20, max_new_tokens=512, seq_start=True, "
        "seq_end=True, step=0, prep=True",
        "InternLM/lmdeploy lmdeploy/serve/async_engine.py (generate: "
        "logger.info(f'session={session_id}, history_tokens=..., input_tokens=..., "
        "max_new_tokens=...')); serve/core/async_engine.py in newer versions; read in the "
        "engine's source: LMDeploy logging each request it accepts, with its sizes: the "
        "server is taking work.",
    ),
    Fact(
        r"\bReceived request \S+: (?:prompt: |params: |sampling_params: )",
        ("vllm",),
        "INFO 06-16 10:03:14 [logger.py:41] Received request chatcmpl-3f2a9c1e8b7d4e5f: "
        "prompt: '<|im_start|>user\\nHello<|im_end|>\\n<|im_start|>assistant\\n', params: "
        "SamplingParams(n=1, temperature=0.7, max_tokens=256), prompt_token_ids: None, "
        "prompt_embeds shape: None, lora_request: None, prompt_adapter_request: None.",
        "vllm-project/vllm vllm/entrypoints/logger.py (RequestLogger.log_inputs: "
        'logger.info("Received request %s: prompt: %r, params: %s, ...")); read in the '
        "engine's source: vLLM's request log (unless --disable-log-requests): a request "
        "reached the engine.",
    ),
    Fact(
        r"\b(?:Added|Finished) request (?:chatcmpl|cmpl|embd|score|classify|"
        r"pool)-[\w-]+\.\s*$",
        ("vllm",),
        "INFO 10-11 12:27:29 async_llm_engine.py:208] Added request chatcmpl-6c2d1f0e9a8b4c7d.",
        "vllm-project/vllm vllm/engine/async_llm_engine.py before V1 (RequestTracker: "
        'logger.info("Added request %s.") / ("Finished request %s.")); read in the engine\'s '
        "source: The pre-V1 engine logging each request it took and finished.",
    ),
    Fact(
        r"\bSpecDecoding metrics: (?:Draft acceptance rate|Mean acceptance length)",
        ("vllm",),
        "INFO 06-16 10:03:24 [metrics.py:97] SpecDecoding metrics: Mean acceptance length: "
        "2.96, Accepted throughput: 41.20 tokens/s, Drafted throughput: 63.00 tokens/s, "
        "Accepted: 412 tokens, Drafted: 630 tokens, Per-position acceptance rate: 0.812, "
        "0.634, 0.513, Avg Draft acceptance rate: 65.4%",
        "vllm-project/vllm vllm/v1/spec_decode/metrics.py (SpecDecodingLogging.log: "
        'log_fn("SpecDecoding metrics: ...")); vllm/spec_decode before V1; read in the '
        "engine's source: Periodic speculative-decoding statistics, printed next to the "
        "throughput line only while requests are being decoded.",
    ),
    Fact(
        r"\bPrompt executed in [\d.]+ seconds\b",
        ("comfyui",),
        "[2025-02-16 13:24:04.091] Prompt executed in 292.45 seconds",
        "ComfyUI's prompt executor (execution.py / main.py prompt_worker) once a queued "
        "workflow ran to its end; the scanner keeps the line wherever it is; observed in corpus "
        "case AE033",
    ),
    Fact(
        r"^Generating and saving time: [\d.]+ seconds$",
        ("fooocus",),
        "Generating and saving time: 68.85 seconds",
        "Fooocus's async worker once a task's images are generated and saved (modules/"
        "async_worker.py); observed in corpus case BC103",
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
    Fact(
        r"\bexiting due to (?:model loading|HTTP server) error\b",
        ("llama.cpp",),
        "main: exiting due to model loading error",
        "ggml-org/llama.cpp tools/server/server.cpp (main / llama_server: "
        'LOG_ERR/SRV_ERR("exiting due to model loading error\\n"), and "exiting due to HTTP '
        "server error\"); read in the engine's source: llama-server's own last words when it "
        "could not load the model or start its HTTP listener: it never served.",
    ),
    Fact(
        r"\bcouldn't bind HTTP server socket, hostname: \S+, port: \d+",
        ("llama.cpp",),
        "srv          start: couldn't bind HTTP server socket, hostname: 0.0.0.0, port: 8080",
        "ggml-org/llama.cpp tools/server/server-http.cpp (server_http_context::start: "
        'SRV_ERR("couldn\'t bind HTTP server socket, hostname: %s, port: %d\\n")); main() in '
        "older server.cpp; read in the engine's source: The port is taken or not bindable, "
        "so llama-server exits before it is ready.",
    ),
    Fact(
        r"^Error: (?:WebserverCannotStart|DownloadError|ShardDisconnected)\s*$",
        ("tgi",),
        "Error: DownloadError",
        "huggingface/text-generation-inference launcher/src/main.rs "
        "(LauncherError::DownloadError / WebserverCannotStart / ShardDisconnected returned "
        "from main before the router runs); read in the engine's source: The launcher's exit "
        "when weights could not be downloaded or the router/shards could not be started: the "
        "server never came up.",
    ),
    Fact(
        r"text_generation_router(?:::server)?: \S+: Failed to bind to \S+: ",
        ("tgi",),
        "2024-05-01T10:00:40.123456Z ERROR text_generation_router::server: "
        "router/src/server.rs:2325: Failed to bind to 0.0.0.0:80: Address already in use (os "
        "error 98)",
        "huggingface/text-generation-inference router/src/server.rs (start: "
        'tracing::error!("Failed to bind to {addr}: {e}")); read in the engine\'s source: The '
        "router could not listen on its port, so the server exits before serving (the "
        "launcher then reports the webserver crashed).",
    ),
    Fact(
        r"^error: creating server: ",
        ("triton",),
        "error: creating server: Invalid argument - --model-repository must be specified",
        "triton-inference-server/server src/main.cc "
        '(FAIL_IF_ERR(TRITONSERVER_ServerNew(...), "creating server") -> src/common.h: '
        'std::cerr << "error: " << MSG << ": " << code << " - " << message; exit(1)); read '
        "in the engine's source: tritonserver's exit when the server object could not be "
        "created (bad options, repository, model load with strict mode); the existing row "
        "covers only 'failed to load all models'.",
    ),
)

# pip's word on a Ctrl-C while it installs: a stop, and no failure of its own
PIP_CANCELLED = r"^ERROR: Operation cancelled by user$"

# An operator or a scheduler stopping the process: no crash, whatever its launcher prints next.
STOPPED = (
    Fact(
        r"\*\*\* SIG(?:TERM|INT) received (?:at time=\d+|by PID \d+)",
        ("ray", "jax", "tensorflow"),
        "*** SIGTERM received at time=1739834838 on cpu 88 ***",
        "abseil's failure signal handler (absl/debugging/failure_signal_handler.cc), installed "
        "by Ray's workers and drivers, XLA and TensorFlow, on a termination signal another "
        "process sent; observed in corpus case X077",
    ),
    Fact(
        r"\bCANCELLED AT \S+ DUE [Tt][Oo] (?:TIME LIMIT|PREEMPTION|SIGNAL \w+)"
        # a whole job cancelled with no reason is scancel's; a step's is srun tearing it down
        r"|\bJOB \d+ ON \S+ CANCELLED AT \S+ \*\*\*",
        ("slurm",),
        "slurmstepd: error: *** JOB 4242 ON host-1 CANCELLED AT 2024-04-23T12:18:08 DUE TO TIME "
        "LIMIT ***",
        "Slurm's slurmstepd (src/slurmd/slurmstepd/req.c) when the job ran past its time limit "
        "or was preempted ('... CANCELLED AT %s DUE TO TIME LIMIT ***'), and when scancel "
        "signalled it ('DUE to SIGNAL Terminated'; corpus case N176, or no reason at all: "
        "'... CANCELLED AT 2026-04-28T15:07:03 ***', corpus case R130)",
    ),
    Fact(
        r"^TERM_(?:RUNLIMIT|OWNER|FORCE_OWNER|PREEMPT|REQUEUE_OWNER): job killed\b",
        ("lsf",),
        "TERM_RUNLIMIT: job killed after reaching LSF run time limit.",
        "IBM Spectrum LSF's job report on a job it ended for its run time limit, its owner's "
        "bkill or a preemption (its memory limit, TERM_MEMLIMIT, is an OOM instead); "
        "observed in corpus case BQ002",
    ),
    Fact(
        # (registered for SIGINT only: it runs when the operator stops the launcher)
        r"^NameError: free variable 'kill_cmd' referenced before assignment in enclosing scope$",
        ("deepspeed",),
        "NameError: free variable 'kill_cmd' referenced before assignment in enclosing scope",
        "DeepSpeed's launcher (deepspeed/launcher/runner.py): its Ctrl-C handler, "
        "sigkill_handler, raising on a name it set only for multi-node runs (DeepSpeed issue "
        "3645); observed in corpus cases AV114 and AR409",
    ),
    Fact(
        # (bare, or anyio's word for the scope that cancelled it: no failure of its own)
        r"^(?:asyncio\.(?:exceptions\.)?)?CancelledError:?\s*$"
        r"|\bCancelledError: Cancelled by cancel scope [0-9a-f]+$",
        ("python",),
        "CancelledError: ",
        "asyncio (and anyio's cancel scopes) ending a task it was told to cancel: an interrupted "
        "notebook cell's awaited work, a server's tasks on the way down; observed in corpus "
        "cases AX113 and AQ302",
    ),
    Fact(
        PIP_CANCELLED,
        ("pip",),
        "ERROR: Operation cancelled by user",
        "pip (pip/_internal/cli/base_command.py) on a Ctrl-C while it installs: the operator "
        "stopped the install; what the program that ran pip does after it is its own story; "
        "observed in corpus case BE801",
    ),
    Fact(
        r"^Received second interrupt, terminating immediately\.?$",
        ("llama.cpp",),
        "Received second interrupt, terminating immediately.",
        "llama.cpp's server (tools/server/server.cpp, its signal handler) on a second Ctrl-C: "
        "it exits at once, and what static destructors assert after it is no failure; observed "
        "in corpus case S124",
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
        r"\bShutdown initiated \(timeout=\d+\)",
        ("vllm",),
        "(EngineCore pid=12791) INFO 04-21 15:10:41 [core.py:1210] Shutdown initiated (timeout=0)",
        "vLLM V1's engine core (vllm/v1/engine/core.py) draining on the way down when its server "
        "was stopped (a signal to the API server, which logs uvicorn's 'Shutting down' first); "
        "the EngineDeadError its front end answers the requests in flight with is the stop's "
        "echo; observed in corpus case AC098",
    ),
    Fact(
        r"^(?:\([\w.-]+ pid=\d+\) )?KeyboardInterrupt:?\s*$",
        ("python", "vllm", "jax"),
        "(EngineCore pid=3408798) KeyboardInterrupt",
        "Python's default SIGINT handler (an operator's Ctrl-C): a bare KeyboardInterrupt ends "
        "the traceback of whatever was running (with a failure after it, a launcher stopping "
        "its children because of that failure); JAX's filtered traceback prints it with an "
        "empty message ('KeyboardInterrupt:'); observed in corpus cases K086 and AF140",
    ),
    Fact(
        r"\bFatalError: `Termination signal` is detected by the operating system\b",
        ("paddle",),
        "FatalError: `Termination signal` is detected by the operating system.",
        "PaddlePaddle's signal handler, in its 'Error Message Summary', on a SIGTERM another "
        "process sent ('[SignalInfo: *** SIGTERM (@0x...) received by PID ...]' below it); "
        "observed in corpus case BZ005",
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
    Fact(
        r"\bSIGTERM received\. signum=\S+ frame=.*(?:Draining requests and shutting down|"
        r"Shutting down gRPC server)",
        ("sglang",),
        "[2025-06-01 10:00:00] SIGTERM received. signum=15 frame=<frame at 0x7f2c1c0b3a40, "
        "file '/usr/lib/python3.10/asyncio/base_events.py', line 1871, code _run_once>. "
        "Draining requests and shutting down...",
        "sgl-project/sglang python/sglang/srt/managers/tokenizer_manager.py "
        '(SignalHandler.sigterm_handler: logger.warning(f"SIGTERM received. {signum=} '
        '{frame=}. Draining requests and shutting down...")); grpc server variant; read in '
        "the engine's source: sglang's tokenizer manager on an external SIGTERM (child "
        "failures reach it as SIGQUIT instead): a graceful, deliberate stop.",
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
    Fact(
        r"\bHealth check failed\. Server couldn't get a response from \w+ for last \d+ seconds",
        ("sglang",),
        "[2026-07-28 10:09:23] Health check failed. Server couldn't get a response from "
        "detokenizer for last 20 seconds. tic start time: 10:09:03. last_heartbeat time: 10:08:17",
        "sglang's /health (python/sglang/srt/entrypoints/http_server.py) on a scheduler that "
        "stopped answering; said on every probe while it hangs; observed in corpus case AI152",
    ),
)

# An engine's word that it is going down for a dead worker: what its front end answers after it
# (health checks, requests accepted that no engine will serve) is no proof that it lived.
ENGINE_GONE = (
    Fact(
        r"\bGot fatal signal from worker processes, shutting down\b",
        ("vllm",),
        "CRITICAL 04-08 04:00:01 [core_client.py:361] Got fatal signal from worker processes, "
        "shutting down. See stack trace above for root cause issue.",
        "vLLM V1's engine client (vllm/v1/engine/core_client.py) when a worker process died; "
        "observed in corpus case T045, its API server answering /health for minutes after",
    ),
    Fact(
        r"\bMQLLMEngine is already dead, terminating server process\b",
        ("vllm",),
        "CRITICAL 10-04 20:05:29 launcher.py:99] MQLLMEngine is already dead, terminating "
        "server process",
        "vLLM V0's front end (vllm/entrypoints/launcher.py) on a request it cannot serve because "
        "the engine process died: answered with a 500, then the server stops; observed in "
        "corpus case Y068 (and T050)",
    ),
)

# A job's own word that it did its work to the end: an error it logged before is one it lived
# through. (The scanner keeps these lines wherever they are: no anchors, no lookarounds.)
FINISHED = (
    Fact(
        r'"key": "run_stop",.*"status": "success"',
        ("mlperf",),
        ':::MLLOG {"namespace": "", "time_ms": 1652678709789, "event_type": "INTERVAL_END", '
        '"key": "run_stop", "value": null, "metadata": {"file": '
        '"/workspace/unet3d/runtime/training.py", "lineno": 134, "status": "success", '
        '"epoch": 1320}}',
        "MLPerf's logging (mlperf_logging.mllog) at the end of a timed run that reached its "
        "target; observed in corpus case AB095",
    ),
    Fact(
        r"\bJob '[\w.-]+' succeeded\b",
        ("ray",),
        "Job 'raysubmit_T3JpUGHRiC9U18UE' succeeded",
        "Ray's job submission client (ray job submit) once the entrypoint exited with 0; "
        "observed in corpus case AB067",
    ),
    Fact(
        r"={3,} (?:Serving|Offline Throughput) Benchmark Result ={3,}",
        ("vllm", "sglang"),
        "============ Serving Benchmark Result ============",
        "the serving benchmarks of vLLM (vllm/benchmarks/serve.py, `vllm bench serve`) and "
        "sglang (python/sglang/bench_serving.py, bench_offline_throughput.py) printing their "
        "summary once every request was sent: a failed request's traceback before it is one "
        "the run counted and went past; observed in corpus case AI031",
    ),
    Fact(
        r"\bllama_(?:perf_context_print|print_timings):\s+total time =",
        ("llama.cpp", "llama-cpp-python"),
        "llama_perf_context_print:       total time =   36478.29 ms /  2047 tokens",
        "llama.cpp's context (src/llama-context.cpp, llama_perf_context_print; before 2024 "
        "llama_print_timings) timing a generation it completed, as its CLI and llama-cpp-python "
        "print at the end; observed in corpus case AX007",
    ),
    Fact(
        # (its last words: a failure after it is read first, and a line that goes on past
        # "complete" is not one)
        r"\b(?:[Tt]raining|[Vv]alidation|[Ee]valuation|[Jj]ob|[Rr]un)\b[^.\n]{0,40}"
        r"\b(?:complete[d]?|done|finished)\b[.!]*[ \t\r]*$",
        ("any",),
        "2025-10-28 02:04:39.679008: Validation complete",
        "a job's own word that its training, validation, evaluation or run completed, where "
        "nothing failed after it (a worker's exception it printed before is one it lived "
        "through); observed in corpus case AY003",
    ),
    Fact(
        r"\{'train_runtime': [\d.]+, 'train_samples_per_second': ",
        ("transformers",),
        "{'train_runtime': 41.7712, 'train_samples_per_second': 459.65, "
        "'train_steps_per_second': 7.182, 'train_loss': 0.4127, 'epoch': 3.0}",
        "Hugging Face transformers' Trainer logging train()'s metrics once its last step is "
        "done (an error it logged before, a checkpoint it could not save, it went past); "
        "observed in corpus case E284",
    ),
    Fact(
        r"\*{5} (?:train|eval|predict|test) metrics \*{5}",
        ("transformers",),
        "***** eval metrics *****",
        "the metrics block that transformers' example scripts print (Trainer.log_metrics) "
        "once training or an evaluation is done; observed in corpus case BF405",
    ),
    Fact(
        r"\bTraining completed\. Do not forget to share your model",
        ("transformers",),
        "Training completed. Do not forget to share your model on huggingface.co/models =)",
        "Hugging Face transformers' Trainer (trainer.py) at the end of train(); observed in "
        "corpus case I180",
    ),
)

# An engine's word that it finished starting (not that a server listens: offline engines say it
# too): what failed before it, it lived through. (Kept by the scanner wherever it is, as above.)
STARTED = (
    Fact(
        r"\binit engine \(profile, create kv cache, warmup model\) took [\d.]+ seconds",
        ("vllm",),
        "INFO 09-18 03:55:45 [llm_engine.py:428] init engine (profile, create kv cache, warmup "
        "model) took 70.40 seconds",
        "vLLM's engine (llm_engine.py in V0, v1/engine/core.py in V1) once its memory profile, KV "
        "cache and warm-up are done, offline or serving; observed in corpus case AC069",
    ),
    Fact(
        r"\bImport times for custom nodes:",
        ("comfyui",),
        "Import times for custom nodes:",
        "ComfyUI's loader (nodes.py init_external_custom_nodes) once every custom node was "
        "tried: the nodes that failed to import are left out ('IMPORT FAILED') and the server "
        "goes on starting; observed in corpus case AE036",
    ),
)

# An installer's word that every package is in place: a step it failed just before (a wheel
# it could not build, then installed another way) it went past. Only just before: a notebook's
# cells, run out of order, put an unrelated failure further up.
INSTALLED = (
    Fact(
        r"\bSuccessfully installed \S+-\d",
        ("pip",),
        "Successfully installed filelock-3.13.1 huggingface-hub-0.20.3 mpmath-1.3.0 "
        "nvidia-cublas-cu12-12.1.3.1 nvidia-cuda-cupti-cu12-12.1.105 "
        "nvidia-cuda-nvrtc-cu12-12.1.105 nvidia-cuda-runtime-cu12-12.1.105 "
        "nvidia-cudnn-cu12-8.9.2.26 nvidia-cufft-cu12-11.0.2.54",
        "pip after its legacy fallback (setup.py install) for a wheel that failed to build; "
        "observed in corpus case BF304",
    ),
)

# A program's word that it left out a part of itself for the exception it printed just above,
# and went on without it: that exception was lived through.
SKIPPED = (
    Fact(
        r"\bCannot import \S.* module for custom nodes:",
        ("comfyui",),
        "[2024-01-08 12:51] Cannot import D:\\comfyui\\custom_nodes\\facerestore_cf module for "
        "custom nodes: No module named 'lpips'",
        "ComfyUI's loader of custom nodes (nodes.py load_custom_node), after the node's import "
        "traceback; the server starts without the node ('IMPORT FAILED' in its import times)",
    ),
)

# A front end's handler that answers a request with the exception it logs: the traceback under
# it is that request's even where the log ends there (unless its exception only says that the
# engine behind it is gone).
REQUEST_ANSWERED = (
    Fact(
        r"\bError in (?:chat )?completion stream generator\.?\s*$",
        ("vllm",),
        "ERROR 03-03 19:06:24 [serving_chat.py:664] Error in chat completion stream generator.",
        "vLLM's OpenAI front end (vllm/entrypoints/openai/serving_chat.py and "
        "serving_completion.py: logger.exception, then the error sent as the stream's last "
        "chunk); observed in corpus case W003",
    ),
    Fact(
        r"\bError in preprocessing prompt inputs\s*$",
        ("vllm",),
        "ERROR 06-04 11:39:38 [serving_chat.py:199] Error in preprocessing prompt inputs",
        "vLLM's OpenAI front end (vllm/entrypoints/openai/serving_chat.py, "
        "create_chat_completion: logger.exception, then an error response for that request); "
        "corpus case V004 has one with trailing spaces",
    ),
    Fact(
        r"\bError trying to handle streaming tool call\.?\s*$",
        ("vllm",),
        "2025-03-21 07:44:04 ERROR 03-20 16:44:04 hermes_tool_parser.py:338] Error trying to "
        "handle streaming tool call.",
        "vLLM's tool parsers while streaming (vllm/entrypoints/openai/tool_parsers/"
        "*_tool_parser.py, extract_tool_calls_streaming: logger.exception, then no delta for "
        "that chunk); observed in corpus case A002",
    ),
    Fact(
        r"\bError in extracting tool call from response\.?\s*$",
        ("vllm",),
        "ERROR 05-01 01:52:15 [hermes_tool_parser.py:110] Error in extracting tool call from "
        "response.",
        "vLLM's tool parsers (vllm/entrypoints/openai/tool_parsers/*_tool_parser.py: "
        "logger.exception, then the model's text returned as plain content); observed in "
        "corpus case T058",
    ),
    Fact(
        r"!!! Exception during processing !!!",
        ("comfyui",),
        "[2026-02-21 23:35:37.054] !!! Exception during processing !!! Allocation on device 0 "
        "would exceed allowed memory. (out of memory)",
        "ComfyUI's prompt executor (execution.py: a node's exception logged with its "
        "traceback, the prompt ended as failed and the next one taken); observed in corpus "
        "case AC031",
    ),
    Fact(
        r"\bError in request:(?: |$)",
        ("sglang",),
        "[2025-07-16 14:47:06] [2025-07-15 23:47:06] Error in request:",
        "sglang's OpenAI front end (python/sglang/srt/entrypoints/openai/serving_base.py, "
        "handle_request) logging the exception one request raised (its message after the "
        "colon, empty in corpus case S057), its traceback near it (above it where Ray's "
        "capture of the streams reorders them), and answering it with a 500; observed in "
        "corpus cases S057, AJ003",
    ),
    Fact(
        r"\breplica\.py:\d+ - Request failed:?\s*$",
        ("ray",),
        "(ServeReplica:default:SentimentAnalysisDeployment pid=5184) ERROR 2024-07-17 "
        "22:18:18,089 default_SentimentAnalysisDeployment h79g9wc1 "
        "f2ea4f7e-a66e-47dc-87b2-739b5768b6bb / replica.py:359 - Request failed:",
        "Ray Serve's replica (ray/serve/_private/replica.py) logging the exception its "
        "deployment raised for one call, then that call's access line ('__CALL__ ERROR 9.8ms') "
        "and the next call; observed in corpus case AY101",
    ),
)

# A client's request refused for what it asked: the server answers it and serves on, so such
# a line is never why a server stopped (a KV cache too small for max_model_len at start-up is
# another line, and a failure).
REQUEST_REFUSED = (
    *REQUEST_ANSWERED,
    Fact(
        # (aiohttp's "Error handling request from 127.0.0.1", SwarmUI's "Error handling API
        # request '/API/...'", a web UI's "Error processing UI generation request: 500: ...")
        r"\bError (?:processing|handling) (?:[\w-]+ ){0,3}request\b",
        ("aiohttp", "any"),
        "04:42:20 - ERROR - Error processing UI generation request: 500: No operator found "
        "for `memory_efficient_attention_forward` with inputs:",
        "a server's handler on one request it could not serve, logged with its status or "
        "traceback while the server serves on; observed in corpus case BL207 (and AU313, "
        "E233, BG901)",
    ),
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
        r"\[generate\] error in prompt processing\b",
        ("lmdeploy",),
        "2026-06-29 04:59:05,479 - lmdeploy - ERROR - async_engine.py:562 - [generate] error in "
        "prompt processing",
        "LMDeploy's async engine (lmdeploy/serve/async_engine.py, generate) when one request's "
        "prompt could not be prepared (a chat template, an image it cannot read), then that "
        "request's traceback: the request fails, the server serves on; observed in corpus case "
        "AI064",
    ),
    Fact(
        r"\bException in ASGI application\b",
        ("uvicorn", "vllm", "sglang"),
        "[2025-05-02 10:26:20] ERROR:    Exception in ASGI application",
        "Uvicorn (uvicorn/protocols/http/) on one request its application failed, then that "
        "handler's traceback: answered with a 500, and the server serves on (the handler's "
        "exceptions are that request's where the log goes on after them, or ends with them and "
        "the engine's own loop is not in their frames); observed in corpus cases P058 and Z007",
    ),
    Fact(
        r"\bError handling request from \S",
        ("aiohttp",),
        "[2025-03-24 14:30:04] | ERROR | aiohttp.server.log_exception | web_protocol.py:451 | "
        "Error handling request from 127.0.0.1",
        "aiohttp's server (aiohttp/web_protocol.py, log_exception) on a request its handler "
        "failed, then that handler's traceback: answered with a 500, and the server serves on, "
        "as Uvicorn's ASGI line above; observed in corpus case AU313",
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
    Fact(
        r"\bsend_error: task id = \d+, error: ",
        ("llama.cpp",),
        "srv    send_error: task id = 42, error: input (9000 tokens) is larger than the max "
        "context size (8192 tokens). skipping",
        "ggml-org/llama.cpp tools/server/server-context.cpp "
        '(server_context_impl::send_error: SRV_ERR("task id = %d, error: %s\\n")); read in '
        "the engine's source: llama-server's single error path for one task (invalid tokens, "
        "too long for the slot, sampler init, slot save/restore, context shift off): the "
        "task gets an error answer and the loop serves on.",
    ),
    Fact(
        r"\[\s*send_error\] task error \||\"function\":\s*\"send_error\".*\"msg\":\s*\"tas"
        r"k error\"",
        ("llama.cpp",),
        'ERR [              send_error] task error | tid="139913461497856" '
        'timestamp=1718000000 id_multi=-1 id_task=12 error="input is larger than the max '
        'context size. skipping"',
        "ggml-org/llama.cpp examples/server/server.cpp before the late-2024 logging rewrite "
        '(server_context::send_error: LOG_ERROR("task error", {id_multi, id_task, error})); '
        "read in the engine's source: The same per-task error in the old text/JSON "
        "server_log format ('ERR [send_error] task error | ...'); the request is answered "
        "with an error and the server goes on.",
    ),
    Fact(
        r"\bgot exception: \{\s*\"(?:error|code|message)\"",
        ("llama.cpp",),
        'srv    operator(): got exception: {"error":{"code":400,"message":"\'messages\' is '
        'required","type":"invalid_request_error"}}',
        'ggml-org/llama.cpp tools/server/server.cpp (ex_wrapper: SRV_WRN("got exception: '
        '%s\\n", res->data)) and server-http.cpp (set_exception_handler); read in the '
        "engine's source: llama-server's HTTP handler wrapper turning one request's "
        "exception into a 400/500 JSON error; the formatted error it logs is that request's "
        "only.",
    ),
    Fact(
        r"\bfailed to launch slot with (?:parent |child )?task, id_task = \d+",
        ("llama.cpp",),
        "srv  process_sing: failed to launch slot with task, id_task = 7",
        "ggml-org/llama.cpp tools/server/server-context.cpp (process_single_task / "
        'launch_slots_with_parent_task: SRV_ERR("failed to launch slot with task, id_task = '
        "%d\\n\")); read in the engine's source: Logged right after send_error refused the "
        "task (bad aLoRA set, invalid tokens, sampler init failure): the task is dropped, "
        "other slots keep running.",
    ),
    Fact(
        r"\b[Uu]nauthorized: Invalid API Key\b",
        ("llama.cpp",),
        "srv    operator(): unauthorized: Invalid API Key",
        "ggml-org/llama.cpp tools/server/server-http.cpp (middleware_validate_api_key: "
        'SRV_WRN("%s", "unauthorized: Invalid API Key\\n")); older server.cpp '
        'LOG_WARNING("Unauthorized: Invalid API Key"); read in the engine\'s source: One '
        "request with a missing or wrong API key answered 401; nothing about the server's "
        "health.",
    ),
    Fact(
        r"\bdone request: [A-Z]+ /\S* \S+ [45]\d\d\b",
        ("llama.cpp",),
        "srv  log_server_r: done request: POST /v1/chat/completions 127.0.0.1 400",
        "ggml-org/llama.cpp tools/server/server-http.cpp (log_server_request: "
        'SRV_TRC/LOG_INF("done request: %s %s %s %d\\n", method, path, remote_addr, status)); '
        "read in the engine's source: llama-server's per-request access line with a 4xx/5xx "
        "status: one request answered with an error (the 200 form is already a SERVING row).",
    ),
    Fact(
        r"\[GIN\] [\d/]+ - [\d:]+ \|\s*[45]\d\d\s*\|[^|]*\|[^|]*\|"
        r"\s*POST\s+\"/(?:api/(?:generate|chat|embed(?:dings)?)|v1/(?:chat/)?completions|"
        r"v1/(?:embeddings|responses|messages))\"",
        ("ollama",),
        "[GIN] 2025/03/01 - 10:00:05 | 400 |     412.3µs |       127.0.0.1 | POST     "
        '"/api/generate"',
        "ollama/ollama server/routes.go (handlers answering "
        "c.JSON(http.StatusBadRequest/NotFound/InternalServerError, ...), logged by gin's "
        "access logger); read in the engine's source: One generation request answered "
        "4xx/5xx (bad JSON, unknown model, client gone, prompt error); the server keeps "
        "listening.",
    ),
    Fact(
        r"\baborting (?:completion|chat|embeddings?) request due to client closing the "
        r"connection\b",
        ("ollama",),
        'time=2025-03-01T10:00:05.123Z level=INFO source=server.go:1612 msg="aborting '
        'completion request due to client closing the connection"',
        "ollama/ollama llm/server.go (Completion/Embedding: slog.Info on sem.Acquire "
        "context.Canceled); llm/llama_server.go (chat); runner/llamarunner, "
        "runner/ollamarunner runner.go; read in the engine's source: The client hung up "
        "before its request got a slot: that request is dropped, nothing failed.",
    ),
    Fact(
        r"\bclient connection closed before (?:server|llama-server) finished loading, "
        r"aborting load\b",
        ("ollama",),
        'time=2024-12-09T03:41:20.510Z level=WARN source=server.go:1392 msg="client '
        'connection closed before server finished loading, aborting load"',
        "ollama/ollama llm/server.go and llm/llama_server.go (WaitUntilRunning: slog.Warn on "
        "ctx.Done()); read in the engine's source: The requesting client went away while the "
        "model loaded; the scheduler then logs 'context canceled' (already a REQUEST_REFUSED "
        "row) and serves on.",
    ),
    Fact(
        r"msg=\"chat (?:template )?prompt error(?: applying structured outputs)?\"",
        ("ollama",),
        'time=2026-03-01T10:00:05.123Z level=ERROR source=routes.go:2702 msg="chat prompt '
        'error" error="template: :3:12: executing \\"\\" at <.Messages>: can\'t evaluate field '
        'Messages"',
        'ollama/ollama server/routes.go (ChatHandler / GenerateHandler: slog.Error("chat '
        'prompt error", "error", err) then c.JSON(500, ...)); read in the engine\'s source: '
        "Rendering one request's prompt failed (template, images, structured output) and "
        "that request got a 500.",
    ),
    Fact(
        r"`inputs` tokens \+ `max_new_tokens` must be <= \d+|`inputs` must have less than "
        r"\d+ tokens|`max_new_tokens` must be <= \d+",
        ("tgi",),
        "2024-05-01T10:03:00.123456Z ERROR compat_generate{default_return_full_text=true}:gen"
        "erate{parameters=GenerateParameters { max_new_tokens: Some(200) }}:async_stream{}: "
        "text_generation_router::infer: router/src/infer/mod.rs:126: `inputs` tokens + "
        "`max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 "
        "`max_new_tokens`",
        "huggingface/text-generation-inference router/src/validation.rs "
        "(ValidationError::MaxTotalTokens / InputLength / MaxNewTokens), logged by "
        'router/src/infer/mod.rs (tracing::error!("{err}")) and answered 422; read in the '
        "engine's source: TGI's router refusing one request longer than max-total-tokens / "
        "max-input-tokens; the shards never see it.",
    ),
    Fact(
        r"`(?:temperature|repetition_penalty|frequency_penalty|top_k|top_p|typical_p|"
        r"truncate|best_of|top_n_tokens)` must be\b|`inputs` cannot be empty|`stop` "
        r"supports up to \d+ stop sequences",
        ("tgi",),
        "2024-05-01T10:03:00.123456Z ERROR generate{parameters=GenerateParameters { "
        "temperature: Some(0.0) }}:async_stream{}: text_generation_router::infer: "
        "router/src/infer/mod.rs:126: `temperature` must be strictly positive",
        "huggingface/text-generation-inference router/src/validation.rs (ValidationError "
        'variants), logged by router/src/infer/mod.rs (tracing::error!("{err}")); read in '
        "the engine's source: Parameter validation of one request failed in the router (422 "
        "answer); the server is fine.",
    ),
    Fact(
        r"text_generation_router::infer: \S+: no permits available",
        ("tgi",),
        "2024-05-01T10:03:00.123456Z ERROR compat_generate{default_return_full_text=true}:gen"
        "erate_stream{}:async_stream{}: text_generation_router::infer: "
        "router/src/infer/mod.rs:118: no permits available",
        "huggingface/text-generation-inference router/src/infer/mod.rs "
        '(limit_concurrent_requests.try_acquire_owned() error, tracing::error!("{err}"), '
        "answered 429 'Model is overloaded'); read in the engine's source: More concurrent "
        "requests than --max-concurrent-requests: that request is refused with 429 while the "
        "others run.",
    ),
    Fact(
        r"\bEntry response channel error\.|\bFailed to send event\. Receiver dropped\.",
        ("tgi",),
        "2024-05-01T10:04:00.123456Z ERROR batch{batch_size=1}:decode:send_generation{generat"
        "ion=Generation { request_id: 3 }}: text_generation_router_v3::backend: "
        "backends/v3/src/backend.rs:438: Entry response channel error.",
        "huggingface/text-generation-inference backends/v3/src/backend.rs (send_generation: "
        'tracing::error!("Entry response channel error."), counter err=dropped) and '
        'router/src/server.rs ("Failed to send event. Receiver dropped."); read in the '
        "engine's source: The client of that request disconnected, so its generation is "
        "dropped; the batch goes on.",
    ),
    Fact(
        r"\[safe_run\] (?:session \d+ cancelled: \w+|exception caught: (?:GeneratorExit|"
        r"CancelledError)\b)",
        ("lmdeploy",),
        "2025-05-17 17:10:02,551 - lmdeploy - ERROR - async_engine.py:632 - [safe_run] "
        "exception caught: GeneratorExit ",
        "InternLM/lmdeploy lmdeploy/serve/async_engine.py (safe_run: "
        "logger.error(f'[safe_run] exception caught: {type(e).__name__} {e}')); "
        "serve/core/async_engine.py ('[safe_run] session {id} cancelled: "
        "{type(e).__name__}'); read in the engine's source: A client disconnected or "
        "cancelled its stream; LMDeploy cancels that session and serves on.",
    ),
    Fact(
        r"\[generate\] session \d+ got aborted before starting inference\b",
        ("lmdeploy",),
        "2026-03-01 10:00:00,123 - lmdeploy - INFO - async_engine.py:669 - [generate] "
        "session 7 got aborted before starting inference, session.epoch=1, "
        "async_engine.epoch=2",
        "InternLM/lmdeploy lmdeploy/serve/core/async_engine.py (generate: logger.info(...got "
        "aborted before starting inference...)); read in the engine's source: One request "
        "aborted (stop_all_session / abort endpoint) before inference; the engine continues.",
    ),
    Fact(
        r"\brun out of tokens\. session=\d+",
        ("lmdeploy",),
        "2025-01-10 12:00:00,001 - lmdeploy - ERROR - async_engine.py:732 - run out of "
        "tokens. session=5.",
        "InternLM/lmdeploy lmdeploy/serve/async_engine.py (generate: logger.error(f'run out "
        "of tokens. session={session_id}.')); read in the engine's source: One session's "
        "history already fills session_len, so it gets an empty 'length' answer; other "
        "sessions are unaffected.",
    ),
    Fact(
        r"\[async_stream_infer\] (?:GeneratorExit|CancelledError)\s*$",
        ("lmdeploy",),
        "2025-05-17 17:10:02,549 - lmdeploy - INFO - turbomind.py:801 - [async_stream_infer] "
        "GeneratorExit",
        "InternLM/lmdeploy lmdeploy/turbomind/turbomind.py (async_stream_infer: "
        "logger.info(f'[async_stream_infer] {type(e).__name__}') then model_inst.cancel()); "
        "read in the engine's source: TurboMind cancelling one request whose client went "
        "away.",
    ),
    Fact(
        r"\bFailed to process the request\(s\) for model (?:instance )?'[^']+', message: "
        r"(?!Stub process)",
        ("triton",),
        "E0602 10:00:00.123456 1 pb_stub.cc:741] Failed to process the request(s) for model "
        "'preprocessing_0_0', message: ValueError: too many values to unpack (expected 2)",
        "triton-inference-server/python_backend src/pb_stub.cc (ProcessRequests: LOG_ERROR "
        "<< \"Failed to process the request(s) for model '...', message: \" << error) and "
        "src/python_be.cc (RespondErrorToAllRequests); read in the engine's source: A "
        "Python-backend model's execute() raised for one batch of requests; those requests "
        "get an error and the model keeps serving.",
    ),
    Fact(
        r"\bAborted request(?:\(s\))? \S+\.\s*$",
        ("vllm",),
        "(APIServer pid=387) INFO 09-21 21:40:02 [async_llm.py:488] Aborted request(s) "
        "chatcmpl-8f1e2d3c4b5a6978.",
        'vllm-project/vllm vllm/v1/engine/async_llm.py (abort: logger.info("Aborted '
        'request(s) %s.")); vllm/engine/async_llm_engine.py and multiprocessing/engine.py '
        'before V1 ("Aborted request %s."); read in the engine\'s source: A request aborted '
        "because its client disconnected or was cancelled; the engine serves on.",
    ),
    Fact(
        r"\bError in preprocessing prompt inputs\b",
        ("vllm",),
        "(APIServer pid=387) ERROR 09-21 21:40:02 [serving_chat.py:257] Error in "
        "preprocessing prompt inputs",
        "vllm-project/vllm vllm/entrypoints/openai/serving_chat.py, serving_completion.py, "
        'serving_embedding.py (logger.exception("Error in preprocessing prompt inputs") then '
        "create_error_response -> 400); read in the engine's source: Rendering or tokenizing "
        "one request failed (chat template, bad content, too long); the traceback under it "
        "is that request's, answered with a 400.",
    ),
    Fact(
        r"\bThe (?:decoder|encoder) prompt \(length \d+\) is longer than the maximum "
        r"model length of \d+",
        ("vllm",),
        "ValueError: The decoder prompt (length 8825) is longer than the maximum model "
        "length of 8192. Make sure that `max_model_len` is no smaller than the number of "
        "text tokens plus multimodal tokens.",
        "vllm-project/vllm vllm/v1/engine/processor.py (_validate_model_input: raise "
        'ValueError(f"The {prompt_type} prompt (length {len(prompt_ids)}) is longer than the '
        "maximum model length of {max_prompt_len}. ...\")); read in the engine's source: vLLM "
        "V1's input validation refusing one over-long (often multimodal) prompt; the request "
        "gets a 400, the engine is fine.",
    ),
    Fact(
        r"\bError in chat completion stream generator\.",
        ("vllm",),
        "(APIServer pid=3176541) ERROR 09-16 10:40:29 [serving_chat.py:1051] Error in chat "
        "completion stream generator.",
        "vllm-project/vllm vllm/entrypoints/openai/serving_chat.py "
        '(chat_completion_stream_generator: logger.exception("Error in chat completion '
        "stream generator.\") then an error chunk); read in the engine's source: One "
        "streaming request failed after its 200 was sent; the traceback below it says why "
        "(an EngineDeadError there is only the echo of an engine failure logged elsewhere).",
    ),
    Fact(
        r"\bRequest is disconnected from the client side\b",
        ("sglang",),
        "[2025-06-01 10:00:00] ValueError: Request is disconnected from the client side "
        "(type 1). Abort request obj.rid='a1b2c3d4e5f6'",
        "sgl-project/sglang python/sglang/srt/managers/tokenizer_manager.py "
        '(_wait_one_response: raise ValueError(f"Request is disconnected from the client '
        "side (type N). Abort request {obj.rid=}\")); read in the engine's source: The client "
        "closed its connection; sglang aborts that one request (the exception only unwinds "
        "its handler).",
    ),
    Fact(
        r"\bis disconnected, abort \S+\s*$",
        ("tensorrt-llm",),
        "[06/16/2025-10:03:14] [TRT-LLM] [I] Address(host='127.0.0.1', port=51234) is "
        "disconnected, abort 12",
        "NVIDIA/TensorRT-LLM tensorrt_llm/serve/openai_server.py (await_disconnected: "
        'promise.abort(); logger.info(f"{raw_request.client} is disconnected, abort '
        "{promise.request_id}\")); read in the engine's source: trtllm-serve aborting one "
        "request whose client hung up.",
    ),
)
