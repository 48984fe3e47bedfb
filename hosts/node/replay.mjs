#!/usr/bin/env node
// Replays a trace (TRACE-FORMAT v2, writer steps included) through the
// sink-coordinator component under Node + jco and prints the result
// document, byte-identical to `sinkcoord replay TRACE.json`.
//
//   node hosts/node/replay.mjs [--component FILE] [--states FILE] TRACE.json
//
// --component   the component (default $SINK_COORDINATOR_WASM, else
//               <repo>/dist/sink-coordinator-<WIT version>.wasm); transpiled on first use
//               into hosts/node/.cache/<sha256>/ (see transpile.mjs)
// --states      also write, per successful `checkpoint` step, one line
//               {"step": I, "instance": NAME, "checkpoint": C, "state_hex": HEX}
//               to FILE (cross-runtime comparison of the state bytes)
//
// Exit codes: 0 replayed (even if steps returned errors), 1 the host failed,
// 2 the trace is malformed or the command line is wrong.

import { readFileSync, writeFileSync } from 'node:fs';

import { Runtime } from './host.mjs';
import { render, jsonStr, checkpoint as renderCheckpoint } from './render.mjs';
import { HostFailure, replay } from './replayer.mjs';
import { Malformed, parseTrace } from './trace.mjs';
import { componentPath, ensureTranspiled } from './transpile.mjs';

const USAGE = 'usage: node replay.mjs [--component FILE] [--states FILE] TRACE.json';

function fail(code, message) {
  process.stderr.write(`replay.mjs: ${message}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const args = { component: null, states: process.env.SINKCOORD_STATES_OUT || null, trace: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--component' || a === '--states') {
      if (i + 1 >= argv.length) fail(2, `${a} needs a value\n${USAGE}`);
      args[a.slice(2)] = argv[++i];
    } else if (a === '-h' || a === '--help') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else if (a.startsWith('-') && a !== '-') {
      fail(2, `unknown option ${a}\n${USAGE}`);
    } else if (args.trace === null) {
      args.trace = a;
    } else {
      fail(2, `unexpected argument ${a}\n${USAGE}`);
    }
  }
  if (args.trace === null) fail(2, `missing TRACE.json\n${USAGE}`);
  return args;
}

export function renderStates(states) {
  return states
    .map(
      (s) =>
        `{"step": ${s.step}, "instance": ${jsonStr(s.instance)}, "checkpoint": ${renderCheckpoint(s.checkpoint)}, ` +
        `"state_hex": "${s.hex}"}\n`,
    )
    .join('');
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  let bytes;
  try {
    bytes = readFileSync(args.trace);
  } catch (e) {
    fail(1, `cannot read ${args.trace}: ${e.message}`);
  }
  let trace;
  try {
    trace = parseTrace(bytes);
  } catch (e) {
    if (e instanceof Malformed) fail(2, `${args.trace}: ${e}`);
    throw e;
  }
  let runtime;
  try {
    runtime = await Runtime.load(ensureTranspiled(componentPath(args.component)));
  } catch (e) {
    fail(1, `cannot load the component: ${e.message}`);
  }
  let result;
  try {
    result = replay(trace, runtime);
  } catch (e) {
    if (e instanceof Malformed) fail(2, `${args.trace}: ${e}`);
    if (e instanceof HostFailure) fail(1, e.message);
    throw e;
  }
  if (args.states) writeFileSync(args.states, renderStates(result.states));
  process.stdout.write(render(result));
}

main().catch((e) => fail(1, `replay failed: ${e?.stack ?? e}`));
