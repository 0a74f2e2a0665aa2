import { describeError, firstLine } from '../core/temporal/describe-error';

/** One kind of leftover a worker removes once it is older than its retention; `run` says how many went. */
export interface RetentionTask {
  readonly name: string;
  run(): Promise<number>;
}

export interface RetentionOptions {
  /** How often the tasks run (default 6 h); the first run comes `firstAfterMs` (default 1 min) after start. */
  readonly everyMs?: number;
  readonly firstAfterMs?: number;
  readonly log: (line: string) => void;
}

export interface RetentionLoop {
  /** Runs every task once now (tests, and `airlock setup`-like callers); resolves when done. */
  runOnce(): Promise<void>;
  stop(): void;
}

/**
 * Removes what finished jobs leave behind once it is older than its
 * retention (outcome rows, expired invites, old audit events), in the
 * worker that owns the store. A task that fails is said in one line and
 * tried again at the next round; it never stops a worker. Several workers
 * running the same task against a shared database is harmless: each
 * removes what is still there.
 */
export function startRetention(tasks: readonly RetentionTask[], options: RetentionOptions): RetentionLoop {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const runOnce = async (): Promise<void> => {
    for (const task of tasks) {
      try {
        const removed = await task.run();
        if (removed > 0) options.log(`airlock: retention: removed ${removed} ${task.name}`);
      } catch (err) {
        options.log(`airlock: retention: cannot remove old ${task.name}: ${firstLine(describeError(err))}; trying again later`);
      }
    }
  };
  const schedule = (ms: number) => {
    if (stopped || tasks.length === 0) return;
    timer = setTimeout(() => {
      void runOnce().finally(() => schedule(options.everyMs ?? 6 * 3_600_000));
    }, ms);
    // The loop never keeps a process alive on its own: workers do.
    timer.unref();
  };
  schedule(options.firstAfterMs ?? 60_000);
  return {
    runOnce,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
