/**
 * What the short client and the resident process say to each other, one
 * JSON object per line over the Unix socket:
 *
 *   client → request                  (the command line and where it runs)
 *   resident → ready | refused        (when its turn comes; refused: run it yourself)
 *   client → go                       (from now on the command runs there, once)
 *   resident → out | err …, then exit
 *
 * The client commits with `go` only after `ready`, and gives up (running
 * the command itself) when `ready` is slow to come; a resident process that
 * sees the connection end instead of `go` runs nothing. So a command runs
 * in exactly one place.
 *
 * No zod here: the short client loads this; the resident process checks
 * requests with request-schema.ts.
 */

export const RESIDENT_REQUEST_VERSION = 1;

/** The commands a resident process runs (a reviewer waits on these most); every other runs in its own process. */
export const SERVED_COMMANDS: readonly string[] = ['pending', 'show', 'approve', 'deny'];

/** The longest request line accepted (the environment is most of it). */
export const MAX_REQUEST_BYTES = 1024 * 1024;

export interface ResidentRequest {
  readonly schemaVersion: typeof RESIDENT_REQUEST_VERSION;
  /** The identity the client computed: a resident process serves only its own. */
  readonly identity: string;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly umask: number;
  /** The script the client was started as (`process.argv[1]`): how printed commands name airlock. */
  readonly script: string | null;
}

export const GO_LINE = '{"go":true}';

export type ResidentReply =
  | { readonly kind: 'ready' }
  | { readonly kind: 'refused'; readonly reason: string }
  /** Bytes for stdout or stderr, exactly as the command would write them itself. */
  | { readonly kind: 'out'; readonly data: string }
  | { readonly kind: 'err'; readonly data: string }
  | { readonly kind: 'exit'; readonly code: number };
