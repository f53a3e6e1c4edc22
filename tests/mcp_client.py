"""Drive `toolhost mcp` with the official MCP Python SDK, as a desktop client would.

Run by the integration tests in tests/it/mcp.rs, with the virtualenv scripts/setup creates
(`pip install -r tests/requirements.txt`), once per transport and revision. Each step asserts
what it receives; any failure exits non-zero with the reason. On success the last line of
stdout is a JSON summary the Rust test checks.

Usage: mcp_client.py TOOLHOST WORKSPACE EXTENSION PLANTED TRANSPORT MODE
  WORKSPACE holds a.txt and pixel.png; EXTENSION (the testkit component, outside the
  workspace) is loaded with --extension; PLANTED (another component) is copied into
  WORKSPACE/.toolhost/extensions/ while the server runs, as an agent's own tool could,
  and must never be listed. The server gets this process's XDG_CONFIG_HOME, so it reads
  the test's user configuration, never the developer's.
  TRANSPORT is `stdio` (the SDK starts the server) or `http` (this script starts
  `toolhost mcp --http 127.0.0.1:0 --token-file …` and connects to the port it prints,
  with the token; it also checks the listener's refusals and 32 concurrent clients).
  MODE is the SDK's connect mode: `legacy` (the initialize handshake, 2025-11-25) or
  `auto` (server/discover first: 2026-07-28, no handshake).
"""

import contextlib
import json
import os
import shutil
import sys
import tempfile

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_common import TOKEN, address_in, call_with_progress, check, run_script, wait_until


def text_of(result):
    return "\n".join(block.text for block in result.content if block.type == "text")


EXPECTED_VERSION = {"legacy": "2025-11-25", "auto": "2026-07-28"}


class Server:
    """How to reach the server under test, and what it logged."""

    def __init__(self, toolhost, workspace, extension, transport):
        self.transport = transport
        self.errlog_path = os.path.join(tempfile.mkdtemp(), "toolhost-mcp.stderr")
        self.errlog = open(self.errlog_path, "w")
        self.args = ["--workspace", workspace, "--extension", extension, "mcp"]
        self.env = {**get_default_environment(), "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]}
        self.toolhost = toolhost
        self.process = None
        self.url = None

    def log(self):
        with open(self.errlog_path) as f:
            return f.read()

    async def start(self):
        if self.transport != "http":
            return
        token_file = os.path.join(tempfile.mkdtemp(), "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        self.process = await anyio.open_process(
            [self.toolhost, *self.args, "--http", "127.0.0.1:0", "--token-file", token_file],
            stdin=None, stdout=None, stderr=self.errlog, env=self.env,
        )
        self.url = await address_in(self.log, "toolhost mcp: listening on ")

    async def stop(self):
        if self.process is not None:
            self.process.terminate()
            await self.process.wait()

    def client(self, mode, message_handler=None, token=TOKEN):
        if self.transport == "http":
            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {token}"},
                timeout=httpx2.Timeout(30, read=600),
            )
            transport = streamable_http_client(self.url, http_client=http)
        else:
            params = StdioServerParameters(command=self.toolhost, args=self.args, env=self.env)
            transport = stdio_client(params, errlog=self.errlog)
        return Client(transport, mode=mode, message_handler=message_handler)


async def main(toolhost, workspace, extension, planted, transport, mode):
    server = Server(toolhost, workspace, extension, transport)
    await server.start()
    try:
        summary = await session(server, workspace, extension, planted, mode)
        if transport == "http":
            summary["refusals"] = await refusals(server, workspace)
            summary["concurrentClients"] = await many_clients(server, workspace, mode)
            summary["vanishedClientCancelled"] = await vanished_client(server, mode)
    finally:
        await server.stop()
    print(json.dumps(summary))


async def session(server, workspace, extension, planted, mode):
    list_changes = []

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            list_changes.append(message)

    server_log = server.log
    summary = {}
    async with server.client(mode, message_handler=on_message) as client:
        summary["protocolVersion"] = client.protocol_version
        summary["serverInfo"] = client.server_info.name
        expected = EXPECTED_VERSION[mode]
        check(client.protocol_version == expected, f"negotiated {client.protocol_version}, not {expected}")
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

        # toolhost:tool@0.2.0: an output schema is the tool's outputSchema; a
        # result that matches it arrives as structuredContent (the SDK itself
        # validates it against the schema), one that breaks it is an error
        # result naming the violation, with no structured content.
        typed = tools["typed"]
        check(typed.output_schema is not None and typed.output_schema.get("required") == ["count"],
              f"typed's output schema {typed.output_schema}")
        check(read.output_schema is None, f"read has an output schema {read.output_schema}")
        result = await client.call_tool("typed", {"structured": {"count": 3, "word": "three"}})
        check(not result.is_error and result.structured_content == {"count": 3, "word": "three"},
              f"typed with a matching result: {result}")
        summary["structured"] = result.structured_content
        result = await client.call_tool("typed", {"structured": {"count": "three"}})
        check(result.is_error is True and result.structured_content is None, f"typed breaking its schema: {result}")
        summary["schemaViolation"] = text_of(result)

        # Progress: each tool update is a notifications/progress before the result.
        result, progress = await call_with_progress(client, "progress", {"count": 3})
        check(text_of(result) == "progress done", f"progress result: {result}")
        check(progress == [(1, "partial 1"), (2, "partial 2"), (3, "partial 3")],
              f"progress notifications: {progress}")
        summary["progress"] = progress

        # bash streams its output as progress (Pi's onUpdate), the last with all of it.
        result, updates = await call_with_progress(
            client, "bash", {"command": "echo a; sleep 0.3; echo b"}
        )
        bash_progress = [message for _, message in updates]
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
            # The slow request must be on the wire before the scope is
            # cancelled (a request cancelled before it is sent sends no
            # notifications/cancelled); on a loaded machine the fast call
            # could otherwise be answered first.
            await anyio.sleep(0.5)
            result = await client.call_tool("fast", {})
            check(text_of(result) == "fast done", f"fast: {result}")
            slow_scope.cancel()
        await wait_until(lambda: "tools/call slow" in server_log(), "the server to log the cancelled call")
        line = next(l for l in server_log().splitlines() if "tools/call slow" in l)
        check(line.endswith("was cancelled; the tool answered: Operation aborted"), f"server log: {line}")
        summary["cancelled"] = line
        result = await client.call_tool("fast", {})
        check(text_of(result) == "fast done", "the server stopped serving after a cancel")

        # notifications/tools/list_changed when the extension files change: to the
        # session (handshake revisions) or on a subscriptions/listen stream (2026-07-28).
        async with changes_of(client, mode, list_changes) as changes:
            moved = extension + ".away"
            shutil.move(extension, moved)
            await wait_until(lambda: len(changes) == 1, "list_changed after removing the extension")
            names = [t.name for t in (await client.list_tools()).tools]
            check("slow" not in names and "read" in names, f"tools after removal: {names}")
            shutil.move(moved, extension)
            await wait_until(lambda: len(changes) == 2, "list_changed after restoring the extension")
            names = [t.name for t in (await client.list_tools()).tools]
            check("slow" in names, f"tools after restoring: {names}")
            summary["listChanged"] = len(changes)

            # A component planted in the workspace while the server runs is refused at the
            # reload it causes: reported, never listed, no list_changed.
            planted_path = os.path.join(workspace, ".toolhost", "extensions", "planted.wasm")
            os.makedirs(os.path.dirname(planted_path), exist_ok=True)
            shutil.copy(planted, planted_path)
            refusal = f"{planted_path}: untrusted: run toolhost trust to review"
            await wait_until(lambda: refusal in server_log(), "the reload to refuse the planted component")
            names = [t.name for t in (await client.list_tools()).tools]
            check("probe" not in names, f"the planted component was listed: {names}")
            check(len(changes) == 2, "list_changed for a refused component")
            summary["plantedRefused"] = True
            os.remove(planted_path)
    return summary


@contextlib.asynccontextmanager
async def changes_of(client, mode, notifications):
    """The list of tool-list changes the client is told of from now on: the session's
    notifications (handshake revisions), or the events of a listen stream (2026-07-28)."""
    if mode == "legacy":
        del notifications[:]
        yield notifications
        return
    events = []
    async with anyio.create_task_group() as group:
        ready = anyio.Event()

        async def listen():
            async with client.listen(tools_list_changed=True) as subscription:
                check(subscription.honored.tools_list_changed, f"listen honored {subscription.honored}")
                ready.set()
                async for event in subscription:
                    events.append(event)

        group.start_soon(listen)
        await ready.wait()
        yield events
        group.cancel_scope.cancel()


async def refusals(server, workspace):
    """What the HTTP listener refuses, and that a refused request ran nothing."""
    seen = {}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "write", "arguments": {"path": "written-without-token.txt", "content": "x"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2025-11-25"}
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(server.url, json=call, headers=headers)
        seen["noToken"] = response.status_code
        check(response.status_code == 401, f"without a token: {response.status_code} {response.text}")
        check(response.headers.get("www-authenticate") == "Bearer", f"{response.headers}")
        response = await http.post(server.url, json=call,
                                   headers={**headers, "Authorization": "Bearer wrong-token-0123456789"})
        seen["wrongToken"] = response.status_code
        check(response.status_code == 401, f"with a wrong token: {response.status_code}")
        auth = {"Authorization": f"Bearer {TOKEN}"}
        response = await http.post(server.url, json=call,
                                   headers={**headers, **auth, "Origin": "http://evil.example"})
        seen["forbiddenOrigin"] = response.status_code
        check(response.status_code == 403 and "Origin http://evil.example is not allowed" in response.text,
              f"a forbidden Origin: {response.status_code} {response.text}")
        port = server.url.split(":")[2].split("/")[0]
        response = await http.post(server.url, json=call,
                                   headers={**headers, **auth, "Host": f"evil.example:{port}"})
        seen["foreignHost"] = response.status_code
        check(response.status_code == 403, f"a foreign Host (DNS rebinding): {response.status_code}")
        response = await http.post(server.url, content=b"[" * (5 << 20), headers={**headers, **auth})
        seen["oversizedBody"] = response.status_code
        check(response.status_code == 413, f"a 5 MiB body: {response.status_code}")
        # Why, as JSON-RPC, read whole before the connection closed; the server goes on.
        error = response.json().get("error", {})
        check(error.get("code") == -32600 and "limited to" in error.get("message", ""),
              f"the 413's body: {response.text}")
        seen["oversizedBodyError"] = error["message"]
        response = await http.post(server.url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                   headers={**headers, **auth})
        check(response.status_code in (200, 400, 404), f"after the 413: {response.status_code}")
        seen["servedAfterOversized"] = response.status_code != 0
    check(not os.path.exists(os.path.join(workspace, "written-without-token.txt")),
          "a refused request ran its tool call")
    return seen


async def many_clients(server, workspace, mode, count=32):
    """`count` clients at once, each with its own connection and session, each running a
    batch of calls at once; every result must be its own."""
    for i in range(count):
        with open(os.path.join(workspace, f"client-{i}.txt"), "w") as f:
            f.write(f"file of client {i}\n")
    results = {}

    async def one(i):
        async with server.client(mode) as client:
            got = {}

            async def read():
                got["read"] = text_of(await client.call_tool("read", {"path": f"client-{i}.txt"}))

            async def bash():
                got["bash"] = text_of(await client.call_tool("bash", {"command": f"echo client {i}"}))

            async def fast():
                got["fast"] = text_of(await client.call_tool("fast", {}))

            async with anyio.create_task_group() as calls:
                for f in (read, bash, fast):
                    calls.start_soon(f)
            results[i] = got

    async with anyio.create_task_group() as group:
        for i in range(count):
            group.start_soon(one, i)
    for i in range(count):
        expected = {"read": f"file of client {i}\n", "bash": f"client {i}\n", "fast": "fast done"}
        check(results.get(i) == expected, f"client {i} got {results.get(i)}")
    return count


VANISHING_CLIENT = """
import anyio, httpx2, os, sys
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

async def main(url, token, mode):
    # Gone once the call runs (its first progress: bash's first output), not
    # after a fixed time that a loaded machine may need to send the request.
    running = anyio.Event()

    async def on_progress(value, total, message):
        running.set()

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=600)
    async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: client.call_tool(
                "bash", {"command": "echo vanishing; sleep 600"}, progress_callback=on_progress))
            with anyio.fail_after(120):
                await running.wait()
            os._exit(0)  # gone: no cancellation, no session end, connections just close

anyio.run(main, *sys.argv[1:])
"""


async def vanished_client(server, mode):
    """A client that disappears in the middle of a call gets its call cancelled."""
    before = server.log().count("tools/call bash")
    await anyio.run_process([sys.executable, "-c", VANISHING_CLIENT, server.url, TOKEN, mode])
    await wait_until(lambda: server.log().count("tools/call bash") > before,
                     "the server to cancel the vanished client's call")
    line = [l for l in server.log().splitlines() if "tools/call bash" in l][-1]
    check("was cancelled; the tool answered: " in line, f"server log: {line}")
    return True


if __name__ == "__main__":
    run_script(main, __doc__, 6)
