import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { AirlockError } from '../../core/util/errors';

/** A Go build airlock needed could not run or failed. */
export class GoBuildError extends AirlockError {
  override name = 'GoBuildError';
}

export function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function findOnPath(command: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, command);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/** The `go` command: on PATH, else under GOROOT. */
export function findGo(env: NodeJS.ProcessEnv): string | undefined {
  return findOnPath('go', env) ?? (env.GOROOT !== undefined ? [join(env.GOROOT, 'bin', 'go')].find(isExecutableFile) : undefined);
}

export interface GoPackage {
  /** `module/path/cmd/x@version`. */
  readonly target: string;
  /** The binary `go install` writes (the package folder's name). */
  readonly builds: string;
  /** The name it is kept under in the cache folder. */
  readonly keepAs: string;
}

export interface GoInstallInput {
  readonly go: string;
  readonly packages: readonly GoPackage[];
  readonly cacheDir: string;
  /** What is built, for people ("the Temporal CLI v1.5.1"). */
  readonly what: string;
  readonly env: NodeJS.ProcessEnv;
  readonly log: (line: string) => void;
}

/**
 * `go install`s each package into a scratch folder, then renames the
 * binaries into the cache folder, so an interrupted build never leaves a
 * half-written binary. Go's own build cache makes a second build quick.
 */
export async function goInstall(input: GoInstallInput): Promise<void> {
  const { go, cacheDir, env, log, what } = input;
  mkdirSync(cacheDir, { recursive: true });
  const started = Date.now();
  log(`airlock: building ${what} with ${go} (first time only; this takes a few minutes)…`);
  const ticker = setInterval(() => log(`airlock: still building ${what} (${Math.round((Date.now() - started) / 1000)}s)…`), 30_000);
  try {
    for (const pkg of input.packages) {
      const scratch = mkdtempSync(join(cacheDir, '.build-'));
      try {
        const output: string[] = [];
        const code = await new Promise<number | null>((resolve, reject) => {
          const child = spawn(go, ['install', pkg.target], {
            env: { ...env, GOBIN: scratch, GOFLAGS: env.GOFLAGS ?? '-buildvcs=false' },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          const collect = (chunk: Buffer) => {
            output.push(chunk.toString('utf8'));
            if (output.length > 200) output.shift();
          };
          child.stdout.on('data', collect);
          child.stderr.on('data', collect);
          child.on('error', reject);
          child.on('close', resolve);
        });
        const built = join(scratch, pkg.builds);
        if (code !== 0 || !existsSync(built)) {
          const tail = output.join('').trim().split('\n').slice(-5).join(' | ');
          throw new GoBuildError(`building ${what} with Go failed (exit ${String(code)}, ${pkg.target}): ${tail}`);
        }
        renameSync(built, join(cacheDir, pkg.keepAs));
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    }
    log(`airlock: built ${what} in ${Math.round((Date.now() - started) / 1000)}s → ${cacheDir}`);
  } finally {
    clearInterval(ticker);
  }
}
