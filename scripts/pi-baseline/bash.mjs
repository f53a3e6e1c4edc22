// Pi 0.85.0's bash tool running `yes 0123456789 | head -c N`, timed in-process.
//
//   node bash.mjs --bytes N [--runs R] [--warmup W] [--cwd DIR]
//
// Prints one JSON line to stdout (see README.md): each run's wall time from
// `execute` to its result, min/median/max, and `process_ms`, the time since
// the process started (Node's performance.timeOrigin) when the line is
// printed. `--runs 1` makes the script one whole Pi call as a process (node
// start + import + one run) for a caller to time from outside.
//
// Pi's code used, unchanged (target/pi/node_modules/@earendil-works/):
// - pi-coding-agent/dist/core/tools/index.js → createBashTool (bash.js there):
//   createBashToolDefinition → createShellToolDefinition, whose `execute`
//   spawns `/bin/bash -c command` through createLocalShellOperations
//   (detached, output streamed into an OutputAccumulator, tail-truncated to
//   2000 lines / 50 KB, the full output kept in a temp file pi-bash-*.log),
//   wrapped by wrapToolDefinition (dist/core/tools/tool-definition-wrapper.js)
//   into the AgentTool the agent loop calls.
// - It is called as pi-agent-core's loop calls it (executePreparedToolCall in
//   dist/agent-loop.js): execute(toolCallId, args, signal, onUpdate), with an
//   onUpdate, so the tool builds its throttled progress snapshots (every
//   100 ms) as in Pi; here they are only counted.
// The temp file of a truncated output is removed after each run, untimed.
// The tools' module, not the package's entry (dist/index.js): in 0.85.0 that
// entry imports @earendil-works/pi-server, which is not among its dependencies,
// and fails; the `pi` command runs dist/bundle/, a bundle of the same sources.
import { rmSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { baselineInfo, importInternal, parseArgs, round, stats } from "./common.mjs";

const usage = "usage: node bash.mjs --bytes N [--runs R] [--warmup W] [--cwd DIR]\n";
const opts = parseArgs(process.argv.slice(2), { bytes: -1, runs: 5, warmup: 0, cwd: process.cwd() }, usage);
if (opts.bytes < 0 || opts.runs < 1) {
	process.stderr.write(usage);
	process.exit(2);
}

const { createBashTool } = await importInternal("@earendil-works/pi-coding-agent", "dist/core/tools/index.js");
const importMs = performance.now();

const command = `yes 0123456789 | head -c ${opts.bytes}`;
const tool = createBashTool(opts.cwd);

let call = 0;
async function runOnce() {
	let updates = 0;
	const controller = new AbortController();
	const start = performance.now();
	const result = await tool.execute(`call_${call++}`, { command }, controller.signal, () => {
		updates++;
	});
	const ms = performance.now() - start;
	const truncation = result.details?.truncation;
	if (result.details?.fullOutputPath) rmSync(result.details.fullOutputPath, { force: true });
	return {
		ms,
		updates,
		textBytes: Buffer.byteLength(result.content[0].text),
		outputBytes: truncation?.totalBytes ?? Buffer.byteLength(result.content[0].text),
		truncated: truncation?.truncated ?? false,
	};
}

for (let i = 0; i < opts.warmup; i++) await runOnce();
const runs = [];
for (let i = 0; i < opts.runs; i++) runs.push(await runOnce());

const last = runs[runs.length - 1];
process.stdout.write(
	`${JSON.stringify({
		script: "bash",
		command,
		bytes: opts.bytes,
		warmup: opts.warmup,
		runs: opts.runs,
		...stats(runs.map((r) => r.ms)),
		output_bytes: last.outputBytes,
		result_text_bytes: last.textBytes,
		truncated: last.truncated,
		updates: runs.map((r) => r.updates),
		import_ms: round(importMs),
		process_ms: round(performance.now()),
		max_rss_mb: round(process.resourceUsage().maxRSS / 1024),
		...baselineInfo(),
	})}\n`,
);
