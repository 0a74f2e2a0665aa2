import { spawn } from 'node:child_process';
import { closeSync, constants, lstatSync, openSync, unlinkSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { isatty } from 'node:tty';
import { cliName } from '../../client/cli-name';
import { GO_LINE, RESIDENT_REQUEST_VERSION, SERVED_COMMANDS, type ResidentReply, type ResidentRequest } from './protocol';
import { residentPlace, residentSetting, type ResidentPlace } from './place';

/**
 * The short client of the resident CLI process (see serve.ts): the
 * commands a reviewer waits on most (`pending`, `show`, `approve`, `deny`)
 * are run by a process that has airlock and the Temporal client loaded
 * already, so this one starts Node, passes the command line, environment
 * and folder on, and writes what comes back. When there is no such process
 * yet, the command runs here, and one is started for the next command if
 * this one runs at a terminal (or `AIRLOCK_CLI_RESIDENT=always`).
 * Only node builtins: this runs before anything else loads.
 */

export type ResidentOutcome = { readonly kind: 'done'; readonly code: number } | { readonly kind: 'here' };

const HERE: ResidentOutcome = { kind: 'here' };

/** Of those, the ones that only read: run again here if the resident process dies while it runs them. */
const readOnly = new Set(['pending', 'show']);

/** How long a busy resident process may keep a command waiting for its turn before it runs here instead. */
const READY_WAIT_MS = 3_000;
/** A resident process still starting after this has failed: another may be started. */
const STARTING_FOR_MS = 30_000;

export function servedByResident(argv: readonly string[]): boolean {
  const [command, ...rest] = argv;
  // `--watch` runs until Ctrl-C and `--help` needs nothing loaded: both run here.
  if (command === undefined || !SERVED_COMMANDS.includes(command)) return false;
  return !rest.some((a) => a === '--' || a === '--help' || a === '-h' || a === '--watch' || a.startsWith('--watch='));
}

export interface ViaResidentInput {
  readonly argv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** The package folder (with `dist/` and `package.json`). */
  readonly packageRoot: string;
  /** The resident process's entry script, started when there is none. */
  readonly serverScript: string;
}

/**
 * Runs the command in the resident process and writes its output here, or
 * says to run it here (`here`): not one it serves, `AIRLOCK_CLI_RESIDENT=off`,
 * no safe place, none running (one may be started), or it refused or was slow.
 */
export async function viaResident(input: ViaResidentInput): Promise<ResidentOutcome> {
  const setting = residentSetting(input.env);
  if (setting === 'off' || !servedByResident(input.argv)) return HERE;
  const place = residentPlace(input.env, input.packageRoot);
  const uid = process.getuid?.();
  if (place === undefined || uid === undefined) return HERE;
  const socket = socketAt(place.socket, uid);
  if (socket !== 'ours') {
    // Something else at the name (only root could have put it in this user's folder): left alone, and not used.
    if (socket === 'none') startResident(place, input);
    return HERE;
  }
  return await new Promise<ResidentOutcome>((resolve) => converse(place, input, resolve));
}

/** A socket of this user's at the path (in a folder only this user can write: nobody can swap it after this), nothing, or something else. */
function socketAt(path: string, uid: number): 'ours' | 'none' | 'other' {
  try {
    const s = lstatSync(path);
    return s.isSocket() && s.uid === uid ? 'ours' : 'other';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'none' : 'other';
  }
}

/** Someone at a terminal waits on this command, and on the next ones. */
const atTerminal = (): boolean => isatty(0) || isatty(1) || isatty(2);

function startResident(place: ResidentPlace, input: ViaResidentInput): void {
  if ((residentSetting(input.env) === 'auto' && !atTerminal()) || !claimStart(place.starting)) return;
  try {
    const child = spawn(process.execPath, [...process.execArgv, input.serverScript], { detached: true, stdio: 'ignore', cwd: place.folder, env: input.env });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // Not started: the next command tries again once the claim is old.
  }
}

/** Takes the right to start the resident process: one start at a time, and another only after a failed one is old. */
function claimStart(path: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      closeSync(openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600));
      return true;
    } catch {
      try {
        if (Date.now() - lstatSync(path).mtimeMs < STARTING_FOR_MS) return false;
        unlinkSync(path);
      } catch {
        return false;
      }
    }
  }
  return false;
}

/** The umask, read by setting it and back (`process.umask()` without an argument is deprecated). */
function currentUmask(): number {
  const mask = process.umask(0o077);
  process.umask(mask);
  return mask;
}

function parseReply(line: string): ResidentReply | undefined {
  try {
    // Read without zod (it would cost this short process more than the whole exchange): only the fields used are trusted.
    const value: unknown = JSON.parse(line);
    if (typeof value !== 'object' || value === null) return undefined;
    const kind: unknown = Reflect.get(value, 'kind');
    const text: unknown = Reflect.get(value, kind === 'refused' ? 'reason' : 'data');
    const code: unknown = Reflect.get(value, 'code');
    if (kind === 'ready') return { kind };
    if (kind === 'refused' && typeof text === 'string') return { kind, reason: text };
    if ((kind === 'out' || kind === 'err') && typeof text === 'string') return { kind, data: text };
    if (kind === 'exit' && typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= 255) return { kind, code };
  } catch {
    // Not a reply.
  }
  return undefined;
}

/** Writes to stdout or stderr; a reader that went away is not an error (as when the command runs here). */
function writer(): { write(stream: NodeJS.WriteStream, data: string): void; flushed(): Promise<Error | undefined> } {
  let failure: Error | undefined;
  const pending: Array<Promise<void>> = [];
  const closed = new Set<NodeJS.WriteStream>();
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      closed.add(stream);
      if (err.code !== 'EPIPE' && err.code !== 'ERR_STREAM_DESTROYED') failure ??= err;
    });
  }
  return {
    write(stream, data) {
      if (closed.has(stream)) return;
      pending.push(new Promise<void>((resolve) => stream.write(data, () => resolve())));
    },
    async flushed() {
      await Promise.all(pending);
      return failure;
    },
  };
}

function converse(place: ResidentPlace, input: ViaResidentInput, resolve: (outcome: ResidentOutcome) => void): void {
  const command = input.argv[0] ?? '';
  const out = writer();
  let committed = false;
  let wrote = false;
  let settled = false;
  let buffered = '';
  const socket: Socket = connect(place.socket);
  const finish = (outcome: ResidentOutcome) => {
    if (settled) return;
    settled = true;
    clearTimeout(slow);
    socket.destroy();
    if (outcome.kind === 'here') {
      resolve(outcome);
      return;
    }
    void out.flushed().then((failure) => {
      if (failure !== undefined) process.stderr.write(`airlock: cannot write the output: ${failure.message}\n`);
      resolve(failure !== undefined && outcome.code === 0 ? { kind: 'done', code: 1 } : outcome);
    });
  };
  // Not answered in time (busy with a long command): run it here; the resident process runs nothing without `go`.
  const slow = setTimeout(() => {
    if (!committed) finish(HERE);
  }, READY_WAIT_MS);
  const ended = () => {
    if (settled) return;
    if (!committed) return finish(HERE);
    // The resident process went away while the command ran. A read is run again here if it printed nothing yet; a
    // decision is not sent twice: whether it arrived is for `show` to say.
    if (readOnly.has(command)) {
      if (!wrote) return finish(HERE);
      process.stderr.write(`airlock ${command}: the resident CLI process ended before the command finished; run it again\n`);
    } else {
      process.stderr.write(
        `airlock ${command}: the resident CLI process ended before the command finished; the decision may have been sent: see \`${cliName(input.env)} show ${input.argv[1] ?? 'JOB_ID'}\`\n`,
      );
    }
    finish({ kind: 'done', code: 1 });
  };
  socket.on('error', (err: NodeJS.ErrnoException) => {
    // None listening (a process that died, or a stale socket): start one for next time.
    if (!committed && (err.code === 'ECONNREFUSED' || err.code === 'ENOENT')) startResident(place, input);
    ended();
  });
  socket.on('close', ended);
  socket.setEncoding('utf8');
  socket.on('connect', () => {
    let cwd: string;
    try {
      cwd = process.cwd();
    } catch {
      // The folder this runs in is gone: a command that can still run here does (it may need no folder).
      return finish(HERE);
    }
    const request: ResidentRequest = {
      schemaVersion: RESIDENT_REQUEST_VERSION,
      identity: place.identity,
      argv: [...input.argv],
      env: Object.fromEntries(Object.entries(input.env).filter((e): e is [string, string] => e[1] !== undefined)),
      cwd,
      umask: currentUmask(),
      script: process.argv[1] ?? null,
    };
    socket.write(`${JSON.stringify(request)}\n`);
  });
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (let newline = buffered.indexOf('\n'); newline >= 0 && !settled; newline = buffered.indexOf('\n')) {
      const reply = parseReply(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      if (reply === undefined) return ended();
      switch (reply.kind) {
        case 'ready':
          if (committed) return ended();
          committed = true;
          socket.write(`${GO_LINE}\n`);
          break;
        case 'refused':
          if (committed) return ended();
          return finish(HERE);
        case 'out':
        case 'err':
          if (!committed) return ended();
          wrote = true;
          out.write(reply.kind === 'out' ? process.stdout : process.stderr, reply.data);
          break;
        case 'exit':
          if (!committed) return ended();
          return finish({ kind: 'done', code: reply.code });
      }
    }
  });
}
