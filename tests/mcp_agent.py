"""An agent's side of `campaign-dash mcp`: the official SDK's client over stdio, started as
an agent's host starts it, driven from synchronous tests (and bench/) through a portal."""

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Tool

# Each call's time: the loop's own calls (not the runs they wait for) should be quick.
WAIT_TOOLS = ("wait_for_attempt",)


@dataclass(frozen=True)
class Called:
    tool: str
    error: bool
    data: Any  # the tool's JSON (its text when an error)
    seconds: float


@dataclass
class Agent:
    portal: BlockingPortal
    client: Client
    calls: list[Called] = field(default_factory=list)

    def tools(self) -> list[Tool]:
        return list(self.portal.call(self.client.list_tools).tools)

    def call(self, tool: str, **arguments: Any) -> Called:
        started = time.perf_counter()
        result = self.portal.call(self.client.call_tool, tool, arguments)
        seconds = time.perf_counter() - started
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            data: Any = text
        elif isinstance(result.structured_content, dict):
            # A list comes wrapped as {"result": [...]}, as the SDK's output schema has it.
            found = result.structured_content
            data = found["result"] if set(found) == {"result"} else found
        else:
            data = json.loads(text)
        called = Called(tool, result.is_error, data, seconds)
        self.calls.append(called)
        return called

    def ok(self, tool: str, **arguments: Any) -> Any:
        called = self.call(tool, **arguments)
        assert not called.error, f"{tool}: {called.data}"
        return called.data

    def read(self, uri: str) -> str:
        found = self.portal.call(self.client.read_resource, uri)
        return str(found.contents[0].text)  # type: ignore[union-attr]


@contextmanager
def agent(env: dict[str, str], cwd: Path, *args: str) -> Iterator[Agent]:
    """`campaign-dash mcp ARGS` as a subprocess of the SDK's stdio client."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "app", "mcp", *args], env=env, cwd=cwd
    )
    client = Client(params, read_timeout_seconds=700)  # past wait_for_attempt's longest
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(client) as opened:
        yield Agent(portal, opened)
