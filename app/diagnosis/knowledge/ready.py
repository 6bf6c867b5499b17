"""The lines a server prints once it can take requests: the scanner looks for them with
Hyperscan, so each pattern is also a valid Hyperscan expression."""

from dataclasses import dataclass

from app.diagnosis.knowledge.fact import Fact


@dataclass(frozen=True)
class ReadyLine(Fact):
    # Also says ready where sglang wrote the log: sglang starts Uvicorn before its warm-up
    # request, so there Uvicorn's lines come before the server can serve.
    in_sglang_log: bool = False
    # A line the pattern finds says ready only where this matches it too (TGI's router logs
    # every request from the file that logs "Connected").
    confirm: str | None = None


READY_LINES = (
    ReadyLine(
        "ready to roll",
        ("sglang",),
        "[2025-03-01 10:02:41] The server is fired up and ready to roll!",
        "sglang: python/sglang/srt/entrypoints/http_server.py logs 'The server is fired up and "
        "ready to roll!' once its warm-up request has succeeded",
        in_sglang_log=True,
    ),
    ReadyLine(
        "Application startup complete",
        ("uvicorn", "vllm", "sglang"),
        "INFO:     Application startup complete.",
        "Uvicorn (uvicorn/lifespan/on.py), the HTTP front end of vLLM's and sglang's OpenAI "
        "servers; observed in corpus case 542 (vLLM)",
    ),
    ReadyLine(
        "Uvicorn running on",
        ("uvicorn", "vllm", "sglang"),
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
        "Uvicorn (uvicorn/server.py) once it listens; observed in corpus case 031 (vLLM)",
    ),
    ReadyLine(
        "server is listening",
        ("llama.cpp",),
        "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
        "llama.cpp's llama-server (tools/server/server.cpp, examples/server/ before): "
        "'server is listening on ... - starting the main loop', after the model is loaded",
        in_sglang_log=True,
    ),
    ReadyLine(
        "HTTP server listening",
        ("llama.cpp",),
        'INFO [                    main] HTTP server listening | tid="140367990282560" '
        'timestamp=1750279344 n_threads_http="31" port="8080" hostname="::"',
        "llama.cpp's server before its logging rewrite (and ik_llama.cpp): LOG_INFO(\"HTTP "
        'server listening", ...) in its text log format',
        in_sglang_log=True,
    ),
    ReadyLine(
        "Started server process",
        ("uvicorn", "vllm", "sglang"),
        "INFO:     Started server process [6593]",
        "Uvicorn (uvicorn/server.py): 'Started server process [pid]'; observed in corpus case "
        "542 (vLLM)",
    ),
    ReadyLine(
        'msg="Listening on ',
        ("ollama",),
        "Aug 19 22:32:14 host-1 ollama[115793]: time=2024-08-19T22:32:14.889+02:00 level=INFO "
        'source=routes.go:1172 msg="Listening on 127.0.0.1:11434 (version 0.3.6)"',
        "Ollama: server/routes.go logs 'Listening on ADDR (version V)' when `ollama serve` "
        "binds its port; observed in corpus case 868 (under journalctl)",
    ),
    ReadyLine(
        "======== Running on http",
        ("aiohttp",),
        "======== Running on http://0.0.0.0:8127 ========",
        "aiohttp: web.run_app's banner (aiohttp/web.py); observed in corpus case 730",
    ),
    ReadyLine(
        "HTTPService at",
        ("triton",),
        "I1118 07:23:26.677120 28532 http_server.cc:3558] Started HTTPService at 0.0.0.0:8000",
        "Triton Inference Server: http_server.cc once its models are loaded ('Starting "
        "HTTPService at' before 20.x); observed in corpus case 839",
    ),
    ReadyLine(
        "GRPCInferenceService at",
        ("triton",),
        "I1118 07:23:26.676895 28532 grpc_server.cc:2451] Started GRPCInferenceService at "
        "0.0.0.0:8001",
        "Triton Inference Server: grpc_server.cc; observed in corpus case 839",
    ),
    ReadyLine(
        "GRPCService at",
        ("triton",),
        "I1204 08:17:45.082233 1 grpc_server.cc:1939] Started GRPCService at 0.0.0.0:8001",
        "Triton Inference Server before 20.x: grpc_server.cc; observed in corpus case 597",
    ),
    ReadyLine(
        "Model server started",
        ("torchserve",),
        "Model server started.",
        "TorchServe's frontend (ModelServer) once it serves; observed in corpus case 598",
    ),
    ReadyLine(
        "llama runner started in",
        ("ollama",),
        'time=2025-09-17T11:28:38.832+02:00 level=INFO source=server.go:1289 msg="llama runner '
        'started in 43.46 seconds"',
        "Ollama: llm/server.go once the model runner answers; observed in corpus case 529",
    ),
    ReadyLine(
        "Running on local URL:",
        ("gradio",),
        "Running on local URL:  http://127.0.0.1:7865",
        "Gradio's launch(); observed in corpus case 525 (Fooocus)",
    ),
    ReadyLine(
        "Running on public URL:",
        ("gradio",),
        "Running on public URL: https://53bf2f75f7e0d4402f.gradio.live",
        "Gradio's launch(share=True), the only address a notebook's server may print; "
        "observed in corpus case BC005 (AUTOMATIC1111)",
    ),
    ReadyLine(
        r"\] is serving on port=\d",
        ("brpc", "xllm"),
        "I20251114 15:03:20.968561 57784 server.cpp:1200] "
        "Server[xllm_service::XllmHttpServiceImpl] is serving on port=28888.",
        "Apache bRPC's server.cpp once a service listens (xLLM's HTTP and RPC services); "
        "observed in corpus case BV708",
    ),
    # Found by its source file, which a literal keeps Hyperscan fast on: only "Connected" says
    # ready.
    ReadyLine(
        r"router/src/server\.rs",
        ("tgi",),
        "2024-05-01T10:00:41.123456Z  INFO text_generation_router::server: "
        "router/src/server.rs:1812: Connected",
        "Text Generation Inference: its router (router/src/server.rs) logs 'Connected' once "
        "the shards are warmed up",
        confirm=r": Connected\s*$",
    ),
)
