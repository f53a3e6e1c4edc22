"""Session processes through `toolhost mcp`, driven by the official MCP Python SDK.

Run by tests/it/session_processes.rs. Each step asserts what it receives; any failure exits
non-zero with the reason. On success the last line of stdout is a JSON summary the Rust test
checks.

Usage: mcp_processes.py TOOLHOST WORKSPACE PORT MARKER_A MARKER_B
  stdio, in both connect modes (2025-11-25 and 2026-07-28): a Python HTTP server started with
  process_start answers curl from bash in the next call, is listed, and is stopped.
  http, two handshake sessions (2025-11-25) at once: each lists only its own process; when one
  session closes, its process ends and the other's runs on, until that one closes too. The
  processes are found by the markers in their command lines (/proc).
"""

import json
import os
import sys
import tempfile
import time

import anyio
import httpx2
from mcp_common import DEADLINE_S, TOKEN, check, running, start_http, wait_until
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

TOOLS = "bash,process_start,process_output,process_write,process_list,process_stop"



def text_of(result):
    return "\n".join(block.text for block in result.content if block.type == "text")




async def call(client, name, args):
    result = await client.call_tool(name, args)
    check(not result.is_error, f"{name} {args}: {text_of(result)}")
    return text_of(result)


async def read_until(client, pid, needle):
    text = ""
    end = time.monotonic() + DEADLINE_S
    while needle not in text:
        check(time.monotonic() < end, f"{needle!r} never came: {text}")
        text += await call(client, "process_output", {"id": pid, "wait": 0.2})
    return text


async def stdio(toolhost, workspace, port, mode):
    params = StdioServerParameters(
        command=toolhost, args=["--workspace", workspace, "--tools", TOOLS, "mcp"],
        env=dict(os.environ))
    errlog = open(os.path.join(tempfile.mkdtemp(), "stderr"), "w")
    async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
        started = await call(client, "process_start", {
            "command": f"python3 -u -m http.server {port} --bind 127.0.0.1", "wait": 0})
        check("[Process 1 is running" in started, started)
        await read_until(client, 1, "Serving HTTP")
        curl = await call(client, "bash", {"command": f"curl -s http://127.0.0.1:{port}/hello.txt"})
        listed = await call(client, "process_list", {})
        stopped = await call(client, "process_stop", {"id": 1})
    return {"curl": curl, "listed": listed.split("  ")[0] + " " + listed.split("  ")[-1],
            "stopped": stopped.splitlines()[-1]}


async def http(toolhost, workspace, marker_a, marker_b):
    server, url = await start_http(toolhost, ["--workspace", workspace, "--tools", TOOLS])

    def client():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"},
                                  timeout=httpx2.Timeout(30, read=600))
        return Client(streamable_http_client(url, http_client=http), mode="legacy")

    summary = {}
    try:
        async with client() as b:
            async with client() as a:
                await call(a, "process_start", {"command": f"sleep {marker_a}", "wait": 0})
                await call(b, "process_start", {"command": f"sleep {marker_b}", "wait": 0})
                summary["listA"] = await call(a, "process_list", {})
                summary["listB"] = await call(b, "process_list", {})
                await wait_until(lambda: running(marker_a) and running(marker_b),
                                 "both processes to run")
            await wait_until(lambda: not running(marker_a), "session A's process to end")
            summary["bRunsAfterAClosed"] = running(marker_b)
            summary["listBAfterAClosed"] = await call(b, "process_list", {})
        await wait_until(lambda: not running(marker_b), "session B's process to end")
        summary["bEndedWithItsSession"] = True
    finally:
        server.terminate()
        await server.wait()
    return summary


async def main(toolhost, workspace, port, marker_a, marker_b):
    summary = {}
    for mode in ("legacy", "auto"):
        summary[f"stdio-{mode}"] = await stdio(toolhost, workspace, port, mode)
    summary["http"] = await http(toolhost, workspace, marker_a, marker_b)
    print(json.dumps(summary))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
