import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { commandEntries, DEFAULT_COMMAND_PATH, type CommandEntry, type CommandsConfig } from '../../core/config/tools/commands';
import { AirlockError } from '../../core/util/errors';
import { ToolRefusal, type Roots } from '../fs/roots';
import { messageOf, procPath, release } from '../fs/descriptors';
import { withPinned } from '../fs/pinned-path';
import { CommandAllowlist, CommandNotAllowed, type ResolvedCommand } from './command-allowlist';

/**
 * The engine behind `command_run`. A command is an argv (never a shell
 * line) whose program comes from the allowlist and is executed through a
 * descriptor of the very file that was checked; it starts in a folder
 * inside the roots, reached through a pinned descriptor; it gets only the
 * configured environment; it runs in its own process group, which is
 * killed whole at the timeout and cleared when the command ends.
 */

export interface CommandRunArgs {
  /** argv[0] names the allowed command; the rest are passed as they are, one argument each. */
  readonly argv: readonly string[];
  /** A folder inside the roots; default: the first root. */
  readonly cwd?: string | undefined;
  readonly timeoutSeconds?: number | undefined;
}

export interface CommandResult {
  readonly command: ResolvedCommand;
  /** The real path of the folder it ran in. */
  readonly cwd: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  readonly stdoutTruncated: boolean;
  readonly stderrTruncated: boolean;
}

/** The command could not be started (the program failed to execute). */
export class CommandFailed extends AirlockError {
  override name = 'CommandFailed';
}

/** The descriptor a command's program is executed through, in the child (after its stdio). */
const PROGRAM_FD = 3;
/** How often a finished command's process group is looked at until it is empty. */
const GROUP_POLL_MS = 20;

/** Live (not zombie) processes whose process group is `pgid`. */
export function liveGroupMembers(pgid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so read after the last ")".
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] !== 'Z' && fields[0] !== 'X' && Number(fields[2]) === pgid) found.push(Number(name));
  }
  return found;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is empty already.
  }
}

/** Collects a stream up to `max` bytes and counts the rest. */
class Capped {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  total = 0;
  constructor(private readonly max: number) {}
  add(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.max - this.kept;
    if (room <= 0) return;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.kept += part.length;
  }
  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
  get truncated(): boolean {
    return this.total > this.kept;
  }
}

export interface CommandEngineOptions {
  readonly commands: CommandsConfig;
  readonly roots: Roots;
  /** The worker's HOME, passed on unless the config sets one (a path, not a secret). */
  readonly home?: string | undefined;
}

export class CommandEngine {
  readonly allowlist: CommandAllowlist;

  constructor(private readonly options: CommandEngineOptions) {
    this.allowlist = new CommandAllowlist(commandEntries(options.commands), options.roots.real);
  }

  /** The allowlist entry argv[0] names. */
  entry(args: CommandRunArgs): CommandEntry {
    const command = args.argv[0];
    if (command === undefined) throw new ToolRefusal('argv is empty; give the command and its arguments');
    const entry = this.allowlist.entryFor(command);
    if (entry === undefined) throw new CommandNotAllowed(command, this.allowlist.names());
    return entry;
  }

  /** The whole environment a command gets: defaults, then its configured values. Nothing of the worker's. */
  environment(entry: CommandEntry): Record<string, string> {
    return { PATH: DEFAULT_COMMAND_PATH, HOME: this.options.home ?? '/', LANG: 'C.UTF-8', ...entry.env };
  }

  timeoutMs(args: CommandRunArgs): number {
    const { timeoutSeconds, maxTimeoutSeconds, name } = this.entry(args);
    const asked = args.timeoutSeconds ?? timeoutSeconds;
    if (asked > maxTimeoutSeconds) throw new ToolRefusal(`timeoutSeconds ${asked} is above the ${maxTimeoutSeconds} s allowed for ${name} (its maxTimeoutSeconds)`);
    return Math.round(asked * 1000);
  }

  /** What `prepare` shows: the real program behind argv[0], and which file it is. */
  resolve(args: CommandRunArgs): Promise<ResolvedCommand> {
    return this.allowlist.resolve(this.entry(args).name);
  }

  /**
   * Runs a command. With `expected` (from `prepare`), the program must
   * still be that file; without, it is resolved now.
   */
  async run(args: CommandRunArgs, expected?: ResolvedCommand): Promise<CommandResult> {
    const entry = this.entry(args);
    const timeoutMs = this.timeoutMs(args);
    const resolved = expected ?? (await this.resolve(args));
    if (args.argv[0] !== resolved.name && args.argv[0] !== resolved.configured) {
      throw new ToolRefusal(`argv[0] ${JSON.stringify(args.argv[0])} is not the command that was checked (${resolved.name})`);
    }
    const cwd = args.cwd ?? this.options.roots.configured[0];
    if (cwd === undefined) throw new ToolRefusal('no roots are configured, so a command has no folder to run in');
    return withPinned(this.options.roots, cwd, { follow: true }, async (dir) => {
      if (dir.stats === null || !dir.stats.isDirectory()) throw new ToolRefusal(`${cwd} is not a directory inside the roots`);
      const dirFd = dir.descriptor();
      // The child's stdio is set up before it changes folder: a descriptor numbered among them would be gone by then.
      if (dirFd <= PROGRAM_FD) throw new CommandFailed(`internal: descriptor ${dirFd} is among the child's stdio`);
      const programFd = await this.allowlist.open(resolved);
      try {
        // A wrapper runs the one program it wraps (by its checked real path), with the call's arguments after it.
        const wrapped = entry.wraps !== undefined && resolved.wrapped !== undefined ? [...entry.wraps.wrapperArgs, resolved.wrapped.path] : [];
        if (entry.wraps !== undefined && resolved.wrapped === undefined) throw new ToolRefusal(`${entry.name} was checked before it named a program to wrap; ask again`);
        return await this.spawnGroup({ entry, command: resolved, programFd, args: [...wrapped, ...args.argv.slice(1)], cwdFd: dirFd, cwdReal: dir.path, timeoutMs });
      } finally {
        release(programFd);
      }
    });
  }

  private spawnGroup(run: {
    entry: CommandEntry;
    command: ResolvedCommand;
    programFd: number;
    args: readonly string[];
    cwdFd: number;
    cwdReal: string;
    timeoutMs: number;
  }): Promise<CommandResult> {
    const { maxOutputBytes, killGraceSeconds } = run.entry;
    const graceMs = Math.round(killGraceSeconds * 1000);
    const stdout = new Capped(maxOutputBytes);
    const stderr = new Capped(maxOutputBytes);
    return new Promise<CommandResult>((resolve, reject) => {
      // The program runs through the checked file's descriptor, handed to the child as its fd 3
      // (a script's interpreter reopens it by that name); its folder through the pinned folder's.
      const child = spawn(procPath(PROGRAM_FD), [...run.args], {
        argv0: run.command.name,
        cwd: procPath(run.cwdFd),
        env: this.environment(run.entry),
        stdio: ['ignore', 'pipe', 'pipe', run.programFd],
        // A process group of its own, killed whole.
        detached: true,
        shell: false,
        windowsHide: true,
      });
      let timedOut = false;
      const timers: NodeJS.Timeout[] = [];
      const pgid = child.pid;
      if (pgid !== undefined) {
        timers.push(
          setTimeout(() => {
            timedOut = true;
            signalGroup(pgid, 'SIGTERM');
            timers.push(setTimeout(() => signalGroup(pgid, 'SIGKILL'), graceMs));
          }, run.timeoutMs),
        );
      }
      child.stdout?.on('data', (c: Buffer) => stdout.add(c));
      child.stderr?.on('data', (c: Buffer) => stderr.add(c));
      child.once('error', (err) => {
        for (const t of timers) clearTimeout(t);
        reject(new CommandFailed(`${run.command.name} could not be started: ${messageOf(err)}`));
      });
      let exit: { code: number | null; signal: string | null } | undefined;
      child.once('exit', (code, signal) => {
        exit = { code, signal };
        // What it left behind in its group goes with it: TERM now, KILL after the grace time.
        if (pgid !== undefined && liveGroupMembers(pgid).length > 0) {
          signalGroup(pgid, 'SIGTERM');
          timers.push(setTimeout(() => signalGroup(pgid, 'SIGKILL'), graceMs));
        }
      });
      // After "exit" and once every holder of its output has closed it.
      child.once('close', () => {
        void this.groupGone(pgid, graceMs).then(() => {
          for (const t of timers) clearTimeout(t);
          resolve({
            command: run.command,
            cwd: run.cwdReal,
            exitCode: exit?.code ?? null,
            signal: exit?.signal ?? null,
            timedOut,
            stdout: stdout.text(),
            stderr: stderr.text(),
            stdoutBytes: stdout.total,
            stderrBytes: stderr.total,
            stdoutTruncated: stdout.truncated,
            stderrTruncated: stderr.truncated,
          });
        });
      });
    });
  }

  /** Waits until the group has no live process, killing what is left once the grace time is over. */
  private async groupGone(pgid: number | undefined, graceMs: number): Promise<void> {
    if (pgid === undefined) return;
    const killAt = Date.now() + graceMs;
    let killed = false;
    for (let i = 0; liveGroupMembers(pgid).length > 0; i++) {
      if (!killed && Date.now() >= killAt) {
        signalGroup(pgid, 'SIGKILL');
        killed = true;
      }
      // A process that survives SIGKILL is stuck in the kernel; do not wait for it forever.
      if (killed && i > 500) return;
      await new Promise((r) => setTimeout(r, GROUP_POLL_MS));
    }
  }
}

/** The result as the model reads it (raw: the tool masks it). */
export function formatCommandResult(result: CommandResult, timeoutMs: number): string {
  const how = result.timedOut
    ? `stopped at its ${timeoutMs / 1000} s timeout (process group killed)`
    : result.exitCode !== null
      ? `exit code ${result.exitCode}`
      : `killed by ${result.signal ?? 'a signal'}`;
  const lines = [`${result.command.name} (${result.command.path}) in ${result.cwd}: ${how}`];
  const stream = (label: string, text: string, bytes: number, truncated: boolean) => {
    if (bytes === 0) return;
    lines.push(`--- ${label} (${bytes} bytes${truncated ? `, first ${Buffer.byteLength(text)} shown` : ''}) ---`, text);
  };
  stream('stdout', result.stdout, result.stdoutBytes, result.stdoutTruncated);
  stream('stderr', result.stderr, result.stderrBytes, result.stderrTruncated);
  return lines.join('\n');
}
