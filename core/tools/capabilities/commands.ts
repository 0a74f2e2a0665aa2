import type { SubjectState } from '../../observed-state';
import type { ToolOutcome } from '../outcome';

/** One command run as a tool module describes it: argv only, never a shell string. */
export interface CommandSpec {
  readonly argv: readonly string[];
  /** A folder inside the roots; default: the first root. */
  readonly cwd?: string;
}

/**
 * Commands from the tools config's allowlist, resolved to absolute paths
 * (and pinned by inode), run with a timeout that kills the process group
 * and an environment without the worker's secrets.
 */
export interface CommandCapability {
  /** The configured command names. */
  readonly names: readonly string[];
  /** The binary argv[0] resolves to (path, inode), or why it is refused. */
  observe(argv0: string): Promise<SubjectState>;
  run(spec: CommandSpec, expected: SubjectState): Promise<ToolOutcome>;
}
