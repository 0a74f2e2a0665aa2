import { lstatSync } from 'node:fs';
import { type Socket, createServer } from 'node:net';
import { describeError } from '../../core/temporal/describe-error';
import { parseDuration } from '../../core/util/duration';
import { createIo } from '../command';
import { runCli } from '../main';
import { lineText } from '../process-output';
import { CLIENT_SILENT_MS, DEFAULT_IDLE_MS, Lines, MAX_COMMANDS, OWN_SOCKET_CHECK_MS, captureOutput, enter, listen, parseRequest, removeQuietly, send, warm } from './connection';
import { type ResidentPlace, residentPlace } from './place';
import { GO_LINE, type ResidentRequest } from './protocol';

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
