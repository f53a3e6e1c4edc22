// Records what Pi's own tools return to the model, case by case, in the format
// of tests/fixtures/pi-cases-shared.json (see README.md beside this file).
//
//   $NODE scripts/pi-record/record.mjs --pi-dir DIR --cases FILE[,FILE...] [--out FILE]
//        [--compare] [--only C001,C004] [--about TEXT] [--tools-dir DIR]
//   $NODE scripts/pi-record/record.mjs --pi-dir DIR --defs FILE
//
// DIR is an install made by ./install (its node_modules holds
// @earendil-works/pi-coding-agent and the packages it depends on). Everything
// that produces a result is Pi's code, imported from DIR:
//
// - the tools: pi-coding-agent `dist/core/tools/index.js`, `createTool(name,
//   cwd)` (each tool's createXTool: its ToolDefinition wrapped by
//   `wrapToolDefinition`, no session ctx, as the coding agent builds them
//   without a session);
// - the pipeline: pi-agent-core's `Agent` and its agent loop
//   (`dist/agent-loop.js`: `prepareToolCall` -> `prepareArguments` ->
//   pi-ai's `validateToolArguments` -> `execute` -> the tool-result message).
//   The model is a scripted stream function at the LLM boundary: its first
//   answer is one assistant message holding the case's tool call
//   (stopReason "toolUse"), its second a text that ends the prompt.
//
// What is recorded per case (`pi`): the tool-result message's `content`,
// `isError` and `details` (absent when undefined), and, when the tool
// returned one (Pi 1.x), the `structuredContent` of the tool result that the
// loop's `tool_execution_end` event carries. Summarising rules (the ones of
// pi-cases-shared.json, see README.md): the workspace path is `<CWD>`, Pi's
// temp files `<TMP>/pi-bash-<HEX>.log`; a text block longer than head+tail
// characters (Unicode code points) becomes {type, textLength, head, tail}
// (bash: 40 + 200, other tools: 60 + 160); find results, and grep results
// from more than one file, get `sortedBody` (the lines before the notice,
// sorted) and `notice`; write/edit cases get `fileAfter`.
//
// --compare checks the recording against each case's existing `pi` and prints
// one line per case (exit 1 when one differs); --out writes the cases with
// the new `pi`. Compared leniently (see sameResult): the order of lines in a
// block that has `sortedBody`, and case C082's interleaving of two streams.

import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { fileURLToPath, pathToFileURL } from "node:url";
import { scriptedModel } from "../pi-baseline/common.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const usage =
	"usage: node record.mjs --pi-dir DIR --cases FILE[,FILE...] [--out FILE] [--compare] [--only IDS] [--about TEXT] [--tools-dir DIR] [--verbose]\n" +
	"       node record.mjs --pi-dir DIR --defs FILE\n";

const opts = { "pi-dir": "", cases: "", out: "", compare: false, only: "", about: "", "tools-dir": "", defs: "", verbose: false };
{
	const argv = process.argv.slice(2);
	for (let i = 0; i < argv.length; i++) {
		const key = argv[i].startsWith("--") ? argv[i].slice(2) : undefined;
		if (key === "help") {
			process.stdout.write(usage);
			process.exit(0);
		}
		if (key === undefined || !(key in opts)) {
			process.stderr.write(`unknown argument: ${argv[i]}\n${usage}`);
			process.exit(2);
		}
		if (typeof opts[key] === "boolean") opts[key] = true;
		else if (argv[i + 1] === undefined) {
			process.stderr.write(`--${key} needs a value\n`);
			process.exit(2);
		} else opts[key] = argv[++i];
	}
	if (!opts["pi-dir"] || (!opts.cases && !opts.defs)) {
		process.stderr.write(usage);
		process.exit(2);
	}
}

// ---------------------------------------------------------------- environment
// A scratch HOME (Pi's agent dir, ~/.pi/agent, lives there: its bin dir is
// where Pi looks for rg and fd first), no downloads, and the directory holding
// rg 15.2.0 and fd 10.5.0 first on PATH (./install --tools puts them in
// target/pi-tools/bin). Set before Pi's modules load.
const scratch = mkdtempSync(join(tmpdir(), "pi-record-home-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));
process.env.HOME = scratch;
process.env.PI_OFFLINE = "1";
delete process.env.PI_CODING_AGENT_DIR;
for (const name of Object.keys(process.env)) if (/^PI_(SESSION|PROVIDER|MODEL|REASONING)/.test(name)) delete process.env[name];
const toolsDir = opts["tools-dir"] || join(here, "..", "..", "target", "pi-tools", "bin");
if (existsSync(toolsDir)) process.env.PATH = `${resolve(toolsDir)}:${process.env.PATH}`;

const piDir = resolve(opts["pi-dir"]);
const modules = join(piDir, "node_modules");
function packageDir(name) {
	const dir = join(modules, ...name.split("/"));
	if (!existsSync(join(dir, "package.json"))) {
		process.stderr.write(`pi-record: ${name} is not installed in ${piDir}; run scripts/pi-record/install\n`);
		process.exit(2);
	}
	return dir;
}
const version = (name) => JSON.parse(readFileSync(join(packageDir(name), "package.json"), "utf8")).version;
async function importPackage(name) {
	const dir = packageDir(name);
	const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
	const root = pkg.exports?.["."];
	const entry = typeof root === "string" ? root : (root?.import ?? root?.default ?? pkg.main);
	return import(pathToFileURL(join(dir, entry)).href);
}
const importInternal = (name, path) => import(pathToFileURL(join(packageDir(name), path)).href);

const PI = "@earendil-works/pi-coding-agent";
const piVersion = version(PI);
const [{ Agent }, piAi, tools] = await Promise.all([
	importPackage("@earendil-works/pi-agent-core"),
	importPackage("@earendil-works/pi-ai"),
	importInternal(PI, "dist/core/tools/index.js"),
]);
const TOOL_NAMES = ["read", "bash", "edit", "write", "grep", "find", "ls"];

function which(name) {
	try {
		return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim();
	} catch {
		return "";
	}
}
function toolVersion(name) {
	const path = which(name);
	if (!path) return null;
	try {
		return execFileSync(path, ["--version"], { encoding: "utf8" }).split("\n")[0];
	} catch {
		return null;
	}
}

// ------------------------------------------------------------ tool definitions
if (opts.defs) {
	const out = {
		about:
			`Pi ${piVersion}: each built-in tool as the model sees it. "definition" is the ToolDefinition of ` +
			"createToolDefinition(name, cwd) (pi-coding-agent dist/core/tools/index.js; functions shown as \"<function>\", " +
			"the cwd is <CWD>); \"declaration\" is what the agent loop declares to the provider: pi-ai's toToolDeclaration(tool) " +
			"where it exists (Pi >= 1.x), else {name, description, parameters} as the 0.85 providers send them.",
		pi: { "pi-coding-agent": piVersion, "pi-agent-core": version("@earendil-works/pi-agent-core"), "pi-ai": version("@earendil-works/pi-ai") },
		tools: {},
	};
	const cwd = "/nonexistent-cwd";
	for (const name of TOOL_NAMES) {
		const def = tools.createToolDefinition(name, cwd);
		const definition = {};
		for (const key of Object.keys(def)) {
			const v = def[key];
			definition[key] = typeof v === "function" ? "<function>" : v === undefined ? "<undefined>" : JSON.parse(JSON.stringify(v));
		}
		const agentTool = tools.createTool(name, cwd);
		const declaration =
			typeof piAi.toToolDeclaration === "function"
				? piAi.toToolDeclaration(agentTool)
				: { name: agentTool.name, description: agentTool.description, parameters: JSON.parse(JSON.stringify(agentTool.parameters)) };
		out.tools[name] = JSON.parse(JSON.stringify({ definition, declaration }).replaceAll(cwd, "<CWD>"));
	}
	// The default system prompt as AgentSession builds it from the tools' promptSnippet and
	// promptGuidelines (core/system-prompt.js; 0.85 takes one flat promptGuidelines list, 1.x
	// toolGuidelines per tool), for the default tools and for all seven; no context files, skills
	// or custom prompt. The date and the docs paths are replaced by placeholders.
	const { buildSystemPrompt } = await importInternal(PI, "dist/core/system-prompt.js");
	const defs = Object.fromEntries(TOOL_NAMES.map((name) => [name, tools.createToolDefinition(name, cwd)]));
	const prompt = (selected) => {
		const toolSnippets = {};
		const toolGuidelines = {};
		const promptGuidelines = [];
		for (const name of selected) {
			if (defs[name].promptSnippet) toolSnippets[name] = defs[name].promptSnippet;
			if (defs[name].promptGuidelines) {
				toolGuidelines[name] = [...defs[name].promptGuidelines];
				promptGuidelines.push(...defs[name].promptGuidelines);
			}
		}
		const legacy = piVersion.startsWith("0.");
		const text = buildSystemPrompt({
			cwd,
			selectedTools: selected,
			toolSnippets,
			...(legacy ? { promptGuidelines } : { toolGuidelines }),
			contextFiles: [],
			skills: [],
		});
		return text
			.replaceAll(cwd, "<CWD>")
			.replaceAll(packageDir(PI), "<PI>")
			.replace(/\d{4}-\d{2}-\d{2}/g, "<DATE>");
	};
	out.systemPrompt = {
		about: "buildSystemPrompt({cwd, selectedTools, toolSnippets, tool guidelines}) from pi-coding-agent dist/core/system-prompt.js; <PI> is the package's directory.",
		defaultTools: prompt(["read", "bash", "edit", "write"]),
		allSevenTools: prompt(TOOL_NAMES),
	};
	// Pi 1.x: with the codemode tool active in its default mode "on", its prepareLoadout replaces
	// every declared tool's description (extensions/codemode/tool.js, describeScriptCall).
	const codemodePath = join(packageDir(PI), "dist/extensions/codemode/tool.js");
	if (existsSync(codemodePath)) {
		const { createCodemodeToolDefinition } = await import(pathToFileURL(codemodePath).href);
		const codemode = createCodemodeToolDefinition({ getMode: () => "on" });
		const agentTools = TOOL_NAMES.map((name) => tools.createTool(name, cwd));
		const changes = codemode.prepareLoadout({
			declared: agentTools,
			callable: agentTools,
			registered: agentTools,
			getExposure: () => "direct",
			getNamespace: () => undefined,
			getPromptGuidelines: (name) => defs[name].promptGuidelines ?? [],
		});
		out.codemodeOn = {
			about:
				"Pi 1.x, codemode active with codemode.mode \"on\" (and the seven tools active, exposure \"direct\"): the description each declared tool gets from codemode's prepareLoadout (dist/extensions/codemode/tool.js). With mode \"only\" their declarations are hidden instead and codemode's own description lists them.",
			descriptions: Object.fromEntries(TOOL_NAMES.map((name) => [name, changes?.descriptions?.[name] ?? null])),
			hiddenDeclarations: changes?.hiddenDeclarations ?? [],
		};
	}
	writeFileSync(opts.defs, `${JSON.stringify(out, null, 1)}\n`);
	process.stderr.write(`pi-record: wrote the ${TOOL_NAMES.length} tool definitions of Pi ${piVersion} to ${opts.defs}\n`);
	process.exit(0);
}

// ----------------------------------------------------------------- the model
/** One call through Pi's Agent: the tool-result message and the end event's result. */
async function runCall(toolName, args, cwd) {
	const tool = tools.createTool(toolName, cwd);
	const call = { type: "toolCall", id: "call_1", name: toolName, arguments: args };
	const { model, conversation } = scriptedModel("pi-record", [call], piAi.createAssistantMessageEventStream);
	const agent = new Agent({
		initialState: { systemPrompt: "", model, tools: [tool], messages: [] },
		streamFn: conversation(),
	});
	let end;
	let message;
	agent.subscribe((event) => {
		if (event.type === "tool_execution_end") end = event;
		if (event.type === "message_end" && event.message.role === "toolResult") message = event.message;
	});
	await agent.prompt("run the tool");
	if (!message) throw new Error(`no tool result (${agent.state.errorMessage ?? "no error message"})`);
	return { message, end };
}

// ------------------------------------------------------------- summarising
const TMP = realpathSync(tmpdir());
const tempFile = new RegExp(`${escapeRegExp(TMP)}/(pi-[a-z]+-)[0-9a-f]{16}(\\.log)`, "g");
function escapeRegExp(s) {
	return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
function placeholders(v, cwd) {
	if (typeof v === "string") return v.replaceAll(cwd, "<CWD>").replace(tempFile, "<TMP>/$1<HEX>$2");
	if (Array.isArray(v)) return v.map((x) => placeholders(x, cwd));
	if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, placeholders(x, cwd)]));
	return v;
}
function substitute(v, cwd) {
	if (typeof v === "string") return v.replaceAll("<CWD>", cwd);
	if (Array.isArray(v)) return v.map((x) => substitute(x, cwd));
	if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x, cwd)]));
	return v;
}
/** head and tail sizes, in code points; longer texts are summarised. */
const summarySizes = (tool) => (tool === "bash" ? [40, 200] : [60, 160]);
function summarise(text, tool) {
	const chars = [...text];
	const [head, tail] = summarySizes(tool);
	if (chars.length <= head + tail) return { text };
	return { textLength: chars.length, head: chars.slice(0, head).join(""), tail: chars.slice(-tail).join("") };
}
const NOTICE = /\n\n(\[[^\n]*\])$/;
/** find, and grep across files: the order of fd's and rg's parallel walks varies. */
function unordered(tool, text, isError) {
	if (isError || (tool !== "find" && tool !== "grep")) return undefined;
	const m = NOTICE.exec(text);
	const body = m ? text.slice(0, m.index) : text;
	const lines = body.split("\n");
	if (tool === "grep") {
		const files = new Set(lines.map((l) => /^(.*?)[:-]\d+[:-] /.exec(l)?.[1]).filter((f) => f !== undefined));
		if (files.size < 2) return undefined;
	}
	return { sortedBody: [...lines].sort(), ...(m ? { notice: m[1] } : {}) };
}
function block(b, tool, isError) {
	if (b.type !== "text") return b.type === "image" ? { type: "image", mimeType: b.mimeType, dataLength: b.data.length } : b;
	return { type: "text", ...summarise(b.text, tool), ...unordered(tool, b.text, isError) };
}
function summariseStructured(sc, tool) {
	if (!sc || typeof sc !== "object") return sc;
	const out = { ...sc };
	if (typeof out.output === "string") {
		const s = summarise(out.output, tool);
		out.output = s.text ?? { textLength: s.textLength, head: s.head, tail: s.tail };
	}
	// Wall time varies from run to run.
	if (typeof out.wall_time_seconds === "number") out.wall_time_seconds = "<SECONDS>";
	return out;
}

// ------------------------------------------------------------------- a case
function buildWorkspace(c) {
	const cwd = realpathSync(mkdtempSync(join(tmpdir(), "pi-record-")));
	for (const [name, file] of Object.entries(c.files ?? {})) {
		const path = join(cwd, name);
		mkdirSync(dirname(path), { recursive: true });
		if (file.utf8 !== undefined) writeFileSync(path, file.utf8);
		else if (file.base64 !== undefined) writeFileSync(path, Buffer.from(file.base64, "base64"));
		else if (file.dir) mkdirSync(path, { recursive: true });
		else throw new Error(`${c.id}: file ${name} has neither utf8 nor base64`);
	}
	for (const link of c.symlinks ?? []) {
		const path = join(cwd, link.link);
		mkdirSync(dirname(path), { recursive: true });
		symlinkSync(link.target.replaceAll("<CWD>", cwd), path);
	}
	return cwd;
}

function fileAfter(c, cwd, previous) {
	if (c.tool !== "write" && c.tool !== "edit") return undefined;
	// Recorded where the case had it (in the form it had), and for new cases.
	if (previous !== undefined && previous.fileAfter === undefined) return undefined;
	const path = typeof c.arguments?.path === "string" ? c.arguments.path.replaceAll("<CWD>", cwd) : undefined;
	if (path === undefined) return undefined;
	const full = resolve(cwd, path.replace(/^@/, ""));
	let text = "";
	try {
		if (lstatSync(full).isFile()) text = readFileSync(full, "utf8");
	} catch {}
	const raw = previous?.fileAfter !== undefined && !previous.fileAfter.startsWith('"');
	return raw ? text : JSON.stringify(text);
}

async function recordCase(c) {
	const cwd = buildWorkspace(c);
	try {
		const args = substitute(c.arguments, cwd);
		const run = await runCall(c.tool, args, cwd);
		// Placeholders first: lengths are counted on the placeholder form.
		const message = placeholders(run.message, cwd);
		const result = { content: message.content.map((b) => block(b, c.tool, message.isError)), isError: message.isError };
		if (message.details !== undefined) result.details = message.details;
		const structured = placeholders(run.end?.result?.structuredContent, cwd);
		if (structured !== undefined) result.structuredContent = summariseStructured(structured, c.tool);
		const after = fileAfter(c, cwd, c.pi);
		if (after !== undefined) result.fileAfter = after;
		return result;
	} finally {
		rmSync(cwd, { recursive: true, force: true });
	}
}

// ------------------------------------------------------------ comparing
/** Whether `text` is whole lines, each stream's lines in order (C082). */
function interleaves(text, want) {
	const lines = text.split("\n");
	const sorted = (t) => t.split("\n").slice().sort().join("\n");
	return sorted(text) === sorted(want) && lines.indexOf("out") < lines.indexOf("out2");
}
function sameResult(id, got, want) {
	if (isDeepStrictEqual(got, want)) return true;
	// A block with sortedBody: fd's and rg's walk order varies, the sorted lines must not.
	got = structuredClone(got);
	got.content?.forEach((b, i) => {
		const w = want.content?.[i];
		if (w?.sortedBody && isDeepStrictEqual(b.sortedBody, w.sortedBody) && b.notice === w.notice) b.text = w.text;
	});
	if (isDeepStrictEqual(got, want)) return true;
	if (id === "C082" && got.content?.[0]?.text !== undefined) {
		const g = structuredClone(got);
		if (interleaves(g.content[0].text, want.content[0].text)) g.content[0].text = want.content[0].text;
		const out = g.structuredContent?.output;
		if (typeof out === "string" && interleaves(out, want.structuredContent?.output ?? "")) g.structuredContent.output = want.structuredContent.output;
		return isDeepStrictEqual(g, want);
	}
	return false;
}
function firstDifference(a, b, path = "") {
	if (isDeepStrictEqual(a, b)) return undefined;
	if (a && b && typeof a === "object" && typeof b === "object") {
		for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
			const d = firstDifference(a[k], b[k], `${path}.${k}`);
			if (d) return d;
		}
	}
	const show = (v) => (v === undefined ? "(absent)" : JSON.stringify(v).slice(0, 300));
	return `${path || "."}: recorded ${show(a)}, expected ${show(b)}`;
}

// ------------------------------------------------------------------- main
// --cases A.json,B.json: the cases of every file, in order.
const allCases = opts.cases.split(",").flatMap((file) => JSON.parse(readFileSync(file, "utf8")).cases);
const only = opts.only ? new Set(opts.only.split(",")) : undefined;
const cases = allCases.filter((c) => !only || only.has(c.id));
const env = { node: process.versions.node, rg: toolVersion("rg"), fd: toolVersion("fd") ?? toolVersion("fdfind") };
process.stderr.write(`pi-record: Pi ${piVersion} (${piDir}), node ${env.node}, ${env.rg ?? "no rg"}, ${env.fd ?? "no fd"}, ${cases.length} cases\n`);

let matched = 0;
const mismatched = [];
const recorded = [];
for (const c of cases) {
	let pi;
	try {
		pi = await recordCase(c);
	} catch (error) {
		pi = { recorderError: String(error?.stack ?? error) };
	}
	recorded.push({ ...c, pi });
	if (opts.compare && c.pi !== undefined) {
		const cmp = structuredClone(pi);
		// structuredContent is new in Pi 1.x: not part of a 0.85 recording.
		if (c.pi.structuredContent === undefined) delete cmp.structuredContent;
		if (sameResult(c.id, cmp, c.pi)) {
			matched++;
			if (opts.verbose) process.stdout.write(`same     ${c.id} ${c.name}\n`);
		} else {
			mismatched.push(c.id);
			process.stdout.write(`DIFFERS  ${c.id} ${c.name}: ${firstDifference(cmp, c.pi)}\n`);
		}
	} else if (opts.verbose) {
		process.stdout.write(`recorded ${c.id} ${c.name}\n`);
	}
}
if (opts.compare) {
	const compared = cases.filter((c) => c.pi !== undefined).length;
	process.stdout.write(`${matched}/${compared} cases reproduce the recorded results${mismatched.length ? ` (differ: ${mismatched.join(", ")})` : ""}\n`);
}
if (opts.out) {
	const about =
		opts.about ||
		`Pi ${piVersion} recorded results (scripts/pi-record/record.mjs, node ${env.node}, ${env.rg}, ${env.fd}). <CWD> stands for the workspace's absolute path. Long texts are summarised as {textLength, head, tail}.`;
	writeFileSync(opts.out, `${JSON.stringify({ about, cases: recorded }, null, 1)}\n`);
	process.stderr.write(`pi-record: wrote ${recorded.length} cases to ${opts.out}\n`);
}
process.exitCode = opts.compare && mismatched.length > 0 ? 1 : 0;
