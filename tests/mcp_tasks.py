"""MCP tasks (SEP-2663) of `toolhost mcp --http`, as a 2026-07-28 client sends them: plain
HTTP requests, each carrying its protocol version and capabilities in `_meta` (no handshake).

Run by tests/it/session_processes.rs. Each step asserts what it receives; any failure exits
non-zero with the reason. On success the last line of stdout is a JSON summary.

Usage: mcp_tasks.py TOOLHOST WORKSPACE MARKER
  - a call that ends at once is answered at once, even for a client that declared tasks;
  - a bash call running past the threshold becomes a task, which a second connection (a client
    that reconnected) polls to completion;
  - another is cancelled: the ack is empty, the task settles as cancelled and its command
    (found by MARKER in /proc) ends;
  - a client that did not declare tasks gets its long call's result as a plain answer.
"""

import json
import sys
import time

import anyio
import httpx2
from mcp_common import DEADLINE_S, TOKEN, check, running, start_http, wait_until

TASKS = "io.modelcontextprotocol/tasks"
VERSION = "2026-07-28"




class Client:
    """One connection; `tasks` says whether its requests declare the tasks extension."""

    def __init__(self, url, tasks):
        self.url = url
        self.tasks = tasks
        self.http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=120))
        self.next = 0

    async def request(self, method, params):
        self.next += 1
        capabilities = {"extensions": {TASKS: {}}} if self.tasks else {}
        params = dict(params)
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "mcp_tasks.py", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": VERSION, "Mcp-Method": method,
                   "Authorization": f"Bearer {TOKEN}"}
        if method == "tools/call":
            headers["Mcp-Name"] = params["name"]
        elif method.startswith("tasks/"):
            headers["Mcp-Name"] = params["taskId"]
        body = {"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}
        response = await self.http.post(self.url, headers=headers, content=json.dumps(body))
        text = response.text
        if "text/event-stream" in response.headers.get("content-type", ""):
            messages = [json.loads(line[5:]) for line in text.splitlines()
                        if line.startswith("data:") and line[5:].strip()]
            replies = [m for m in messages if m.get("id") == self.next]
            check(replies, f"{method}: no reply in the stream: {text[:500]}")
            reply = replies[0]
        else:
            reply = json.loads(text)
        check("result" in reply, f"{method} {params}: {reply}")
        return reply["result"]

    async def call(self, command):
        return await self.request("tools/call", {"name": "bash", "arguments": {"command": command}})

    async def until_terminal(self, task_id):
        end = time.monotonic() + DEADLINE_S
        while True:
            task = await self.request("tasks/get", {"taskId": task_id})
            if task["status"] in ("completed", "failed", "cancelled"):
                return task
            check(time.monotonic() < end, f"task {task_id} stayed {task['status']}")
            await anyio.sleep(0.1)


def text_of(result):
    return "".join(block.get("text", "") for block in result["content"])


async def main(toolhost, workspace, marker):
    server, url = await start_http(toolhost, ["--workspace", workspace, "--tools", "bash"])
    summary = {}
    try:
        first, second = Client(url, True), Client(url, True)
        quick = await first.call("echo quick")
        summary["quick"] = {"resultType": quick.get("resultType"), "text": text_of(quick),
                            "taskId": quick.get("taskId")}

        created = await first.call("sleep 1.5; echo done after a while")
        summary["created"] = {k: created.get(k) for k in ("resultType", "status", "ttlMs",
                                                          "pollIntervalMs")}
        check(created.get("taskId"), f"no task: {created}")
        # The first connection goes away; another finds the task by its id.
        await first.http.aclose()
        done = await second.until_terminal(created["taskId"])
        summary["completed"] = {"status": done["status"], "text": text_of(done["result"]),
                                "isError": done["result"].get("isError")}

        long = await second.call(f"sleep 600; : {marker}")
        check(long.get("taskId"), f"no task: {long}")
        await wait_until(lambda: running(marker), "the long command to run")
        ack = await second.request("tasks/cancel", {"taskId": long["taskId"]})
        summary["cancelAck"] = ack
        cancelled = await second.until_terminal(long["taskId"])
        summary["cancelled"] = cancelled["status"]
        await wait_until(lambda: not running(marker), "the cancelled task's command to end")
        summary["commandEnded"] = True

        plain = Client(url, False)
        answer = await plain.call("sleep 1.5; echo no tasks here")
        summary["undeclared"] = {"resultType": answer.get("resultType"), "text": text_of(answer),
                                 "taskId": answer.get("taskId")}
    finally:
        server.terminate()
        await server.wait()
    print(json.dumps(summary))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
