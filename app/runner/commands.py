"""What a launch command says about itself: the port it will listen on, its health URL,
the GPUs it may use."""

import re
import shlex

from app.flags import command_flags

# Where the engines listen when the command names no port.
DEFAULT_PORTS = (("sglang", 30000), ("vllm", 8000))


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # an unbalanced quote: the shell will say so; no port to read
        return command.split()


def listen_port(command: str) -> int | None:
    """--port N or --port=N (the last one wins, as argparse does), else the engine's own."""
    words = _words(command)
    port: int | None = None
    for index, word in enumerate(words):
        value = None
        if word == "--port" and index + 1 < len(words):
            value = words[index + 1]
        elif word.startswith("--port="):
            value = word.partition("=")[2]
        if value is not None and value.isdigit() and 0 < int(value) < 65536:
            port = int(value)
    if port is not None:
        return port
    for engine, default in DEFAULT_PORTS:
        if any(engine in word for word in words):
            return default
    return None


def health_url(command: str, given: str | None) -> str | None:
    """The URL that says the server serves: the one given ("" for none), else /health on
    the derived port, asked from the host itself."""
    if given is not None:
        return given or None
    port = listen_port(command)
    return f"http://127.0.0.1:{port}/health" if port else None


def visible_gpus(command: str) -> str | None:
    """The CUDA_VISIBLE_DEVICES the command sets (`CUDA_VISIBLE_DEVICES=0,1 python ...`,
    `export ...;`), as written; None when it sets none: every GPU of the host is its."""
    value = command_flags(command).get("CUDA_VISIBLE_DEVICES")
    return value if isinstance(value, str) else None


_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?")
_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")


def interpreter(command: str) -> str | None:
    """The Python interpreter the command runs its server with (`python3 -m sglang...`,
    `CUDA_VISIBLE_DEVICES=0 /opt/venv/bin/python -m vllm...`), as written; None when the
    program is not one (a console script, a shell line): the host is not asked its packages."""
    words = _words(command)
    while words and _ENV_ASSIGNMENT.fullmatch(words[0]):
        words = words[1:]
    if words and words[0] in ("env", "exec"):
        return interpreter(shlex.join(words[1:]))
    if words and _PYTHON.fullmatch(words[0].rsplit("/", 1)[-1]):
        return words[0]
    return None
