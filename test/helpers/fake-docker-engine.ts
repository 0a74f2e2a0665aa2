import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/**
 * A local HTTP server on a unix socket that answers like the Docker Engine
 * API for the calls the docker adapter makes, and records every request
 * line it was sent.
 */

export interface FakeContainer {
  Id: string;
  Name: string;
  Config: { Image: string };
  State: {
    Status: string;
    Running: boolean;
    Paused: boolean;
    Restarting: boolean;
    StartedAt: string;
    ExitCode: number;
    Health?: { Status: string; FailingStreak: number };
  };
  /** How often the fake carried out a start/stop/restart on it. */
  actions: string[];
}

export interface FakeEngine {
  readonly socketPath: string;
  /** "METHOD url" of every request, in order. */
  readonly requests: string[];
  readonly containers: Map<string, FakeContainer>;
  /** Adds a running container; `health` absent means no healthcheck. */
  add(name: string, options?: { health?: string; running?: boolean; image?: string }): FakeContainer;
  /** Removes the container with that name and creates another under it (a `docker compose up` after a change). */
  recreate(name: string): FakeContainer;
  byName(name: string): FakeContainer | undefined;
  close(): Promise<void>;
}

let clock = Date.UTC(2026, 0, 1);
const nextStamp = () => new Date((clock += 1000)).toISOString();

export async function startFakeEngine(socketPath: string, apiVersion = '1.47'): Promise<FakeEngine> {
  const containers = new Map<string, FakeContainer>();
  const requests: string[] = [];
  const byName = (name: string) => [...containers.values()].find((c) => c.Name === `/${name}`);
  const find = (ref: string) => containers.get(ref) ?? byName(ref) ?? [...containers.values()].find((c) => ref.length >= 12 && c.Id.startsWith(ref));

  const send = (res: ServerResponse, status: number, body?: unknown) => {
    if (body === undefined) {
      res.writeHead(status).end();
      return;
    }
    res.writeHead(status, { 'Content-Type': 'application/json', 'Api-Version': apiVersion }).end(JSON.stringify(body));
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '';
    requests.push(`${req.method} ${url}`);
    if (req.method === 'GET' && url === '/_ping') {
      res.writeHead(200, { 'Api-Version': apiVersion, 'Content-Type': 'text/plain' }).end('OK');
      return;
    }
    const versioned = new RegExp(`^/v${apiVersion.replace('.', '\\.')}(/.*)$`).exec(url);
    if (versioned === null) {
      send(res, 400, { message: `client version not supported: ${url}` });
      return;
    }
    const path = versioned[1]!;
    const inspect = /^\/containers\/([^/?]+)\/json$/.exec(path);
    if (req.method === 'GET' && inspect !== null) {
      const c = find(decodeURIComponent(inspect[1]!));
      if (c === undefined) send(res, 404, { message: `No such container: ${decodeURIComponent(inspect[1]!)}` });
      else send(res, 200, { Id: c.Id, Name: c.Name, Config: c.Config, State: c.State, Created: '2026-01-01T00:00:00Z', HostConfig: {} });
      return;
    }
    const action = /^\/containers\/([^/?]+)\/(start|stop|restart)(\?t=[0-9]+)?$/.exec(path);
    if (req.method === 'POST' && action !== null) {
      const c = find(decodeURIComponent(action[1]!));
      const verb = action[2]!;
      if (c === undefined) {
        send(res, 404, { message: `No such container: ${action[1]!}` });
        return;
      }
      if (c.State.Paused && verb !== 'start') {
        send(res, 409, { message: `cannot ${verb} container: ${c.Id} is paused, unpause the container before stopping or killing` });
        return;
      }
      if ((verb === 'start' && c.State.Running) || (verb === 'stop' && !c.State.Running)) {
        send(res, 304);
        return;
      }
      c.actions.push(verb);
      if (verb === 'stop') Object.assign(c.State, { Running: false, Status: 'exited', ExitCode: 0 });
      else Object.assign(c.State, { Running: true, Status: 'running', StartedAt: nextStamp() });
      if (c.State.Health !== undefined) c.State.Health.Status = verb === 'stop' ? 'unhealthy' : 'starting';
      send(res, 204);
      return;
    }
    send(res, 404, { message: 'page not found' });
  };

  const server: Server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, resolve);
  });

  const add: FakeEngine['add'] = (name, options = {}) => {
    const running = options.running ?? true;
    const container: FakeContainer = {
      Id: randomBytes(32).toString('hex'),
      Name: `/${name}`,
      Config: { Image: options.image ?? 'jellyfin/jellyfin:10.10' },
      State: {
        Status: running ? 'running' : 'exited',
        Running: running,
        Paused: false,
        Restarting: false,
        StartedAt: nextStamp(),
        ExitCode: 0,
        ...(options.health !== undefined ? { Health: { Status: options.health, FailingStreak: options.health === 'unhealthy' ? 3 : 0 } } : {}),
      },
      actions: [],
    };
    containers.set(container.Id, container);
    return container;
  };

  return {
    socketPath,
    requests,
    containers,
    add,
    recreate(name) {
      const old = byName(name);
      if (old !== undefined) containers.delete(old.Id);
      return add(name, { health: 'healthy', image: old?.Config.Image });
    },
    byName,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
