"""What ran underneath an attempt: GPU, driver, CUDA, PyTorch, the engine and its version,
Python and kernel libraries, read from the lines engines and their tools print (vLLM's and
TensorRT-LLM's start-up lines, sglang's `check_env`, PyTorch's `collect_env`, an nvidia-smi
table, NCCL's own), and a diff of two of them ("CUDA 12.8 → 13.0, torch 2.10.0 → 2.9.1")."""

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import hyperscan

from app.diagnosis.hsdb import cached_database, scratch_for
from app.models import Attempt, Run

# Start-up prints its environment first; past this a log's bytes are not looked at.
READ_FIRST = 8 << 20
MAX_LINE = 4096
FIELDS = ("gpu", "gpu_count", "driver", "cuda", "torch", "engine", "engine_version", "python")
# How a field reads in a diff's summary.
SAID = {"gpu": "GPU", "gpu_count": "GPUs", "driver": "driver", "cuda": "CUDA", "torch": "torch",
        "engine": "engine", "engine_version": "engine", "python": "Python"}  # fmt: skip

# A line worth a closer look holds one of these: one Hyperscan pass over a chunk finds them
# all (Python's re tried each at every byte: 115x the diagnosis's time on a log's start).
_KEYWORDS = (
    "version", "Version", "VERSION", "NCCL", "nccl", "NVIDIA", "PyTorch", "Python", "[pip",
    "[conda]", "GPU", "sglang", "sgl_kernel", "sglang-kernel", "flashinfer", "triton",
    "transformers", "torch", "CUDA", "NVCC", "ROCM", "-packages/", "TensorRT-LLM", "TRT-LLM",
    "Vllm", "EngineCore", "vllm", "text_generation_", "tensorrt-llm/",
    "text-generation-inference", "Docker label", "docker_label", "Successfully installed",
)  # fmt: skip
_TABLE_ROW = rb"\|\s+\d+\s+\S"  # an nvidia-smi table's GPU row


@functools.cache
def _keyword_database() -> hyperscan.Database:
    """Built at the first log read (kept on disk, app/diagnosis/hsdb.py): a dashboard or a
    command that reads none never compiles it."""
    expressions = [re.escape(keyword).encode() for keyword in _KEYWORDS] + [_TABLE_ROW]
    return cached_database(
        "environment", expressions, list(range(len(expressions))), [0] * len(expressions)
    )


def _worth_reading(block: bytes) -> list[bytes]:
    """The lines of `block` that hold a keyword, each once, in order."""
    ends: list[int] = []

    def found(_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
        ends.append(end)

    database = _keyword_database()  # (its scratch: one a thread, as scans run one at a time)
    database.scan(block, match_event_handler=found, scratch=scratch_for(database))
    starts = sorted({block.rfind(b"\n", 0, end) + 1 for end in ends})
    lines = []
    for start in starts:
        stop = block.find(b"\n", start)
        lines.append(block[start : stop if stop >= 0 else len(block)])
    return lines


# A version as tools print it, local part and all: 0.5.12.dev136+g9dfb1d2eb, 1.2.0rc4.
_VERSION = r"(\d+(?:\.\d+)+[\w.+-]*?)(?=[\s,;)\]\"'`]|$)"
_TORCH = re.compile(r"(\d+\.\d+[\w.+-]*?)(?:\+cu(\d+))?$")
_ENGINE_PACKAGES = {"sglang": "sglang", "vllm": "vllm", "tensorrt_llm": "tensorrt_llm",
                    "text_generation_server": "tgi"}  # fmt: skip
# Packages whose versions matter to a campaign, by the names pip and tools print them.
_LIBS = {"flashinfer": "flashinfer", "flashinfer-python": "flashinfer",
         "flashinfer_python": "flashinfer", "sgl-kernel": "sgl-kernel", "sgl_kernel": "sgl-kernel",
         "triton": "triton", "pytorch-triton": "triton", "transformers": "transformers",
         "nvidia-nccl-cu12": "nccl", "nvidia-nccl-cu13": "nccl", "nccl": "nccl",
         "xformers": "xformers", "flash-attn": "flash-attn", "flash_attn": "flash-attn",
         "deep-gemm": "deep-gemm", "deep_gemm": "deep-gemm", "tensorrt": "tensorrt",
         "cuda-python": "cuda-python", "sglang-kernel": "sgl-kernel", "vllm": "vllm",
         "sglang": "sglang", "tensorrt_llm": "tensorrt_llm",
         "tensorrt-llm": "tensorrt_llm"}  # fmt: skip


def cuda_of_build(digits: str) -> str:
    """torch's "+cu124" build tag as a CUDA version: 12.4 (cu130: 13.0)."""
    return f"{digits[:-1]}.{digits[-1]}" if len(digits) >= 2 else digits


@dataclass
class Environment:
    values: dict[str, Any] = field(default_factory=dict)
    libs: dict[str, str] = field(default_factory=dict)
    # How sure each field is: a later line replaces a field only when at least as sure.
    strength: dict[str, int] = field(default_factory=dict)
    gpu_indices: set[int] = field(default_factory=set)

    def put(self, name: str, value: Any, strength: int = 2) -> None:
        if value in (None, "") or strength < self.strength.get(name, 0):
            return
        self.values[name], self.strength[name] = value, strength

    def lib(self, name: str, version: str) -> None:
        canonical = _LIBS.get(name.lower())
        if canonical is not None:
            # An engine in a package list is one more package (sglang's check_env lists
            # vLLM's version): the engine that runs says so in its own lines.
            self.libs.setdefault(canonical, version)

    def as_json(self) -> dict[str, Any] | None:
        if not self.values and not self.libs:
            return None
        found: dict[str, Any] = {name: self.values.get(name) for name in FIELDS}
        found["libs"] = dict(sorted(self.libs.items()))
        return found


def _torch(env: Environment, text: str, strength: int = 2) -> None:
    """torch's version as printed, but for its CUDA build tag (which says the CUDA)."""
    match = _TORCH.match(text.strip())
    if match:
        env.put("torch", match.group(1), strength)
        if match.group(2):
            env.put("cuda", cuda_of_build(match.group(2)), 3)


def _gpu_row(env: Environment, indices: str, name: str | None) -> None:
    if name:
        env.put("gpu", name.strip(), 2)
    for index in re.findall(r"\d+", indices):
        env.gpu_indices.add(int(index))
    env.put("gpu_count", len(env.gpu_indices), 2)


Reader = Callable[[Environment, re.Match[str]], None]


def _engine(name: str) -> Reader:
    def read(env: Environment, match: re.Match[str]) -> None:
        env.put("engine", name, 3)
        env.put("engine_version", match.group(1), 3)

    return read


def _field(name: str, strength: int = 2) -> Reader:
    def read(env: Environment, match: re.Match[str]) -> None:
        env.put(name, match.group(1), strength)

    return read


def _lib(env: Environment, match: re.Match[str]) -> None:
    env.lib(match.group(1), match.group(2))


def _nccl(env: Environment, match: re.Match[str]) -> None:
    env.lib("nccl", match.group(1))


def _gpu(env: Environment, match: re.Match[str]) -> None:
    _gpu_row(env, match.group(1), match.group(2))


def _smi_header(env: Environment, match: re.Match[str]) -> None:
    env.put("driver", match.group(1))
    env.put("cuda", match.group(2), 1)  # what the driver supports, not what was built


def _gpu_index(env: Environment, match: re.Match[str]) -> None:
    _gpu_row(env, match.group(1), None)


def _nccl_build(env: Environment, match: re.Match[str]) -> None:
    env.lib("nccl", match.group(1))
    if match.group(2):
        env.put("cuda", match.group(2), 1)  # what NCCL was built with: torch says better


def _engine_sign(name: str) -> Reader:
    """A line only one engine prints (its process names, its logger): the engine, not its
    version."""

    def read(env: Environment, _match: re.Match[str]) -> None:
        env.put("engine", name, 1)

    return read


_INSTALLED = re.compile(r"([A-Za-z][\w.-]*?)-(\d[\w.+]*)$")


def _installed(env: Environment, match: re.Match[str]) -> None:
    """pip's "Successfully installed flashinfer-python-0.2.11.post3 ...": name-version."""
    for word in match.group(1).split():
        found = _INSTALLED.match(word)
        if found:
            if found.group(1).lower() == "torch":
                _torch(env, found.group(2), 1)
            else:
                env.lib(found.group(1), found.group(2))


def _package_path(env: Environment, match: re.Match[str]) -> None:
    env.put("python", match.group(1), 1)
    env.put("engine", _ENGINE_PACKAGES.get(match.group(2), ""), 1)


_LINES: list[tuple[re.Pattern[str], Reader]] = [
    # vLLM
    (re.compile(r"Initializing an? (?:V\d )?LLM engine \(v" + _VERSION), _engine("vllm")),
    (re.compile(r"vLLM API server version " + _VERSION), _engine("vllm")),
    (re.compile(r"^vLLM Version: " + _VERSION), _engine("vllm")),
    (re.compile(r"vLLM is using nccl==" + _VERSION), _nccl),
    (re.compile(r"\((?:VllmWorker|EngineCore|APIServer|VllmWorkerProcess)\w* (?:rank=\d+ )?"
                r"pid=|vLLM is using|\bvllm\.(?:engine|entrypoints|v1|worker)\b"),
     _engine_sign("vllm")),
    # TensorRT-LLM
    (re.compile(r"TensorRT-LLM [Vv]ersion:\s+" + _VERSION), _engine("tensorrt_llm")),
    (re.compile(r"\[TensorRT-LLM\].*Engine version " + _VERSION), _engine("tensorrt_llm")),
    (re.compile(r"\[TensorRT-LLM\]|\[TRT-LLM\]"), _engine_sign("tensorrt_llm")),
    (re.compile(r"Rank \d+ is using GPU (\d+)"), _gpu_index),
    # TGI
    (re.compile(r"\btext_generation_(?:launcher|router|server)\b|^Docker label: (?:sha-|N/A)"
                r"|\"docker_label\": \"sha-"), _engine_sign("tgi")),
    # Container images name the engine's release: nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc2
    (re.compile(r"tensorrt-llm/release:v?" + _VERSION), _engine("tensorrt_llm")),
    (re.compile(r"vllm/vllm-openai:v?" + _VERSION), _engine("vllm")),
    (re.compile(r"lmsysorg/sglang:v?" + _VERSION), _engine("sglang")),
    (re.compile(r"text-generation-inference:v?" + _VERSION), _engine("tgi")),
    # sglang's check_env: "name: version" lines
    (re.compile(r"^sglang: " + _VERSION), _engine("sglang")),
    (re.compile(r"^(sgl_kernel|sglang-kernel|sgl-kernel|flashinfer(?:_python)?|triton|transformers"
                r"|xformers|flash_attn|deep_gemm): " + _VERSION), _lib),
    (re.compile(r"^ROCM Driver Version: ([\d.]+)"), _field("driver")),
    (re.compile(r"^GPU [\d,]+ Compute Capability: "), _engine_sign("sglang")),  # check_env's
    (re.compile(r"^Successfully installed (.+)"), _installed),
    (re.compile(r"^(?:PyTorch|torch): (\S+)"), lambda e, m: _torch(e, m.group(1))),
    (re.compile(r"^Python: (\d+\.\d+(?:\.\d+)?)"), _field("python")),
    (re.compile(r"^CUDA Driver Version: ([\d.]+)"), _field("driver")),
    (re.compile(r"^GPU ([\d,\s]+): (\S.*?)\s*$"), _gpu),
    (re.compile(r"^NVCC: .*release (\d+\.\d+)"), _field("cuda")),
    # PyTorch's collect_env (also in vLLM's and sglang's reports)
    (re.compile(r"^PyTorch version: (\S+)"), lambda e, m: _torch(e, m.group(1))),
    (re.compile(r"^CUDA used to build PyTorch: (\d+\.\d+)"), _field("cuda", 3)),
    (re.compile(r"^CUDA runtime version: (\d+\.\d+)"), _field("cuda")),
    (re.compile(r"^Python version: (\d+\.\d+(?:\.\d+)?)"), _field("python")),
    (re.compile(r"^Nvidia driver version: ([\d.]+)"), _field("driver")),
    (re.compile(r"^(?:GPU models and configuration: )?GPU (\d+): (\S.*?)\s*$"), _gpu),
    (re.compile(r"^GPU models and configuration: (?!GPU \d)(\S.*?)\s*$"), _field("gpu")),
    (re.compile(r"^\[(?:pip3?|conda)\]\s+([\w.-]+)(?:==|\s+)" + _VERSION), _lib),
    (re.compile(r"^\[(?:pip3?|conda)\]\s+torch(?:==|\s+)(\S+)"),
     lambda e, m: _torch(e, m.group(1), 1)),
    # An nvidia-smi table
    (re.compile(r"NVIDIA-SMI [\d.]+\s+Driver Version: ([\d.]+)\s+CUDA Version: (\d+\.\d+)"),
     _smi_header),
    (re.compile(r"^\s*\|\s+(\d+)\s+(\S[^|]*?)\s+(?:On|Off)\s+\|"), _gpu),
    # vLLM's GPU topology table: a row a GPU
    (re.compile(r"^GPU(\d+)\s+(?:X|NV\d+|PIX|PXB|PHB|NODE|SYS)\b"), _gpu_index),
    # NCCL's own start-up line, and torch's
    (re.compile(r"NCCL version (\d+(?:\.\d+)+)(?:\+cuda(\d+\.\d+))?"), _nccl_build),
    (re.compile(r"ProcessGroupNCCL.*NCCL version: (\d+(?:\.\d+)+)"), _nccl),
    # Paths in tracebacks: the weakest sign of the interpreter and the engine
    (re.compile(r"/python(3\.\d+)/(?:site|dist)-packages/(\w+)/"), _package_path),
]  # fmt: skip


class EnvironmentReader:
    """Fed a log's bytes in chunks of any size (the ingest feeds it what it feeds the
    diagnosis): one search a chunk for the lines worth reading, in the log's first
    READ_FIRST bytes."""

    def __init__(self) -> None:
        self.environment = Environment()
        self._open = b""
        self._seen = 0

    def feed(self, data: bytes) -> bool:
        """True when what it knows changed."""
        if self._seen >= READ_FIRST or not data:
            return False
        data = data[: READ_FIRST - self._seen]
        self._seen += len(data)
        end = data.rfind(b"\n")
        if end < 0:
            self._open = (self._open + data)[:MAX_LINE]
            return False
        whole = self._open + data[:end]
        self._open = data[end + 1 :][:MAX_LINE]
        before = self.environment.as_json()
        for line in _worth_reading(whole):
            read_line(self.environment, line[:MAX_LINE].decode("utf-8", "replace"))
        return self.environment.as_json() != before


def read_line(env: Environment, raw: str) -> None:
    """What one line says, read without its log prefix (a timestamp, a level), and with it
    for what only the prefix says (a vLLM worker's process name, TensorRT-LLM's logger)."""
    raw = raw.rstrip("\r")
    text = _strip_prefix(raw)
    for pattern, reader in _LINES:
        match = pattern.search(text) or (pattern.search(raw) if text != raw else None)
        if match:
            reader(env, match)


# A log line's own prefix (a timestamp, a level, a process name) before what a tool printed.
_PREFIX = re.compile(
    r"^(?:\x1b\[[\d;]*m)*(?:\s*(?:\[(?!pip|conda)[^\]]{0,80}\]|\([\w ]+=?\w* ?pid=\d+\)"
    r"|(?:INFO|WARNING|DEBUG)(?: \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)?"
    r"|\d{4}-\d\d-\d\d[T ][\d:.,]+Z?|[\w.-]+:\d+:|[\w-]+-\d+\s+\|))\s*"
)
# PyTorch's newer collect_env pads its keys: "PyTorch version              : 2.7.1+cu126".
_PADDED_KEY = re.compile(r"^(\S(?:[^:]*?\S)?)\s+: ")


def _strip_prefix(line: str) -> str:
    for _ in range(4):
        stripped = _PREFIX.sub("", line, count=1)
        if stripped == line:
            break
        line = stripped
    return _PADDED_KEY.sub(r"\1: ", line)


def read_environment(text: str) -> dict[str, Any] | None:
    reader = EnvironmentReader()
    reader.feed(text.encode() + b"\n")
    return reader.environment.as_json()


def of_attempt(attempt: Attempt, run: Run | None) -> dict[str, Any] | None:
    """What the log says ran, and what the host said before the launch where it says nothing."""
    probed = (run.preflight or {}).get("environment") if run is not None else None
    return merged(attempt.environment, probed)


def merged(*sources: dict[str, Any] | None) -> dict[str, Any] | None:
    """Field by field, the first source that knows it: what the log says ran before what the
    host said before the launch."""
    known = [s for s in sources if s]
    if not known:
        return None
    out: dict[str, Any] = {name: next((s[name] for s in known if s.get(name)), None)
                           for name in FIELDS}  # fmt: skip
    libs: dict[str, str] = {}
    for source in reversed(known):
        libs.update(source.get("libs") or {})
    out["libs"] = dict(sorted(libs.items()))
    return out


def flat(environment: dict[str, Any]) -> dict[str, str]:
    """Fields and libraries in one mapping, by name: what a diff or a comparison reads."""
    flat = {name: str(environment[name]) for name in FIELDS if environment.get(name) is not None}
    flat.update({name: str(v) for name, v in (environment.get("libs") or {}).items()})
    return flat


def diff(baseline: dict[str, Any], attempt: dict[str, Any]) -> dict[str, Any]:
    """What differs, by what both say: a field one of them does not know is no change."""
    before, after = flat(baseline), flat(attempt)
    changed = {n: {"baseline": before[n], "attempt": after[n]}
               for n in sorted(before.keys() & after.keys()) if before[n] != after[n]}  # fmt: skip
    added = {n: after[n] for n in sorted(after.keys() - before.keys()) if n not in FIELDS}
    removed = {n: before[n] for n in sorted(before.keys() - after.keys()) if n not in FIELDS}
    engine = after.get("engine") or before.get("engine") or "engine"
    return {"added": added, "removed": removed, "changed": changed,
            "summary": _summary(changed, added, removed, engine)}  # fmt: skip


def _summary(
    changed: dict[str, Any], added: dict[str, str], removed: dict[str, str], engine: str
) -> str:
    said = {**SAID, "engine_version": engine}
    order = [*FIELDS, *sorted(n for n in changed if n not in FIELDS)]
    parts = [f"{said.get(n, n)} {changed[n]['baseline']} → {changed[n]['attempt']}"
             for n in order if n in changed]  # fmt: skip
    parts += [f"+{n} {v}" for n, v in added.items()]
    parts += [f"-{n} {v}" for n, v in removed.items()]
    return ", ".join(parts) if parts else "the same environment as far as both logs say"


_PROBED_ENGINES = {"sglang": "sglang", "vllm": "vllm", "tensorrt_llm": "tensorrt_llm",
                   "tensorrt-llm": "tensorrt_llm", "text-generation-server": "tgi"}  # fmt: skip


def from_probe(probe: dict[str, Any] | None, engine: str | None) -> dict[str, Any] | None:
    """The runner's look at the host before a launch (app/runner/host_checks.py, `probe`):
    nvidia-smi's GPUs and driver, the interpreter's version and packages. `engine`: the one
    the command runs, when it says (else the only engine among the packages)."""
    if not probe:
        return None
    found = Environment()
    gpus = probe.get("gpus") or []
    if gpus:
        found.put("gpu", str(gpus[0]))
        found.put("gpu_count", len(gpus))
    found.put("driver", probe.get("driver"))
    found.put("python", probe.get("python"))
    packages: dict[str, str] = {str(k): str(v) for k, v in (probe.get("packages") or {}).items()}
    if "torch" in packages:
        _torch(found, packages["torch"])
    engines = {_PROBED_ENGINES[name]: version for name, version in packages.items()
               if name in _PROBED_ENGINES}  # fmt: skip
    chosen = engine if engine in engines else next(iter(engines)) if len(engines) == 1 else None
    if chosen is not None:
        found.put("engine", chosen)
        found.put("engine_version", engines[chosen])
    for name, version in packages.items():
        if name not in _PROBED_ENGINES and name != "torch":
            found.lib(name, version)
    return found.as_json()
