// Pi 0.85.0's agent loop executing one assistant message of N `read` calls,
// its events written to stdout as `pi --mode json` writes them.
//
//   node batch.mjs --reads N [--files M] [--dir DIR] [--lines L]
//                  [--parallel | --sequential | --compare]
//                  [--runs R] [--warmup W] [--no-events] > /dev/null
//
// stdout: every event of every run, one JSON object a line, exactly as Pi's
//   JSON mode prints them (redirect it to /dev/null: it is written for real,
//   and that is part of the cost).
// stderr: its last line is the result, one JSON object (see README.md):
//   `batch_ms` per run is from the first tool_execution_start to the turn_end
//   of that turn (every call prepared, executed, its tool_execution_end, and
//   its tool-result message_start/message_end, all written), and
//   `per_call_us` = median batch_ms / N. With --compare, parallel and
//   sequential runs alternate and both are reported, with the speed-up.
//
// The files: DIR/file{i}.txt for i < M (default N), each L lines of
// `line {l:4} of file {i:2}: some text to read back\n` (45 bytes a line; the
// toolhost bench's 64-read batch uses the same files with L = 400, 18 KB).
// They are created when missing or different; without --dir, in a temporary
// directory removed at exit. Call i reads `file{i % M}.txt`, a path relative
// to DIR (with M < N, the files are read round-robin).
//
// Pi's code used, unchanged (target/pi/node_modules/@earendil-works/):
// - pi-agent-core/dist/index.js → Agent (dist/agent.js), the class Pi's
//   coding agent drives (AgentSession wraps one). Agent.prompt →
//   runAgentLoop (dist/agent-loop.js) → executeToolCalls →
//   executeToolCallsParallel / executeToolCallsSequential (chosen by the
//   Agent's `toolExecution`, "parallel" by default as in Pi): prepareToolCall
//   (lookup, prepareArguments, pi-ai's validateToolArguments),
//   executePreparedToolCall, tool_execution_start/update/end and the
//   tool-result message_start/message_end events, then turn_end; every event
//   passes through Agent.processEvents (state) to the subscribed listeners.
// - pi-coding-agent/dist/core/tools/index.js → createReadTool (read.js there),
//   the built-in `read` (the package's entry dist/index.js cannot be imported
//   in 0.85.0: it needs @earendil-works/pi-server, not among its dependencies).
// - pi-coding-agent/dist/modes/print-mode.js is how `pi --mode json` writes
//   events; its two listeners are reproduced with its own functions:
//   writeRawStdout(`${JSON.stringify(toJsonEvent(event))}\n`)
//   (dist/modes/json-event.js, dist/core/output-guard.js), and a second
//   listener awaiting waitForRawStdoutBackpressure() (output-guard.js).
// - pi-ai/dist/index.js → createAssistantMessageEventStream: the model is a
//   scripted stream function (the LLM boundary, Agent's `streamFn`): its first
//   answer is the assistant message of N tool calls (stopReason "toolUse"),
//   its second a text "done" (stopReason "stop"), which ends the prompt.
// Not included: AgentSession's own event handling and session file, and the
// extension runner's hooks (no extensions: Pi would run none).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { baselineInfo, importInternal, importPackage, parseArgs, round, scriptedModel, stats } from "./common.mjs";

const usage =
	"usage: node batch.mjs --reads N [--files M] [--dir DIR] [--lines L] [--parallel | --sequential | --compare]\n" +
	"                      [--runs R] [--warmup W] [--no-events] > /dev/null\n";
const opts = parseArgs(
	process.argv.slice(2),
	{
		reads: -1,
		files: -1,
		dir: "",
		lines: 1,
		parallel: false,
		sequential: false,
		compare: false,
		runs: 5,
		warmup: 1,
		"no-events": false,
	},
	usage,
);
if (opts.reads < 1 || opts.runs < 1 || opts.parallel + opts.sequential + opts.compare > 1) {
	process.stderr.write(usage);
	process.exit(2);
}
const N = Math.floor(opts.reads);
const M = opts.files >= 1 ? Math.min(Math.floor(opts.files), N) : N;
const modes = opts.compare ? ["parallel", "sequential"] : [opts.sequential ? "sequential" : "parallel"];

const pi = "@earendil-works/pi-coding-agent";
const [{ Agent }, { createAssistantMessageEventStream }, { createReadTool }, { toJsonEvent }, outputGuard] =
	await Promise.all([
		importPackage("@earendil-works/pi-agent-core"),
		importPackage("@earendil-works/pi-ai"),
		importInternal(pi, "dist/core/tools/index.js"),
		importInternal(pi, "dist/modes/json-event.js"),
		importInternal(pi, "dist/core/output-guard.js"),
	]);
const { writeRawStdout, waitForRawStdoutBackpressure, flushRawStdout } = outputGuard;

// The files.
let dir = opts.dir;
if (dir) {
	mkdirSync(dir, { recursive: true });
} else {
	dir = mkdtempSync(join(tmpdir(), "pi-baseline-batch-"));
	process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
}
const calls = [];
for (let i = 0; i < M; i++) {
	let text = "";
	for (let line = 0; line < opts.lines; line++) {
		text += `line ${String(line).padStart(4)} of file ${String(i).padStart(2)}: some text to read back\n`;
	}
	const path = join(dir, `file${i}.txt`);
	let current;
	try {
		current = readFileSync(path, "utf8");
	} catch {}
	if (current !== text) writeFileSync(path, text);
}
for (let i = 0; i < N; i++) {
	calls.push({ type: "toolCall", id: `call_${i}`, name: "read", arguments: { path: `file${i % M}.txt` } });
}

// The scripted model.
const { model, conversation } = scriptedModel("pi-baseline", calls, createAssistantMessageEventStream);

const tool = createReadTool(dir);
const events = !opts["no-events"];
let eventCount = 0;
let eventBytes = 0;

async function runOnce(mode) {
	const agent = new Agent({
		initialState: { systemPrompt: "", model, tools: [tool], messages: [] },
		streamFn: conversation(),
		toolExecution: mode,
	});
	let start;
	let end;
	let errors = 0;
	let results = 0;
	if (events) {
		// print-mode.js: session.subscribe(...) writing each event, then
		// session.agent.subscribe(...) awaiting the write's backpressure.
		agent.subscribe((event) => {
			const line = `${JSON.stringify(toJsonEvent(event))}\n`;
			eventCount++;
			eventBytes += line.length;
			writeRawStdout(line);
		});
		agent.subscribe(async () => {
			await waitForRawStdoutBackpressure();
		});
	}
	agent.subscribe((event) => {
		if (event.type === "tool_execution_start" && start === undefined) start = performance.now();
		if (event.type === "tool_execution_end") {
			results++;
			if (event.isError) errors++;
		}
		if (event.type === "turn_end" && start !== undefined && end === undefined) end = performance.now();
	});
	const promptStart = performance.now();
	await agent.prompt("read the files");
	const promptMs = performance.now() - promptStart;
	if (results !== N || errors > 0 || agent.state.errorMessage) {
		process.stderr.write(
			`pi-baseline batch: ${results} results of ${N}, ${errors} errors ${agent.state.errorMessage ?? ""}\n`,
		);
		process.exit(1);
	}
	return { batchMs: end - start, promptMs };
}

for (let i = 0; i < opts.warmup; i++) for (const mode of modes) await runOnce(mode);
const samples = Object.fromEntries(modes.map((m) => [m, []]));
for (let i = 0; i < opts.runs; i++) for (const mode of modes) samples[mode].push(await runOnce(mode));
await flushRawStdout?.();

function report(runs) {
	const batch = stats(runs.map((r) => r.batchMs));
	return {
		batch_ms: batch,
		per_call_us: round((batch.median_ms / N) * 1000),
		prompt_ms: stats(runs.map((r) => r.promptMs)),
	};
}
const result = {
	script: "batch",
	reads: N,
	files: M,
	lines: opts.lines,
	file_bytes: Buffer.byteLength(readFileSync(join(dir, "file0.txt"))),
	warmup: opts.warmup,
	runs: opts.runs,
	events: events ? "stdout" : "none",
	events_per_run: events ? eventCount / ((opts.runs + opts.warmup) * modes.length) : 0,
	event_bytes_per_run: events ? Math.round(eventBytes / ((opts.runs + opts.warmup) * modes.length)) : 0,
};
if (opts.compare) {
	result.mode = "compare";
	result.parallel = report(samples.parallel);
	result.sequential = report(samples.sequential);
	result.speedup = round(result.sequential.batch_ms.median_ms / result.parallel.batch_ms.median_ms);
} else {
	result.mode = modes[0];
	Object.assign(result, report(samples[modes[0]]));
}
Object.assign(result, {
	process_ms: round(performance.now()),
	max_rss_mb: round(process.resourceUsage().maxRSS / 1024),
	...baselineInfo(),
});
process.stderr.write(`${JSON.stringify(result)}\n`);
