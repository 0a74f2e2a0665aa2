import { realpath } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { AirlockConfig } from '../../core/config/config';
import { statePaths } from './paths';
import { inside } from '../fs/descriptors';
import { RootsConfigError } from '../fs/roots';

/**
 * airlock's own state must not be reachable by the tools it gates: a root
 * holding the data folder would let a model read the signing keys, rewrite
 * the nonce store or journals; one holding the rules or tools config would
 * let it rewrite its own policy for later jobs. The default root (the data
 * folder's `sandbox/`) lies inside the data folder, which is fine: only
 * state *inside a root* is a problem.
 */
export async function stateInsideRoots(config: AirlockConfig, realRoots: readonly string[], toolsConfigFile: string | undefined): Promise<string[]> {
  const paths = statePaths(config);
  const guarded: ReadonlyArray<readonly [string, string | undefined]> = [
    ['the data folder (AIRLOCK_DATA_DIR)', paths.dataDir],
    ['the rules file (AIRLOCK_RULES_FILE)', paths.rulesFile],
    ['the tools config (AIRLOCK_TOOLS_CONFIG)', toolsConfigFile],
    ['the grant signing key', paths.grantPrivateKey],
    ['the grant public key', paths.grantPublicKey],
    ['the reviewer keys', paths.reviewerKeys],
    ['the payload keys', paths.codecKeys],
  ];
  const problems: string[] = [];
  for (const [what, path] of guarded) {
    if (path === undefined) continue;
    const real = await realPathOf(path);
    const root = realRoots.find((r) => real === r || inside(r, real));
    if (root !== undefined) problems.push(`${what} ${path} lies inside the root ${root}, where the tools could read or rewrite it`);
  }
  return problems;
}

/** Stops the tools worker at start, naming every piece of state a root holds and what to do. */
export async function requireStateOutsideRoots(config: AirlockConfig, realRoots: readonly string[], toolsConfigFile: string | undefined): Promise<void> {
  const problems = await stateInsideRoots(config, realRoots, toolsConfigFile);
  if (problems.length === 0) return;
  throw new RootsConfigError(`${problems.join('; ')}: choose roots that do not contain airlock's own files, or move those files out of them`);
}

/** The real path of a file that may not exist yet: its nearest existing folder's real path, with the rest appended. */
async function realPathOf(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    const parent = dirname(path);
    if (parent === path) return path;
    return join(await realPathOf(parent), basename(path));
  }
}
