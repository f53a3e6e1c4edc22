// Shared by bash.mjs and batch.mjs: loads Pi 0.85.0's own modules from the
// install that ./install made (target/pi, or $PI_BASELINE_DIR), parses
// arguments, and the statistics every script reports.
//
// The packages live in target/pi/node_modules, which Node's resolution does
// not search from scripts/pi-baseline/, so they are imported by file URL: a
// package's public entry through its package.json `exports` (what
// `import "@earendil-works/pi-coding-agent"` resolves to), and a few of Pi's
// internal modules (print mode's stdout writer) by their path in `dist/`.

import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const piDir = resolve(process.env.PI_BASELINE_DIR ?? join(here, "..", "..", "target", "pi"));
const modules = join(piDir, "node_modules");

function packageDir(name) {
	const dir = join(modules, ...name.split("/"));
	if (!existsSync(join(dir, "package.json"))) {
		process.stderr.write(
			`pi-baseline: ${name} is not installed in ${piDir}; run scripts/pi-baseline/install\n`,
		);
		process.exit(2);
	}
	return dir;
}

/** The version of an installed package. */
export function packageVersion(name) {
	return JSON.parse(readFileSync(join(packageDir(name), "package.json"), "utf8")).version;
}

/** `import name`, as Node would resolve it from a project depending on it. */
export async function importPackage(name) {
	const dir = packageDir(name);
	const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
	const root = pkg.exports?.["."];
	const entry = typeof root === "string" ? root : (root?.import ?? root?.default ?? pkg.main);
	return import(pathToFileURL(join(dir, entry)).href);
}

/** One of a package's internal modules, by its path inside the package. */
export async function importInternal(name, path) {
	return import(pathToFileURL(join(packageDir(name), path)).href);
}

/**
 * Parses `--name value` and `--flag` arguments. `spec` maps each option to its
 * default: a number or string takes a value, a boolean is a flag.
 */
export function parseArgs(argv, spec, usage) {
	const out = { ...spec };
	for (let i = 0; i < argv.length; i++) {
		const arg = argv[i];
		const key = arg.startsWith("--") ? arg.slice(2) : undefined;
		if (key === "help") {
			process.stdout.write(usage);
			process.exit(0);
		}
		if (key === undefined || !(key in spec)) {
			process.stderr.write(`unknown argument: ${arg}\n${usage}`);
			process.exit(2);
		}
		if (typeof spec[key] === "boolean") {
			out[key] = true;
			continue;
		}
		const value = argv[++i];
		if (value === undefined) {
			process.stderr.write(`${arg} needs a value\n${usage}`);
			process.exit(2);
		}
		if (typeof spec[key] === "number") {
			const n = Number(value);
			if (!Number.isFinite(n) || n < 0) {
				process.stderr.write(`${arg}: not a number: ${value}\n`);
				process.exit(2);
			}
			out[key] = n;
		} else {
			out[key] = value;
		}
	}
	return out;
}

const round = (ms) => Math.round(ms * 1000) / 1000;

/** min, median, max and every sample, in ms rounded to the µs. */
export function stats(samples) {
	const sorted = [...samples].sort((a, b) => a - b);
	const mid = sorted.length >> 1;
	const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
	return {
		min_ms: round(sorted[0]),
		median_ms: round(median),
		max_ms: round(sorted[sorted.length - 1]),
		runs_ms: samples.map(round),
	};
}

export { round };

/** What every result line says about the baseline itself. */
export function baselineInfo() {
	return {
		node: process.versions.node,
		pi_coding_agent: packageVersion("@earendil-works/pi-coding-agent"),
		pi_agent_core: packageVersion("@earendil-works/pi-agent-core"),
	};
}

/**
 * A model that answers the first turn with `calls` and then stops: `model` for Pi's Agent, and
 * `conversation()`, a new `streamFn` each time (its turns counted from the first), built on
 * pi-ai's `createAssistantMessageEventStream` (passed in: each script imports pi-ai from its own
 * install). `name` names the model, its API and its provider.
 */
export function scriptedModel(name, calls, createAssistantMessageEventStream) {
	const model = {
		id: name,
		name,
		api: name,
		provider: name,
		baseUrl: "",
		reasoning: false,
		input: ["text"],
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
		contextWindow: 1_000_000,
		maxTokens: 100_000,
	};
	const usage = {
		input: 0,
		output: 0,
		cacheRead: 0,
		cacheWrite: 0,
		totalTokens: 0,
		cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
	};
	const assistant = (content, stopReason) => ({
		role: "assistant",
		content,
		api: model.api,
		provider: model.provider,
		model: model.id,
		usage,
		stopReason,
		timestamp: Date.now(),
	});
	const conversation = () => {
		let turn = 0;
		return () => {
			const stream = createAssistantMessageEventStream();
			const message = turn++ === 0 ? assistant(calls, "toolUse") : assistant([{ type: "text", text: "done" }], "stop");
			queueMicrotask(() => stream.push({ type: "done", reason: message.stopReason, message }));
			return stream;
		};
	};
	return { model, conversation };
}
