"""One client's interleaved requests through a load balancer in front of two toolhost instances.

Usage: lb_check.py URL TOKEN

Over revision 2026-07-28 (stateless: any instance answers any request) the client alternates
writes, reads and commands; every read must return what the write before it wrote, whichever
instance served either, and both instances must have served it (each reports its own
/etc/hostname). A second client on the 2025-11-25 handshake keeps its session on one instance
(the balancer pins it) and runs the same calls, then a command of 8 seconds: its response stream
is closed mid-call (the server closes it after 5 s, --sse-poll) and the client resumes it through
the balancer with Last-Event-ID, which the balancer sends to the same instance by the session id.
Prints a JSON summary; exits 1 on a failure.
"""

import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def text(result):
    return "\n".join(block.text for block in result.content if block.type == "text")


async def interleaved(url, token, mode, rounds):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                              timeout=httpx2.Timeout(30, read=300))
    hosts, failures = [], []
    async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        for i in range(rounds):
            name = f"lb-{mode}-{i}.txt"
            content = f"round {i} of {mode}\n"
            written = await client.call_tool("write", {"path": name, "content": content})
            if written.is_error:
                failures.append(f"write {name}: {text(written)}")
            read = await client.call_tool("read", {"path": name})
            if text(read) != content:
                failures.append(f"read {name}: {text(read)!r}, not {content!r}")
            host = await client.call_tool("bash", {"command": "cat /etc/hostname"})
            hosts.append(text(host).strip())
        version = client.protocol_version
    await http.aclose()
    return {"version": version, "instances": sorted(set(hosts)), "calls": 3 * rounds,
            "failures": failures}


async def outlives_its_stream(url, token):
    """A 2025-11-25 call longer than the server keeps its stream open: its result arrives on
    the resumed stream."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                              timeout=httpx2.Timeout(30, read=300))
    async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        result = await client.call_tool("bash", {"command": "sleep 8; echo survived"})
    await http.aclose()
    return text(result)


async def main(url, token):
    modern = await interleaved(url, token, "auto", 12)
    legacy = await interleaved(url, token, "legacy", 6)
    problems = modern["failures"] + legacy["failures"]
    if modern["version"] != "2026-07-28":
        problems.append(f"negotiated {modern['version']}")
    if len(modern["instances"]) != 2:
        problems.append(f"2026-07-28 requests reached {modern['instances']}, not two instances")
    if len(legacy["instances"]) != 1:
        problems.append(f"a handshake session moved between {legacy['instances']}")
    resumed = await outlives_its_stream(url, token)
    if resumed != "survived\n":
        problems.append(f"the 8-second call answered {resumed!r} through the balancer")
    print(json.dumps({"2026-07-28": modern, "2025-11-25": legacy, "resumed": resumed,
                      "problems": problems}, indent=1))
    return not problems


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(0 if anyio.run(main, *sys.argv[1:]) else 1)
