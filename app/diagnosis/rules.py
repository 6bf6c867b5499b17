"""What a line means to an expert: noise, a wrapper around a failure, or a failure of
some class, as ordered, named patterns; what each server prints is read from knowledge/."""

import contextlib
import functools
import hashlib
import re
import re._constants as sre
import re._parser as sre_parse
import sys
import threading
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import hyperscan

from app.diagnosis.hsdb import cached_database, cached_json, scratch_for
from app.diagnosis.knowledge import benign, lifecycle, wrappers

ERROR_CLASSES = (
    "unsupported_arch",
    "oom_gpu",
    "oom_host_killed",
    "nccl_comm",
    "cuda_graph",
    "cuda_runtime",
    "import_or_version",
    "config_or_args",
    "model_loading",
    "timeout_or_hang",
    "other",
)


SEARCHES_REMEMBERED = 4096  # lines a pattern set remembers its answer for
REMEMBERED_LINE_CHARS = 1024  # longer lines are read afresh: the memory stays a few MiB


class Alternatives:
    """Several patterns, any of which may match, tried in order. A line is first read once by
    one Hyperscan database of every pattern of every set (`_PREFILTER`, which may over-report
    but never misses); `re` then confirms only the patterns it reported, so a line that matches
    none costs one scan instead of a `re` search per pattern (7x fewer searches on the corpus,
    which the engine reads in half the time). Each
    `re` pattern is compiled when first tried, and a set remembers its answers for the lines it
    read last: a growing log's kept lines are read again at every diagnosis."""

    def __init__(self, patterns: tuple[str, ...]) -> None:
        self.sources = patterns
        self._first_id = _PREFILTER.register(patterns)
        self._compiled: list[re.Pattern[str]] = []
        self._compiling = threading.Lock()
        self._search = functools.lru_cache(maxsize=SEARCHES_REMEMBERED)(self._search_all)

    def search(self, text: str) -> re.Match[str] | None:
        if len(text) > REMEMBERED_LINE_CHARS:
            return self._search_all(text)
        return self._search(text)

    def _search_all(self, text: str) -> re.Match[str] | None:
        candidates = _PREFILTER.candidates_of(text)
        if candidates is None:
            indexes: Iterable[int] = range(len(self.sources))
        elif candidates.none_among(self._first_id, len(self.sources)):
            return None  # (most lines, for most sets: nothing to confirm)
        else:
            indexes = candidates.among(self._first_id, len(self.sources))
        for index in indexes:
            if match := self._pattern(index).search(text):
                return match
        return None

    def _pattern(self, index: int) -> re.Pattern[str]:
        if index >= len(self._compiled):
            with self._compiling:
                while len(self._compiled) <= index:
                    self._compiled.append(re.compile(self.sources[len(self._compiled)]))
        return self._compiled[index]


@dataclass(frozen=True)
class _Candidates:
    covered: int  # the patterns the database was built with: later ones are always tried
    reported: tuple[int, ...]  # in order

    def none_among(self, first: int, count: int) -> bool:
        end = first + count
        if self.covered < end:
            return False
        at = bisect_left(self.reported, first)
        return at == len(self.reported) or self.reported[at] >= end

    def among(self, first: int, count: int) -> list[int]:
        """Which of a set's patterns (ids `first` on) to try, by their index in the set: the
        reported ones, then any the database was built without. Found by bisection: a set
        of hundreds of patterns is not walked for the two a line may match."""
        end = first + count
        start, stop = bisect_left(self.reported, first), bisect_left(self.reported, end)
        tried = [pattern_id - first for pattern_id in self.reported[start:stop]]
        return tried + list(range(max(self.covered, first) - first, count))


class _StandIns(dict[int, str]):
    """A line as Hyperscan's ASCII database reads it without missing a match of `re`'s: each
    character `re` reads by Unicode (any non-ASCII one, and \\x1c-\\x1f, which Python's `\\s`
    takes and Hyperscan's does not) is replaced by an ASCII one that `re` reads alike (a word
    character, a space, or neither) and that no pattern requires a character *not* to be
    (`[^...]`, `(?!...)`). A match of `re` in the line is then one in its stand-in line. A
    character some pattern names, one with a case, or a non-ASCII digit has no stand-in: the
    line is left to every pattern (the stand-in line holds a non-ASCII mark). A progress bar's
    blocks or a Chinese message no longer costs a `re` search of every pattern."""

    _UNSAFE = "\x80"  # not ASCII: the line has no stand-in
    _CHOICES: ClassVar[dict[str, str]] = {
        "word": "qjzxQJZX_", "space": "\v\f", "other": "\x01\x02\x07\x7f"
    }  # fmt: skip

    def __init__(self, named: set[str], ranges: list[tuple[int, int]], excluded: set[str]):
        super().__init__({code: chr(code) for code in range(128)})
        self._named, self._ranges = named, ranges

        def free(choice: str) -> bool:
            return not {choice, choice.lower(), choice.upper()} & excluded

        self._stand_in = {kind: next(filter(free, choices), self._UNSAFE)
                          for kind, choices in self._CHOICES.items()}  # fmt: skip
        for code in range(0x1C, 0x20):
            self[code] = self.__missing__(code)

    @classmethod
    def of(cls, patterns: list[str]) -> "_StandIns | None":
        """None where a pattern holds what the stand-ins were not proven for. (Reading every
        pattern costs more than a small log's whole diagnosis: what it finds is kept on disk.)"""
        # (this module's source in the key: a release that reads otherwise reads afresh)
        reader = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
        read = cached_json(
            "stand-ins", (sys.version, reader, patterns), lambda: cls._read(patterns)
        )
        if read is None:
            return None
        named, ranges, excluded = read
        return cls(set(named), [(low, high) for low, high in ranges], set(excluded))

    @staticmethod
    def _read(patterns: list[str]) -> tuple[str, list[tuple[int, int]], str] | None:
        """The characters the patterns name, their ranges, and those named where they must
        not match."""
        named: set[str] = set()
        excluded: set[str] = set()
        ranges: list[tuple[int, int]] = []

        def read(items: sre_parse.SubPattern | list, negative: bool) -> None:
            for op, value in items:
                if op in (sre.LITERAL, sre.NOT_LITERAL):
                    named.add(chr(value))
                    if negative or op is sre.NOT_LITERAL:
                        excluded.add(chr(value))
                elif op is sre.IN:
                    negated = negative or any(item is sre.NEGATE for item, _ in value)
                    for item, member in value:
                        if item is sre.LITERAL:
                            named.add(chr(member))
                            if negated:
                                excluded.add(chr(member))
                        elif item is sre.RANGE:
                            ranges.append(member)
                            if negated:
                                excluded.update(map(chr, range(member[0], member[1] + 1)))
                        elif item not in (sre.NEGATE, sre.CATEGORY):
                            raise ValueError(item)
                elif op is sre.SUBPATTERN:
                    read(value[3], negative)
                elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
                    read(value[2], negative)
                elif op is sre.BRANCH:
                    for branch in value[1]:
                        read(branch, negative)
                elif op in (sre.ASSERT, sre.ASSERT_NOT):  # inside (?!...) every name is negative
                    read(value[1], negative or op is sre.ASSERT_NOT)
                elif op is sre.ATOMIC_GROUP:
                    read(value, negative)
                elif op not in (sre.ANY, sre.AT, sre.CATEGORY) and not (
                    op is sre.GROUPREF and not negative
                ):
                    raise ValueError(op)  # a back-reference that must not match, and the like

        try:
            for pattern in patterns:
                read(sre_parse.parse(pattern), negative=False)
        except (ValueError, re.error, AttributeError):  # (re's parser is private: it may change)
            return None
        return "".join(sorted(named)), ranges, "".join(sorted(excluded))

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if (
            char in self._named
            or any(low <= code <= high for low, high in self._ranges)
            or char.lower() != char
            or char.upper() != char
            or char.isdecimal()
        ):
            stand_in = self._UNSAFE
        elif char.isspace():
            stand_in = self._stand_in["space"]
        elif char.isalnum():
            stand_in = self._stand_in["word"]
        else:
            stand_in = self._stand_in["other"]
        if len(self) < 65536:  # a line of every script stays a bounded memory
            self[code] = stand_in
        return stand_in

    def line(self, text: str) -> str | None:
        stood_in = text.translate(self)
        return stood_in if stood_in.isascii() else None


class _Prefilter:
    """Every registered pattern in one Hyperscan database, compiled in prefilter mode (a
    superset of each pattern's matches: lookarounds and the like are approximated) and kept
    on disk (app/diagnosis/hsdb.py). The database reads ASCII: a line is read through its
    stand-ins (`_StandIns`), where `re` and Hyperscan read `\\w`, `\\b` and `\\s` alike."""

    FLAGS = (
        hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_ALLOWEMPTY
    )

    def __init__(self) -> None:
        self.patterns: list[str] = []
        self._database: hyperscan.Database | None = None
        self._stand_ins: _StandIns | None = None
        self._covered = 0
        self._building = threading.Lock()
        self._remembered = functools.lru_cache(maxsize=SEARCHES_REMEMBERED)(self._scan)

    def candidates_of(self, text: str) -> _Candidates | None:
        if len(text) > REMEMBERED_LINE_CHARS:
            return self._scan(text)
        return self._remembered(text)

    def register(self, patterns: tuple[str, ...]) -> int:
        first = len(self.patterns)
        self.patterns.extend(patterns)
        return first

    def database(self) -> tuple[hyperscan.Database | None, int]:
        """Built at the first line read, once every module's patterns are registered."""
        if self._covered:
            return self._database, self._covered
        with self._building:
            if not self._covered:
                patterns = list(self.patterns)
                with contextlib.suppress(hyperscan.error):
                    self._database = cached_database(
                        "rules",
                        [pattern.encode() for pattern in patterns],
                        list(range(len(patterns))),
                        [self.FLAGS] * len(patterns),
                    )
                self._stand_ins = _StandIns.of(patterns)
                self._covered = len(patterns)  # last: the check above reads it unlocked
            return self._database, self._covered

    def _scan(self, text: str) -> _Candidates | None:
        database, covered = self.database()
        if database is None:
            return None  # (a pattern Hyperscan cannot read: every one is tried)
        if self._stand_ins is None or (stood_in := self._stand_ins.line(text)) is None:
            return None
        reported: set[int] = set()
        database.scan(
            stood_in.encode(),
            match_event_handler=lambda pattern_id, *_: reported.add(pattern_id),
            scratch=scratch_for(database),
        )
        return _Candidates(covered, tuple(sorted(reported)))


_PREFILTER = _Prefilter()


def _any(*patterns: str) -> Alternatives:
    return Alternatives(patterns)


# Lines read both as failures (marking) and for their class, written once.
PEER_WAIT_TIMEOUT = r"^DeepEP [\w ()-]+ timeout\b"  # an all-to-all's kernel waiting on a peer
DISK_FULL = r"\b(?:No space left on device|Disk quota exceeded)\b"  # (a quota is a disk too)
EXEC_FORMAT = r"\b[Ee]xec format error\b"
# python given a script path that is not there ("python3: can't open file '/p/x'")
SCRIPT_MISSING = r"(?:^|/)python[\d.]*: can't open file '"
# (its "========= " is peeled off like any prefix)
COMPUTE_SANITIZER_FAULT = (
    r"^(?:=+ +)?(?:Invalid __\w+__ (?:read|write|atomic)\b|(?:Out-of-range|Misaligned) Shared or "
    r"Local Address\b)"
)
EARLYOOM = r"\blow memory! at or below SIG(?:TERM|KILL) limits\b"
LIBRARY_NOT_FOUND = r"\bld(?:\.\w+)?: cannot find -l"  # "ld: cannot find -lcurand"
DEVICE_ALLOCATION_REFUSED = r"\b[Dd]evice memory allocation of size \d+ failed"  # Vulkan's

# ENOENT's words and a shell's missing command, in the languages hosts print them in (each
# with its anchor in scanner.py).
_NO_SUCH_FILE = (
    r"(?:No such file or directory|No existe el archivo o el directorio"
    r"|Datei oder Verzeichnis nicht gefunden|Aucun fichier ou dossier de ce type"
    r"|Нет такого файла или каталога|没有那个文件或目录)"
)
_COMMAND_NOT_FOUND = r"(?:command not found|Befehl nicht gefunden)"
_SCRIPT_LINE = r"(?:line|línea|Zeile|ligne|строка|行) \d+:"
# a shell's own word that a command it was given is not there ("/bin/bash: line 1: nvidia-smi:
# command not found")
SHELL_COMMAND_NOT_FOUND = (
    rf"^(?:/(?:usr/)?bin/)?(?:ba|da|z)?sh: {_SCRIPT_LINE} \S+: {_COMMAND_NOT_FOUND}$"
)

# Ordered: the first class whose pattern matches the root-cause line wins.
# fmt: off
_NCCL_CALL_REFUSED = (
    r"'(?:invalid argument|named symbol not found|the operation cannot be performed in the "
    r"present state)'"
)
CLASS_RULES: list[tuple[str, Alternatives]] = [
    # Unambiguous whatever else the line says (NCCL's "Cuda failure 'out of memory'" too).
    ("oom_gpu", _any(
        r"(?:CUDA|HIP|Cuda) (?:failure (?:\d+ )?'|error: |runtime error: )?out of memory",
        r"(?:CUDA|HIP) out of memory",
        r"\bOut of memory error on GPU \d+\b",  # PaddlePaddle's allocator
        r"\bMODULE:PT_DEVMEM Allocation failed\b",  # Habana Gaudi's device memory
        # NCCL's own allocations ("NCCL WARN Failed to CUDA calloc 6291456 bytes")
        r"\bFailed to CUDA (?:c|m)alloc\b", r"\bCUDA_ERROR_OUT_OF_MEMORY\b",
        # MLX on Metal asked for one buffer larger than the device allows
        r"\bAttempting to allocate \d+ bytes which is greater than the maximum allowed buffer",
        # accelerate's find_executable_batch_size, halving the batch at each OOM down to none
        r"\bNo executable batch size found, reached zero\b",
        # cuBLAS unable to make its handle: its workspace found no memory on the device
        r"\bCUBLAS_STATUS_(?:NOT_INITIALIZED|ALLOC_FAILED)\b",
        r"\bcudaErrorMemoryAllocation\b",
        r"\bCUDA (?:ERROR|Error|error):? 2\b(?![\d.])",  # cudaErrorMemoryAllocation by number
        # RMM's allocator (cuDF, cuML, cuVS: "std::bad_alloc: out_of_memory: RMM failure at")
        r"\bbad_alloc: out_of_memory\b",
        # Vulkan's VK_ERROR_OUT_OF_DEVICE_MEMORY by number, SYCL's out of memory
        r"\bvk[A-Z]\w+ failed -2\b", r"\bPI_ERROR_OUT_OF_\w*MEMORY\b",
        # Level Zero's, Metal's and TensorRT's words for a device out of memory
        r"\bUR_RESULT_ERROR_OUT_OF_(?:RESOURCES|DEVICE_MEMORY)\b",
        r"\bZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY\b",
        r"\bError Code \d+: OutOfMemory\b",
        # PyTorch's allocator asking NVML why a cudaMalloc failed, and failing to ask
        r"\bNVML_SUCCESS == r INTERNAL ASSERT FAILED\b.*CUDACachingAllocator",
        r"\bNot enough memory for command submission\b",  # Mesa's amdgpu winsys (RADV)
        r"\bkIOGPUCommandBufferCallbackErrorOutOfMemory\b",
        DEVICE_ALLOCATION_REFUSED, r"\bErrorOutOfDeviceMemory\b",
        # too little free on the device for what it was told to take (others hold the rest)
        r"\b[Ff]ree (?:GPU |device )?memory\b.*\bis less than\b",
        # a quantized model that does not fit the card, so parts of it went to the CPU or disk
        r"\bMake sure you have enough GPU RAM to fit\b",
        r"\bsome modules offloaded to (?:the )?(?:cpu|disk)\b",  # accelerate's, for the same
        # too little left for what a warm-up or a batch needs ("Not enough memory to handle
        # 4096 prefill tokens", TGI's)
        r"\bNot enough (?:GPU |device )?memory to (?:handle|run|fit|serve)\b",
        # AWS Neuron's runtime on device memory ("TDRV:dmem_alloc_internal Failed to alloc
        # DEVICE memory: 536870912", "nrt_tensor_allocate status=4 ... Allocation Failure")
        r"\bFailed to alloc DEVICE memory\b", r"\bnrt_tensor_allocate\b.*Allocation Failure",
        r"\bcan't (?:allocate|malloc) \d+ Bytes (?:of )?memory on device",  # ggml's SYCL backend
        r"\bVK_ERROR_OUT_OF_DEVICE_MEMORY\b",  # a Vulkan driver's own word (Mesa's)
        # early sglang's memory pool check, its typo included
        r"\bNot enought? memory\. Please try to increase --mem-fraction-static\b",
        # FlashInfer's workspace too small for a kernel's temporary buffer
        r"\bFailed to allocate memory for \w+ with size \d+ and alignment \d+ in AlignedAllocator",
        # TVM's device allocator (MLC LLM's runtime): "Failed to allocate 99121664 bytes with
        # alignment 16 bytes."
        r"\bFailed to allocate \d+ bytes with alignment \d+ bytes\b",
        r"\bfail(?:ed)? to allocate memory \d+ bytes\b",  # PhysX's GPU allocator
        # ggml's buffer allocation that came back empty, asserted on
        r"\bbackend buffer base cannot be NULL\b",
        # the driver refusing physical memory for a symmetric heap (NVSHMEM's)
        r"\bcuMemCreate failed\b",
        # RAPIDS' device memory resource (a `MemoryError` by its name, the GPU's by its words)
        r"\bout_of_memory: CUDA error\b",
        r"\bCUDA error:? 2(?: at\b|$)",  # the runtime's code 2, cudaErrorMemoryAllocation
    )),
    # A cluster manager killing for host memory, whatever its exception is named
    # (Ray's "OutOfMemoryError: Task was killed due to the node running low on memory").
    ("oom_host_killed", _any(
        r"[Kk]illed\b.*\bdue to (?:the node running low on memory|memory|OOM)",
        r"\bnode running low on memory", r"\bOOMKilled\b",
        # ggml's host buffer ("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate")
        r"cpu_buffer\w*: failed to allocate\b", r"\bggml_aligned_malloc: insufficient memory\b",
        # numpy's host allocation ("_ArrayMemoryError: Unable to allocate 47.4 GiB for an array")
        r"\bUnable to allocate [\d.]+ [KMGT]i?B for an array\b",
        # a DataLoader worker dying of the host's shared memory (/dev/shm) or the OOM killer
        r"\bDataLoader worker \(pid \d+\) is killed by signal: (?:Bus error|Killed)",
        r"\binsufficient shared memory \(shm\)",
        r"\bunable to allocate shared memory\(shm\)",  # torch's own words for a full /dev/shm
        r"\bLLVM ERROR: out of memory\b",  # a compiler's host allocation (before LLVM's others)
        r"^TERM_MEMLIMIT: job killed\b",  # LSF's word on a job over its memory limit
        # nnU-Net's preprocessing pool on a worker gone (its own words: "killed by your OS due
        # to running out of RAM", the likelier cause when no error precedes it)
        r"\bSome background worker is 6 feet under\b",
    )),
    # What a graph capture forbids, even in NCCL's words ("NCCL WARN Cuda failure 'operation
    # not permitted when stream is capturing'").
    ("cuda_graph", _any(
        r"\bdependency created on uncaptured work\b", r"\bnot permitted when stream is capturing",
        r"\bCUDA graphs must be captured on a non-default stream\b",
        r"\bprevious error during capture\b",
        # work left unjoined or memory freed while a capture was under way
        r"\bcapturing stream has unjoined work\b", r"\bcudaErrorStreamCaptureUnjoined\b",
        r"\bcaptures_underway\b",
    )),
    # Device ordinals and visible devices are configuration, even worded as a CUDA error.
    # A linker that cannot write what it linked ("Permission denied") or whose offsets
    # overflow: a build that failed, whatever reason it gives.
    ("import_or_version", _any(
        r"ld(?:\.\w+)?: cannot open output file ", r"relocation truncated to fit: ",
        # a module without the name asked of it, whatever the name says (torch built without
        # NCCL: "module 'torch._C._distributed_c10d' has no attribute 'ProcessGroupNCCL'")
        r"\bAttributeError: module '[\w.]+' has no attribute\b",
        # a compiler a build or a JIT needs, missing where it was looked for
        r"No such file or directory: '[^']*/(?:nvcc|hipcc|ninja|g\+\+|gcc|clang\+\+)'",
        # pybind11 refusing a call whose signature the compiled extension does not have
        r"\bincompatible function arguments\. The following argument types are supported\b",
        # a build with no make or ninja installed for CMake's generator
        r"\bCMake was unable to find a build program\b",
        # a driver older than the toolkit that wrote the PTX it is given to load
        r"\bCUDA_ERROR_UNSUPPORTED_PTX_VERSION\b",
        # torch built without the kernel an op needs ("_convert_weight_to_int4pack_cuda is not
        # available for build")
        r"\bis not available for build\b",
        # a feature this Python's version lacks ("Dynamo is not supported on Python 3.12+")
        r"\bis not supported on Python \d+\.\d+",
        # a compiler (or Metal's, at run time) missing a header the build needs
        r"\bfatal error: '[^']+' file not found",
        # torch's extension build, its compiler's errors above or cut off
        r"\bError compiling objects for extension\b",
        # a library's class without a member its caller's version expects
        r"\bAttributeError: type object '[\w.]+' has no attribute\b",
        # a kernel module built for another kernel (a driver container's, on an upgraded host)
        r"^modprobe: (?:ERROR|FATAL): could not insert '[\w-]+': ",
    )),
    ("config_or_args", _any(
        SCRIPT_MISSING,
        # a file opened by an empty name: the setting that should name it was left empty
        r"\bfailed to open '': ",
        # a command's flag run as a command of its own: the line continuation before it lost
        r": --[\w-]+: command not found",
        # a registry that refused the credentials (or their absence) pyxis or enroot gave it
        r"\breturned error code: 40[13]\b",
        # the NVIDIA Container Toolkit on a host set up otherwise (no CLI, a foreign ldconfig,
        # a mount it cannot find)
        r"\bnvidia-container-cli: (?:container|ldcache) error: ",
        r'\bexec: "[^"]*/nvidia-container-cli": stat\b',
        r"invalid device ordinal", r"No CUDA GPUs are available", r"Duplicate GPU detected",
        # PaddlePaddle's word for a device ordinal past the GPUs it sees ("Invalid CUDAPlace(1),
        # must inside [0, 1), because GPU number on your machine is 1")
        r"\bInvalid CUDAPlace\(\d+\)",
        r"\bCUDA_ERROR_NO_DEVICE\b", r"\bcudaErrorNoDevice\b", r"\bno CUDA-capable device\b",
        r"\bFound no NVIDIA driver on your system\b",  # torch on a host without the driver
        # NVML in a container not given the driver's libraries, or a device it lost access to
        r"\bFailed to initialize NVML(?:: (?:could not load NVML library|Unknown Error))?\.?$",
        r"\bCannot init NVML library; err: ERROR_LIBRARY_NOT_FOUND\b",  # (dcgm-exporter's)
        # a collective called in a process no launcher set up (run without torchrun)
        r"\bDefault process group has not been initialized\b",
        r"\b(?:TPU|GPU|device) is already in use by another process\b",
        # a rank's binding that Cray MPICH's NIC policy cannot use
        r"\bRank \d+ is not confined to a single NUMA node\b",
        r"\bColumn \S+ not in the dataset\b",  # datasets' table asked for a column it lacks
        # Hydra refusing a command line's override of a config
        r"^Could not override '", r"^Ambiguous value for argument '",
        # a shell command with a quote left open (a pasted URL's stray quote)
        r"\bunexpected EOF while looking for matching\b",
        # a model or file path given that is not there
        r"\b(?:[Mm]odel )?[Pp]ath (?:to the model )?does not exist\b",
        # NCCL's bootstrap finding no interface NCCL_SOCKET_IFNAME allows (worded as its WARN)
        r"no socket interface found",
        # a checkpoint saved on a device this machine does not have
        r"\bAttempting to deserialize object on CUDA device \d+ but\b",
        # several ranks mapped to one GPU
        # (not a tensor on another device than its operation's: a program's own bug)
        r"\bboth on CUDA device\b", r"(?<!to be )\bon the same (?:GPU|CUDA device|device)\b",
        # a model shape the kernels do not implement, whatever GPU it runs on
        r"[Uu]nsupported head[ _](?:dim|dimension|size)",
        r"\bhead[ _](?:dim|dimension|size)s?\b.*\bnot (?:be )?supported",
        r"\bsupports? (?:only )?head[ _](?:dim|dimension|size)",
        r"\bhead[ _]dim\w* must be\b",  # "The head dim must be <= 256 and a multiple of 8"
        # Lightning's own word for a setting that cannot work here ("You requested gpu: [0, 1]")
        r"\bMisconfigurationException\b",
        # Uvicorn given an application it cannot import
        r"\bError loading ASGI app\b",
        # a local path that is not there, taken for a hub repository's id
        r"Repo id must be in the form",
        # a path argument given something that is no path
        r"expected str, bytes or os\.PathLike object",
        # a port another process holds, or a network the host does not have
        r"\bcouldn't bind\b", r"\b(?:[Ff]ailed|[Uu]nable) to bind\b", r"\blisten tcp\b.*\bbind\b",
        r"\bOnly one usage of each socket address\b", r"Address family not supported",
        # GPUs held by another process in exclusive mode, or none visible to the runtime
        r"device\(s\) is/are busy or unavailable", r"\bNo visible GPU devices\b",
        r"\bFailed to infer device type\b", r"\bDevice string must not be empty\b",
        # a collective on tensors of a device no backend was set up for (gloo for the CPU)
        r"\bNo backend type associated with device type\b",
        # CUDA touched in a forked child (a DataLoader worker): the start method is the setting
        r"\bCannot re-initialize \w+ in forked subprocess\b",  # CUDA's, an NPU's, XPU's
        # a device the process was told to use that its visible devices do not hold
        r"\bSetDevice\b.*\berror code\b", r"\bInvalid device ID\b",
        r"\bdevice < num_gpus\b",  # PyTorch's check of a device index against those visible
        # the hub switched off by the environment (HF_HUB_OFFLINE)
        r"\bOfflineModeIsEnabled\b",
        r"\bDevice-type mismatch\b|\bDevice acquire failed\b",  # Gaudi's synapse runtime
        # a user's disk quota (a cache under $HOME): the setting is where it writes
        r"\bDisk quota exceeded\b", r"\b[Ii]nsufficient disk\b",
        # a service the program needs that is not running (Dynamo's etcd and NATS)
        r"\bFailed to connect to (?:etcd|nats|NATS)\b",
        # DeepSpeed's batch sizes that do not multiply out; DDP's unused parameters
        r"\bCheck batch related parameters\b",
        r"\bExpected to have finished reduction in the prior iteration\b",
        # an operation with no kernel for the dtype it was given ("not implemented for
        # 'BFloat16'"): the precision chosen is the setting
        r"\bnot implemented for '\w+'",
        # Open MPI's runtime that cannot start in this environment
        r"\b(?:orte_init|opal_init) failed\b",
        # a file named where there is none ("failed to open GGUF file '/models/x.gguf'")
        r"\bfailed to open (?:\w+ )?file\b",
        # a store or server that cannot listen where it was told to (a port another holds)
        r"socket has failed to (?:listen|bind)",
        r"\bport\b.*\b(?:used|using) by (?:an)?other process\b",  # HCCL's
        # an assertion naming what a feature needs ("microbatch overlap requires even batch_size")
        r"\bAssertionError: .*\brequires\b(?! (?:the )?[\w.-]+ package\b)",
        # a serving backend the model's configuration names that this install lacks
        r"\bunable to find backend library\b",
        # a shell script under `set -u` reading a variable nobody set
        r"\w: unbound variable$",
        # shapes the model's settings give that a layer or kernel cannot take: a matmul's,
        # SDPA's with no kernel for these inputs, Marlin's tiles for this split of the weights
        r"\bmat1 and mat2 shapes cannot be multiplied\b", r"\bNo available kernel\. Aborting\b",
        r"\bInvalid thread config: thread_m_blocks\b",
        # a flag that another flag rules out ("VLLM_USE_V1=1 is not supported with --task ...")
        r"\bis not supported with --[\w-]+",
        # where it writes: a read-only mount, a system Python pip may not touch
        r"\bRead-only file system\b", r"\bexternally-managed-environment\b",
        # NVML given a device the visible devices do not map
        r"\bNVMLError_InvalidArgument\b",
        # an environment variable a launcher reads that nobody set ("KeyError: 'SLURM_NTASKS'")
        r"\bKeyError: '[A-Z][A-Z0-9]*_[A-Z0-9_]+'$",
        # inputs of two dtypes the code was given, a chat template that does not parse, and
        # torch.compile's recompile limit under fullgraph (its settings, or the shapes fed)
        r"\b(?:to|must) have the same dtype\b", r"\bTemplate(?:Syntax)?Error\b",
        r"\b[Rr]ecompile(?:_| )limit (?:exceeded|reached)\b",
        # the driver's library not visible (a container started without its GPUs)
        r"\blibcuda\.so(?:\.\d+)?: cannot open shared object file",
        # a spawned child re-running a script with no main guard
        r"\bAn attempt has been made to start a new process before\b",
        # Docker's daemon refusing a start for its host's setup: no GPU driver or runtime
        # registered (the Container Toolkit), or a registry that wants credentials
        r"\bError response from daemon: .*(?:could not select device driver|unknown or invalid "
        r"runtime name|unauthorized: |pull access denied)",
        # a library that finds no accelerator it supports on this host (no GPU visible)
        r"\bcannot find any (?:torch )?accelerator\b", r"\bonly works on NVIDIA\b",
        r"\bYou need a GPU\b", r"\b[Nn]o GPUs? (?:were |was )?(?:found|available|detected)\b",
        # credentials: none given, or expired; a path it may not write; the open-files limit
        r"\bnot logged in\b", r"\bExpiredToken\b", r"\btoken\b.*\bis expired\b",
        r"\bapi_key not configured\b",  # W&B's, in a job with no terminal to ask on
        # Triton finding no GPU driver to compile for (none visible); a container's entry
        # point that is not on its PATH
        r"\b0 active drivers \(\[\]\)", r"\bexecutable file not found in \$PATH\b",
        r"\bUnable to write to\b", r"\bToo many open files\b",
    )),
    # Kernel faults, wherever they surface (an NCCL call, a watchdog's report, graph capture).
    ("cuda_runtime", _any(
        r"illegal memory access", r"\ban illegal address\b", r"misaligned address",
        r"\bCUresult error\b(?!.*\bout of memory\b)",  # a driver-API call an extension checked
        COMPUTE_SANITIZER_FAULT,
        r"\ban illegal instruction was encountered\b",  # CUDA's, not a host's SIGILL
        # cuBLAS refusing an argument ("On entry to SGEMM parameter number 10 had an illegal
        # value")
        r"\bOn entry to \w+ +parameter number \d+\b",
        # compute-sanitizer's findings in a kernel
        r"\bRace reported between\b", r"\bInvalid __(?:global|shared|local)__ (?:read|write)\b",
        # a launch's grid or block the kernel cannot take (cudaErrorInvalidConfiguration)
        r"\binvalid configuration argument\b",
        r"(?i)device-side assert", r"CUDA_ERROR_ILLEGAL_ADDRESS", r"cudaErrorIllegalAddress",
        # NCCL's CUDA check on anything but memory ("Cuda failure 999 'unknown error'"), peer
        # mappings or NCCL's own calls refused (nccl_comm's, below) or a graph capture
        # (cuda_graph's)
        r"\bCuda failure\b(?!.*\b(?:peer (?:access|mapping)|uncaptured|captur|not supported))"
        rf"(?!.*{_NCCL_CALL_REFUSED})",
        # ROCm's runtime on a kernel's page fault, and on the hang that follows
        r"\bMemory access fault by GPU\b", r"\bHW Exception by GPU\b",
        r"^Memory Fault Error$",  # (the HIP runtime's own record of that fault)
        # Ascend's runtime on a kernel's fault in its vector or cube cores
        r"\bthere is an (?:exception of )?ai(?:vec|core|cube) error\b",
        # the GPU's own memory failing, wherever it surfaced (a custom all-reduce kernel)
        r"\buncorrectable ECC error\b",
        # a GPU the driver lost (a Vulkan or Metal context reset): a fault, not its memory
        r"\bdevice lost\b", r"\bErrorDeviceLost\b", r"\b(?:VK_)?ERROR_DEVICE_LOST\b",
        r"\bvk[A-Z]\w+ failed -4\b",  # a Vulkan call's result, VK_ERROR_DEVICE_LOST by number
        # ...or DirectX's (DXGI_ERROR_DEVICE_HUNG: "The GPU will not respond to more commands")
        r"\bThe GPU will not respond to more commands\b",
        # the amdgpu kernel driver on a compute process's page fault
        r"\bamdgpu: \[\w+hub\] page fault\b", r"\bamdgpu: MES failed to respond\b",
        # cuDNN finding no kernel that runs the convolution or attention asked of it
        r"\bGET was unable to find an engine to execute this computation\b",
        # Metal's command buffer failing on a GPU fault or hang (its out of memory is oom_gpu's)
        r"\bkIOGPUCommandBufferCallbackError(?!OutOfMemory)\w+",
        r"\[METAL\] Command buffer execution failed: (?!Insufficient Memory)",
        r"-\[_?MTLCommandBuffer\b.*\bfailed assertion\b",  # Metal's API validation
        # Level Zero's errors but running out (oom_gpu's, above): "UR_RESULT_ERROR_DEVICE_LOST"
        r"\bUR_RESULT_ERROR_(?!OUT_OF_)\w+",
        r"\bSegmentation fault from GPU\b",  # Intel's driver on a kernel's page fault
    )),
    # A collective timing out in NCCL's watchdog is a communication fault, not a hang; vLLM's
    # custom all-reduce (its own collective over CUDA IPC) failing is one too.
    # NCCL's own warnings name a transport fault even when they say "timed out".
    ("nccl_comm", _any(
        r"Watchdog caught collective operation timeout", r"\bNCCL WARN\b",
        # NCCL's bootstrap sockets, in its "Last error:" detail ("socketPollConnect poll()
        # returned 1, no POLLOUT events")
        r"\bsocket(?:PollConnect|StartConnect|FinalizeAccept|Progress)\b",
        # NCCL's own CUDA call refused (registering a buffer, an NVLS multicast object, a
        # symbol of its kernels): the library's setup on this system, not a kernel's fault
        rf"\bCuda failure (?:\d+ )?{_NCCL_CALL_REFUSED}",
        # TensorFlow's NCCL all-reduce op failing ("OP_REQUIRES failed at nccl_ops.cc:104 : ...")
        r"\bOP_REQUIRES failed at nccl_\w+\.cc:\d+",
        # NVSHMEM's transport between two GPUs that cannot reach each other
        r"\bPeer GPU \d+ is not accessible\b",
        # NCCL's (RCCL's) topology search finding no path back between two devices
        r"\bFailed to find reverse path from remNode\b",
        # gloo's collectives: a mismatch between ranks, a peer gone
        r"\b[Gg]loo\b.*(?:[Mm]ismatch|preamble|[Cc]onnection (?:closed|reset) by peer)",
        # ranks calling different collectives (TORCH_DISTRIBUTED_DEBUG=DETAIL)
        r"mismatch between collectives", r"\bCollectiveFingerPrint\b",
        # torch's symmetric memory exchanging handles between ranks
        r"\b[Ss]ymm(?:etric)?_?[Mm]em\w*\b.*\b(?:rendezvous|[Rr]endezvous)",
        r"\b[Rr]endezvous\b.*\b[Ss]ymm(?:etric)?_?[Mm]em",
        # a collective's watchdog or heartbeat monitor giving up
        r"\bNCCL watchdog\b", r"ProcessGroupNCCL.*(?:[Ww]atchdog|[Hh]eartbeat)",
        r"\bdetected by watchdog at work\b",
        r"[Hh]eartbeat monitor timed out", r"\bcollective operation timeout\b",
        r"\bSome NCCL operations have failed or timed out\b",  # (the watchdog, on its way down)
        # HCCL, Ascend's collective library: its functions, communicators and tasks failing
        r"\bHCCL function error\b", r"\bHCCL\b.*\bComm\w*\b.*\b(?:ERROR|errNo)",
        r"\bhccl\b.*\btask timeout\b",
        # oneCCL, Intel's collective library (torch-ccl, its XPU backend)
        r"\|CCL_ERROR\|", r"\boneCCL: ",
        r"\bcustom_all_reduce\.cuh?:\d+",
        # DDP's check that every rank holds the same parameters
        r"\bappears not to match sizes of the same param in process\b",
        r"\bDeepEP\b.*\btimeout\b",  # an expert-parallel all-to-all's peer that never came
        # GPUs that cannot map each other's memory (peer-to-peer), and NIXL's KV transfers
        r"\bpeer access is not supported\b", r"\bpeer mapping resources exhausted\b",
        r"\bNIXL_ERR_\w+",
        # an RDMA transport (a KV-transfer engine's, NVSHMEM's) failing to set up: verbs,
        # memory registration, completion queues
        r"\b(?:rdma|ibverbs|ibrc|ibgda)\w*\.(?:cpp|cc|c|cu):\d+", r"\bibv_\w+\b.*\bfail",
        r"\bFailed to register memory\b", r"\b[Mm]ooncake memory registration failed\b",
        r"\bmlx5_\d+\b",  # a ConnectX port named by its verbs device (glog's file peeled off)
        r"\[jaccl\] \w+ failed\b",  # MLX's distributed backend over RDMA
        # UCX, the transport under NIXL and others
        r"\bUCX\s+ERROR\b",
    )),
    # A toolchain older than the code it is given (before the arch rules' "ptxas fatal").
    ("import_or_version", _any(
        r"Unsupported \.version \d", r"\bcurrent version is\b",
        r"\bUnable to load \w+ library\b",  # XLA without NCCL's library, whatever it says next
        # CUDA's forward-compatibility package on a GPU it does not cover (CUDA error 804)
        r"\bforward compatibility was attempted on non supported HW\b",
        # a build that cannot start or finish: CMake without a package, a compiler killed,
        # PyTorch's extension loader without ninja, an operator no build registered
        r"\bCould NOT find \w+", r"\bptxas terminated\b", r"\bCompiler killed by signal\b",
        # a kernel Triton compiled that the driver cannot load (Triton's ptxas newer than the
        # driver), and cuBLAS refusing a plain GEMM's arguments (another CUDA's cuBLAS loaded)
        r"\bTriton Error \[CUDA\]: device kernel image is invalid\b",
        r"\bCUBLAS_STATUS_INVALID_VALUE when calling `cublas\w*[Gg]emm",
        # Windows' loader missing a DLL or an entry point in one (0xC0000135, 0xC0000139)
        r"\b0x[Cc]00001(?:35|39)\b", r"(?<!\d)(?:-107374151[15]|32212257(?:81|85))\b",
        # a build's compiler that is not there ("sh: line 1: /opt/rocm/bin/hipcc: No such file")
        r"\b(?:hipcc|nvcc|gcc|g\+\+|c\+\+|clang\+*|cc|ninja|cmake): (?:No such file or directory"
        r"|command not found)",
        r"(?:\bdyld\[\d+\]: |^)(?:Library not loaded|Symbol not found): ",  # macOS's loader
        r"^Undefined symbols for architecture \w+:", r"\bUNREACHABLE executed at\b",
        r"\bNinja is required to load C\+\+ extensions\b",
        # pip unable to build a dependency's wheel (its compiler, its system libraries)
        r"\bCould not build wheels for\b", r"\bFailed to build installable wheels\b",
        # pip finding no release of a pinned version for this platform or index
        r"\bCould not find a version that satisfies the requirement\b",
        r"\bNo matching distribution found for\b",
        # a resolver's proof that the requirements cannot all be met (uv's, PubGrub's)
        r"\bwe can conclude that\b.*\b(?:cannot be used|are unsatisfiable)\b",
        r"^error\[E0432\]: unresolved import\b",  # rustc on a crate version without the item
        r"\bCould not run '[\w:.]+' with arguments from the '\w+' backend\b",
        # a custom op called with another version's schema
        r"\bexpected at most \d+ argument\(s\) but received \d+ argument\(s\)",
        # a JIT build with no compiler to run ("Could not find nvcc and default cuda_home=...")
        r"\bCould not find nvcc\b", r"\bCUDA_HOME environment variable is not set\b",
        r"\b(?:can't|cannot|could not|unable to) find (?:a |the )?"
        r"(?:Rust|C\+\+|C|CUDA|HIP) compiler\b",
        # Windows' loader on a library or one of its dependencies (ctypes' words)
        r"\bCould not find module '[^']+\.(?:dll|pyd|so)' \(or one of its dependencies\)",
        # unittest.mock patching a name the installed library no longer has
        r"\bdoes not have the attribute '\w+'",
        # vLLM's registry importing a model's class in a subprocess that failed
        r"\bModel architectures? \[.*\] failed to be inspected\b",
        # a package a feature needs ('Form data requires "python-multipart" to be installed.',
        # "Ulysses Attention and Ring Attention requires xfuser package.")
        r"\brequires \S+ to be installed\b", r"\brequires (?:the )?[\w.-]+ package\b",
        # a compiler's own backend giving up on the code ("fatal error: error in backend: Cannot
        # select: ...")
        r"\bfatal error: error in backend\b",
        # a name a library binds only where an optional import succeeded
        r"^NameError: name '\w+' is not defined",
    )),
    # a kernel the driver's watchdog ended (a GPU that also drives a display): the kernel's fault
    ("cuda_runtime", _any(
        r"\bthe launch timed out and was terminated\b", r"\bcudaErrorLaunchTimeout\b",
    )),
    ("timeout_or_hang", _any(
        r"\b(?:Did not|didn't) receive (?:a )?response from\b",
        r"\b\w*Timeout\w*Error\b", r"\bCANCELLED AT\b",  # a scheduler ending a job that overran
        # torch.distributed's monitored barrier naming the rank that never arrived
        r"\bmonitoredBarrier\b",
        r"\b[Tt]imed? ?out\b(?!.*\bout of memory)", r"\bdeadlock", r"heartbeat.*(?:missed|timeout)",
        r"\bDEADLINE_EXCEEDED\b",
        # a shell on a job killed by the alarm it set against a hang (SIGALRM)
        r"\bline \d+:\s+\d+\s+Alarm clock\b",
    )),
    ("unsupported_arch", _any(
        r"no kernel image is available", r"No supported CUDA architectures",
        # (cudaErrorUnsupportedArch's words: a kernel that needs a newer GPU than this)
        r"\brequires an architectural feature absent from the device\b",
        # a binary or an image built for another CPU (an amd64 image run on arm64)
        EXEC_FORMAT,
        # Ascend's operators without a kernel for a dtype or a shape on this NPU
        r"\bshould be in dtype support list\b", r"\bprebuild failed, not support\b",
        r"\bno image found in image index for architecture\b",
        # a compiler's error naming the GPU it compiles for (code written for other targets)
        r"\berror: .*\b(?:gfx\d{2,4}[a-z]?|sm_\d{2,3}a?)\b",
        # xformers without a kernel for this GPU's capability and the inputs' dtype
        r"\bNo operator found for `memory_efficient_attention\w*`",
        r"\bno device code compatible with CUDA arch\b",
        # vLLM's choice among its kernels, each refusing this GPU's capability
        r"\b[Ff]ailed to find a kernel that can implement\b",
        # Triton's bundled ptxas failing to generate code for this GPU
        r"\bPTXAS error\b", r"\bPTX codegen error\b",
        r"\b[sS][mM][_ ]?\d{2,3}a?\b.*not (?:be )?supported",
        r"not supported.*\b[sS][mM][_ ]?\d{2,3}", r"device kernel image is invalid",
        r"\bdoes not support \.target sm_\d+",  # ptxas on a PTX ISA older than the GPU
        r"\bnot supported on CUDA arch\b",  # Triton's fp8e4nv below sm_89
        # Triton refusing a GPU below its minimum ("... is too old to be supported by the triton
        # GPU compiler"), and OpenCL's CL_INVALID_WORK_GROUP_SIZE by its number (CLBlast's)
        r"\btoo old to be supported by the triton\b", r"\bOpenCL error: \w+: -54\b",
        r"\bhipErrorInvalidImage\b", r"\bhipErrorNoBinaryForGpu\b",
        # Triton's dot below the smallest tile this GPU's matrix units take ("Input shapes
        # should have M >= 1, N >= 1 and K >= 32", 8-bit operands on Hopper)
        r"\bInput shapes should have M >= 1, N >= 1 and K >= \d+",
        # TensorRT's kernel library without this GPU's capability ("Unsupported SM: 0x809")
        r"\bUnsupported SM: 0x[0-9a-fA-F]+",
        r"\bhipErrorInvalidDeviceFunction\b",
        # a precision the GPU has no units for ("FP8 precision require hardware with FP8 support",
        # "Current CUDA Device does not support bfloat16")
        r"\brequires? hardware with \w+ support\b",
        r"\b(?:[Dd]evice|GPU|setup)\b.*\b(?:does not|doesn't) support "
        r"(?:bf16|bfloat16|fp8|float8)\b",
        # a kernel built for another capability ("SM89 kernel is not available. Make sure you
        # GPUs with compute capability 8.9.")
        r"\bkernel is not available\b.*\bcompute capability\b",
        r"--gpu-name=sm_\d+", r"Unsupported gpu architecture", r"CUDA_ERROR_NO_BINARY_FOR_GPU",
        r"NoBinaryForGpu", r"Unable to find code object",
        r"Unknown recipe",
        r"compute ?[Cc]apability.*(?:not supported|at least|or (?:higher|newer))",
        # a binary built for another GPU ("Runtime compute cap 120 is not compatible with
        # compile time compute cap 80", TEI's Candle backend)
        r"\bcompute cap\w* \d+ is not compatible with\b",
        # a code generator's target this toolkit cannot emit ("PTX version 8.8 does not
        # support target 'sm_107a'")
        r"\bdoes not support target '?(?:sm|gfx|compute)_?\d",
        r"(?:only )?supported (?:only )?on GPUs with compute capability",
        r"only supports? \w+ GPUs", r"not supported on (?:this|your) GPU",
        r"unsupported (?:GPU|CUDA) arch", r"ptxas(?:-\w+)? fatal",
        r"cudaErrorNoKernelImageForDevice",
        r"[Nn]o (?:suitable|compatible|feasible|valid) kernel",
        r"arch(?:itecture)? .*(?:not|un)supported", r"\b[Uu]nsupported compute capabilit",
        # a kernel's feature the GPU generation it runs on lacks ("SM100 forward with
        # head_dim=256 does not support aux_tensors")
        r"\b[sS][mM]_?\d{2,3}a?\b.*\bdoes(?: not|n't) support\b",
        r"[Uu]nsupported (?:\w+ )?arch(?:itecture)?\b", r"invalid device function",
        # a JIT's backend that cannot lower the kernel for this target
        r"LLVM ERROR\b",
        r"out of resource: (?:shared memory|threads).*Hardware limit",
        # ggml's backend without the operation for a tensor placed on it (Vulkan, OpenVINO,
        # Metal): "pre-allocated tensor ... in a buffer (Vulkan0) that cannot run the operation"
        r"\bin a buffer \([\w-]+\) that cannot run the operation\b",
        r"\berror: unsupported op '",
        # Inductor finding no Triton config that fits this GPU (its shared memory, its PTX)
        r"\bNo valid triton configs\b",
        # ROCm's runtime finding no code object of a kernel for this GPU
        r"\bhipErrorInvalidImage\b|\bhipError_t\(98\)",
        # a kernel asking more registers or threads a block than this GPU has
        r"\btoo many resources requested for launch\b", r"\bLAUNCH_OUT_OF_RESOURCES\b",
        r"\bcudaErrorLaunchOutOfResources\b",
        r"[Ss]hared memory size limit exceeded", r"\bCUBLAS_STATUS_NOT_SUPPORTED\b",
        r"\bNo compatible code objects found for\b",
        # FlashInfer finding no tile of its kernel that fits this GPU's shared memory
        r"\bUnsupported max_mma_kv: 0\b",
        # a compiler without the FP8 type on this target ("Unsupported conversion from
        # 'f8E4M3FN' to 'f16'", Triton's on GPUs before sm_89)
        r"\bUnsupported conversion from '?f8",
        r"(?:shared memory|smem)\b.*\b(?:exceeds|over|larger than|more than)\b"
        r".*\b(?:limit|maximum)",
        # ptxas on a kernel whose shared memory this GPU cannot give ("Entry function '...'
        # uses too much shared data (0x18004 bytes, 0xc000 max)")
        r"\buses too much shared data\b",
        r"\bgfx\d{3,4}\w*\b.*not supported|not supported.*\bgfx\d{3,4}",
        # rocBLAS with no Tensile kernels for this GPU ("... Illegal seek for GPU arch : gfx1103")
        r"\bfor GPU arch\s*:\s*gfx\w+",
        # rocBLAS finding no device its Tensile kernels were built for
        r"\bCould not initialize Tensile host\b",
        # a ROCm library's kernels for this GPU not shipped ("Cannot read .../hipsparselt/
        # library/TensileLibrary_lazy_gfx950.dat: No such file or directory")
        r"\bTensileLibrary\w*_gfx\w+\.(?:dat|co)\b",
        # a kernel's minimum compute capability over this GPU's ("Min capability: 75. Current
        # capability: 70.")
        r"\bMin(?:imum)? capability: \d+",
        # a launch over the device's work-group limits (SYCL's PI_ERROR_INVALID_WORK_GROUP_SIZE)
        r"\bwork-group\b.*\bcannot exceed\b", r"\bINVALID_WORK_GROUP_SIZE\b",
        # a cooperative kernel's grid over what this GPU can hold resident at once
        r"\btoo many blocks in cooperative launch\b",
        # a ggml backend without a kernel for an operation ("error: op not supported node_1586
        # (FLASH_ATTN_EXT)")
        r"\berror: op not supported\b",
        # Metal's compiler on a kernel over this GPU's registers
        r"\bexceeds available temporary registers\b",
        # a Vulkan device without an extension or a feature the backend needs
        r"\bError(?:Extension|Feature)NotPresent\b",
        # HIP's code object without the kernel for this GPU ("Cannot find Symbol with name: ...")
        r"\bCannot find Symbol with name\b",
        r"not supported (?:in|on|for) this (?:architecture|arch\b|GPU|device)",
        # a CPU build for an instruction set this host lacks (not CUDA's kernel fault)
        r"invalid opcode", r"(?<!an )\b[Ii]llegal instruction\b(?! was encountered)", r"\bSIGILL\b",
        r"非法指令",  # a Chinese locale's shell: "非法指令 (核心已转储)"
        r"\billegal hardware instruction\b",  # zsh's word for SIGILL, and Windows' code
        r"\b0x[Cc]000001[Dd]\b", r"(?<!\d)(?:-1073741795|3221225501)\b",
        # SYCL's runtime without this device's kernel in the binary
        r"\bNo kernel named \S+ was found",
        r"\bsignal 4\b",
        # an engine plan built for another GPU ("expecting compute 9.0 got compute 8.9")
        r"generated on an incompatible device", r"expecting compute \d",
        # kernels that exist only for some architectures: flash attention (sm_80+), CUTLASS
        # runners whose every kernel config fails to initialize on this GPU
        r"requires [Ff]lash[ -]?[Aa]ttention", r"Failed to initialize cutlass",
        # a feature limited to named GPU generations ("cannot be enabled except on Ada or Hopper")
        r"\b(?:except|only) on\b.*\b(?:Volta|Turing|Ampere|Ada|Hopper|Blackwell)\b",
        # a kernel or runtime not written for a named GPU generation or accelerator ("block
        # scaled fp8 gemm is not implemented for Blackwell", "support for Ascend910 is not
        # implemented")
        r"\bnot (?:yet )?(?:implemented|supported) (?:for|on) (?:the )?"
        r"(?:Volta|Turing|Ampere|Ada|Hopper|Blackwell)\b",
        r"\bsupport for (?:Ascend\w*|gfx\w+|sm_?\d+\w*) is not (?:yet )?(?:implemented|supported)",
        # a feature with kernels for some device kinds only ("FlexAttention is only supported on
        # CUDA, CPU or HPU devices. Found input tensors on npu device.")
        r"\bis only supported on (?:\w+, )*\w+ (?:or \w+ )?devices\b",
    )),
    ("oom_gpu", _any(
        r"CUDA out of memory", r"OutOfMemoryError", r"insufficient GPU memory",
        r"CUBLAS_STATUS_ALLOC_FAILED", r"cudaErrorMemoryAllocation",
        r"cudaMalloc\w*\(.*out of memory", r"CUDA error: out of memory",
        r"(?:GPU|device) memory.*(?:not enough|insufficient|exhausted)",
        r"No available memory for the cache blocks", r"out of memory.*(?:GPU|cuda|device)",
        r"(?:GPU|cuda|CUDA).*out of memory",
        r"(?:[Ff]ailed|[Uu]nable) to allocate (?:\w+ )*memory for (?:the )?KV ?cache",
        r"(?:[Ff]ailed|[Uu]nable) to allocate CUDA\d* buffer",
        r"Not enough memory\. Please try to increase --mem-fraction-static",
        # vLLM V1's check of the KV cache against max_model_len
        r"To serve at least one request with the model's max seq len",
        r"larger than the available KV cache memory",
        # A KV cache too small for the context length is GPU memory too (PRODUCT.md's rule).
        r"larger than the maximum number of tokens that can be stored in KV cache",
        r"RESOURCE_EXHAUSTED: (?:Out of memory|Failed to allocate)", r"\bOOM when allocating",
        r"ResourceExhaustedError",
        # XLA's stream executor on CUDA or ROCm ("failed to allocate 154.06GiB (165425291480
        # bytes) from device")
        r"\bfailed to allocate [\d.]+\s?[KMGT]i?B \(\d+ bytes\) from device\b",
    )),
    ("oom_host_killed", _any(
        r"Out of memory: Kill(?:ed)? process", r"oom-kill", r"invoked oom-killer",
        r"Cannot allocate memory", r"\[Errno 12\]", r"return code = -9\b",
        r"\bmemory allocation of \d+ bytes failed",  # Rust's allocator, on the host
        r"[Ee]xit(?:ed)? (?:with )?(?:code|status)[ :=]*-?9\b", r"exitcode\s*:\s*-9\b",
        r"(?:exit(?:ed)?|return(?:ed)?) (?:with )?(?:code|status)[ :=]*137\b",
        r"\bSIGKILL\b", r"[Ss]ignal 9\b", r"\bMemoryError\b", r"(?:^|[\s\]|>])Killed(?:\s.*)?$",
        r"\d Killed: 9$",  # macOS's bash on its job's SIGKILL
        # a supervisor's word that its child was killed (Go's "signal: killed"), and zsh's
        r"\bsignal: killed\b", r"\bzsh: killed\b", r"^\[\d+\]\s+[+-]?\s*\d+ killed\b",
        r"died with <Signals\.SIGKILL", r"\bstatus=9/KILL\b",
        # cluster managers and cgroups killing for memory
        r"oom[-_]kill event", r"\bOOMKilled\b", r"[Kk]illed\b.*\bdue to (?:memory|OOM)",
        r"\bkilled by the OOM killer\b",  # systemd on a unit's process
        EARLYOOM,
        r"\bis killed by signal: Killed\b",  # PyTorch's word for its DataLoader worker
        r"memory pressure",
        # a DataLoader worker killed for the shared memory it could not get (/dev/shm)
        r"\bout of shared memory\b",
        # a worker Ray suspects a pod's memory limit killed
        r"\bexceeded (?:the )?(?:\w+ )?(?:pod )?memory limits?\b",
    )),
    ("cuda_graph", _any(
        r"stream is capturing", r"during CUDA graph capture", r"StreamCaptureUnsupported",
        r"cudaErrorStreamCapture", r"[Cc]apture cuda graph failed",
        r"CUDA graph.*(?:fail|error|incompatible|not supported)", r"graph capture.*(?:fail|error)",
        r"cudaGraph\w*.*(?:fail|error)",
        # a graph's output read after a later replay overwrote it (torch.compile's cudagraphs)
        r"accessing tensor output of CUDAGraphs that has been overwritten",
        # a step that must not run inside a capture ("calibrated before CUDA graph capture")
        r"\b(?:before|during|inside) (?:a )?CUDA ?graph capture\b",
        # torch's graph object refusing a replay or a capture ("Called CUDAGraph::replay without
        # a preceding successful capture.")
        r"\bCUDAGraph::(?:replay|capture\w*)\b",
        # XLA building a graph of kernels on ROCm ("Failed to add kernel node to a HIP graph")
        r"\bkernel node to a (?:HIP|CUDA) graph\b",
    )),
    ("nccl_comm", _any(
        r"\bNCCL error", r"\bNCCL Error", r"\bNccl error\b", r"\b[Nn]ccl\w*Error\b",
        r"ncclUnhandledCudaError",
        r"\bNCCL_ERROR_\w+",  # CuPy's binding of NCCL's result codes
        r"ncclSystemError", r"ncclInternalError", r"ncclInvalidUsage", r"DistBackendError",
        r"DistNetworkError", r"ProcessGroupNCCL", r"NCCL (?:WARN|failure|communicator)",
        r"\bnccl[A-Z]\w*(?:\(\))? failed\b", r"ncclUniqueId",
        # nccl-tests' check of an NCCL call, and MPI failing to set up its communicator
        r"\bTest NCCL failure\b", r"\bMPI_Init\w*\b",
        # NVSHMEM (DeepEP's symmetric memory) failing to bootstrap or connect its transports
        r"nvshmem\w*/src/(?:host/(?:transport|init|bootstrap|topo)|modules/bootstrap)/",
        r"\bnvshmem setup connections",
        # NCCL's shared-memory transport between local ranks without its segment (/dev/shm)
        r"\bshared memory segment /dev/shm/nccl-",
    )),
    # Before cuda_runtime: "CUDA error: CUDA driver version is insufficient" is a version problem.
    ("import_or_version", _any(
        r"\bImportError\b", r"ModuleNotFoundError", r"undefined symbol", r"No module named",
        r"\bNo package metadata was found for\b",  # importlib.metadata: not installed
        # NumPy 2 under code or a build made for NumPy 1
        r"\bremoved (?:from the \w+ class )?in (?:the )?NumPy 2\b", r"\bNumpy is not available\b",
        # a build tool older than the build needs ("no cmake or cmake3 with version >= 3.13.0")
        r"\bwith version >= [\d.]+ found\b",
        # a toolchain older than the one a package pins
        r"\bis not supported by the following packages\b",
        r"\bis likely not configured with CUDA support\b",  # UCX without its CUDA transport
        r"\bCould not load lib[\w-]+\. Likely causes\b",
        r"\[ERROR\] Command not found: \S+",  # enroot's hook without the tool it runs
        # a library's native binary for this CUDA version missing from its wheel (bitsandbytes)
        r"\b(?:CUDA|ROCm|HIP) binary not found\b", r"\bCould not find the \w+ CUDA binary\b",
        r"^CUDA SETUP: Required library version not found: ",
        r"\bUnable to load any of \{[^}]*\.(?:so|dll|dylib)\b",
        r"\bCould not load library \S+\.(?:so|dll|dylib)\b",
        r"Could not locate \w+\.dll\. Please make sure it is in your library path",
        r"version (?:mismatch|conflict)", r"obsolete version", r"requires? \S+ ?(?:>=|==|version)",
        r"_OpNamespace.*has no attribute", r"(?:GLIBC|CXXABI)\w*_[\d.]+' not found",
        r"\bnot in lib\w+\.so\b",  # a symbol the installed library lacks (Ascend's opapi)
        # a module's API that another version of it has ("module 'numpy' has no attribute")
        r"\bmodule '[\w.]+' has no attribute\b",
        # pip's resolver on pinned versions that cannot go together
        r"\bthese package versions have conflicting dependencies\b", r"\bResolutionImpossible\b",
        # Inductor without a working Triton; XLA without a custom call's registered handler
        r"\bTritonMissing\b", r"\bNo FFI handler registered for\b",
        # a C extension built against another version of numpy (or any C API it includes)
        r"\bbinary incompatibility\b", r"\bdtype size changed\b",
        # a tokenizer file written by a newer tokenizers than the one reading it
        r"did not match any variant of untagged enum",
        # code written for a newer Python than the one running it ("list[int]" on 3.8)
        r"\btype '[\w.]+' is not subscriptable", r"'type' object is not subscriptable",
        r"was compiled (?:against|with)", r"incompatible (?:version|with)", r"cannot import name",
        # a newer transformers already registering a config the engine registers itself
        r"\bis already used by a Transformers model\b",
        r": undefined reference to (?:symbol )?[`']",
        r"\bABI\b", r"[Pp]lease (?:try to )?(?:upgrade|update|install)", r"is not installed",
        # a Vulkan loader without a driver it can use (VK_ERROR_INITIALIZATION_FAILED, -3;
        # VK_ERROR_INCOMPATIBLE_DRIVER, -9)
        r"\bError(?:InitializationFailed|IncompatibleDriver)\b", r"\bvk[A-Z]\w+ failed -[39]\b",
        r"\brequires? .{0,60}\bto be installed\b",
        # a package that refuses this Python, a torch built for another CUDA
        r"\bCannot install on Python version\b",
        r"\bCUDA version .* mismatches the version that was used to compile",  # "compilePyTorch"
        r"\b[Cc]ould not load any \w+ library\b",
        # cuDNN that cannot start under this framework's build (XLA's "cudnn handle")
        r"\bCould not create cudnn handle\b",
        r"\barchitecture \w+ is not supported\b",
        r"\b(?:nvlink|nvcc|fatbinary|cicc)\s+(?:fatal|error)\s*: ", r"\bnvrtc: error: ",
        r"version .* is not supported", r"driver version is insufficient", r"driver .* too old",
        # CUDA's forward-compatibility libraries loaded on a GPU or driver that cannot use them
        r"\bCUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE\b|\bcudaErrorCompatNotSupportedOnDevice\b",
        r"not compiled with CUDA", r"cannot open shared object file",
        r"does not recognize this architecture", r"upgrade (?:transformers|vllm|sglang|torch)\b",
        # transformers without the model's class yet ("'MiniMaxM1ForCausalLM' is not a
        # registered model in the Transformers library"), protobuf newer than the generated
        # code it loads ("Descriptors cannot be created directly")
        r"\bis not a registered model in the Transformers library\b",
        r"\bDescriptors cannot be created directly\b",
        r"Model architectures? \[.*\] (?:are|is) not supported",
        r"\b[Mm]odel type \S+ (?:is )?not supported\b",  # (mlx-lm's, mlx-vlm's: no such module)
        r"unsupported toolchain", r"PTX was compiled with",
        # a JIT helper or an extension that fails to build
        r"\b(?:gcc|g\+\+|cc1plus|c\+\+|clang|nvcc|ninja|cmake)\b"
        r".*(?:non-zero exit status|failed|error)",
        r"Error building extension", r"[Ff]ailed to build\b", LIBRARY_NOT_FOUND,
        # a compiler's, a shader compiler's (glslc on a Vulkan shader) too
        r"\.(?:c|cc|cpp|cxx|cu|cuh|h|hh|hpp|hxx|inl|hip|mm|comp|glsl|metal)(?::\d+){1,2}: "
        r"(?:fatal )?error:",
        # nvcc's, MSVC's and clang-cl's ("exmy_base.h(404): error C2039: ...", a header with no
        # extension: "type_traits(554): error: type name is not allowed")
        r"[\w.]\(\d+(?:,\d+)?\): (?:catastrophic |fatal )?error(?: C\d{4})?:",
        # sources compiled at run time: Metal's and ROCm's comgr's ("program_source:6450:1:")
        r"\b(?:program_source|CompileSource\w*):\d+:\d+: error:",
        r"\berrors? detected in the compilation of\b",
        # a build tool a JIT compile needs that is not installed ("FlashInfer failed to
        # JIT-compile: ninja (build tool) not found.")
        r"\b(?:ninja|nvcc|cmake|make|gcc|g\+\+|clang)\b(?: \([\w ]+\))? not found\b",
        # a compiler's verdict where the file's prefix was lost (a source built at run time)
        r"^error: (?:unknown type name|use of undeclared identifier|no member named) ",
        # a framework's loader of a library it found in no version it can use (Paddle's
        # "Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion.")
        r"\bCannot load \w+ shared library\b",
        # one library calling another with the signature of another version
        r"TypeError: .*(?:missing \d+ required (?:positional|keyword-only) arguments?"
        r"|takes \d+ positional arguments? but \d+ (?:were|was) given"
        r"|got\san\sunexpected\skeyword\sargument|got multiple values for argument)",
        # a build of torch without a feature it needs ("requires compiling PyTorch with MAGMA")
        r"\brequires compiling PyTorch with \w+",
        # a library's model written for another pydantic ("Unable to generate pydantic-core
        # schema for <class 'torch.Tensor'>")
        r"\bPydanticSchemaGenerationError: Unable to generate pydantic-core schema\b",
        # a native library that Windows cannot load or start
        r"\bDLL load failed\b", r"\[WinError (?:126|127|193|1114)\]",
        # an operator the installed build of a library does not register (torchvision built
        # for another torch: "operator torchvision::nms does not exist")
        r"\boperator \w+::\w+ does not exist\b",
    )),
    ("cuda_runtime", _any(
        r"CUDA error", r"illegal memory access", r"device-side assert", r"Assertion `.*` failed",
        r"CUDA driver error", r"CUDA_ERROR_", r"cudaError\w+", r"CU(?:BLAS|SOLVER)_STATUS_\w+",
        r"cuDNN error",
        r"\bCUDNN_STATUS_EXECUTION_FAILED\b",  # a cuDNN kernel failing as it ran
        # Ascend's runtime records (CANN's EE codes: a device call that failed as it ran)
        r"^(?:CANN error: )?EE\d{4}\b",
        r"^CUDA Exception: ",
        # a CUDA library failing inside ("cuSolver internal error", as XLA reports it)
        r"\bcu[A-Z][A-Za-z]+ internal error\b",
        r"misaligned address", r"unspecified launch failure", r"CUDA runtime error",
        r"CUDA Error", r"an illegal instruction", r"\bcuda\w*\(.*\) failed",
        r"kernel (?:execution|launch) (?:error|failed)",
        # cuDNN's frontend failing to run an operation graph (PyTorch's SDPA on cuDNN:
        # "Expected mha_graph.execute(...).is_good() to be true, but got false")
        r"\bmha_graph\b", r"\.is_good\(\) to be true",
        # NCCL's CUDA check ("Cuda failure 999 'unknown error'"), other accelerators' runtimes,
        # and ROCm's runtime on a hardware exception
        r"\bNPU function error\b", r"\bHSA_STATUS_ERROR_\w+",
        r"\bACL stream synchronize failed\b",
        # a GEMM or kernel runner reporting that its kernel failed
        r"\b(?:GEMM|[Gg]emm|kernel)\b.*\b(?:failed|error)",
        r"(?i)\berror\b.*\brunning (?:GEMM|kernel)",
    )),
    # A checkpoint whose tensors do not fit the model built (before ValueError's default below).
    ("model_loading", _any(
        r"\bSize mismatch between saved\b", r"\btensor '[^']+' has wrong (?:size|shape)\b",
        # a safetensors file cut short or not safetensors at all, and a torch checkpoint
        r"\bSafetensorError\b", r"\bwhile deserializing header\b",
        r"\bPytorchStreamReader failed reading zip archive\b",
        r"\bcustom template is not supported\b",  # llama.cpp on a model's chat template
        # a model folder whose config names no architecture or is in no format the engine reads
        r"\bNo model architectures are specified\b", r"\bNo supported config format found\b",
        # a SentencePiece tokenizer file that is not one (an LFS pointer, a truncated download)
        r"\bcould not parse ModelProto\b",
        # transformers' words for a tokenizer, config or model it cannot load from a name
        r"\bCan't load (?:the )?(?:tokenizer|config(?:uration)?|model|processor)\b",
        # a model's download that failed: the Hub's Xet storage ("Data processing error: CAS
        # service error : ..."), an app's downloader ("All model downloads failed")
        r"\bCAS service error\b", r"\b[Mm]odel downloads? failed\b",
        # the Hub's client offline without the model's files in its cache
        r"\boutgoing traffic has been disabled\b",
        r"^Error downloading [\w.-]+/[\w.-]+: ",
        # a model's JSON file (config, tokenizer) cut short or not JSON: the json module's own
        # error, where a web client's names its library (requests.exceptions.JSONDecodeError)
        r"\bjson\.decoder\.JSONDecodeError\b",
        # the same in Rust's serde_json, under the tokenizers library ("Exception: EOF while
        # parsing an object at line 3363 column 20")
        r"\bEOF while parsing an? (?:object|list|string|value) at line \d+ column \d+",
        # a state dict whose keys or shapes are not the model's (PyTorch's load_state_dict)
        r"\bError\(s\) in loading state_dict\b", r"\bcannot find tensor \S",
        r"\bMissing parameters: \S",  # MLX's strict load_weights
        # a 4-bit checkpoint saved without bitsandbytes' quantization state for a weight
        r"\bbitsandbytes__(?:\*|fp4|nf4)\b",
    )),
    ("config_or_args", _any(
        r"error: (?:argument|unrecognized arguments|ambiguous option)", r"unrecognized arguments",
        r"\berror: the following arguments are required\b",
        r"invalid choice",
        r"\bargparse\.Argument(?:Type)?Error\b",
        r"\b(?:unrecognized|unknown|invalid) option\b",  # getopt's
        # clap's (Rust command lines), options that exclude each other
        r"\ba value is required for '--", r"\bunexpected argument '--",
        r"\bmutually exclusive\b", r"\bOnly (?:1|one) can be set between\b",
        r"\bUnsupported KV type combination\b",  # llama.cpp's flash attention on a cache type
        r"larger than the maximum number of tokens", r"max_model_len",
        r"\bexceeds\b.*\bmaximum supported (?:length|sequence|context)",
        r"\b(?:must|should) be (?:evenly )?divisible", r"not divisible by", r"\bmust divide\b",
        r"\bExpect(?:ed)?\b.*\bgot\b",
        # (not NumPy's floating-point error on a NaN it computed: a numerical fault)
        r"invalid (?:value|argument|config)(?! \((?:nan|inf)\) encountered)",
        r"unexpected keyword argument", r"is not a valid(?! model identifier)",
        # a command line's own refusal (click's), arguments a script expected and was not given
        r"\bNo such option\b", r"'Namespace' object has no attribute",
        r"\bexpects? .*\bbut got\b",
        r"\bonly supported (?:for|with|by) (?:the )?\w+ backend\b",
        r"\bExtra inputs are not permitted\b",  # pydantic's refusal of an unknown field
        r"\bvalidation errors? for \w*Config\b",  # pydantic's, of a configuration's class
        # a choice the model or the kernel does not take ("only supports (...) backend, got X")
        r"\bonly supports?\b.*\bgot\b",
        # a kernel that takes only some dtypes: the dtype chosen is the setting to change
        # ("FlashAttention only support fp16 and bf16 data type")
        r"\bonly supports? (?:fp16|bf16|float16|bfloat16|fp32|float32|half)\b",
        r"must be (?:one of|a|an|between|greater|less)",
        r"should be (?:one of|a|an|between|greater|less)", r"Unsupported (?:value|argument|option)",
        r"(?:conflicts|incompatible) with (?:--|the flag|option)", r"[Aa]ddress already in use",
        r"\bport is already allocated\b",
        r"\bEADDRINUSE\b", r"\bCannot find empty port in range\b",  # (Gradio's)
        # click's usage errors (the CLIs of guidellm, vLLM's tools, many more)
        r"^Error: (?:Invalid value for|No such option|Missing option|Missing argument|Got "
        r"unexpected extra argument)",
        # EADDRINUSE by its number on Linux, macOS and Windows; asyncio's words for it
        r"\[Errno (?:98|48|10048)\]", r"\berror while attempting to bind on address\b",
        r"[Pp]ermission denied",
        # a model shape that the chosen kernels do not implement (another backend may)
        r"Unsupported head_?(?:dim|size)",
        # a launch whose process count does not match the parallelism ("mpiSize == tp * pp")
        r"\b(?:mpi|world)_?[Ss]ize\b\s*(?:==|!=)",
        # ONNX Runtime's and absl's status for a bad input or attribute
        r"\bINVALID_ARGUMENT\b",
        # a command line's value the parser refuses (llama.cpp's "error while handling argument")
        r"\berror while (?:handling|parsing) (?:argument|option)",
        # a URL with nothing behind it: a client's 404 from the server it was pointed at
        r"\bNotFoundError: (?:Error code: )?404\b", r"(?i:\b404 (?:page )?not found\b)",
        # another process on the GPU changing its memory while the engine measured it
        r"\bError in memory profiling\b",
        # features the program does not take together ("the compatibility between 'autotp'
        # and 'zero_stage = 3' has not been validated")
        r"\bcompatibility between\b.*\bnot (?:been |yet )*(?:validated|supported|tested)\b",
        # a configuration file that does not parse (PyYAML's errors), a parallel layout that
        # does not fit the processes launched, an output folder that is not there
        r"\byaml\.(?:\w+\.)*\w+Error\b",
        r"\b(?:should|must) (?:be equal to|match) the (?:world|group) size\b",
        r"\b[Pp]arent directory \S+ does not exist\b",
        # settings the program refuses: XLA's flags, a structured config's unknown key, a
        # determinism switch, a sharding the mesh does not divide, a metric no one logs,
        # the open files' limit (a DataLoader passing descriptors)
        r"\bUnknown flags in XLA_FLAGS\b", r"\bomegaconf\.errors\.\w+",
        r"\bdoes not have a deterministic implementation\b", r"\bIndivisibleError\b",
        r"\bEarly stopping conditioned on metric\b", r"\breceived 0 items of ancdata\b",
    )),
    ("model_loading", _any(
        r"load_weights", r"params_dict\[", r"\.(?:weight|bias|input_scale|weight_scale)'",
        r"'model\.layers\.", r"safetensors", r"[Ee]rror loading model", r"\bmodel loading error\b",
        r"does not appear to have a file",
        r"not a valid model identifier", r"[Rr]epository ?[Nn]ot ?[Ff]ound", r"HFValidationError",
        r"GatedRepoError", r"gated repo", r"EntryNotFound", r"config\.json", r"checkpoint",
        r"Cannot find model", r"model weights",
        # a model file its runtime cannot parse (ONNX Runtime under Triton)
        r"\bLoad model from \S+ failed\b", r"\bProtobuf parsing failed\b",
        r"KeyError: '[\w.]+\.(?:weight|bias|scale)\w*'", r"failed to load model",
        r"\b[\w.]+\.(?:weight|bias|\w*scale)\b.*\b(?:does not exist|not found|is missing)",
        r"(?:[Ff]ailed|[Uu]nable) to load\b.*\bmodel", r"load failed for\b.*\bmodel",
        # weights whose shapes are not the model's config ("size mismatch for ...: copying a
        # param with shape ...", transformers' "ignore_mismatched_sizes")
        r"\bignore_mismatched_sizes\b", r"\bsize mismatch for\b",
        # a weight loader narrowing a tensor to a shard its shape does not have
        r"\bnarrow\(\): length must be non-negative\b",
        r"\bstart \(\d+\) \+ length \(\d+\) exceeds dimension size\b",
        # sentencepiece given no tokenizer file (its path came out None)
        r"\bTypeError: not a string\b",
        # a tokenizer's vocabulary that cannot be parsed (a corrupt or HTML download)
        r"\binvalid (?:\w+ )?vocab(?:ulary)? file\b",
        r"\bfiles for a \w+ tokenizer\b",
        # a hub that cannot be reached for a model not in the cache
        r"\bcouldn't find them in the cached files\b",
    )),
    # Memory exhausted, by any allocator (ROCm's, Metal's, ggml's, XLA's), when no rule above
    # named the host.
    ("oom_gpu", _any(
        r"(?i)\bout of (?:device )?memory\b", r"\bRESOURCE_EXHAUSTED\b",
        r"(?i)\b(?:failed|unable) to allocate\b.*\bbuffer", r"(?i)\bbuffer\b.*\ballocation failed",
    )),
    # NCCL's transports by name (sockets, InfiniBand, libfabric's OFI), and NCCL or RCCL named
    # in a failing line.
    ("nccl_comm", _any(
        r"\bNET/(?:IB|OFI|Socket|Plugin)\b", r"\bsocket(?:Progress|Recv|Send|Connect)\w*",
        r"\[Proxy Service \d+\] Failed to execute operation\b",  # NCCL's proxy thread
        r"\bibv_\w+", r"\b[NR]CCL\b", r"\bmlx5: \S+: got completion with error\b",
    )),
    # A path that is not there, when nothing says it held weights or a checkpoint.
    # The host's allocator saying no (ENOMEM), when nothing above named a device or transport.
    ("oom_host_killed", _any(r"(?i)\bcannot allocate memory\b")),
    ("config_or_args", _any(
        r"\bFileNotFoundError\b", _NO_SUCH_FILE,
        r"\bdoes not appear to contain CMakeLists\.txt\b",  # a build pointed at the wrong folder
    )),
    # The engine's own bookkeeping found inconsistent (a tuple of another length, its KV pool's
    # leak check, multimodal tokens and their placeholders): no value the user gave.
    ("other", _any(
        r"\b(?:too many|not enough) values to unpack\b", r"\bmemory leak detected\b",
        r"\bmultimodal tokens to \d+ placeholders\b",
    )),
    # a renderer that finds no GPU it can draw on (SAPIEN headless, without a Vulkan ICD), or
    # not the one the job names among those EGL sees (a container's device list)
    ("config_or_args", _any(
        r"\bfailed to find a rendering device\b",
        r"\bunable to find CUDA device \d+ among \d+ EGL devices\b",
    )),
    # A message that names the setting to change ("Please set find_unused_parameters=True"),
    # options that exclude each other, a device that cannot be chosen or is another's
    ("config_or_args", _any(
        r"\b[Pp]lease set\b", r"\bcannot be enabled at the same time\b",
        r"\b[Ss]et (?:visible )?device (?:\d+ )?failed\b", r"\balready in use by process\b",
        # a dtype the operation refuses on any device ("linalg.slogdet: Low precision dtypes not
        # supported. Got Half"), a DataLoader pinning tensors already on the GPU
        r"(?i)\bdtypes? (?:are |is )?not supported\b", r"\bdoes not accept dtype\b",
        r"\bonly dense CPU tensors can be pinned\b",
    )),
    # A program's own arrays that do not fit each other (shapes that do not broadcast, an
    # empty sequence reduced): a bug in its code, not a value it was given.
    ("other", _any(
        r"\b(?:could not|cannot) (?:be )?broadcast\b",
        r"\bsame number of dimensions\b", r"\bexpected sequence of length \d+ at dim\b",
        r"\bempty sequence\b", r"\bzero-size array\b",
        r"\bexpected a non-empty list of Tensors\b", r"\bbut got empty list\b",
    )),
    # A bad value, when nothing more telling is said.
    ("config_or_args", _any(r"\bValueError\b", r"\bValue error, ")),
]
# fmt: on

# Context (the traceback and the lines around the root cause) may decide the class
# when the root-cause line alone does not.
CONTEXT_RULES: list[tuple[str, Alternatives]] = [
    (
        "model_loading",
        _any(
            r"load_weights",
            r"load_model",
            r"weight_loader",
            r"model_loader",
            r"load_(?:from_)?checkpoint",
            r"safetensors_files|safetensors\.index",
        ),
    ),
    # an engine or plugin serialized by another version than the one reading it
    ("import_or_version", _any(r"[Dd]eserializ")),
    # an assertion in a program's check of its own arguments (Megatron's validate_args)
    ("config_or_args", _any(r"\bin (?:_?validate|check|_check)_args\b")),
    ("cuda_graph", _any(r"capture_one_batch_size", r"cuda_graph_runner", r"Capturing batches")),
]

# A small integer key missing from a table, in a traceback about devices or memory
# features: an architecture table that lacks this GPU (torch symm mem's KeyError: 12).
# Whatever the key's form: "KeyError: 12", "KeyError: 'sm_90'", "KeyError: (9, 0)".
ARCH_KEY = re.compile(r"\bKeyError: (?:(?:'?sm_?)?(\d{1,3})'?|\(\d{1,2}, ?\d{1,2}\))$")
ARCH_CONTEXT = _any(
    r"symm_mem",
    r"capabilit",
    r"\barch",
    r"\bsm\b",
    r"device",
    r"cuda",
    r"allreduce",
    r"all_reduce",
    r"comm",
    r"kernel",
)

# Lines that report a failure raised elsewhere; they are never the root cause when
# anything more specific is around.
WRAPPERS = Alternatives(tuple(wrapper.pattern for wrapper in wrappers.WRAPPERS))
# Those that only point elsewhere (a weak one may hold the only real information:
# DeepSpeed's exit code -9).
STRONG_WRAPPERS = Alternatives(tuple(w.pattern for w in wrappers.WRAPPERS if w.strong))
# Those that say another process failed: until its error is in the log, the diagnosis waits.
ANOTHER_PROCESS_FAILED = Alternatives(
    tuple(w.pattern for w in wrappers.WRAPPERS if w.another_process)
)
WAITING = "waiting for the failing process's error"
NO_FAILURE = "no failure in the log"

# Lines that look alarming to grep and mean nothing: config dumps and access logs...
HARD_NOISE = Alternatives(tuple(line.pattern for line in benign.BENIGN if line.hard))
# ...and advice printed around a real error, which is never the error itself.
NOISE = Alternatives(tuple(line.pattern for line in benign.BENIGN if not line.hard))

# A logger's bracketed error tag after its name tags: TensorRT's "[TRT] [E] 6: ...", a
# script's own "[ERR]  smoke test failed".
TAGGED_ERROR = re.compile(
    # (stamps and source locations may follow it: "[TM][FATAL][0814.22:31:20.267][gemm.cu:327] ")
    # (fatal: the logger aborts the process after it, as TurboMind's TM_LOG_FATAL does)
    r"(?:\[[\w .-]+\]\s*){0,3}\[(?:E|ERR|ERROR|CRITICAL|(?P<fatal>F|FATAL))\](?:\[[^\]\s]*\])*\s"
    # a library's own tag, then a severity that is itself the failure ("[sgl_kernel] CRITICAL: ")
    r"|(?:\[[\w .-]+\]\s*){1,3}(?:CRITICAL|FATAL):\s"
    # oneCCL's ("2024:01:23-00:02:21:(122510) |CCL_ERROR| global.cpp:150 ...")
    r"|(?:\d{4}:\d\d:\d\d-\d\d:\d\d:\d\d:\(\d+\) )?\|CCL_ERROR\|\s"
)
# A program's own word that a step failed, with the reason ("Error running job: .to() does not
# accept copy argument", "Error during benchmark: CUDA error: ..."): a logged error.
ERROR_IN_A_STEP = re.compile(r"^Error (?:\w+ing|while \w+ing|during \w+)\b[^:]{0,60}: \S")
# Leading bracketed tags of a line: two records with the same ones come from one logger.
TAGS = re.compile(r"(?:\[[^\]]*\]\s*)+")
SEVERITY_ERROR = re.compile(
    r"^(?:ERROR|CRITICAL|FATAL|E\d{4}|\[E\])|\[(?:E|ERROR|FATAL|CRITICAL)\]|\bERROR\b:?|\[ERROR"
    # spdlog's default pattern: "[2025-10-28 16:54:17.859] [error] "
    r"|\[(?:error|critical|fatal)\]"
)

# A Python exception line: "KeyError: 12", "torch.OutOfMemoryError: ...", bare
# "NotImplementedError", or vLLM's repr form "OutOfMemoryError('CUDA out of memory...')".
EXCEPTION_LINE = re.compile(
    r"^((?:[A-Za-z_][\w]*\.)*(?:(?:_*[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt|Failure|Fault)"
    r"|StopIteration|KeyboardInterrupt|SystemExit|GeneratorExit))"
    r"(?::\s?(.*)|\((.*)\)?)?$"
)
# An exception named by its module path, whatever its name ends in ("triton.runtime.errors.
# OutOfResources: out of resource: shared memory, ...").
# (a binding's own, lower-case: "nixl._bindings.nixlNotFoundError: NIXL_ERR_NOT_FOUND")
QUALIFIED_EXCEPTION = re.compile(
    # (named in CamelCase: an enum's repr wrapped onto a line, "ode.NONE: 0>, ...", is not one)
    r"^(?:[a-z_]\w*\.)+(?:[A-Z][A-Za-z]*[a-z][A-Za-z]*|[a-z]\w*(?:Error|Exception)): \S"
)
# Whatever a traceback ends in is its exception, named like one or not (Triton's
# "triton.runtime.errors.OutOfResources: out of resource: shared memory, ...").
# (a logger's severity is not one: uvicorn's "WARNING:  Invalid HTTP request received.")
TRACEBACK_END = re.compile(
    # (nor a frame's "File" whose location a narrow paste wrapped onto the next line)
    r"^(?!(?:WARNING|WARN|INFO|DEBUG|ERROR|CRITICAL|NOTICE|TRACE|FATAL)\b|File$)"
    r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?::\s?.*)?$"
)
# A CUDA check macro's failure with its source location and the runtime's error string, at any
# severity ("Failed: /workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'", logged at
# INFO by a server relaying its engine's output).
CHECK_MACRO = re.compile(r"(?:^|:\s)Failed: (?:Cuda error )?\S+\.(?:cu|cuh|cpp|cc|h):\d+ '")
# TensorFlow's record of the op that failed and its status, which it logs at W before the
# exception summarising it ("OP_REQUIRES failed at nccl_ops.cc:104 : Internal: unhandled
# system error"): the failure, whatever severity it carries.
TF_OP_FAILED = re.compile(r"\bOP_REQUIRES failed at \S+ : [A-Z]\w*(?: \w+)?: \S")
# One source location twice in a line: several threads' copies of one failure written into
# each other ("x.h:1146: x.h:1146: GGML_ASSERT(...) failed/home/..."); a clean copy is nearby.
# (or an exception's name glued to its own copy: "IndexErrorIndexError: : list index out of ...")
INTERLEAVED = re.compile(r"(\S+\.\w+:\d+: ).*\1|^(\w+(?:Error|Exception))\2\b")
# C assert macros and llama.cpp's abort ("llama.cpp abort:1852: GGML_ASSERT(...) failed", and
# before mid-2024 "GGML_ASSERT: ggml-cuda.cu:727: tensor->view_src == nullptr"): fatal even
# where a logger stamped them DEBUG.
ASSERTION_MACRO = re.compile(r"\b[A-Z_]*ASSERT\w*(?:\(.*\) failed|: \S+:\d+: \S)")
# zsh's job table on a job a signal ended ("[1]    34950 segmentation fault  ./main ...")
ZSH_JOB = (
    r"^\[\d+\]\s+[+-]?\s*\d+ (?:segmentation fault|abort|killed|bus error"
    r"|illegal hardware instruction|floating point exception)\s"
)
# (older CANN puts a tag after two spaces, no colon: "EZ9999  [InferShape] The k-axis of ...")
CANN_RECORD = r"^E[A-Z0-9]\d{4}(?:: (?!Inner Error!)\S|\s{2,}\[\w+\] \S)"
# pydantic's line for one refused input: v2's "[type=..., input_value=..., input_type=...]",
# v1's "(type=value_error)" (with its context: "(type=value_error.const; given=a; ...)")
VALIDATION_DETAIL = (
    r"\s(?:\[type=\w+, input_value=.*, input_type=\w+\]|\(type=\w+(?:\.\w+)*(?:; [^()]*)?\))$"
)
# Failures that Python did not raise: native aborts, loggers' ERROR lines, kernel OOM...
NATIVE_FAILURE = _any(
    r"\bwhat\(\):",
    # a program's own check of a CUDA call, with the call and its code (CUDA samples' macros
    # exit on it): "cudaMemcpy2D(...) failed: invalid pitch argument (cudaErrorInvalidPitchValue)"
    r"\bcu(?:da)?[A-Z]\w*\(.*\)\s*(?:failed\b|->|returned\b).*"
    r"\b(?:cudaError[A-Z]\w+|CUDA_ERROR_[A-Z_]+)\b",
    r"terminate called after throwing",
    r"Segmentation fault",
    r"SIGSEGV",
    # the fatal-signal banner of the native stack printer the engines share (vLLM, sglang,
    # TensorRT-LLM, Megatron): "!!!!!!! Segfault encountered !!!!!!!"
    r"\bSegfault encountered\b",
    r"Aborted \(core dumped\)",
    # an integer division by zero: a signal handler's banner ("*** Signal 8 (SIGFPE) ... received
    # by PID"), a shell's "Floating point exception (core dumped)"
    r"SIGFPE\b",
    r"Floating point exception\b",
    r"Fatal Python error",
    # (HIP's: "Device-side assertion `srcIndex < srcSelectDimSize' failed.")
    r"[Aa]ssertion [`'].*[`'] failed",
    # a shell's segfault and abort reports in other locales
    r"段错误|已放弃|核心已转储|Speicherzugriffsfehler|Erreur de segmentation|Violación de segmento",
    r"\bAbortado\s+\(`?core'? generado\)|\bAbgebrochen \(Speicherabzug|Abandon \(core dumped\)",
    r"Ошибка сегментирования|Аварийный останов",
    # a library's loader trying each name of a shared library it needs (CTranslate2's, cuDNN's)
    r"\bUnable to load any of \{",
    r"^Could not load library \S+\. Error: ",
    # and on Windows, where the DLL is not on the path (even glued after a spinner)
    r"Could not locate \w+\.dll\. Please make sure it is in your library path",
    # VS Code's Jupyter on a kernel that died (a wrapper: an error before it says why)
    r"\bThe Kernel crashed while executing code\b",
    r"\bOpenCL error: \w+: -\d+",  # CLBlast's
    r"CUDA Error:",
    r"CUDA error:",
    # the CUDA runtime's own words for cudaErrorInsufficientDriver, as a sample or a tool
    # prints them alone ("-> CUDA driver version is insufficient for CUDA runtime version")
    r"^-> CUDA driver version is insufficient for CUDA runtime version$",
    # a driver-API call's check in an extension ("[torch_memory_saver.cpp] CUresult error
    # result=1 file=... func=resume line=214")
    r"\bCUresult error\b",
    SCRIPT_MISSING,
    # ik_llama.cpp's check of a tensor's values, before it aborts ("Oops(ggml_compute_forward_
    # sum_rows_f32, ffn_moe_weights_sum-60): found nan for i1 = 0, ...")
    r"^Oops\(\w+, [^)]*\): found -?(?:nan|inf)\b",
    r"NCCL error",
    r"Out of memory: Kill",
    r"oom-kill",
    # earlyoom, a user-space OOM killer, about to kill the largest process
    EARLYOOM,
    r"Failed to (?:initialize|create|load|start)",
    r"Watchdog caught collective operation timeout",
    r"return code = -\d+",
    r"^Killed$",
    r"\bKilled\b",
    r"larger than the maximum number of tokens",
    r"Error in calling",
    r"\berror code\b",
    r"ERROR: ",
    r"Cuda failure",
    r"\bCUDA failure \d+: ",  # ONNX Runtime's check of a CUDA call ("CUDA failure 35: ...")
    r"cudaMalloc\w* failed",
    # Vulkan's result code for a device allocation refused, as ggml_vulkan prints its what()
    r"\bErrorOutOfDeviceMemory\b",
    # a library told no by the host's allocator (ENOMEM's words: "oneapi::mkl::blas::gemm:
    # cannot allocate memory on host")
    r"(?i)\bcannot allocate memory\b",
    # ggml's host allocator refused ("ggml_aligned_malloc: insufficient memory (attempted to
    # allocate 44668.09 MB)")
    r"\binsufficient memory \(attempted to allocate\b",
    # rdma-core's mlx5 provider on a failed work completion, its hex dump below
    r"\bmlx5: \S+: got completion with error\b",
    # and its SYCL backend's device allocator ("can't malloc 3278637056 Bytes memory on device")
    r"\bcan't (?:allocate|malloc) \d+ Bytes (?:of )?memory on device",
    r"\[TensorRT-LLM\]\[ERROR\]",
    # a tool's error, even glued after a progress bar, or about a quoted name
    r"(?:^|[^\w./-])[\w./-]+[\"']?: error: ",
    r"[Ss]ignal \d+ \(SIG\w+\) received",
    r"^error: ",
    r"\berror loading model\b",
    r"\bfailed to load model\b",
    # llama.cpp's examples, just before they return 1 ("main : failed to eval")
    r"^\W*\w+ : failed to eval\b",
    # C++'s own aborts
    r"\bterminate called\b",
    r"\blibc\+\+abi: terminating\b",  # (LLVM's libc++, on macOS)
    # ptxas on one line of the PTX it was given ("ptxas /tmp/x.ptx, line 6; error   : ...")
    r"\bptxas\b.*, line \d+; error\s*: ",
    r"\bpure virtual method called\b",
    # a supervisor on a child that a signal ended ("signaled to shutdown with signal 4")
    r"\b(?:killed|signaled|terminated)\b.*\bsignal \d+\b",
    # native runtimes and compilers, as they print a fatal error
    r"LLVM ERROR\b",
    r"\bcode=\d+\s*\(cuda\w+\)",
    r"\b(?:HIP|CUDA|cuDNN|cuBLAS|CUBLAS|XLA|MIOpen|ROCm) error\b",
    r"\berror \d+ at \S+:\d+",
    r"\*\*\* SIG\w+ received",
    # a full disk, whoever was writing ("tee: run.log: No space left on device")
    DISK_FULL,
    # glibc's heap check aborting, and Triton Inference Server's own signal handler
    r"^double free or corruption\b",
    r"^(?:free|malloc|realloc|munmap_chunk|malloc_consolidate)\(\): [a-z]",
    r"^corrupted size vs\. prev_size\b",
    r"^Signal \(\d+\) received\.?$",
    # NVIDIA's toolchain in its own words ("nvlink error   : Undefined reference to ...")
    r"\b(?:nvlink|ptxas|nvcc|fatbinary|cicc)\s+(?:fatal|error)\s*: ",
    # Open MPI's error block, and nccl-tests' own check ("Test NCCL failure common.cu:401 ...")
    r"^\*\*\* An error occurred in MPI_\w+",
    r"\bTest (?:NCCL |CUDA )?failure \S+\.cu:\d+",
    # a caller's check on an NCCL call ("ggml_cuda_op_reduce: ncclAllReduce failed with status 1")
    r"\bnccl[A-Z]\w*(?:\(\))? failed\b",
    # a linker that cannot find a library it was told to link, a device allocator refusing
    LIBRARY_NOT_FOUND,
    # and one that cannot write what it linked, or whose offsets overflow (an object too big)
    r"ld(?:\.\w+)?: cannot open output file ",
    r"relocation truncated to fit: ",
    DEVICE_ALLOCATION_REFUSED,
    # a shell script under `set -u` on a variable nobody set (an sbatch script's)
    r"\w: unbound variable$",
    r"\bexitcode\s*:\s*-?[1-9]\d*",
    r"\bexit status [1-9]\d*",
    r"\bAssertion\b.*\bfailed\b",
    r'\bAssert on ".+" failed\b',  # DALI's DALI_ENFORCE, a C++ exception's message
    r"^FATAL\b|\bFATAL:|\bfatal error\b",
    r"^[\w.+-]+\s+fatal\s*: ",  # a toolchain's own: "ptxas fatal   : Value 'sm_100' is ..."
    # command-line tools (Go's, Rust's), and a notebook's own after a symbol ("💥 Error: ")
    r"^(?:[^\w\s]{1,2} )?Error: ",
    # bash on a command it could not parse (a quote left open): the command never ran
    r"\bunexpected EOF while looking for matching\b",
    r"^error\[E\d{4}\]: ",  # rustc's, with its error code
    r"\bWindows fatal exception: ",  # faulthandler on Windows (a hardware exception's code)
    # a binary's kernels built for another GPU, in TEI's Candle backend's words ("Runtime
    # compute cap 87 is not compatible with compile time compute cap 80")
    r"\bcompute cap \d+ is not compatible with compile time compute cap\b",
    # bitsandbytes before 0.43 finding no binary of its own for this CUDA
    r"^CUDA SETUP: Required library version not found: ",
    # compute-sanitizer's memcheck on a kernel's bad access, before the launch error it causes
    COMPUTE_SANITIZER_FAULT,
    # the kernel refusing a binary built for another CPU
    EXEC_FORMAT,
    # kubectl on an answer the API server refused ("Error from server (NotFound): ...")
    r"^Error from server(?: \(\w+\))?: ",
    # the NVIDIA Container Toolkit's CLI, under the runtime hook that ran it
    r"^nvidia-container-cli: [\w ]*error: ",
    # Docker's CLI, on a container it could not start (after "docker: ", or a compose line)
    r"\bError response from daemon: ",
    r"\bthread '[^']*'(?: \(\d+\))? panicked at\b",  # Rust's, with the thread's id or not
    r"\b[Ii]llegal instruction\b",
    r"\bkilled\b.*\bdue to (?:memory|OOM)|\bOOMKilled\b|\boom[-_]kill event",  # cluster managers
    r"^TERM_MEMLIMIT: job killed\b",  # LSF's job report, on a job over its memory limit
    r"\bkilled by the OOM killer\b",  # systemd
    r"\bCheck failed: ",  # glog's CHECK
    r"^panic: ",  # Go
    r"^CUDA Exception: ",  # cuda-gdb catching a device exception ("Warp Out-of-range Address")
    # a native extension's check of a CUDA/HIP call (bitsandbytes': "Error invalid device
    # function at line 224 in file /src/csrc/ops.hip")
    r"^Error .+ at line \d+ in file \S",
    # llama-server's own last words when its model would not load (the loader's error before
    # it says why, where the log holds it)
    r"\bexiting due to model loading error\b",
    # systemd on a service it supervises
    r"\bMain process exited, code=\w+, status=(?!0/)\d+",
    # Ray's node supervisor on each of its processes that died ("raylet [exit code=1]"), under
    # "Some Ray subprocesses exited unexpectedly:"
    r"^\w+ \[exit code=-?[1-9]\d*\]$",
    r"\bFailed with result '",
    # (sglang's launcher: "Exit code: -9")
    r"(?:[Ee]xit(?:ed)?|return(?:ed)?) (?:with )?(?:code|status)[ :=]*(?:137|139|-9|-11)\b",
    r"\b(?:CUDA|HIP|GPU) out of memory\b|\bOut of memory error on GPU \d+\b",
    r"fallen off the bus|\bNVRM: Xid\b",  # the NVIDIA driver on a GPU it lost
    r"\berror[:=] ?[1-9]\d*\b",  # a native library's status code: "(m: 768, ..., error: 13)"
    # NVSHMEM's error macro: "src/host/transport/transport.cpp:416: non-zero status: 7 ..."
    r"\.(?:cpp|cu|cc|c):\d+: (?:non-zero status: -?\d+|NULL value\b)",
    # and its fatal exit, first in time ("src/topo/topo.cpp:61: [GPU 1] Peer GPU 0 is not
    # accessible, exiting ...")
    r"\.(?:cpp|cu|cc|c):(?:\w+:)?\d+: .*, exiting\b",
    # C-style "function: what is wrong" (llama.cpp's "gguf_init_from_file: invalid magic ..."),
    # not a script's file command complaining of one path, after which a script goes on
    # ("ls: cannot access '/app/training/datasets': No such file or directory"), nor git's
    # own word on a fetch or clone that failed ("fatal: couldn't find remote ref x")
    r"^(?!(?:ls|cp|mv|rm|ln|chown|chmod|chgrp|mkdir|rmdir|touch|stat|readlink|find|fatal): )"
    r"[a-z_]\w*: (?:invalid|unsupported|unknown|corrupt(?:ed)?|bad|missing|failed to|cannot"
    r"|could not|couldn't|unable to)\b",
    # a driver's call that returned a negative errno ("mtgpu_device_initialize:
    # mtgpu_query_dev_info failed (-22)")
    r"^[a-z_]\w*: [a-z_]\w* failed \(-\d+\)",
    # the amdgpu driver finding its scheduler firmware hung (a GPU reset follows)
    r"\bamdgpu: MES failed to respond to msg=",
    # the kernel on a process it stopped: "traps: python3[213941] trap invalid opcode ...",
    # "python3[1234]: segfault at 0 ip ... error 4 in libfoo.so"
    r"\btraps: \S+\[\d+\] trap\b|\[\d+\]: segfault at\b",
    # C libraries' and compilers' own summaries of a failure
    r"^[\w.-]+[ _]error: ",  # "rocBLAS error: Cannot read ...", "hipsparselt_error: ..."
    r"\bmemory allocation of \d+ bytes failed\b",  # Rust's allocator (llama.cpp's tools too)
    # PhysX's GPU allocator ("PxgCudaDeviceMemoryAllocator fail to allocate memory 100663296
    # bytes!! Result = 2")
    r"\bfail(?:ed)? to allocate memory \d+ bytes\b",
    # a fatal signal a runtime's handler caught (UCX's "Caught signal 7 (Bus error: ...)"), and
    # SIGBUS in a shell's words
    r"\bCaught signal \d+ \(\w",
    r"\bBus error\b",
    # JavaScript's uncaught exception, in a browser's console or Node's (transformers.js)
    # (its own error types only: a Python logger's "Uncaught ScannerError: ..." relays the
    # exception its traceback ends in)
    r"\bUncaught (?:\(in promise\) )?(?:Type|Range|Reference|Syntax|Eval|URI|Aggregate)?Error\b",
    # ONNX Runtime's status, printed without the exception that carries it in Python
    r"\[ONNXRuntimeError\] : \d+ : [A-Z_]+ : ",
    # a Vulkan call that returned an error code (ncnn's "vkWaitForFences failed -4")
    r"\bvk[A-Z]\w+ failed -?\d+\b",
    # the message field of an error report laid out as fields ("CUDA Error:" then "File:",
    # "Line:", "Error code: 700", "Error text: an illegal memory access was encountered")
    r"^\s*Error (?:text|message|string|description)\s*:\s*\S",
    # TensorRT's error code as a program's own logger relays it, with no severity tag
    # ("trt_infer: 2: [virtualMemoryBuffer.cpp::resizePhysical::144] Error Code 2: OutOfMemory")
    r"^(?:[\w.-]+: )?\d+: \[\S+::\d+\] Error Code \d+: [A-Z]\w*",
    # llama.cpp's examples on a batch the context could not take
    r"^\W*failed to decode the batch\b",
    r"\berrors? detected in the compilation of\b",  # nvcc, after its "file(12): error:" lines
    # nvcc's "x.cu(12): error: ...", MSVC's and clang-cl's "arena.h(14,21): error: ..."
    r"\(\d+(?:,\d+)?\): (?:catastrophic |fatal )?error\b",
    r"\bError while finding module specification\b",  # python -m on a missing module
    r"(?:^|/)python[\d.]*: No module named \S+$",  # and on a missing package, by its path
    r'\bC\+\+ exception with description "',  # GoogleTest on an exception a test threw
    r"^\s*Value error, ",  # pydantic's line under "N validation errors for ..."
    # ...and its other errors, each with the input it refused ("Input should be a valid
    # string [type=string_type, input_value=20251001065017, input_type=int]")
    VALIDATION_DETAIL,
    r"^Failed: Cuda error\b",  # CUDACHECK in vLLM's custom all-reduce and others
    r"\b[Ww]atchdog timeout\b",  # sglang's scheduler watchdog, before it kills the server
    # DeepEP's kernels on an all-to-all peer that never answered, before they trap
    PEER_WAIT_TIMEOUT,
    # CUDA's own error strings (cudaGetErrorString), printed bare by a native program or
    # after the source location of its check ("cuda kernels/indexer.cu:91 an illegal ..."), or
    # as the description in an error block (Unified Runtime's "UR CUDA ERROR:"), or after
    # exllama's "GPU assert: " (glued to a progress bar that printed no newline), or after the
    # kernel's name in a CUDA extension's own check ("error in ms_deformable_im2col_cuda: ")
    r"(?:^|\.(?:cu|cuh|cpp|cc|c|hpp|h):\d+:? |^Description:\s+|\bGPU assert: |^error in \w+: )"
    r"(?:no kernel image is available for execution|an illegal memory access was encountered"
    r"|device-side assert triggered|unspecified launch failure|misaligned address"
    r"|invalid device function|an illegal instruction was encountered)",
    # ROCm's runtime aborting a queue on a hardware exception (the HIP error that follows
    # only reports it)
    r"\baborting with error\b.*\bHSA_STATUS_ERROR_",
    r"\bMemory access fault by GPU\b",
    r"\bHW Exception by GPU\b",
    # the amdgpu kernel driver on a compute process's page fault (the register dump after it
    # names its fields: "WALKER_ERROR: 0x0"), Vulkan on a GPU it lost ("VkResult:
    # ERROR_DEVICE_LOST", as Omniverse's plugin logs it)
    r"\bamdgpu: \[\w+hub\] page fault\b",
    r"\b(?:VK_)?ERROR_DEVICE_LOST\b",
    # Magnum's windowless EGL context (habitat-sim) failing to start: nothing renders after
    r"^Platform::\w+::tryCreateContext\(\): ",
    # Go's runtime on Windows, on a native fault in a cgo call ("Exception 0xc0000005 0x0 0x0
    # 0x7ff9efe32590": an access violation), as on Linux it prints "SIGSEGV: ..."
    r"^Exception 0x[cC]0000[0-9a-fA-F]{3} 0x",
    r"\bNot enough memory for command submission\b",
    r"\bNative API failed\b",  # SYCL's runtime (Level Zero) on a failed call
    # a shared library built against another version of what it links ("x.so: undefined
    # symbol: _ZN3c105Error..."), a linker's unresolved symbol, HIP's fat binary lacking this GPU
    r"\.so(?:\.[\d.]+)?: undefined symbol: ",
    r": undefined reference to (?:symbol )?[`']",
    r"\bNo compatible code objects found for\b",
    # Open MPI's runtime failing to start ("It looks like orte_init failed for some reason")
    r"\bIt looks like (?:orte_init|opal_init|MPI_INIT|ompi_mpi_init) failed\b",
    # ggml's GGML_ABORT: a source location, then what is wrong ("llama.cpp:11968: The current
    # context does not support K-shift")
    r"^[\w./-]+\.(?:cpp|cc|cu|c):\d+: (?!warning\b|note\b)[A-Z]",
    # NCCL refusing to start: two ranks on one GPU (ncclInvalidUsage, whatever its severity)
    r"\bDuplicate GPU detected\b",
    # absl/gRPC status codes, as XLA, TensorFlow and Triton Inference Server print them
    r"^(?:UNAVAILABLE|INTERNAL|INVALID_ARGUMENT|FAILED_PRECONDITION|RESOURCE_EXHAUSTED"
    r"|NOT_FOUND|UNKNOWN|ABORTED|DATA_LOSS|UNIMPLEMENTED): ",
    # the dynamic loader refusing to start a program, getopt refusing its options
    r": error while loading shared libraries: ",
    r"^[\w./-]+: (?:unrecognized|unknown|invalid) option\b",
    # SYCL's runtime on a failed call (PI_ERROR_INVALID_WORK_GROUP_SIZE), however glued
    r"\bPI_ERROR_\w+|\bwork-group cannot exceed\b",
    r"\bCannot find Symbol with name\b",  # HIP's runtime on a kernel its code object lacks
    r"^CMake Error\b",
    r"^\s*Could NOT find \w+",  # CMake
    # macOS's loader and linker, LLVM's internal check, Apple's assertions
    r"(?:\bdyld\[\d+\]: |^)(?:Library not loaded|Symbol not found): ",
    r"^Undefined symbols for architecture \w+:",
    r"\bUNREACHABLE executed at\b",
    r"\bfailed assertion [`']",
    # zsh's report on a job a signal ended ("zsh: abort      ./llama-server -m ...", glued
    # to a progress line too), and its job table's ("[1]    34950 segmentation fault  ./main")
    r"\bzsh: (?:abort|segmentation fault|killed|bus error|illegal hardware instruction)\s",
    ZSH_JOB,
    # Ascend CANN's error record with its message ("EE1002: <time> Stream synchronize timeout.
    # ..."); its "EZ9999: Inner Error!" only points below (LAST_ERROR)
    CANN_RECORD,
    # ggml's early model loaders refusing a file ("tensor 'x' has wrong size in model file")
    r"\btensor '[^']+' has wrong (?:size|shape)\b",
    # Windows' report of a process a hardware exception ended ("Exception Code: 0xC0000005",
    # an access violation; 0xC000001D, an illegal instruction; 0xC0000409, a fail-fast)
    r"\bException [Cc]ode:? 0x[Cc]0000(?:005|409|01[Dd]|096|094|0[Ff][Dd])\b",
    # a shell or its script that could not run a command it was given ("/bin/sh: line 1:
    # /opt/rocm/bin/hipcc: No such file or directory"), in the host's language too
    # ("./start.sh: línea 18: ./llama-server: No existe el archivo o el directorio")
    # (a script's missing command is often one it goes on past: only a shell's own counts)
    SHELL_COMMAND_NOT_FOUND,
    rf"^\S+: {_SCRIPT_LINE} \S+: {_NO_SUCH_FILE}$",
    # cuBLAS naming the argument it refused, before its status reaches the caller
    r"\bOn entry to \w+ +parameter number \d+ had an illegal value\b",
    # faulthandler's timer on a process that stopped moving (dump_traceback_later)
    r"\bTimeout \(\d+:\d\d:\d\d\)!$",
    # pytest-timeout's banner over the stacks of a test that stopped moving
    r"\+{10,} Timeout \+{10,}$",
    # the cause under a Rust tool's error report (uv's, miette's: its summary, then this)
    r"^\s*╰─▶ \S",
    # MPICH aborting a rank ("Abort(1090447) on node 0 (rank 0 in comm 0): Fatal error in
    # PMPI_Init_thread: ..."), and a test runner's word that its process segfaulted
    r"^Abort\(\d+\) on node \d+ .*\bFatal error in\b",
    r"\bSegfault encountered\b",
    # a fixed-size arena too small for what was asked of it ("not enough space in the context's
    # memory pool (needed 268478672, available 268435456)", ggml's before its segfault)
    r"\bnot enough space in\b.*\(needed \d+, available \d+\)",
    # ggml's backends without an operation, llama.cpp's flash attention without a cache type
    r"_graph_compute: (?:error: )?op not supported\b",
    r"\bUnsupported KV type combination\b",
    r"\bcan't allocate \d+ Bytes of memory on device\b",
    # ggml's abort in its own sources, whatever case its message starts in
    r"\bggml[\w./+-]*\.(?:c|cc|cpp|cu|m|mm):\d+: (?!warning\b|note\b)[a-z]",
)
# Rust's panic since 1.73: the location ends the line, the message is the next one.
PANIC_HEADER = re.compile(r"\bthread '[^']*'(?: \(\d+\))? panicked at [^\s']+:\d+:\d+:$")
CHANNEL_CLOSED = re.compile(r"\b(?:SendError|RecvError|PoisonError)\b")
# "called `Result::unwrap()` on an `Err` value: DriverError(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"
PANIC_CARRIES_ERROR = re.compile(r"\bon an `Err` value: \S")
# A shell's report on a child it ran: "line 28:  7 Killed   cmd" (the command is not the fault).
# The kernel's, a cgroup's or a scheduler's word that a process was killed for the host's memory
HOST_MEMORY_KILL = re.compile(
    r"\boom[-_]kill|\binvoked oom-killer\b|\bOut of memory: Kill|^TERM_MEMLIMIT: job killed\b|"
    + EARLYOOM
)
# A launcher's word that its child got SIGKILL ("failed (exitcode: -9) local_rank: 3"): how it
# died, not why.
KILLED_CHILD = re.compile(r"\bexitcode\s*:\s*-9\b|\bSignal 9 \(SIGKILL\)")
# A fatal signal's banner for an abort ("*** SIGABRT received by PID 28601 (TID 34285) ...")
ABORT_BANNER = re.compile(r"\*\*\* SIGABRT received\b")
# glog's CHECK, the usual reason for that abort
FATAL_CHECK = re.compile(r"\bCheck failed: ")
# glog's and TensorFlow's fatal severity ("F0120 12:29:23.305308 34355 f.cc:6694] ")
FATAL_LEVEL = re.compile(r"(?:^|[\s:>|])F(?:\d{4})?\d{4}\s|:\sF\s+(?:\d+\s)?[\w/.-]+:\d+\]")
SHELL_JOB = re.compile(
    r"\bline \d+:\s+\d+\s+(?:Killed|Segmentation fault|Aborted|Bus error|Illegal instruction"
    # (macOS's bash names the signal's number: "Killed: 9", "Segmentation fault: 11")
    # (SIGALRM: an alarm the program set against a hang went off)
    r"|Floating point exception|Terminated|Alarm clock)(?::\s\d+)?(?:\s+\(core dumped\))?(?=\s)"
    r"|\bzsh: (?:abort|segmentation fault|killed|bus error|illegal hardware instruction)(?=\s)"
    r"|" + ZSH_JOB.removesuffix(r"\s")
)
# Of several lines describing one failure, the most telling one.
# An allocator saying memory ran out, at any severity (XLA's BFC allocator warns).
MEMORY_RAN_OUT = re.compile(r"\b(?:ran|is|went) out of memory\b")
# Ollama's scheduler on a model runner that died while loading, which newer releases log at
# INFO (older ones said "error loading llama server" at ERROR); a client's cancel is not one.
RUNNER_DIED_AT_INFO = re.compile(r'\bmsg="Load failed" .*\berror="[^"]*\bprocess has terminated\b')
SPECIFICITY = [
    (re.compile(r"Out of memory: Kill"), 5),
    (re.compile(r"oom-kill:|invoked oom-killer"), -3),
    # a cluster manager saying why it killed (a shell's job line only saw the kill)
    (
        re.compile(
            r"oom[-_]kill event|out-of-memory handler|OOMKilled|\bdue to (?:memory|OOM)"
            r"|\bkilled by the OOM killer\b"
        ),
        1,
    ),
    (re.compile(r"LLVM ERROR\b"), 2),
    # a full disk says why a write failed
    (re.compile(DISK_FULL), 2),
    # memory running out is the fault; a complaint about a size or a buffer beside it is not
    (re.compile(r"(?i)\bout of memory\b|OutOfMemory\b|\bInsufficient Memory\b"), 1),
    (re.compile(r"\baborting with error\b.*\bHSA_STATUS_ERROR_"), 2),
    # ggml's Vulkan backend saying why an allocation failed: over the driver's limit for one
    # allocation (maxMemoryAllocationSize), not the card's memory
    (re.compile(r"\bexceeds device memory allocation limit\b"), 3),
    # ...or Vulkan's own code for the allocation it refused (from the driver, or as ggml's
    # call got it), beside ggml's word that it failed
    # (or ggml's own finding that no memory type has room: "No suitable memory type found")
    (re.compile(r"\b(?:vk::Device::allocateMemory|No suitable memory type found): Error"), 1),
    (re.compile(r"\bVK_ERROR_OUT_OF_DEVICE_MEMORY\b"), 1),
    # the kernel's own assertion, before the runtime's word that the queue aborted on it
    (re.compile(r"\.(?:cu|cuh|hip)(?::\d+)?: .*\b[Aa]ssertion [`'].*[`'] failed"), 3),
    # NCCL's own line says more than the exception that summarises it ("NCCL error in: ...")
    (re.compile(r"\bNCCL WARN\b"), 1),
    # CANN's record says what the NPU runtime's warning only numbers ("error code is 507046")
    (re.compile(CANN_RECORD), 1),
    # which collective timed out, beside the watchdog's word that something did
    (re.compile(r"Watchdog caught collective operation timeout"), 1),
    (re.compile(r"terminate called after throwing"), -2),
    # ...unless its what() is only the base class's name, and the terminate line names the
    # exception's own type ("what():  std::exception" under "...instance of 'ReadSocketException'")
    (re.compile(r"^\s*what\(\):\s+std::exception\s*$"), -3),
    (re.compile(r"^\s*(?:Last error:|ncclUnhandledCudaError: Call to CUDA function failed)"), -3),
    # An exit status says less than the signal or the message beside it.
    (re.compile(r"\bexit(?:code| status)\b|\bexited with (?:code|status)\b"), -1),
    (re.compile(r"[Ss]ignal \d+ \(SIG\w+\) received"), 1),
    # UCX's handler saying a process died of a signal: a line beside it that names a failed
    # call says why
    (re.compile(r"\bCaught signal \d+ \("), -1),
]

# An error by its shape that the process may well survive: alone, it explains a hang, not a crash.
WARNING_ERROR = _any(
    r"\bNCCL WARN\b",
    # a CUDA/HIP error code named in a line of any severity (an interposer's "[WARN]")
    r"\b(?:CUDA_ERROR_[A-Z_]+|cudaError[A-Z]\w+|hipError[A-Z]\w+)\b",
)
# NCCL passing an error code up its stack ("NCCL INFO init.cc:1358 -> 2"): the call failed.
NCCL_PROPAGATION = re.compile(r"\bNCCL INFO .*-> [1-9]\d*\b")
NCCL_PROXY = re.compile(r"\[Proxy [Tt]hread")
# The other side went away: a consequence of a peer's failure, never a cause when one is shown.
PEER_GONE = _any(
    r"[Cc]onnection (?:closed|reset) by (?:remote )?peer",
)
# The process a line comes from: NCCL's "host:pid:tid [dev]", "[rankN]:", "(... pid=N)".
# Most telling first: a launcher's tag in front of NCCL's own names the same process.
PROCESS = [
    re.compile(pattern)
    for pattern in (
        r"([\w.-]+:\d+):\d+ \[\d+\]",
        r"\[rank(\d+)\]",
        r"\bpid=(\d+)",
        r"\[\d+,(\d+)\]<std",
    )
]
# The part of an exception's message that says why, lines below its first: Ray's ActorDiedError
# ("The actor died unexpectedly ...", then the actor's fields, then "The actor is dead because
# its worker process has died. ... may have exceeded K8s pod memory limits").
# TensorRT's located record of an error it has just said tersely ("[E] 2: Assertion bound >= 0
# failed." then "[E] 2: [shapeContext.cpp::checkVolume::2923] Error Code 2: Internal Error
# (Assertion bound >= 0 failed. )"): the same failure, with where and of what kind
LOCATED_RECORD = re.compile(r"\[[\w.]+::\w+::\d+\] Error Code \d+: \w")
# TensorRT's ONNX parser describing the node it failed on before saying why ("While parsing
# node number 34 [Squeeze -> "cos"]:", "--- Begin node ---", its inputs, "--- End node ---",
# then "ERROR: ... In function importSqueeze:"): the description is no failure of its own
NODE_DUMP_START = re.compile(r"\bWhile parsing node number \d+ \[[^\]]*\]:$")
NODE_DUMP_END = re.compile(r"--- End node ---$")
IN_FUNCTION = re.compile(r"\bIn function \w+:$")
# uv's word that a build backend failed, the backend's output relayed above it at DEBUG (-v)
RELAYS_AT_DEBUG = re.compile("^(?:x|\u00d7) Failed to build `[^`]+`$")
# glibc's abort on a heap it found corrupt: the damage shows, not its cause
HEAP_CORRUPTED = _any(
    r"^(?:free|malloc|realloc|munmap_chunk|malloc_consolidate)\(\): \w",
    r"^double free or corruption\b",
    r"^corrupted size vs\. prev_size\b",
)
# numpy's ImportError, whose advice (the source tree, the versions) hides the loader's words
ORIGINAL_ERROR = r"^Original error was: "
DETAIL_BELOW = _any(r"^The actor is dead because\b", ORIGINAL_ERROR)
# "Last error:" then the line that says what it was (NCCL's last error, in a c10d exception).
# Ascend's CANN the same: "EZ9999: Inner Error!", then the device's own words.
# (llama.cpp's CANN backend puts its source location first: "ggml-cann.cpp:63: CANN error: ...")
LAST_ERROR = re.compile(
    r"^\s*Last error:\s*$|^(?:\S+:\d+: )?(?:CANN error: )?E[A-Z0-9]\d{4}: Inner Error!\s*$"
)
# What a program prints when it lives through an error it just logged.
RECOVERED = _any(
    r"\b[Rr]etrying\b",
    r"\b[Ff]alling back\b",
    r"\|\s*\w+ fallback\s*\|",  # a fallback taken, as a progress table says (GPTQModel's)
    r"has been ignored",
    r"^Ignored error while\b",  # huggingface_hub on a cache write it could do without
    r"will be launched without",
    r"\bcontinuing (?:without|with)\b",
    r"\bwill be ignored\b",  # llama.cpp with no usable GPU: "--gpu-layers option will be ignored"
    r"^Skipping import of\b",  # torchao without its C++ extensions ("... undefined symbol")
    # a sweep or a training loop that caught a failure ("skipped due to OOM (...)", "Skipped
    # iter 1 due to OOM (consecutive: 1, max allowed: 10).")
    r"\b[Ss]kipped (?:[\w-]+ ){0,3}due to\b",
    r"^Ignoring this choice\.?$",  # Inductor's autotuner dropping a config that failed
    # ComfyUI after a prompt ran out of memory: it frees the card and takes the next prompt
    r"\bGot an OOM, unloading all loaded models\b",
    # what failed was not needed after all: the load or the start-up still completed ("Tekken
    # tokenizer loaded successfully", Warp's banner after its init: "Warp 1.7.1 initialized:")
    r"\b(?:[Ll]oaded|[Ii]nitiali[sz]ed|[Ss]tarted) successfully\b",
    r"^\w+ \d+(?:\.\d+)+ initiali[sz]ed:$",
)
# What a process prints while it stops: after a fatal error, these do not mean it went on.
TEARDOWN = _any(
    r"[Ss]hut(?:ting)? ?down",
    r"\b[Ee]xit(?:ing|ed)?\b",
    r"\b[Ss]topp(?:ing|ed)\b",
    r"\b[Tt]erminat",
    r"\b[Kk]illed\b",
    r"\b[Aa]bort",
    r"[Cc]lean(?:ing)? ?up",
    r"destroy",
    r"\b[Ff]inished\b",
    r"core dumped",
    r"^\s*(?:\^+|~+|-+|=+|\*+)\s*$",
    r"^\s*#\d+ ",
    r"^\s*\d+\s+0x[0-9a-f]+",
    r"\bat 0x[0-9a-f]+",
    r"^\s*File \"",
    r"^Thread 0x|^Current thread",
    r"[Ww]aiting for (?:application|background|child|process|workers?)",
)
# Messages that send the reader elsewhere for the real reason: a line that says more wins.
POINTS_ELSEWHERE = _any(
    r"for details\b",
    r"[Ss]ee (?:the )?(?:inner exception|root cause|above|log)",
    r"check (?:the )?(?:error )?log",
    r"raised:\s*$",
    r"previous error",
)

# ...and those whose reason is the next failure printed ("raised:" then the exception).
# asyncio's event loop on an exception no one handled in a callback or a task: it logs it and
# runs on, so the exception below is lived through.
LOOP_LIVED_THROUGH = _any(r"^Exception in callback \S", r"^Task exception was never retrieved$")
# A background thread whose death the process does not notice: vLLM's usage report (it fails
# where the host has no network, and the engine starts on).
THREAD_LIVED_THROUGH = _any(r"^Exception in thread [\w-]+ \(_report_usage_worker\):$")
# Python's socketserver (under http.server and the servers built on it, mlx_lm's) on a request
# whose handler raised: it prints the traceback between dashes and serves the next request.
REQUEST_HANDLER_FAILED = _any(
    r"^Exception occurred during processing of request from \S",
    # Stable Diffusion web UI's call queue (modules/call_queue.py) on one job it answered with
    # the error, its arguments and traceback below, the UI serving on
    r"^\*\*\* Error completing request$",
)
# Hydra (the configs of NeMo, verl, Megatron recipes) under an error it reported
HYDRA_REPORTED = re.compile(r"^Set the environment variable HYDRA_FULL_ERROR=1 for a complete")
# A wrapper quoting the error it reports, in quotes or brackets.
QUOTES_ERROR = re.compile(r"\b(?:with|original) error:? ?['\"(]\S")
QUOTES_NEXT = _any(
    r"raised:\s*$",
    r"[Ss]ee (?:the )?inner exception",
    r"Error in call to target '[\w.]+':$",  # Hydra's instantiate, the repr of what it caught
)
# An exception as its repr ("P2PDaemonError('Daemon failed to start in 15.0 seconds')")
EXCEPTION_REPR = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)\(.*\)$")

# Work only a live engine logs (a decode batch's statistics): never a failure, whatever its
# words, and most of what a serving log's kept lines are.
SERVING = Alternatives(tuple(row.pattern for row in lifecycle.SERVING))

# The line a server prints once per launch, with its configuration.
LAUNCH = Alternatives(tuple(launch.pattern for launch in lifecycle.LAUNCHES))

LOGGING_ERROR = "--- Logging error ---"
TRACEBACK = "Traceback (most recent call last)"
# Ray's report of a task's exception heads its frames instead ("ray::Actor.method() (pid=5184,
# ip=10.0.0.1)")
RAY_TASK_HEADER = re.compile(r"^ray::[\w:.<>-]+\(\) \(pid=\d+, ip=")
CHAINED = re.compile(
    r"During handling of the above exception|The above exception was the direct cause"
)
FRAME = re.compile(r'^\s*File "|^\s*\^+\s*$|^\s*[~^]+\s*$')


_QUOTED_EXCEPTION = re.compile(
    r"\S:\s+((?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)): |\bfailed(?: with error)?:\s+(\S)"
)
# A CUDA error whose failing call, as the report under it names it, is a graph's (ggml's
# "CUDA error: invalid argument" / "  cudaGraphKernelNodeSetParams(...)"): the graph's fault.
CUDA_GRAPH_CALL = re.compile(r"^\s*cudaGraph\w+\(", re.MULTILINE)
# A fault in the driver while ranks exchange memory handles is a rendezvous failure.
SYMMETRIC_MEMORY = _any(r"_SymmetricMemory", r"symm_mem", r"SymmetricMemory")
# A process killed by a signal says nothing of the fault: the frames it died in do. Inside a
# collective library or its transport it is a communication fault; reading mapped weights, a
# load (a Bus error on a file that changed or shrank under its mapping).
SIGNALLED = re.compile(
    r"\bSegmentation fault\b|\bSegfault encountered\b|\bSIGSEGV\b|\bsignal 11\b|\bBus error\b"
    r"|\bSIGBUS\b"
)
SIGNAL_CONTEXT = [
    (
        "nccl_comm",
        _any(
            r"\bnccl\w*\(|libnccl|librccl|\bucp_\w+|\buct_\w+|\bibv_\w+",
            r"\bline \d+ in (?:all_reduce|all_gather\w*|reduce_scatter\w*|broadcast)\b",
        ),
    ),
    ("model_loading", _any(r"\bsafetensors\b.*\b(?:safe_open|load|get_tensor)|weight_loader")),
]


def error_class(root_line: str, context: str) -> str:
    """The class of a failure, from its root-cause line, then from its surroundings."""
    key = ARCH_KEY.search(root_line)
    if key and ARCH_CONTEXT.search(context) and not CONTEXT_RULES[0][1].search(context):
        return "unsupported_arch"
    # A wrapper quoting the exception it caught ("Capture cuda graph failed: RuntimeError:
    # CUDA error: an illegal memory access"): the quoted fault decides, then the whole line.
    job = SHELL_JOB.search(root_line)
    if job:
        root_line = root_line[: job.end()]  # the command the shell names is not the fault
    quoted = [m.start(m.lastindex or 0) for m in _QUOTED_EXCEPTION.finditer(root_line)]
    for text in [root_line[start:] for start in reversed(quoted)] + [root_line]:
        for name, pattern in CLASS_RULES:
            if pattern.search(text):
                if name == "cuda_runtime" and SYMMETRIC_MEMORY.search(context):
                    return "nccl_comm"
                if name == "cuda_runtime" and CUDA_GRAPH_CALL.search(context):
                    return "cuda_graph"
                return name
    if SIGNALLED.search(root_line):
        for name, pattern in SIGNAL_CONTEXT:
            if pattern.search(context):
                return name
    for name, pattern in CONTEXT_RULES:
        if pattern.search(context):
            return name
    return "other"


_FINGERPRINT_SUBS = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),
    (re.compile(r"(?:/[\w.@+-]+)+/([\w.@+-]+)"), r"\1"),  # paths: keep the file name
    (re.compile(r"\btmp\w+"), "tmp?"),
    (
        re.compile(r"\b(pid|rank|tid|device|gpu|GPU|Rank|RANK|rank_id|local_rank)([ =:]+)\d+"),
        r"\1\2N",
    ),
    (re.compile(r"\d+(?:\.\d+)?\s*(?:[KMGT]i?B|kB|ms|s|%)\b"), "N"),
    (re.compile(r"\b\d+\.\d+\b"), "N"),
    (re.compile(r"\b\d{4,}\b"), "N"),
    (re.compile(r"\s+"), " "),
]


def normalized(message: str) -> str:
    """The message without what changes between runs, hosts, ranks, PIDs and paths."""
    text = message
    for pattern, replacement in _FINGERPRINT_SUBS:
        text = pattern.sub(replacement, text)
    return text.strip()


def fingerprint(error_class_name: str, message: str) -> str:
    """Stable across runs, hosts, ranks, PIDs, addresses and paths; different failures differ."""
    digest = hashlib.sha256(f"{error_class_name}\n{normalized(message)}".encode()).hexdigest()
    return digest[:16]
