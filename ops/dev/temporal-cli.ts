import { join } from 'node:path';
import { AirlockError } from '../../core/util/errors';
import { findGo, findOnPath, goInstall, GoBuildError, isExecutableFile } from './go-install';
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

  const go = findGo(env);
  if (go === undefined) {
    throw new TemporalCliError(
      'no Temporal CLI found: install it (https://docs.temporal.io/cli) and put `temporal` on PATH or set TEMPORAL_CLI; ' +
        `or install Go so airlock can build ${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION} once`,
    );
  }
  try {
    await goInstall({ go, packages: [{ target: `${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`, builds: 'temporal', keepAs: 'temporal' }], cacheDir, what: `the Temporal CLI ${TEMPORAL_CLI_VERSION}`, env, log });
  } catch (err) {
    if (!(err instanceof GoBuildError)) throw err;
    throw new TemporalCliError(`${err.message}; install the Temporal CLI yourself and put it on PATH or set TEMPORAL_CLI`);
  }
  return { path: cached, source: 'built' };
}
