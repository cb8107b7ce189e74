// A worker thread the caller waits on synchronously, for at most a time budget: what user code
// (looping FEEL, script tasks' JavaScript) runs in. A transition stays synchronous, and code
// that does not answer in time is stopped from outside by terminating its thread, whatever it
// is doing (a native call, a garbage collection near its memory limit); the next call starts
// a new thread.
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';

export interface ThreadSpec {
  /**
   * The thread's module source. It runs with `workerData.data` in scope as `data` and defines
   * `handle(message)`, which answers each message synchronously (top-level await may load first).
   */
  source: string;
  data: Record<string, unknown>;
  /** the thread's V8 heap */
  heapMb: number;
  /** how long loading may take, not counted in any call's budget */
  loadMs?: number;
  /**
   * A message answered once right after loading, within loadMs: the first run through the
   * handler compiles its code (and WebAssembly tiers up), several times slower than the next,
   * and that cost belongs to no caller's budget.
   */
  warmUp?: unknown;
}

export type ThreadAnswer<A> = { ok: true; answer: A } | { ok: false; reason: 'budget' | 'no-answer' };

interface Running {
  worker: Worker;
  port: MessagePort;
  flags: Int32Array;
}

// Slot 0: bumped by the thread after each answer; slot 1: set once it has loaded.
const BOILERPLATE = `
import { workerData } from 'node:worker_threads';
const data = workerData.data;
const flags = new Int32Array(workerData.flags);
%SOURCE%
workerData.port.on('message', (message) => {
  let answer;
  try {
    answer = handle(message);
  } catch (cause) {
    answer = { ok: false, message: cause instanceof Error ? cause.message : String(cause) };
  }
  workerData.port.postMessage(answer);
  Atomics.add(flags, 0, 1);
  Atomics.notify(flags, 0);
});
Atomics.store(flags, 1, 1);
Atomics.notify(flags, 1);
`;

export class BudgetedThread<Q, A> {
  private running: Running | undefined;

  constructor(private readonly spec: () => ThreadSpec) {}

  /** Starts the thread now, so the first call does not wait for it to load inside a transition. */
  start(): void {
    this.running ??= launch(this.spec());
  }

  /** Posts the message and waits for the answer at most `timeMs`; past it the thread is terminated. */
  call(message: Q, timeMs: number): ThreadAnswer<A> {
    this.start();
    const current = this.running!;
    const before = Atomics.load(current.flags, 0);
    current.port.postMessage(message);
    const waited = Atomics.wait(current.flags, 0, before, timeMs);
    const answer = receiveMessageOnPort(current.port)?.message as A | undefined;
    if (waited === 'timed-out' && answer === undefined) {
      this.stop();
      return { ok: false, reason: 'budget' };
    }
    return answer === undefined ? { ok: false, reason: 'no-answer' } : { ok: true, answer };
  }

  /** Terminates the thread (the next call starts another). */
  stop(): void {
    const current = this.running;
    this.running = undefined;
    if (current) void current.worker.terminate();
  }
}

function launch(spec: ThreadSpec): Running {
  const { port1, port2 } = new MessageChannel();
  const flags = new Int32Array(new SharedArrayBuffer(8));
  const source = BOILERPLATE.replace('%SOURCE%', spec.source);
  const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), {
    workerData: { flags: flags.buffer, port: port2, data: spec.data },
    transferList: [port2],
    resourceLimits: {
      maxOldGenerationSizeMb: spec.heapMb,
      maxYoungGenerationSizeMb: Math.max(4, Math.floor(spec.heapMb / 8)),
    },
    execArgv: [],
    stdout: true,
    stderr: true,
  });
  worker.unref();
  port1.unref();
  worker.on('error', () => undefined); // out of memory: seen as a missed budget by the waiting caller
  const loadMs = spec.loadMs ?? 10_000;
  if (Atomics.wait(flags, 1, 0, loadMs) === 'timed-out') {
    void worker.terminate();
    throw new Error(`the evaluation thread did not start within ${loadMs} ms`);
  }
  if (spec.warmUp !== undefined) {
    port1.postMessage(spec.warmUp);
    const warmed = Atomics.wait(flags, 0, 0, loadMs);
    receiveMessageOnPort(port1);
    if (warmed === 'timed-out') {
      void worker.terminate();
      throw new Error(`the evaluation thread did not answer its first message within ${loadMs} ms`);
    }
  }
  return { worker, port: port1, flags };
}
