import type { SubjectState } from '../observed-state';
import type { ToolOutcome } from '../outcome';

/** One command run as a tool module describes it: argv only, never a shell string. */
export interface CommandSpec {
  readonly argv: readonly string[];
  /** A folder inside the roots; default: the first root. */
  readonly cwd?: string | undefined;
  /** Default and maximum: the command's settings in the tools config. */
  readonly timeoutSeconds?: number | undefined;
}

/**
 * Commands from the tools config's allowlist (host/commands/), resolved to
 * absolute real paths and pinned by device and inode, run through a
 * descriptor of that very file, in a folder inside the roots, with a
 * timeout that kills the whole process group, capped output and only the
 * configured environment.
 */
export interface CommandCapability {
  /** The configured command names. */
  readonly names: readonly string[];
  /** The program argv[0] names (real path, device and inode as `identity`), or `exists: false` and why it is refused. */
  observe(argv0: string): Promise<SubjectState>;
  /**
   * Runs the command. With `expected` (its `observe` state, checked right
   * before), the program must still be that very file, or the call is
   * refused (`ToolRefusal`) and nothing runs.
   */
  run(spec: CommandSpec, expected: SubjectState | undefined): Promise<ToolOutcome>;
}
