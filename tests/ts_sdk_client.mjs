// Drive `toolhost mcp` with the official TypeScript SDK v2 client (@modelcontextprotocol/client
// 2.4, which speaks 2026-07-28): list the tools, call read, bash and an extension tool, see an
// error result as an error and an unknown tool as a protocol error. Run by tests/it/mcp.rs with
// the Node 22 of target/conformance.
//
// Usage: node ts_sdk_client.mjs CLIENT_INDEX stdio TOOLHOST WORKSPACE EXTENSION
//        node ts_sdk_client.mjs CLIENT_INDEX http URL TOKEN
// (CLIENT_INDEX: the package's dist/index.mjs)
// Prints a JSON summary on its last line.

import { pathToFileURL } from "node:url";
import { dirname, join } from "node:path";

const [clientIndex, transport, ...rest] = process.argv.slice(2);
const sdk = await import(pathToFileURL(clientIndex).href);
const { StdioClientTransport } = await import(pathToFileURL(join(dirname(clientIndex), "stdio.mjs")).href);

const connection =
	transport === "stdio"
		? new StdioClientTransport({
				command: rest[0],
				args: ["--workspace", rest[1], "--extension", rest[2], "mcp"],
				// The test's configuration home, never the developer's.
				env: { PATH: process.env.PATH, HOME: process.env.HOME, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME },
			})
		: new sdk.StreamableHTTPClientTransport(new URL(rest[0]), {
				requestInit: { headers: { Authorization: `Bearer ${rest[1]}` } },
			});

const client = new sdk.Client({ name: "ts-sdk-v2", version: "2.4.0" });
await client.connect(connection);
const summary = { protocolVersion: client.getNegotiatedProtocolVersion?.() ?? null };
const { tools } = await client.listTools();
summary.tools = tools.map((tool) => tool.name).sort();
const text = (result) => result.content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");
const call = async (name, args) => {
	const result = await client.callTool({ name, arguments: args });
	return [text(result), result.isError === true];
};
summary.read = await call("read", { path: "a.txt" });
summary.bashError = await call("bash", { command: "echo broken >&2; exit 3" });
summary.extension = await call("fast", {});
try {
	await call("no_such_tool", {});
	summary.unknown = "no error";
} catch (error) {
	summary.unknown = String(error?.message ?? error);
}
await client.close();
console.log(JSON.stringify(summary));
