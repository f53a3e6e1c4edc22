"""The session bounds of `toolhost mcp --http`, driven by the official MCP Python SDK and by
plain HTTP requests where a test must control exactly what a client sends.

Run by tests/it/mcp_http.rs, which starts the server and passes its URL and token. Each step
asserts what it receives; any failure exits non-zero with the reason. On success the last line
of stdout is a JSON summary the Rust test checks.

Usage: mcp_sessions.py URL TOKEN MODE N
  MODE `bound`: the server runs with --max-sessions N. N SDK clients (handshake revision
  2025-11-25) open sessions and hold them; one more `initialize` must be refused with the
  bound's error; every one of the N must still be served; once they have closed their
  sessions, a new client gets one.
  MODE `idle`: the server runs with --max-sessions 1 --session-idle N. A session runs a call
  that lasts twice the idle time (a running call is activity: it must complete), then idles;
  once the server has closed it, its place is free (a new `initialize` succeeds) and the old
  session answers 404.
"""

import json
import time

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_common import DEADLINE_S, check, run_script

VERSION = "2025-11-25"


def short(text, limit=400):
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def text_of(result):
    return "\n".join(block.text for block in result.content if block.type == "text")


class Raw:
    """A handshake client written out request by request: no stream held open, nothing sent
    that the test does not send."""

    def __init__(self, http, url):
        self.http = http
        self.url = url

    def headers(self, session=None):
        headers = {"Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json", "MCP-Protocol-Version": VERSION}
        if session is not None:
            headers["Mcp-Session-Id"] = session
        return headers

    async def initialize(self):
        """The response to `initialize`, and the session it opened (None if refused)."""
        request = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": VERSION, "capabilities": {},
                              "clientInfo": {"name": "mcp_sessions.py", "version": "1"}}}
        response = await self.http.post(self.url, json=request, headers=self.headers())
        session = response.headers.get("mcp-session-id") if response.status_code == 200 else None
        if session is not None:
            done = await self.http.post(
                self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers=self.headers(session))
            check(done.status_code == 202, f"notifications/initialized: {done.status_code} {done.text}")
        return response, session

    async def request(self, session, id, method, params):
        """The HTTP response, and the JSON-RPC message of its SSE stream (None without one).
        A stream the server closes before the response (SEP-1699 polling) is resumed with
        Last-Event-ID, as a 2025-11-25 client does."""
        request = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
        response = await self.http.post(self.url, json=request, headers=self.headers(session))
        message, last_id = self.events(response.text)
        while message is None and last_id is not None and response.status_code == 200:
            headers = {**self.headers(session), "Last-Event-ID": last_id}
            response = await self.http.get(self.url, headers=headers)
            message, resumed = self.events(response.text)
            last_id = resumed or last_id
        return response, message

    @staticmethod
    def events(text):
        """The last JSON-RPC message of an SSE body, and the last event id."""
        message, last_id = None, None
        for line in text.splitlines():
            if line.startswith("id: "):
                last_id = line[len("id: "):].strip()
            if line.startswith("data: ") and line[len("data: "):].strip():
                message = json.loads(line[len("data: "):])
        return message, last_id


def authorized(token, **kwargs):
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, **kwargs)


async def bound(url, token, n):
    summary = {}
    clients = []
    async with anyio.create_task_group() as group:
        opened = anyio.Event()
        release = anyio.Event()
        ready = []

        async def hold(i):
            http = authorized(token, timeout=httpx2.Timeout(30, read=600))
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                check(client.protocol_version == VERSION, f"client {i} negotiated {client.protocol_version}")
                clients.append(client)
                ready.append(i)
                if len(ready) == n:
                    opened.set()
                await release.wait()

        for i in range(n):
            group.start_soon(hold, i)
        with anyio.fail_after(DEADLINE_S):
            await opened.wait()

        # One more is refused, and names the bound and how to raise it.
        async with authorized(token, timeout=30) as http:
            response, session = await Raw(http, url).initialize()
        check(response.status_code == 503 and session is None,
              f"initialize past the bound: {response.status_code} {short(response.text)}")
        summary["refused"] = {"status": response.status_code, "text": response.text.strip()}

        # The sessions already open are still served, every one.
        for i, client in enumerate(clients):
            result = await client.call_tool("fast", {})
            check(text_of(result) == "fast done", f"session {i} after the refusal: {result}")
        summary["stillServed"] = len(clients)
        release.set()

    # Closed (the SDK sends DELETE on exit): their places are free again.
    async with authorized(token, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            summary["afterClose"] = text_of(await client.call_tool("fast", {}))
    return summary


async def idle(url, token, idle_s):
    summary = {}
    async with authorized(token, timeout=httpx2.Timeout(30, read=600)) as http:
        raw = Raw(http, url)
        response, first = await raw.initialize()
        check(response.status_code == 200 and first, f"initialize: {response.status_code} {short(response.text)}")

        # A call twice as long as the idle time: running, the session is not idle.
        ms = 2000 * idle_s
        response, message = await raw.request(first, 1, "tools/call", {"name": "slow", "arguments": {"ms": ms}})
        check(response.status_code == 200 and message is not None,
              f"the long call: {response.status_code} {short(response.text)}")
        text = message.get("result", {}).get("content", [{}])[0].get("text")
        check(text == f"slow done after {ms} ms", f"the long call was cut short: {short(str(message))}")
        summary["longCall"] = text

        # Then it idles. While it is open it holds the only place (503 for anyone else); once
        # the server has closed it, a new session gets the place.
        refusals = 0
        end = time.monotonic() + DEADLINE_S
        while True:
            response, second = await raw.initialize()
            if response.status_code == 200:
                break
            check(response.status_code == 503, f"initialize while the place is held: {response.status_code}")
            refusals += 1
            check(time.monotonic() < end, f"the idle session was not closed within {DEADLINE_S}s")
            await anyio.sleep(0.1)
        summary["newSession"] = second != first
        # The old session is gone: 404, as MCP says, so its client would initialize again.
        response, _ = await raw.request(first, 2, "tools/list", {})
        check(response.status_code == 404, f"the idle session still answers: {response.status_code} {short(response.text)}")
        summary["oldSession"] = response.status_code
        response, message = await raw.request(second, 3, "tools/call", {"name": "fast", "arguments": {}})
        check(message is not None and message["result"]["content"][0]["text"] == "fast done",
              f"the new session: {response.status_code} {short(response.text)}")
        summary["newSessionServed"] = True
    return summary


async def main(url, token, mode, n):
    summary = await {"bound": bound, "idle": idle}[mode](url, token, int(n))
    print(json.dumps(summary))


if __name__ == "__main__":
    run_script(main, __doc__, 4)
