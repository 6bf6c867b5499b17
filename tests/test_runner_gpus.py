"""The host program's reading of nvidia-smi (app/runner/host_gpus.py), table-driven: what
each output of its two CSV queries (`--format=csv,noheader,nounits`) becomes, and what a
preflight then says holds the GPUs. The outputs are as real hosts print them."""

from pathlib import Path
from typing import Any

import pytest

from app.runner.host_gpus import (
    APP_QUERY,
    GPU_QUERY,
    SMI_DIRS,
    find_smi,
    gpus,
    gpus_busy,
    read_gpus,
)
from tests.runner_helpers import StandInGPUs

H200 = "GPU-5c2a1f5e-39c3-6e6a-ceb6-3d4d06d7e93f"
H200_B = "GPU-a41f03c2-8e5d-2b7a-9c61-0f4e7d21b3aa"
H100 = [f"GPU-{i:x}1c7e9a2-4d3b-1f8e-a5c6-7b2d9e0f{i:04x}" for i in range(8)]
NO_PROCESS = (0, "")


def device(
    index: int, uuid: str, used: int | None, total: int | None, mig: bool = False
) -> dict[str, Any]:
    return {"index": str(index), "uuid": uuid, "used_mib": used, "total_mib": total, "mig": mig}


CASES = [
    pytest.param(
        (0, f"0, {H200}, 0, 143771, Disabled\n"),
        NO_PROCESS,
        {"present": True, "devices": [device(0, H200, 0, 143771)], "processes": []},
        [],
        id="one idle H200",
    ),
    pytest.param(
        (0, "".join(f"{i}, {H100[i]}, 1, 81559, Disabled\n" for i in range(8))),
        NO_PROCESS,
        {
            "present": True,
            "devices": [device(i, H100[i], 1, 81559) for i in range(8)],
            "processes": [],
        },
        [],
        id="eight idle H100s",
    ),
    pytest.param(
        (0, f"0, {H200}, 75121, 143771, Disabled\n1, {H200_B}, 4, 143771, Disabled\n"),
        # The process name is the one free-text cell: a comma of its own stays in it.
        (
            0,
            f"2381905, /usr/bin/python3, 74560, {H200}\n"
            f"2382210, python3 -m sglang.launch_server --model a,b, 556, {H200}\n",
        ),
        {
            "present": True,
            "devices": [device(0, H200, 75121, 143771), device(1, H200_B, 4, 143771)],
            "processes": [
                {"pid": 2381905, "name": "/usr/bin/python3", "used_mib": 74560, "gpu": "0"},
                {
                    "pid": 2382210,
                    "name": "python3 -m sglang.launch_server --model a,b",
                    "used_mib": 556,
                    "gpu": "0",
                },
            ],
        },
        [
            "pid 2381905 /usr/bin/python3 holds 74560 MiB on GPU 0",
            "pid 2382210 python3 -m sglang.launch_server --model a,b holds 556 MiB on GPU 0",
            "GPU 0 has 75121 of 143771 MiB in use",
        ],
        id="a busy GPU with its processes",
    ),
    pytest.param(
        (0, f"0, {H200}, 20480, 143771, Disabled\n"),
        NO_PROCESS,  # another PID namespace's process: not listed from a container
        {"present": True, "devices": [device(0, H200, 20480, 143771)], "processes": []},
        ["GPU 0 has 20480 of 143771 MiB in use by no process nvidia-smi lists here"],
        id="memory in use by no process listed",
    ),
    pytest.param(
        (0, f"WARNING: infoROM is corrupted at gpu 0000:41:00.0\n0, {H200}, [N/A], [N/A], [N/A]\n"),
        (0, f"5120, /usr/bin/python3, [N/A], {H200}\n"),
        {
            "present": True,
            "devices": [device(0, H200, None, None)],
            "processes": [{"pid": 5120, "name": "/usr/bin/python3", "used_mib": None, "gpu": "0"}],
            "note": "GPU 0 says [N/A] for its memory in use: checked by its compute processes only",
        },
        ["pid 5120 /usr/bin/python3 holds memory on GPU 0"],
        id="a warning line and memory it cannot say (GB10)",
    ),
    pytest.param(
        (0, f"0, {H200}, [Insufficient Permissions], 143771, Enabled\n"),
        NO_PROCESS,
        {
            "present": True,
            "devices": [device(0, H200, None, 143771, mig=True)],
            "processes": [],
            "note": "GPU 0 says [Insufficient Permissions] for its memory in use: checked by its "
            "compute processes only",
        },
        [],
        id="a MIG GPU seen from a container",
    ),
    pytest.param(
        (6, "No devices were found\n"),
        None,  # not asked
        {"present": True, "error": "nvidia-smi failed: exit status 6: No devices were found"},
        None,
        id="no devices were found",
    ),
    pytest.param(
        (18, "Failed to initialize NVML: Driver/library version mismatch\n"),
        None,
        {
            "present": True,
            "error": "nvidia-smi failed: exit status 18: Failed to initialize "
            "NVML: Driver/library version mismatch",
        },
        None,
        id="a driver/library version mismatch",
    ),
    pytest.param(
        (2, 'Field "mig.mode.current" is not a valid field to query.\n\n'),
        None,
        {
            "present": True,
            "error": "nvidia-smi failed: exit status 2: Field "
            '"mig.mode.current" is not a valid field to query.',
        },
        None,
        id="a field an old nvidia-smi does not know",
    ),
    pytest.param(
        (0, ""),
        NO_PROCESS,
        {"present": True, "error": "nvidia-smi listed no GPU"},
        None,
        id="empty output",
    ),
]


@pytest.mark.parametrize(("gpu_query", "app_query", "expected", "busy"), CASES)
def test_nvidia_smi_output_is_read_as_the_preflight_needs_it(
    gpu_query: tuple[int, str],
    app_query: tuple[int, str] | None,
    expected: dict[str, Any],
    busy: list[str] | None,
) -> None:
    asked: list[str] = []

    def ask(query: str) -> tuple[int, str]:
        asked.append(query)
        said = {GPU_QUERY: gpu_query, APP_QUERY: app_query}[query]
        assert said is not None, f"{query} asked after the GPUs' query failed"
        return said

    answer = read_gpus(ask)
    assert answer == expected
    assert asked == ([GPU_QUERY] if app_query is None else [GPU_QUERY, APP_QUERY])
    if busy is not None:
        assert gpus_busy(answer) == busy


def test_nvidia_smi_is_found_where_drivers_put_it_when_the_path_lacks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A non-interactive SSH session's PATH is short: in a container the driver's
    # nvidia-smi is in /usr/local/nvidia/bin, under WSL in /usr/lib/wsl/lib.
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    container, wsl = tmp_path / "usr-local-nvidia-bin", tmp_path / "usr-lib-wsl-lib"
    dirs = [str(container), str(wsl)]
    assert find_smi(dirs) is None
    unchecked = gpus(dirs)
    assert unchecked == {
        "present": False,
        "note": f"no nvidia-smi on the PATH or in {container}, {wsl}",
    }
    wsl.mkdir()
    (wsl / "nvidia-smi").write_text("#!/bin/sh\n")  # not executable: not a program to run
    assert find_smi(dirs) is None
    gpu = {"index": 0, "memory_total": 143771, "memory_used": 20480}
    program = StandInGPUs(tmp_path / "state", gpu).install(container)
    assert find_smi(dirs) == str(program)
    found = gpus(dirs)
    assert found["present"] is True and found["devices"][0]["used_mib"] == 20480
    assert gpus_busy(found) == [
        "GPU 0 has 20480 of 143771 MiB in use by no process nvidia-smi lists here"
    ]
    assert set(SMI_DIRS) == {"/usr/bin", "/usr/local/nvidia/bin", "/usr/lib/wsl/lib"}
