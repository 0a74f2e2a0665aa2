import { readdir, realpath, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { launcherMessage } from '../../core/config/tools/commands';
import { isLauncher, launcherAmong, wrapsSafely } from '../../core/tools/commands/launchers';
import type { CommandEntry } from '../../core/config/tools/commands';
import { ToolRefusal } from '../fs/roots';
import { errnoCode, fstatFd, messageOf, O_NOFOLLOW, O_PATH, openFd, release } from '../fs/descriptors';

/**
 * The programs `command_run` may start. A call names one by its entry name
 * or configured path; `resolve` finds the real file behind it (links
 * followed) and records which file it is (device and inode). `open` pins
 * that file by descriptor and refuses it if it is no longer the same
 * file, so what runs is the file the reviewer saw, not whatever took its
 * name since.
 */

/** One program file: where it really is and which file it is. */
export interface ProgramFile {
  /** The real path, every link resolved. */
  readonly path: string;
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
  /** Permission bits, octal. */
  readonly mode: string;
  /**
   * What the file is called: its real name, and the names of the same file
   * (device and inode) in the system's program folders and beside it. A
   * deny list and the launcher check match these, never the spelling a
   * call or the config used.
   */
  readonly names: readonly string[];
}

export interface ResolvedCommand extends ProgramFile {
  /** The allowlist entry's name. */
  readonly name: string;
  /** The path as configured. */
  readonly configured: string;
  /** For an entry with `wraps`: the one program the wrapper runs, checked the same way. */
  readonly wrapped?: ProgramFile;
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

/**
 * An entry the config may not hold at all, whatever is installed: a program
 * that runs other programs without `wraps`, one that reads its arguments as
 * code, or one inside the roots. What the tools worker checks at start.
 */
export class ProgramNotAllowed extends ToolRefusal {
  override name = 'ProgramNotAllowed';
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

type Identity = Pick<ProgramFile, 'path' | 'dev' | 'ino' | 'size' | 'mtimeMs' | 'mode'>;

/** What differs between two looks at a program file; undefined when it is the same file, unchanged. */
export function binaryDifference(before: Identity, now: Identity): string | undefined {
  if (now.path !== before.path) return `it now resolves to ${now.path} instead of ${before.path}`;
  if (now.dev !== before.dev || now.ino !== before.ino) return `${before.path} is another file now (inode ${now.ino}, was ${before.ino})`;
  if (now.size !== before.size || now.mtimeMs !== before.mtimeMs) return `${before.path} was modified`;
  if (now.mode !== before.mode) return `${before.path} has other permissions (${now.mode}, was ${before.mode})`;
  return undefined;
}

/** Where programs are found by name on a Debian-like system. */
const PROGRAM_FOLDERS = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

// Names of a file by device, inode and change time, for a minute: a program folder is read at most once a minute per program.
const namesSeen = new Map<string, { names: string[]; at: number }>();

/** The names of one file: its real name, and every name of the same file in the program folders and the folders it is reached through. */
async function namesOf(real: string, info: Stats, configured: string): Promise<string[]> {
  const key = `${info.dev}:${info.ino}:${info.ctimeMs}`;
  const known = namesSeen.get(key);
  if (known !== undefined && Date.now() - known.at < 60_000) return known.names;
  const names = new Set([basename(real), basename(configured)]);
  for (const folder of new Set([...PROGRAM_FOLDERS, dirname(configured), dirname(real)])) {
    const entries = await readdir(folder).catch(() => [] as string[]);
    for (const entry of entries) {
      if (names.has(entry)) continue;
      const other = await stat(join(folder, entry)).catch(() => undefined);
      if (other !== undefined && other.dev === info.dev && other.ino === info.ino) names.add(entry);
    }
  }
  const list = [...names];
  if (namesSeen.size > 1000) namesSeen.clear();
  namesSeen.set(key, { names: list, at: Date.now() });
  return list;
}

/** The real file behind a configured program path, or why it cannot run. */
async function programFile(configured: string, what: string): Promise<ProgramFile> {
  let path: string;
  let info: Stats;
  try {
    path = await realpath(configured);
    info = await stat(path);
  } catch (err) {
    const why = errnoCode(err) === 'ENOENT' ? 'does not exist' : `cannot be read (${messageOf(err)})`;
    throw new ToolRefusal(`the configured program ${configured} for ${what} ${why}; tell the operator`);
  }
  if (!info.isFile()) throw new ToolRefusal(`the configured program ${configured} for ${what} is not a regular file; tell the operator`);
  if ((info.mode & 0o111) === 0) throw new ToolRefusal(`the configured program ${configured} for ${what} is not executable; tell the operator`);
  return { path, ...identity(info), names: await namesOf(path, info, configured) };
}

export class CommandAllowlist {
  constructor(
    readonly entries: readonly CommandEntry[],
    /** The roots' real paths: a program there could be rewritten by the file tools, so none may run from there. */
    private readonly roots: readonly string[] = [],
  ) {}

  private outsideRoots(entry: CommandEntry, file: ProgramFile, what: string): void {
    const root = this.roots.find((r) => file.path === r || file.path.startsWith(r === '/' ? '/' : `${r}/`));
    if (root !== undefined) {
      throw new ProgramNotAllowed(`${entry.name}: ${what} ${file.path} lies inside the allowed roots (${root}), where the file tools could rewrite it; tell the operator`);
    }
  }

  /** The entry a call's first argv element names: its name, or its configured path exactly. */
  entryFor(command: string): CommandEntry | undefined {
    return this.entries.find((e) => e.name === command) ?? this.entries.find((e) => e.path === command);
  }

  names(): string[] {
    return this.entries.map((e) => e.name);
  }

  /**
   * Finds the real file behind a command name, and which file it is. A
   * program that runs other programs (by any of its names) is refused
   * unless the entry says which one it wraps; the wrapped program is
   * resolved the same way and may not be such a program itself.
   */
  async resolve(command: string): Promise<ResolvedCommand> {
    const entry = this.entryFor(command);
    if (entry === undefined) throw new CommandNotAllowed(command, this.names());
    const program = await programFile(entry.path, entry.name);
    this.outsideRoots(entry, program, 'the program');
    const launcher = launcherAmong(program.names);
    if (launcher !== undefined && entry.wraps === undefined) {
      throw new ProgramNotAllowed(`${entry.name}: ${entry.path} is ${launcher}, which ${launcherMessage(launcher).replace(/^\S+ /, '')}; tell the operator`);
    }
    const reader = program.names.find((n) => isLauncher(n) && !wrapsSafely(n));
    if (reader !== undefined) throw new ProgramNotAllowed(`${entry.name}: ${entry.path} is ${reader}, which reads its arguments as a command line or as code; tell the operator`);
    if (entry.wraps === undefined) return { name: entry.name, configured: entry.path, ...program };
    const wrapped = await programFile(entry.wraps.program, `${entry.name} (wraps)`);
    this.outsideRoots(entry, wrapped, 'the program it wraps');
    const inner = launcherAmong(wrapped.names);
    if (inner !== undefined) throw new ProgramNotAllowed(`${entry.name}: the program it wraps, ${entry.wraps.program}, is ${inner}, which runs other programs too; tell the operator`);
    return { name: entry.name, configured: entry.path, ...program, wrapped };
  }

  /**
   * Every entry resolved once, as the tools worker does at start: the
   * entries whose program (by its real name or another name of the same
   * file) runs other programs without `wraps`, with why. A program missing
   * now may be installed later: only what a program is counts here.
   */
  async launchers(): Promise<Array<{ name: string; reason: string }>> {
    const found = [];
    for (const entry of this.entries) {
      try {
        await this.resolve(entry.name);
      } catch (err) {
        if (err instanceof ProgramNotAllowed) found.push({ name: entry.name, reason: err.message });
      }
    }
    return found;
  }

  /**
   * Resolves again, compares with what was checked before, and returns a
   * descriptor of that very file to execute through; the caller releases it.
   */
  async open(expected: ResolvedCommand): Promise<number> {
    const now = await this.resolve(expected.name);
    const moved = binaryDifference(expected, now);
    if (moved !== undefined) throw new BinaryChanged(expected.name, moved);
    // The wrapped program runs by its path: it must be the file that was checked, too.
    const wrappedMoved =
      expected.wrapped === undefined || now.wrapped === undefined
        ? expected.wrapped === now.wrapped
          ? undefined
          : 'what it wraps changed'
        : binaryDifference(expected.wrapped, now.wrapped);
    if (wrappedMoved !== undefined) throw new BinaryChanged(expected.name, wrappedMoved);
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
