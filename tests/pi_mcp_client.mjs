// Drive `toolhost mcp` with Pi 1.6's own MCP client (@earendil-works/pi-mcp), as Pi's coding
// agent does: list the tools, call read, bash and an extension tool, see an error result as an
// error, list and read the workspace's files as resources, get the tools' prompt, and run a command that is silent for 70 seconds under Pi's 60-second request timeout,
// which Pi resets on progress. Run by tests/it/mcp.rs with the Node 22 of target/conformance.
//
// Usage: node pi_mcp_client.mjs PI_MCP_INDEX stdio TOOLHOST WORKSPACE EXTENSION
//        node pi_mcp_client.mjs PI_MCP_INDEX http URL TOKEN
// Prints a JSON summary on its last line.

import { pathToFileURL } from "node:url";

const [indexPath, transport, ...rest] = process.argv.slice(2);
const { McpClient, StdioTransport, StreamableHttpTransport, toLlmContent } = await import(
	pathToFileURL(indexPath).href
);

const connection =
	transport === "stdio"
		? new StdioTransport({
				command: rest[0],
				args: ["--workspace", rest[1], "--extension", rest[2], "mcp"],
				// The test's configuration home, never the developer's.
				inheritEnv: true,
				env: { XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME },
				stderr: "pipe",
			})
		: new StreamableHttpTransport({ url: rest[0], headers: { Authorization: `Bearer ${rest[1]}` } });

// Pi's agent sets a 60-second timeout on MCP requests.
const client = new McpClient({ name: "pi", version: "1.6.0", requestTimeoutMs: 60_000 });
const initialized = await client.connect(connection);
const summary = { protocolVersion: client.protocolVersion, instructions: client.instructions ?? null };
const tools = await client.listTools();
summary.tools = tools.map((tool) => tool.name).sort();
const text = (result) => toLlmContent(result).map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join("");
const call = async (name, args, options) => {
	const result = await client.callTool(name, args, options);
	return [text(result), result.isError === true];
};
summary.read = await call("read", { path: "a.txt" });
summary.bashError = await call("bash", { command: "echo broken >&2; exit 3" });
summary.extension = await call("fast", {});
// The workspace's files as resources, and the tools' text as a prompt.
const resources = await client.listResources();
summary.resources = resources.map((r) => r.name).sort();
const listed = resources.find((r) => r.name === "a.txt");
summary.resourceText = listed ? (await client.readResource(listed.uri)).contents[0].text : null;
const prompt = await client.request("prompts/get", { name: "toolhost" });
summary.prompt = prompt.messages[0].content.text.split("\n")[0];
let progress = 0;
const started = Date.now();
summary.silent = await call("bash", { command: "sleep 70; echo done" }, { onProgress: () => progress++ });
summary.silentSeconds = Math.round((Date.now() - started) / 1000);
summary.silentProgress = progress;
summary.serverName = initialized.serverInfo?.name ?? null;
await client.close();
console.log(JSON.stringify(summary));
