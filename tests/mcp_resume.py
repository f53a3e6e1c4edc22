"""A call through a proxy that cuts its connection mid-call (an idle timeout shorter than the
call) reaches its result: the official MCP Python SDK resumes the stream with Last-Event-ID
and `toolhost mcp --http` answers on the resumed stream.

Run by tests/it/mcp_sessions.rs, which starts the server and haproxy in front of it.

Usage: mcp_resume.py URL TOKEN MS
  URL is the proxy's; the call is the testkit's `slow`, MS milliseconds with no output.
"""

import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_common import check


async def main(url, token, ms):
    ms = int(ms)
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                              timeout=httpx2.Timeout(30, read=600))
    async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        result = await client.call_tool("slow", {"ms": ms})
        text = "\n".join(b.text for b in result.content if b.type == "text")
        check(not result.is_error and text == f"slow done after {ms} ms", f"the call: {result}")
        # The session is still served after the cuts.
        after = await client.call_tool("fast", {})
        check(after.content[0].text == "fast done", f"after: {after}")
    print(json.dumps({"call": text}))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
