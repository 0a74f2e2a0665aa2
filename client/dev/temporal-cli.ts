import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { AirlockError } from '../../core/util/errors';
import { projectRoot } from './project-root';

/** Later CLI tags carry replace directives and cannot be `go install`ed. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';

/** No Temporal CLI could be found or built. */
export class TemporalCliError extends AirlockError {
  override name = 'TemporalCliError';
}

export type TemporalCliSource = 'TEMPORAL_CLI' | 'PATH' | 'cache' | 'built';

export interface ResolvedTemporalCli {
  readonly path: string;
  readonly source: TemporalCliSource;
}

export interface ResolveOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** Where a built binary is cached; defaults to `.cache/temporal-cli/<version>` in the project. */
  readonly cacheDir?: string;
  readonly log?: (line: string) => void;
}

export function defaultCacheDir(): string {
  return join(projectRoot(), '.cache', 'temporal-cli', TEMPORAL_CLI_VERSION);
}

function isExecutableFile(path: string): boolean {
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

/**
 * Finds the `temporal` binary: `TEMPORAL_CLI` → `temporal` on PATH → the
 * project's cached build → `go install` into that cache. A user who already
 * has the CLI never pays for the build.
 */
export async function resolveTemporalCli(options: ResolveOptions = {}): Promise<ResolvedTemporalCli> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));

  const fromEnv = env.TEMPORAL_CLI;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!isExecutableFile(fromEnv)) {
      throw new TemporalCliError(
        `TEMPORAL_CLI: ${JSON.stringify(fromEnv)} is not an executable file; point it at the temporal binary or unset it`,
      );
    }
    return { path: fromEnv, source: 'TEMPORAL_CLI' };
  }

  const onPath = findOnPath('temporal', env);
  if (onPath !== undefined) return { path: onPath, source: 'PATH' };

  const cacheDir = options.cacheDir ?? defaultCacheDir();
  const cached = join(cacheDir, 'temporal');
  if (isExecutableFile(cached)) return { path: cached, source: 'cache' };

  const go = findOnPath('go', env) ?? (env.GOROOT !== undefined ? [join(env.GOROOT, 'bin', 'go')].find(isExecutableFile) : undefined);
  if (go === undefined) {
    throw new TemporalCliError(
      'no Temporal CLI found: install it (https://docs.temporal.io/cli) and put `temporal` on PATH or set TEMPORAL_CLI; ' +
        `or install Go so airlock can build ${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION} once`,
    );
  }
  await buildWithGo(go, cacheDir, env, log);
  return { path: cached, source: 'built' };
}

async function buildWithGo(go: string, cacheDir: string, env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<void> {
  mkdirSync(cacheDir, { recursive: true });
  // Build into a scratch folder and rename, so an interrupted build never leaves a half-written binary.
  const scratch = mkdtempSync(join(cacheDir, '.build-'));
  const started = Date.now();
  log(
    `airlock: building the Temporal CLI ${TEMPORAL_CLI_VERSION} with ${go} (first time only; this takes a few minutes)…`,
  );
  const ticker = setInterval(() => {
    log(`airlock: still building the Temporal CLI (${Math.round((Date.now() - started) / 1000)}s)…`);
  }, 30_000);
  try {
    const output: string[] = [];
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(go, ['install', `${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`], {
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
    const built = join(scratch, 'temporal');
    if (code !== 0 || !existsSync(built)) {
      const tail = output.join('').trim().split('\n').slice(-5).join(' | ');
      throw new TemporalCliError(
        `building the Temporal CLI with Go failed (exit ${String(code)}): ${tail}; install the Temporal CLI yourself and put it on PATH or set TEMPORAL_CLI`,
      );
    }
    renameSync(built, join(cacheDir, 'temporal'));
    log(`airlock: built the Temporal CLI in ${Math.round((Date.now() - started) / 1000)}s → ${join(cacheDir, 'temporal')}`);
  } finally {
    clearInterval(ticker);
    rmSync(scratch, { recursive: true, force: true });
  }
}
