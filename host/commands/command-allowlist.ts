import { realpath, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import type { CommandEntry } from '../../core/config/tools/commands';
import { ToolRefusal } from '../roots';
import { errnoCode, fstatFd, messageOf, O_NOFOLLOW, O_PATH, openFd, release } from '../tools/descriptors';

/**
 * The programs `command_run` may start. A call names one by its entry name
 * or configured path; `resolve` finds the real file behind it (links
 * followed) and records which file it is (device and inode). `open` pins
 * that file by descriptor and refuses it if it is no longer the same
 * file, so what runs is the file the reviewer saw, not whatever took its
 * name since.
 */

export interface ResolvedCommand {
  /** The allowlist entry's name. */
  readonly name: string;
  /** The path as configured. */
  readonly configured: string;
  /** The real path, every link resolved. */
  readonly path: string;
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  /** Permission bits, octal. */
  readonly mode: string;
}

export class CommandNotAllowed extends ToolRefusal {
  override name = 'CommandNotAllowed';
  constructor(
    readonly command: string,
    allowed: readonly string[],
  ) {
    super(
      allowed.length === 0
        ? `no commands are configured (commands in the tools config), so ${JSON.stringify(command)} cannot run`
        : `${JSON.stringify(command)} is not an allowed command; allowed: ${allowed.join(', ')}`,
    );
  }
}

export class BinaryChanged extends ToolRefusal {
  override name = 'BinaryChanged';
  constructor(
    readonly command: string,
    detail: string,
  ) {
    super(`the program behind ${command} changed since it was checked (${detail}); refusing to run it, ask again to have the new one checked`);
  }
}

function identity(info: Stats): Pick<ResolvedCommand, 'dev' | 'ino' | 'size' | 'mtimeMs' | 'mode'> {
  return { dev: info.dev, ino: info.ino, size: info.size, mtimeMs: info.mtimeMs, mode: (info.mode & 0o7777).toString(8) };
}

/** What differs between two looks at a program file; undefined when it is the same file, unchanged. */
export function binaryDifference(before: ResolvedCommand, now: Omit<ResolvedCommand, 'name' | 'configured'>): string | undefined {
  if (now.path !== before.path) return `it now resolves to ${now.path} instead of ${before.path}`;
  if (now.dev !== before.dev || now.ino !== before.ino) return `${before.path} is another file now (inode ${now.ino}, was ${before.ino})`;
  if (now.size !== before.size || now.mtimeMs !== before.mtimeMs) return `${before.path} was modified`;
  if (now.mode !== before.mode) return `${before.path} has other permissions (${now.mode}, was ${before.mode})`;
  return undefined;
}

export class CommandAllowlist {
  constructor(readonly entries: readonly CommandEntry[]) {}

  /** The entry a call's first argv element names: its name, or its configured path exactly. */
  entryFor(command: string): CommandEntry | undefined {
    return this.entries.find((e) => e.name === command) ?? this.entries.find((e) => e.path === command);
  }

  names(): string[] {
    return this.entries.map((e) => e.name);
  }

  /** Finds the real file behind a command name, and which file it is. */
  async resolve(command: string): Promise<ResolvedCommand> {
    const entry = this.entryFor(command);
    if (entry === undefined) throw new CommandNotAllowed(command, this.names());
    let path: string;
    let info: Stats;
    try {
      path = await realpath(entry.path);
      info = await stat(path);
    } catch (err) {
      const why = errnoCode(err) === 'ENOENT' ? 'does not exist' : `cannot be read (${messageOf(err)})`;
      throw new ToolRefusal(`the configured program ${entry.path} for ${entry.name} ${why}; tell the operator`);
    }
    if (!info.isFile()) throw new ToolRefusal(`the configured program ${entry.path} for ${entry.name} is not a regular file; tell the operator`);
    if ((info.mode & 0o111) === 0) throw new ToolRefusal(`the configured program ${entry.path} for ${entry.name} is not executable; tell the operator`);
    return { name: entry.name, configured: entry.path, path, ...identity(info) };
  }

  /**
   * Resolves again, compares with what was checked before, and returns a
   * descriptor of that very file to execute through; the caller releases it.
   */
  async open(expected: ResolvedCommand): Promise<number> {
    const now = await this.resolve(expected.name);
    const moved = binaryDifference(expected, now);
    if (moved !== undefined) throw new BinaryChanged(expected.name, moved);
    let fd: number;
    try {
      fd = openFd(expected.path, O_PATH | O_NOFOLLOW);
    } catch (err) {
      throw new BinaryChanged(expected.name, `${expected.path} cannot be opened (${errnoCode(err) ?? messageOf(err)})`);
    }
    try {
      const held = identity(fstatFd(fd));
      // Between the look by name and the open: the descriptor decides.
      const swapped = binaryDifference(expected, { path: expected.path, ...held });
      if (swapped !== undefined) throw new BinaryChanged(expected.name, swapped);
      return fd;
    } catch (err) {
      release(fd);
      throw err;
    }
  }
}
