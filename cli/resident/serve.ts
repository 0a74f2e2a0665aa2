import { chmodSync, lstatSync, renameSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { runCli } from '../main';
import { createIo, isGroup } from '../command';
import { commands } from '../command-registry';
import { lineText } from '../process-output';
import { describeError } from '../../core/temporal/describe-error';
import { parseDuration } from '../../core/util/duration';
import { GO_LINE, MAX_REQUEST_BYTES, SERVED_COMMANDS, type ResidentReply, type ResidentRequest } from './protocol';
import { residentRequestSchema } from './request-schema';
import { residentPlace, type ResidentPlace } from './place';

/**
 * The resident CLI process: the CLI loaded once, running the commands
 * short clients (client.ts) pass it, one at a time, each under the
 * request's own environment, folder, umask and script name, with the
 * request's output sent back line by line exactly as the command would
 * write it. It listens on a socket in a folder only this user can use,
 * named by its identity (place.ts), ends after `AIRLOCK_CLI_RESIDENT_IDLE`
 * (default 10 minutes) without a command, after a thousand commands, or
 * when its socket is no longer its own, and at once when a caller goes
 * away while its command runs (as the caller's own process would have).
 */

const DEFAULT_IDLE_MS = 10 * 60_000;
const MAX_COMMANDS = 1000;
/** A client that connected sends its request and its `go` at once; one that does not is let go. */
const CLIENT_SILENT_MS = 10_000;
const OWN_SOCKET_CHECK_MS = 30_000;

/** The lines of one connection, one at a time. */
class Lines {
  private buffered = '';
  private readonly waiting: Array<(line: string | undefined) => void> = [];
  private readonly ready: string[] = [];
  private ended = false;

  constructor(socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buffered += chunk;
      if (this.buffered.length > MAX_REQUEST_BYTES) {
        socket.destroy();
        return;
      }
      for (let newline = this.buffered.indexOf('\n'); newline >= 0; newline = this.buffered.indexOf('\n')) {
        this.push(this.buffered.slice(0, newline));
        this.buffered = this.buffered.slice(newline + 1);
      }
    });
    socket.on('close', () => {
      this.ended = true;
      for (const w of this.waiting.splice(0)) w(undefined);
    });
  }

  private push(line: string): void {
    const waiter = this.waiting.shift();
    if (waiter !== undefined) waiter(line);
    else this.ready.push(line);
  }

  /** The next line, or undefined when the connection ended or stayed silent for `ms`. */
  next(ms: number): Promise<string | undefined> {
    const line = this.ready.shift();
    if (line !== undefined || this.ended) return Promise.resolve(line);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(done);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve(undefined);
      }, ms);
      const done = (value: string | undefined) => {
        clearTimeout(timer);
        resolve(value);
      };
      this.waiting.push(done);
    });
  }
}

function send(socket: Socket, reply: ResidentReply): void {
  if (!socket.destroyed) socket.write(`${JSON.stringify(reply)}\n`);
}

function parseRequest(line: string): ResidentRequest | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return 'the request is not JSON';
  }
  const parsed = residentRequestSchema.safeParse(value);
  return parsed.success ? parsed.data : `the request does not fit: ${parsed.error.issues[0]?.message ?? ''}`;
}

/** The process state a command runs under, set to the request's; the returned function puts this process's back. */
function enter(request: ResidentRequest): () => void {
  const env = { ...process.env };
  const cwd = process.cwd();
  const script = process.argv[1];
  let mask: number | undefined;
  const restore = () => {
    replaceEnv(env);
    process.chdir(cwd);
    if (mask !== undefined) process.umask(mask);
    if (script !== undefined) process.argv[1] = script;
  };
  try {
    process.chdir(request.cwd);
    replaceEnv(request.env);
    mask = process.umask(request.umask);
    // `cliName` tells how to type airlock from the script the caller was started as.
    if (request.script !== null) process.argv[1] = request.script;
  } catch (err) {
    restore();
    throw err;
  }
  return restore;
}

/** The same object (libraries keep a reference to it), with exactly these variables. */
function replaceEnv(next: Readonly<Record<string, string | undefined>>): void {
  for (const name of Object.keys(process.env)) if (!(name in next)) delete process.env[name];
  for (const [name, value] of Object.entries(next)) if (value !== undefined) process.env[name] = value;
}

/**
 * What else the command's process writes while it runs — Node's warnings,
 * gRPC's log lines, `NODE_DEBUG` traces — goes to the caller too, as from
 * its own process; the returned function puts the streams back.
 */
function captureOutput(socket: Socket): () => void {
  const streams = [
    { stream: process.stdout, kind: 'out' as const },
    { stream: process.stderr, kind: 'err' as const },
  ];
  // Normally `write` is the prototype's: putting it back is removing the stand-in.
  const own = streams.map(({ stream }) => Object.getOwnPropertyDescriptor(stream, 'write'));
  for (const { stream, kind } of streams) {
    const writeHere = (chunk: unknown, ...rest: unknown[]): boolean => {
      const encoding = typeof rest[0] === 'string' && Buffer.isEncoding(rest[0]) ? rest[0] : 'utf8';
      const data = typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString(encoding) : String(chunk);
      send(socket, { kind, data });
      const done = rest.find((r): r is () => void => typeof r === 'function');
      if (done !== undefined) process.nextTick(done);
      return true;
    };
    Object.defineProperty(stream, 'write', { value: writeHere, configurable: true, writable: true });
  }
  return () => {
    streams.forEach(({ stream }, i) => {
      const before = own[i];
      if (before !== undefined) Object.defineProperty(stream, 'write', before);
      else Reflect.deleteProperty(stream, 'write');
    });
  };
}

/** Whether some process listens on the socket. */
function listening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.on('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.on('error', () => resolve(false));
  });
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/** Listens on a private name first, then takes the socket's name, unless a live process holds it. */
async function listen(server: Server, place: ResidentPlace): Promise<number | undefined> {
  const temporary = join(place.folder, `starting-${process.pid}.sock`);
  removeQuietly(temporary);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(temporary, () => resolve());
  });
  chmodSync(temporary, 0o600);
  if (await listening(place.socket)) {
    server.close();
    return undefined;
  }
  renameSync(temporary, place.socket);
  removeQuietly(place.starting);
  return lstatSync(place.socket).ino;
}

/** Loads what the served commands need (the Temporal client with them), so the first command does not wait for it. */
async function warm(): Promise<void> {
  for (const entry of commands) {
    if (!isGroup(entry) && SERVED_COMMANDS.includes(entry.name)) await entry.load();
  }
  await import('../../client/airlock-client');
}

/** What `ps` shows: which process this is, and how many commands it ran. */
const title = (served: number): string => `airlock resident CLI: ${served} commands`;

export async function serveResident(input: { readonly packageRoot: string }): Promise<void> {
  const found = residentPlace(process.env, input.packageRoot);
  if (found === undefined) return;
  const place: ResidentPlace = found;
  const idleMs = parseDuration(process.env.AIRLOCK_CLI_RESIDENT_IDLE ?? '') ?? DEFAULT_IDLE_MS;
  let queue: Promise<void> = Promise.resolve();
  let inFlight = 0;
  let served = 0;
  // The idle timer and the check that the socket is still this process's.
  const timers: { idle?: NodeJS.Timeout; ownSocket?: NodeJS.Timeout } = {};
  let done: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });

  const server = createServer((socket) => {
    socket.on('error', () => undefined);
    const lines = new Lines(socket);
    void lines.next(CLIENT_SILENT_MS).then((line) => {
      if (line === undefined) return socket.destroy();
      const request = parseRequest(line);
      if (typeof request === 'string') {
        send(socket, { kind: 'refused', reason: request });
        return socket.end();
      }
      inFlight++;
      clearTimeout(timers.idle);
      queue = queue
        .then(() => turn(socket, lines, request))
        // One command's failure is its own: the next still runs.
        .catch(() => undefined)
        .finally(() => {
          inFlight--;
          served++;
          process.title = title(served);
          if (served >= MAX_COMMANDS) retire();
          else if (inFlight === 0) timers.idle = setTimeout(retire, idleMs);
        });
    });
  });

  let ino: number | undefined;
  /** Whether the socket's name is still this process's: a newer process may hold it now. */
  const holdsName = (): boolean => {
    try {
      return ino !== undefined && lstatSync(place.socket).ino === ino;
    } catch {
      return false;
    }
  };
  const giveUpName = () => {
    if (holdsName()) removeQuietly(place.socket);
  };
  const retire = () => {
    clearTimeout(timers.idle);
    clearInterval(timers.ownSocket);
    server.close();
    giveUpName();
    void queue.then(done);
  };
  const abandon = () => {
    giveUpName();
    process.exit(1);
  };

  async function turn(socket: Socket, lines: Lines, request: ResidentRequest): Promise<void> {
    if (socket.destroyed) return;
    if (request.identity !== place.identity) {
      send(socket, { kind: 'refused', reason: 'another identity' });
      socket.end();
      return;
    }
    let restore: () => void;
    try {
      restore = enter(request);
    } catch (err) {
      send(socket, { kind: 'refused', reason: describeError(err) });
      socket.end();
      return;
    }
    let running = false;
    // The caller went away (Ctrl-C, killed) while its command ran: this process ends as the caller's own would
    // have, so nothing the command had not yet sent is sent later on its behalf.
    const callerGone = () => {
      if (running) abandon();
    };
    let release: () => void = () => undefined;
    try {
      send(socket, { kind: 'ready' });
      // Nothing runs unless the client committed to this process running it.
      if ((await lines.next(CLIENT_SILENT_MS)) !== GO_LINE) return void socket.destroy();
      running = true;
      socket.once('close', callerGone);
      release = captureOutput(socket);
      const io = createIo(request.env, (stream, text) => send(socket, { kind: stream, data: lineText(text) }));
      let code: number;
      try {
        code = await runCli(request.argv, io);
      } catch (err) {
        io.err(`airlock: ${describeError(err)}`);
        code = 1;
      }
      running = false;
      send(socket, { kind: 'exit', code });
      socket.end();
    } finally {
      running = false;
      release();
      restore();
    }
  }

  try {
    await warm();
    ino = await listen(server, place);
  } catch {
    ino = undefined;
  }
  if (ino === undefined) {
    removeQuietly(place.starting);
    server.close();
    return;
  }
  // Stopped (SIGTERM, or a signal a terminal sends): the name goes with the process, as when it retires.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.once(signal, abandon);
  process.title = title(0);
  timers.idle = setTimeout(retire, idleMs);
  timers.ownSocket = setInterval(() => {
    if (!holdsName()) retire();
  }, OWN_SOCKET_CHECK_MS);
  await finished;
}
