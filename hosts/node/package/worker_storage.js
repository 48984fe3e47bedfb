// WorkerStorage: a Storage whose backend runs on a worker thread, so that a
// storage call that never returns is cut off at a deadline.
//
// V8 cannot interrupt a synchronous WebAssembly call on the thread running
// it, and the component's storage imports are synchronous: a backend that
// blocks (a network mount, a lock, a busy loop) would hold the caller's
// thread forever. Here each call is posted to a worker that owns the
// backend, and the caller waits on a shared word with `Atomics.wait` for at
// most `callDeadlineMs`. On overrun the worker is terminated and the call
// throws a plain Error, which traps the component instance: the handle
// throws TrapError from then on, as after any trap, and a new coordinator
// restores from the last checkpoint. The next call starts a fresh worker.

import { pathToFileURL } from 'node:url';
import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';

import { BackendIOError, InvalidKeyError, ValueTooLargeError } from './errors.js';

const THREAD = new URL('./worker_storage_thread.js', import.meta.url);

/** The default deadline of one storage call: 30 s. */
export const DEFAULT_STORAGE_DEADLINE_MS = 30_000;

/**
 * How long a new worker may take to load its backend, apart from the
 * deadline of the call that started it: starting a thread and importing a
 * module takes hundreds of milliseconds on a loaded machine.
 */
const START_MS = 30_000;

/** The shared word: 0 while a call is pending, 1 when its reply is posted. */
const PENDING = 0;

/** The errors a backend throws, rebuilt on the caller's side by name. */
const rebuild = (e) => {
  if (e.name === 'ValueTooLargeError') return new ValueTooLargeError(e.key, e.size, e.limit);
  const cls = { InvalidKeyError, BackendIOError }[e.name] ?? (e.kind === 'invalid-key' ? InvalidKeyError : BackendIOError);
  return new cls(e.message);
};

export class WorkerStorage {
  #spec;
  #deadlineMs;
  #thread = null;

  /**
   * `module` (a URL or an absolute path of an ES module) exports the
   * backend's class as `exportName`; the worker constructs it once with
   * `new Class(...args)` (`args` cross by structured clone).
   */
  constructor(module, exportName, args = [], { callDeadlineMs = DEFAULT_STORAGE_DEADLINE_MS } = {}) {
    if (!Number.isSafeInteger(callDeadlineMs) || callDeadlineMs < 1) {
      throw new RangeError(`callDeadlineMs must be a positive integer of milliseconds, got ${callDeadlineMs}`);
    }
    const url = module instanceof URL ? module.href : pathToFileURL(String(module)).href;
    this.#spec = { module: url, exportName: String(exportName), args };
    this.#deadlineMs = callDeadlineMs;
  }

  /** A FileSystemStorage on a worker thread (the options of FileSystemStorage). */
  static fileSystem(root, options = {}, { callDeadlineMs } = {}) {
    return new WorkerStorage(new URL('./storage.js', import.meta.url), 'FileSystemStorage', [root, options], {
      callDeadlineMs,
    });
  }

  /** The deadline of one call, in milliseconds. */
  get callDeadlineMs() {
    return this.#deadlineMs;
  }

  get(key) {
    return this.#call('get', key, [key]) ?? undefined;
  }
  putIfAbsent(key, value) {
    return this.#call('putIfAbsent', key, [key, value]);
  }
  put(key, value) {
    this.#call('put', key, [key, value]);
  }
  delete(key) {
    this.#call('delete', key, [key]);
  }
  list(prefix) {
    return this.#call('list', prefix, [prefix]);
  }

  /** Stops the worker (a later call starts a new one). */
  close() {
    this.#stop();
  }

  #start() {
    const signal = new Int32Array(new SharedArrayBuffer(4));
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(THREAD, {
      workerData: { ...this.#spec, signal, port: port2 },
      transferList: [port2],
    });
    // The worker must not keep the process alive, nor crash it on an error.
    worker.unref();
    worker.on('error', () => {});
    const thread = { worker, port: port1, signal };
    // The worker sets the word once its backend is loaded (or failed to load).
    if (Atomics.wait(signal, 0, PENDING, START_MS) === 'timed-out') {
      this.#thread = thread;
      this.#stop();
      throw new Error(`the storage worker for ${this.#spec.exportName} did not start within ${START_MS} ms`);
    }
    return thread;
  }

  #stop() {
    if (this.#thread === null) return;
    const { worker, port } = this.#thread;
    this.#thread = null;
    port.close();
    void worker.terminate();
  }

  #call(op, key, args) {
    this.#thread ??= this.#start();
    const { port, signal } = this.#thread;
    Atomics.store(signal, 0, PENDING);
    port.postMessage({ op, args });
    const deadline = Date.now() + this.#deadlineMs;
    // The worker posts its reply, then sets the word and notifies.
    while (Atomics.load(signal, 0) === PENDING) {
      const left = deadline - Date.now();
      if (left <= 0 || Atomics.wait(signal, 0, PENDING, left) === 'timed-out') {
        if (Atomics.load(signal, 0) !== PENDING) break;
        this.#stop();
        throw new Error(
          `the call exceeded its deadline of ${this.#deadlineMs} ms: storage ${op} of key ${JSON.stringify(key)} ` +
            'had not returned (its worker was terminated)',
        );
      }
    }
    const reply = receiveMessageOnPort(port)?.message;
    if (reply === undefined) {
      this.#stop();
      throw new Error(`storage ${op} of key ${JSON.stringify(key)}: the worker stopped without a reply`);
    }
    if (reply.fatal !== undefined) {
      // The backend could not be loaded or threw something that is not a
      // storage error: the component traps on it, as with an inline backend.
      this.#stop();
      throw new Error(reply.fatal);
    }
    if (reply.error !== undefined) throw rebuild(reply.error);
    return reply.value;
  }
}
