// The worker side of WorkerStorage (worker_storage.js): loads the backend,
// then answers one call at a time on its port, setting the shared word
// after each reply so that the caller's Atomics.wait returns.

import { workerData } from 'node:worker_threads';

import { BackendError } from './errors.js';

const { module, exportName, args, signal, port } = workerData;

const describe = (e) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

// Every call gets a reply, even one that cannot be posted (a value that
// cannot be cloned): then a fatal one, so the caller fails at once instead
// of waiting out its deadline.
const reply = (message, transfer = []) => {
  try {
    port.postMessage(message, transfer);
  } catch (e) {
    port.postMessage({ fatal: `the storage's answer cannot be sent back: ${describe(e)}` });
  }
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
};

let backend;
let failure;
try {
  const exported = (await import(module))[exportName];
  if (typeof exported !== 'function') throw new TypeError(`${module} exports no class ${exportName}`);
  backend = new exported(...args);
} catch (e) {
  failure = `the storage backend ${exportName} from ${module} could not be created: ${describe(e)}`;
}

// Loaded (or not): the caller waits for this before its first call.
Atomics.store(signal, 0, 1);
Atomics.notify(signal, 0);

// A backend's methods may be async (return promises): this thread has an
// event loop of its own while the caller waits, so an async client (an
// object store SDK, a database driver) serves the synchronous imports.
const serve = async ({ op, args: callArgs }) => {
  if (failure !== undefined) return reply({ fatal: failure });
  let value;
  try {
    value = await backend[op](...callArgs);
  } catch (e) {
    if (e instanceof BackendError) {
      const { name, kind, message, key, size, limit } = e;
      return reply({ error: { name, kind, message, key, size, limit } });
    }
    return reply({ fatal: `storage ${op} threw ${describe(e)}` });
  }
  if (op === 'get' && value instanceof Uint8Array) {
    // Moved, not copied, when the array owns its whole buffer.
    const whole = value.byteOffset === 0 && value.byteLength === value.buffer.byteLength;
    return whole && !(value.buffer instanceof SharedArrayBuffer) ? reply({ value }, [value.buffer]) : reply({ value });
  }
  if (op === 'putIfAbsent') value = Boolean(value);
  else if (op !== 'get' && op !== 'list') value = undefined;
  return reply({ value });
};
port.on('message', (call) => {
  serve(call).catch((e) => reply({ fatal: `storage ${call.op} failed in its worker: ${describe(e)}` }));
});
