import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const repoRoot = join(__dirname, '..', '..');

export interface Spawned {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves once a line matches, rejects when the process exits first or time runs out. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  exited(): Promise<number | null>;
}

/** Runs a built airlock entry point (`dist/`) as a real process. */
export function spawnNode(script: string, args: string[], env: NodeJS.ProcessEnv, options: { detached?: boolean } = {}): Spawned {
  const child = spawn(process.execPath, [join(repoRoot, script), ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let text = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    for (const l of listeners) l();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let done = false;
  void exit.then(() => {
    done = true;
    for (const l of listeners) l();
  });
  return {
    child,
    output: () => text,
    exited: () => exit,
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`timed out waiting for ${String(pattern)}; output:\n${text}`)), timeoutMs);
        const check = () => {
          if (pattern.test(text)) finish();
          else if (done) finish(new Error(`process exited before ${String(pattern)}; output:\n${text}`));
        };
        const finish = (err?: Error) => {
          clearTimeout(timer);
          listeners.delete(check);
          if (err === undefined) resolve();
          else reject(err);
        };
        listeners.add(check);
        check();
      });
    },
  };
}
