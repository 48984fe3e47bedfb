// Parsing and validation of replay traces (TRACE-FORMAT v2, writer steps
// included), rule for rule
// the same as the Rust replayer (testkit/src/trace.rs): a trace this module
// rejects is one the Rust tool rejects, so every host exits 2 on the same
// inputs. Only the shape is checked; values that fit their WIT types but
// break SEMANTICS (parallelism 0, a subtask out of range) go to the component.

import { parseJson, JsonError } from './json.mjs';
import { rustDebugStr } from './host.mjs';

export const END = 2n ** 63n - 1n;
export const MAX_CHECKPOINT = END - 1n;
export const DEFAULT_INSTANCE = 'main';
const U32_MAX = 2n ** 32n - 1n;
const U64_MAX = 2n ** 64n - 1n;
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

/** A trace that breaks a rule: where (step index, op, field) and why. */
export class Malformed extends Error {
  constructor(message, { step = null, op = null, field = null } = {}) {
    super(message);
    this.detail = message;
    this.step = step;
    this.op = op;
    this.field = field;
  }

  inStep(index, op) {
    this.step = index;
    if (this.op === null) this.op = op ?? null;
    return this;
  }

  toString() {
    const place = [];
    if (this.step !== null) {
      place.push(this.op !== null ? `step ${this.step} (op ${JSON.stringify(this.op)})` : `step ${this.step}`);
    }
    if (this.field !== null) place.push(`field ${JSON.stringify(this.field)}`);
    return `malformed trace: ${place.length ? place.join(', ') + ': ' : ''}${this.detail}`;
  }
}

const at = (field, message) => new Malformed(message, { field });
const atOpt = (path, message) => (path === '' ? new Malformed(message) : at(path, message));

function describe(j) {
  switch (j.t) {
    case 'null': return 'null';
    case 'bool': return String(j.v);
    case 'int': return j.v.toString();
    case 'float': return `the non-integer number ${j.text}`;
    case 'str': {
      const chars = [...j.v];
      const shown = chars.slice(0, 40).join('');
      return `the string ${JSON.stringify(shown)}${chars.length > 40 ? '...' : ''}`;
    }
    case 'array': return 'a list';
    default: return 'an object';
  }
}

class Field {
  constructor(value, path) {
    this.value = value;
    this.path = path;
  }
  err(expected) {
    return at(this.path, `expected ${expected}, got ${describe(this.value)}`);
  }
  intIn(lo, hi, expected) {
    if (this.value.t === 'int' && this.value.v >= lo && this.value.v <= hi) return this.value.v;
    throw this.err(expected);
  }
  u32() {
    return Number(this.intIn(0n, U32_MAX, 'an integer in 0..=4294967295'));
  }
  u64() {
    return this.intIn(0n, U64_MAX, 'an integer in 0..=18446744073709551615');
  }
  i64() {
    return this.intIn(I64_MIN, I64_MAX, 'an integer in -9223372036854775808..=9223372036854775807');
  }
  bool() {
    if (this.value.t === 'bool') return this.value.v;
    throw this.err('true or false');
  }
  str() {
    if (this.value.t === 'str') return this.value.v;
    throw this.err('a string');
  }
  isNull() {
    return this.value.t === 'null';
  }
  array() {
    if (this.value.t !== 'array') throw this.err('a list');
    return this.value.v.map((v, i) => new Field(v, `${this.path}[${i}]`));
  }
  object(what) {
    return Obj.of(this.value, this.path, what);
  }
  checkpoint(endAllowed) {
    const expected = endAllowed
      ? 'a checkpoint number in 0..=9223372036854775806 or "end"'
      : 'a checkpoint number in 0..=9223372036854775806 ("end" is not allowed here)';
    const v = this.value;
    if (v.t === 'int' && v.v >= 0n && v.v <= MAX_CHECKPOINT) return v.v;
    if (endAllowed && v.t === 'str' && v.v === 'end') return END;
    throw this.err(expected);
  }
  checkpointOrNull() {
    if (this.isNull()) return null;
    const v = this.value;
    if (v.t === 'int' && v.v >= 0n && v.v <= MAX_CHECKPOINT) return v.v;
    throw this.err('a checkpoint number in 0..=9223372036854775806 or null');
  }
}

class Obj {
  constructor(fields, path) {
    this.fields = fields;
    this.path = path;
  }
  static of(value, path, what) {
    if (value.t === 'object') return new Obj(value.v, path);
    throw atOpt(path, `expected ${what} (an object), got ${describe(value)}`);
  }
  fieldPath(name) {
    return this.path === '' ? name : `${this.path}.${name}`;
  }
  only(allowed, context) {
    for (const [name] of this.fields) {
      if (!allowed.includes(name)) {
        throw at(this.fieldPath(name), `unknown field ${JSON.stringify(name)} ${context} (allowed: ${allowed.join(', ')})`);
      }
    }
  }
  get(name) {
    const f = this.fields.find(([k]) => k === name);
    return f ? f[1] : undefined;
  }
  required(name) {
    const v = this.get(name);
    if (v === undefined) throw at(this.fieldPath(name), `missing required field ${JSON.stringify(name)}`);
    return new Field(v, this.fieldPath(name));
  }
  optional(name) {
    const v = this.get(name);
    return v === undefined ? null : new Field(v, this.fieldPath(name));
  }
}

const optU32 = (obj, name, dflt) => obj.optional(name)?.u32() ?? dflt;
const optU64 = (obj, name, dflt) => obj.optional(name)?.u64() ?? dflt;
const optBool = (obj, name, dflt) => {
  const f = obj.optional(name);
  return f === null ? dflt : f.bool();
};

function optWatermark(obj) {
  const f = obj.optional('watermark');
  if (f === null || f.isNull()) return null;
  try {
    return f.i64();
  } catch {
    throw f.err('a watermark (an integer in -9223372036854775808..=9223372036854775807) or null');
  }
}

const encoder = new TextEncoder();

function optCommittables(obj) {
  const f = obj.optional('committables');
  if (f === null) return [];
  return f.array().map((c) => encoder.encode(c.str()));
}

function optU32List(obj, name) {
  const f = obj.optional(name);
  if (f === null) return [];
  return f.array().map((x) => x.u32());
}

const CONFIG_FIELDS = [
  'parallelism',
  'commit_user',
  'checkpointing',
  'final_commit',
  'force_create_snapshot',
  'savepoint_auto_tag',
  'tag_time_retained_ms',
  'recovery',
];

/** The WIT `config` record, as jco wants it. */
function newConfig(parallelism, commitUser) {
  return {
    parallelism,
    commitUser,
    checkpointing: true,
    finalCommit: 'on-checkpoint',
    forceCreateSnapshot: false,
    savepointAutoTag: false,
    tagTimeRetainedMs: undefined,
    recovery: 'restart',
  };
}

function applyConfig(base, obj) {
  const config = { ...base };
  let f;
  if ((f = obj.optional('parallelism'))) config.parallelism = f.u32();
  if ((f = obj.optional('commit_user'))) config.commitUser = f.str();
  config.checkpointing = optBool(obj, 'checkpointing', config.checkpointing);
  if ((f = obj.optional('final_commit'))) {
    const s = f.value.t === 'str' ? f.value.v : null;
    if (s !== 'on-checkpoint' && s !== 'on-end-input') throw f.err('"on-checkpoint" or "on-end-input"');
    config.finalCommit = s;
  }
  config.forceCreateSnapshot = optBool(obj, 'force_create_snapshot', config.forceCreateSnapshot);
  config.savepointAutoTag = optBool(obj, 'savepoint_auto_tag', config.savepointAutoTag);
  if ((f = obj.optional('tag_time_retained_ms'))) {
    if (f.isNull()) {
      config.tagTimeRetainedMs = undefined;
    } else {
      try {
        config.tagTimeRetainedMs = f.u64();
      } catch {
        throw f.err('an integer in 0..=18446744073709551615 or null');
      }
    }
  }
  if ((f = obj.optional('recovery'))) {
    const s = f.value.t === 'str' ? f.value.v : null;
    if (s !== 'restart' && s !== 'continue') throw f.err('"restart" or "continue"');
    config.recovery = s;
  }
  return config;
}

function configOverride(step, base) {
  const f = step.optional('config');
  if (f === null) return { ...base };
  const obj = f.object('a configuration override');
  obj.only(CONFIG_FIELDS, 'in config');
  return applyConfig(base, obj);
}

const OPS = [
  'start',
  'event',
  'checkpoint',
  'complete',
  'abort',
  'reset_subtask',
  'restored',
  'failover',
  'close',
  'clock',
  'storage_fault',
  // Writer steps (TRACE-FORMAT "Writer steps").
  'write',
  'end_input',
  'send',
  'writer_committed',
  'writer_abort',
  'writer_snapshot',
  'writer_restore',
];

/** The writer ops (TRACE-FORMAT "Writer steps"). */
export const WRITER_OPS = new Set(OPS.slice(11));

const OP_FIELDS = {
  start: ['config'],
  event: ['subtask', 'attempt', 'checkpoint', 'committables', 'watermark', 'savepoint'],
  checkpoint: ['checkpoint'],
  complete: ['checkpoint'],
  abort: ['checkpoint'],
  reset_subtask: ['subtask', 'checkpoint'],
  restored: ['subtask', 'attempt', 'checkpoint', 'entries'],
  failover: ['checkpoint', 'finished_subtasks', 'config', 'state_hex'],
  close: [],
  clock: ['ms'],
  storage_fault: ['call', 'mode', 'skip', 'count'],
  write: ['subtask', 'checkpoint', 'committables', 'watermark', 'savepoint', 'send'],
  end_input: ['subtask', 'committables', 'watermark', 'send'],
  send: ['subtask', 'count'],
  writer_committed: ['subtask', 'checkpoint'],
  writer_abort: ['subtask', 'checkpoint'],
  writer_snapshot: ['subtask', 'checkpoint'],
  writer_restore: ['subtask', 'checkpoint', 'attempt', 'send'],
};

function parseEntry(obj) {
  return {
    checkpoint: obj.required('checkpoint').checkpoint(true),
    committables: optCommittables(obj),
    watermark: optWatermark(obj) ?? undefined,
    savepoint: optBool(obj, 'savepoint', false),
  };
}

function decodeHex(s) {
  if (s.length % 2 !== 0) throw `not valid hex: odd number of digits (${encoder.encode(s).length})`;
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let d;
    if (c >= 0x30 && c <= 0x39) d = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
    else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
    else throw `not valid hex: unexpected character at position ${i}`;
    out[i >> 1] = (out[i >> 1] << 4) | d;
  }
  return out;
}

/**
 * What the writer steps so far have created (trace.rs `WriterBook`):
 * which writers exist (with their attempt) and which writer state bytes
 * `writer_snapshot` kept. All of it follows from the steps alone: writers are
 * created by steps and never removed, whatever the calls return.
 */
class WriterBook {
  constructor() {
    this.attempts = new Map(); // JSON [instance, subtask] -> attempt
    this.kept = new Set(); // JSON [instance, subtask, checkpoint]
  }

  static key(instance, subtask) {
    return JSON.stringify([instance, subtask]);
  }

  static keptKey(instance, subtask, checkpoint) {
    return JSON.stringify([instance, subtask, checkpoint.toString()]);
  }

  /** The default attempt of a `writer_restore`: the previous + 1, or 0. */
  nextAttempt(instance, subtask) {
    const previous = this.attempts.get(WriterBook.key(instance, subtask));
    if (previous === undefined) return 0;
    if (BigInt(previous) + 1n > U32_MAX) {
      throw at(
        'attempt',
        `the default attempt (the previous attempt ${previous} + 1) does not fit 0..=4294967295: give "attempt"`,
      );
    }
    return previous + 1;
  }

  /** The existing writers of `instance`, in subtask order. */
  subtasksOf(instance) {
    const out = [];
    for (const k of this.attempts.keys()) {
      const [name, subtask] = JSON.parse(k);
      if (name === instance) out.push(subtask);
    }
    return out.sort((a, b) => a - b);
  }

  /** The writer rules a step's shape cannot show. */
  check(step) {
    const name = step.instance;
    switch (step.op) {
      case 'writer_committed':
      case 'writer_abort':
      case 'writer_snapshot':
        if (step.subtask !== null) {
          if (!this.attempts.has(WriterBook.key(name, step.subtask))) {
            throw at(
              'subtask',
              `no writer ${step.subtask} of instance ${rustDebugStr(name)} exists yet (a writer is created by its first ` +
                '"write", "end_input", "send" or "writer_restore" step)',
            );
          }
        } else if (this.subtasksOf(name).length === 0) {
          throw at(
            'subtask',
            `instance ${rustDebugStr(name)} has no writer yet (without "subtask" the step applies to every writer of the instance)`,
          );
        }
        break;
      case 'writer_restore':
        if (step.checkpoint !== null && !this.kept.has(WriterBook.keptKey(name, step.subtask, step.checkpoint))) {
          throw at(
            'checkpoint',
            `no writer state bytes were kept for checkpoint ${step.checkpoint} of writer ${step.subtask} of instance ` +
              `${rustDebugStr(name)} (no "writer_snapshot" step for it)`,
          );
        }
        break;
      default:
        break;
    }
  }

  /** Records what a (checked) step creates. */
  apply(step) {
    const name = step.instance;
    switch (step.op) {
      case 'write':
      case 'end_input':
      case 'send': {
        const k = WriterBook.key(name, step.subtask);
        if (!this.attempts.has(k)) this.attempts.set(k, 0);
        break;
      }
      case 'writer_restore':
        this.attempts.set(WriterBook.key(name, step.subtask), step.attempt);
        break;
      case 'writer_snapshot': {
        const subtasks = step.subtask !== null ? [step.subtask] : this.subtasksOf(name);
        for (const s of subtasks) this.kept.add(WriterBook.keptKey(name, s, step.checkpoint));
        break;
      }
      default:
        break;
    }
  }
}

function parseStep(item, config, writers) {
  if (item.value.t !== 'object') throw new Malformed(`expected a step (an object), got ${describe(item.value)}`);
  const obj = new Obj(item.value.v, '');
  const opName = obj.required('op').str();
  const instanceField = obj.optional('instance');
  const instance = instanceField === null ? DEFAULT_INSTANCE : instanceField.str();
  const fields = OP_FIELDS[opName];
  if (!Object.hasOwn(OP_FIELDS, opName)) {
    throw at('op', `unknown op ${JSON.stringify(opName)} (expected one of: ${OPS.join(', ')})`);
  }
  obj.only(['op', 'instance', ...fields], `for op ${JSON.stringify(opName)}`);

  let op;
  switch (opName) {
    case 'start':
      op = { op: 'start', config: configOverride(obj, config) };
      break;
    case 'event':
      op = {
        op: 'event',
        subtask: obj.required('subtask').u32(),
        attempt: optU32(obj, 'attempt', 0),
        entry: parseEntry(obj),
      };
      break;
    case 'checkpoint':
    case 'complete':
    case 'abort':
      op = { op: opName, checkpoint: obj.required('checkpoint').checkpoint(true) };
      break;
    case 'reset_subtask':
      op = {
        op: opName,
        subtask: obj.required('subtask').u32(),
        checkpoint: obj.required('checkpoint').checkpointOrNull(),
      };
      break;
    case 'restored': {
      const subtask = obj.required('subtask').u32();
      const attempt = optU32(obj, 'attempt', 0);
      const checkpoint = obj.required('checkpoint').checkpoint(false);
      const entries = [];
      for (const e of obj.required('entries').array()) {
        const entryObj = e.object('an entry');
        entryObj.only(['checkpoint', 'committables', 'watermark', 'savepoint'], 'in an entry');
        entries.push(parseEntry(entryObj));
      }
      op = { op: opName, subtask, attempt, checkpoint, entries };
      break;
    }
    case 'failover': {
      const checkpoint = obj.required('checkpoint').checkpointOrNull();
      // Checked even when ignored (checkpoint null).
      const finished = optU32List(obj, 'finished_subtasks');
      const cfg = configOverride(obj, config);
      let state = null;
      const f = obj.optional('state_hex');
      if (f !== null) {
        if (checkpoint === null) throw at('state_hex', '"state_hex" needs a checkpoint number, not null');
        const hex = f.str();
        try {
          state = decodeHex(hex);
        } catch (m) {
          throw at('state_hex', m);
        }
      }
      op = { op: opName, checkpoint, finishedSubtasks: checkpoint !== null ? finished : [], config: cfg, state };
      break;
    }
    case 'close':
      op = { op: opName };
      break;
    case 'clock':
      op = { op: opName, ms: obj.required('ms').u64() };
      break;
    case 'storage_fault': {
      const callField = obj.required('call');
      const call = callField.value.t === 'str' ? callField.value.v : null;
      if (!['put', 'get', 'list', 'delete'].includes(call)) throw callField.err('"put", "get", "list" or "delete"');
      const modeField = obj.required('mode');
      const mode = modeField.value.t === 'str' ? modeField.value.v : null;
      if (mode !== 'fail' && mode !== 'ambiguous') throw modeField.err('"fail" or "ambiguous"');
      const skip = optU64(obj, 'skip', 0n);
      const count = optU64(obj, 'count', 1n);
      if (count < 1n) throw at('count', "a fault's count must be at least 1");
      op = { op: opName, call, fault: { skip, count, mode } };
      break;
    }
    case 'write': {
      const subtask = obj.required('subtask').u32();
      const entry = {
        checkpoint: obj.required('checkpoint').checkpoint(false),
        committables: optCommittables(obj),
        watermark: optWatermark(obj) ?? undefined,
        savepoint: optBool(obj, 'savepoint', false),
      };
      op = { op: opName, subtask, entry, send: optBool(obj, 'send', true) };
      break;
    }
    case 'end_input': {
      const subtask = obj.required('subtask').u32();
      const committables = optCommittables(obj);
      const watermark = optWatermark(obj) ?? undefined;
      op = { op: opName, subtask, committables, watermark, send: optBool(obj, 'send', true) };
      break;
    }
    case 'send': {
      const subtask = obj.required('subtask').u32();
      let count = null;
      const f = obj.optional('count');
      if (f !== null) {
        count = f.u64();
        if (count < 1n) {
          throw at('count', "a send's count must be at least 1 (omit it to send the whole outbox)");
        }
      }
      op = { op: opName, subtask, count };
      break;
    }
    case 'writer_committed': {
      // `checkpoint` null: u is the named coordinator's committed-up-to.
      const s = obj.optional('subtask');
      const subtask = s === null ? null : s.u32();
      const c = obj.optional('checkpoint');
      const checkpoint = c === null ? null : c.checkpoint(true);
      op = { op: opName, subtask, checkpoint };
      break;
    }
    case 'writer_abort':
    case 'writer_snapshot': {
      const f = obj.optional('subtask');
      const subtask = f === null ? null : f.u32();
      const checkpoint = obj.required('checkpoint').checkpoint(false);
      op = { op: opName, subtask, checkpoint };
      break;
    }
    case 'writer_restore': {
      const subtask = obj.required('subtask').u32();
      const checkpoint = obj.required('checkpoint').checkpointOrNull();
      const f = obj.optional('attempt');
      const attempt = f !== null ? f.u32() : writers.nextAttempt(instance, subtask);
      op = { op: opName, subtask, checkpoint, attempt, send: optBool(obj, 'send', true) };
      break;
    }
  }
  op.instance = instance;
  return op;
}

/**
 * Parses and validates a trace given as raw bytes (a Buffer / Uint8Array).
 * Returns {config, clockStartMs, clockStepMs, steps}; throws Malformed.
 */
export function parseTrace(bytes) {
  let text;
  try {
    // fatal: invalid UTF-8 is malformed; ignoreBOM: keep a BOM so that it is
    // rejected like serde_json does.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new Malformed('the trace is not valid UTF-8');
  }
  let doc;
  try {
    doc = parseJson(text);
  } catch (e) {
    if (e instanceof JsonError) {
      throw new Malformed(`invalid JSON at line ${e.line}, column ${e.column}: ${e.message}`);
    }
    throw e;
  }
  const top = Obj.of(doc, '', 'a trace');
  top.only(['config', 'clock_start_ms', 'clock_step_ms', 'steps'], 'at the top level');

  const configObj = top.required('config').object('the configuration');
  configObj.only(CONFIG_FIELDS, 'in config');
  const base = newConfig(configObj.required('parallelism').u32(), configObj.required('commit_user').str());
  const config = applyConfig(base, configObj);

  const clockStartMs = optU64(top, 'clock_start_ms', 0n);
  const clockStepMs = optU64(top, 'clock_step_ms', 0n);

  const steps = [];
  // Names that have had a start or failover so far.
  const instances = new Set();
  // Writers and kept writer state so far (writer steps).
  const writers = new WriterBook();
  top.required('steps').array().forEach((item, index) => {
    let opName = null;
    if (item.value.t === 'object') {
      const f = item.value.v.find(([k]) => k === 'op');
      if (f && f[1].t === 'str') opName = f[1].v;
    }
    let step;
    try {
      step = parseStep(item, config, writers);
    } catch (e) {
      if (e instanceof Malformed) throw e.inStep(index, opName);
      throw e;
    }
    const creates = step.op === 'start' || step.op === 'failover';
    if (index === 0 && !creates) {
      throw at('op', 'the first step must be "start" or "failover"').inStep(index, opName);
    }
    // Every step but start and failover needs its instance, writer steps
    // included (a writer exists only after a step that needed it).
    if (!creates && !instances.has(step.instance)) {
      throw at(
        'instance',
        `no instance ${JSON.stringify(step.instance)} exists yet: its first step must be "start" or "failover"`,
      ).inStep(index, opName);
    }
    try {
      writers.check(step);
    } catch (e) {
      if (e instanceof Malformed) throw e.inStep(index, opName);
      throw e;
    }
    writers.apply(step);
    instances.add(step.instance);
    steps.push(step);
  });
  return { config, clockStartMs, clockStepMs, steps };
}
