"""Drive `toolhost mcp` with the official MCP Python SDK, as a desktop client would.

Run by the integration test `mcp::the_python_sdk_drives_toolhost_mcp` (tests/it/mcp.rs), with
the virtualenv .ci/run creates (`pip install -r tests/requirements.txt`). Each step asserts
what it receives; any failure exits non-zero with the reason. On success the last line of
stdout is a JSON summary the Rust test checks.

Usage: mcp_client.py TOOLHOST WORKSPACE EXTENSION PLANTED
  WORKSPACE holds a.txt and pixel.png; EXTENSION (the testkit component, outside the
  workspace) is loaded with --extension; PLANTED (another component) is copied into
  WORKSPACE/.toolhost/extensions/ while the server runs, as an agent's own tool could,
  and must never be listed. The server gets this process's XDG_CONFIG_HOME, so it reads
  the test's user configuration, never the developer's.
"""

import json
import os
import shutil
import sys
import tempfile
import time

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client

# Generous bounds for waiting on the server: a failure ends the wait, never a timing check.
DEADLINE_S = 60


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def text_of(result):
    return "\n".join(block.text for block in result.content if block.type == "text")


async def wait_until(predicate, what):
    end = time.monotonic() + DEADLINE_S
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"waited {DEADLINE_S}s for {what}")
        await anyio.sleep(0.05)


async def main(toolhost, workspace, extension, planted):
    errlog_path = os.path.join(tempfile.mkdtemp(), "toolhost-mcp.stderr")
    errlog = open(errlog_path, "w")
    params = StdioServerParameters(
        command=toolhost,
        args=["--workspace", workspace, "--extension", extension, "mcp"],
        env={**get_default_environment(), "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]},
    )
    list_changes = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            list_changes.append(message)

    def server_log():
        with open(errlog_path) as f:
            return f.read()

    summary = {}
    # The default connect mode ("auto") probes server/discover at 2026-07-28 first and
    # falls back to the initialize handshake: what every SDK 2.x client does.
    async with Client(stdio_client(params, errlog=errlog), message_handler=on_message) as client:
        summary["protocolVersion"] = client.protocol_version
        summary["serverInfo"] = client.server_info.name
        check(client.protocol_version == "2025-11-25", f"negotiated {client.protocol_version}")
        check(client.server_info.name == "toolhost", f"server info {client.server_info}")
        caps = client.server_capabilities
        check(caps.tools is not None and caps.tools.list_changed, f"capabilities {caps}")

        # tools/list: the active tools with schemas, titles and the built-ins' hints.
        tools = {t.name: t for t in (await client.list_tools()).tools}
        summary["tools"] = sorted(tools)
        for name in ["read", "write", "slow", "fast", "progress"]:
            check(name in tools, f"{name} is not listed: {sorted(tools)}")
        read = tools["read"]
        check(read.title == "read", f"read's title {read.title!r}")
        check(read.input_schema["required"] == ["path"], f"read's schema {read.input_schema}")
        check(read.annotations is not None and read.annotations.read_only_hint is True,
              f"read's annotations {read.annotations}")
        write = tools["write"].annotations
        check(write is not None and write.destructive_hint is True and write.read_only_hint is False,
              f"write's annotations {write}")
        check(tools["slow"].annotations is None, "an extension tool got annotations")
        check(tools["slow"].title == "Slow", f"slow's title {tools['slow'].title!r}")

        # tools/call through the whole pipeline: text, image, and a tool error.
        result = await client.call_tool("read", {"path": "a.txt"})
        check(not result.is_error and text_of(result) == "Hello, MCP!\n", f"read a.txt: {result}")
        result = await client.call_tool("read", {"path": "pixel.png"})
        kinds = [block.type for block in result.content]
        check(kinds == ["text", "image"] and not result.is_error, f"read pixel.png: {kinds}")
        check(result.content[0].text == "Read image file [image/png]", f"{result.content[0]}")
        check(result.content[1].mime_type == "image/png" and result.content[1].data,
              "the image block has no PNG data")
        result = await client.call_tool("read", {"path": "missing.txt"})
        expected = f"ENOENT: no such file or directory, access '{workspace}/missing.txt'"
        check(result.is_error is True and text_of(result) == expected, f"read missing.txt: {result}")
        result = await client.call_tool("read", {})
        check(result.is_error is True and text_of(result).startswith('Validation failed for tool "read":'),
              f"read without path: {result}")

        # Progress: each tool update is a notifications/progress before the result.
        progress = []

        async def on_progress(value, total, message):
            progress.append((value, message))

        result = await client.call_tool("progress", {"count": 3}, progress_callback=on_progress)
        check(text_of(result) == "progress done", f"progress result: {result}")
        check(progress == [(1, "partial 1"), (2, "partial 2"), (3, "partial 3")],
              f"progress notifications: {progress}")
        summary["progress"] = progress

        # bash streams its output as progress (Pi's onUpdate), the last with all of it.
        bash_progress = []

        async def on_bash_progress(value, total, message):
            bash_progress.append(message)

        result = await client.call_tool(
            "bash", {"command": "echo a; sleep 0.3; echo b"}, progress_callback=on_bash_progress
        )
        check(text_of(result) == "a\nb\n" and not result.is_error, f"bash result: {result}")
        check(len(bash_progress) >= 2 and bash_progress[-1] == "a\nb\n",
              f"bash progress notifications: {bash_progress}")
        summary["bashProgress"] = bash_progress

        # Parallel requests run concurrently: a quick call answers while a ten-minute
        # one is still running; then the long one is cancelled (notifications/cancelled).
        async with anyio.create_task_group() as group:
            slow_scope = anyio.CancelScope()

            async def slow():
                with slow_scope:
                    await client.call_tool("slow", {"ms": 600000})
                    raise AssertionError("the slow call was not cancelled")

            group.start_soon(slow)
            result = await client.call_tool("fast", {})
            check(text_of(result) == "fast done", f"fast: {result}")
            slow_scope.cancel()
        await wait_until(lambda: "tools/call slow" in server_log(), "the server to log the cancelled call")
        line = next(l for l in server_log().splitlines() if "tools/call slow" in l)
        check(line.endswith("was cancelled; the tool answered: Operation aborted"), f"server log: {line}")
        summary["cancelled"] = line
        result = await client.call_tool("fast", {})
        check(text_of(result) == "fast done", "the server stopped serving after a cancel")

        # notifications/tools/list_changed when the extension files change.
        moved = extension + ".away"
        shutil.move(extension, moved)
        await wait_until(lambda: len(list_changes) == 1, "list_changed after removing the extension")
        names = [t.name for t in (await client.list_tools()).tools]
        check("slow" not in names and "read" in names, f"tools after removal: {names}")
        shutil.move(moved, extension)
        await wait_until(lambda: len(list_changes) == 2, "list_changed after restoring the extension")
        names = [t.name for t in (await client.list_tools()).tools]
        check("slow" in names, f"tools after restoring: {names}")
        summary["listChanged"] = len(list_changes)

        # A component planted in the workspace while the server runs is refused at the
        # reload it causes: reported, never listed, no list_changed.
        planted_path = os.path.join(workspace, ".toolhost", "extensions", "planted.wasm")
        os.makedirs(os.path.dirname(planted_path), exist_ok=True)
        shutil.copy(planted, planted_path)
        refusal = f"{planted_path}: untrusted: run toolhost trust to review"
        await wait_until(lambda: refusal in server_log(), "the reload to refuse the planted component")
        names = [t.name for t in (await client.list_tools()).tools]
        check("probe" not in names, f"the planted component was listed: {names}")
        check(len(list_changes) == 2, "list_changed for a refused component")
        summary["plantedRefused"] = True

    print(json.dumps(summary))


def first_assertion(error):
    """The AssertionError inside anyio's exception groups, if any."""
    if isinstance(error, AssertionError):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = first_assertion(inner)
        if found is not None:
            return found
    return None


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    try:
        anyio.run(main, *sys.argv[1:])
    except BaseException as error:
        failed = first_assertion(error)
        if failed is None:
            raise
        sys.exit(f"FAILED: {failed}")
