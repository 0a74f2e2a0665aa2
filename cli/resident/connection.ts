import { chmodSync, lstatSync, renameSync, unlinkSync } from 'node:fs';
import { type Server, type Socket, connect } from 'node:net';
import { join } from 'node:path';
import { isGroup } from '../command';
import { commands } from '../command-registry';
import { type ResidentPlace } from './place';
import { MAX_REQUEST_BYTES, type ResidentReply, type ResidentRequest, SERVED_COMMANDS } from './protocol';
import { residentRequestSchema } from './request-schema';

/** One resident command's connection: its request read line by line, the process made the caller's for it (env, cwd, output), and the socket it listens on. */

export const DEFAULT_IDLE_MS = 10 * 60_000;
export const MAX_COMMANDS = 1000;
/** A client that connected sends its request and its `go` at once; one that does not is let go. */
export const CLIENT_SILENT_MS = 10_000;
export const OWN_SOCKET_CHECK_MS = 30_000;

/** The lines of one connection, one at a time. */
export class Lines {
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

export function send(socket: Socket, reply: ResidentReply): void {
  if (!socket.destroyed) socket.write(`${JSON.stringify(reply)}\n`);
}

export function parseRequest(line: string): ResidentRequest | string {
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
export function enter(request: ResidentRequest): () => void {
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
export function replaceEnv(next: Readonly<Record<string, string | undefined>>): void {
  for (const name of Object.keys(process.env)) if (!(name in next)) delete process.env[name];
  for (const [name, value] of Object.entries(next)) if (value !== undefined) process.env[name] = value;
}

/**
 * What else the command's process writes while it runs — Node's warnings,
 * gRPC's log lines, `NODE_DEBUG` traces — goes to the caller too, as from
 * its own process; the returned function puts the streams back.
 */
export function captureOutput(socket: Socket): () => void {
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
export function listening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.on('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.on('error', () => resolve(false));
  });
}

export function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/** Listens on a private name first, then takes the socket's name, unless a live process holds it. */
export async function listen(server: Server, place: ResidentPlace): Promise<number | undefined> {
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
export async function warm(): Promise<void> {
  for (const entry of commands) {
    if (!isGroup(entry) && SERVED_COMMANDS.includes(entry.name)) await entry.load();
  }
  await import('../../client/airlock-client');
}

/** What `ps` shows: which process this is, and how many commands it ran. */
