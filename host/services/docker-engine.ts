import { request } from 'node:http';
import { z } from 'zod';
import { errnoCode, messageOf } from '../fs/descriptors';

/**
 * The Docker Engine API over its unix socket: just the calls the docker
 * adapter makes, with the Engine's errors turned into sentences. Every
 * path carries the API version (negotiated on /_ping unless configured),
 * as the Engine expects of a client.
 */

/** The newest API version whose answers this client was written against; a newer Engine still speaks it. */
export const MAX_API_VERSION = '1.51';
/** State.Health and the container endpoints used here are older than this. */
export const MIN_API_VERSION = '1.24';

const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface EngineResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

/** The Engine could not be reached, or answered with an error; `status` when it answered. */
export class EngineError extends Error {
  override name = 'EngineError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const engineErrorBody = z.object({ message: z.string() });

function compareVersions(a: string, b: string): number {
  const [am = 0, an = 0] = a.split('.').map(Number);
  const [bm = 0, bn = 0] = b.split('.').map(Number);
  return am !== bm ? am - bm : an - bn;
}

export function negotiateVersion(serverVersion: string | undefined): string {
  if (serverVersion === undefined || !/^1\.[0-9]{1,3}$/.test(serverVersion)) return MAX_API_VERSION;
  if (compareVersions(serverVersion, MIN_API_VERSION) < 0) {
    throw new EngineError(`the Docker Engine speaks API ${serverVersion}; airlock needs ${MIN_API_VERSION} or newer`);
  }
  return compareVersions(serverVersion, MAX_API_VERSION) > 0 ? MAX_API_VERSION : serverVersion;
}

export class DockerEngine {
  private version: Promise<string> | undefined;

  constructor(
    readonly socketPath: string,
    /** Configured API version; unset: negotiated once on /_ping. */
    apiVersion?: string,
    private readonly timeoutMs = 30_000,
  ) {
    if (apiVersion !== undefined) this.version = Promise.resolve(apiVersion);
  }

  private send(method: 'GET' | 'POST', path: string, timeoutMs: number): Promise<EngineResponse> {
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: this.socketPath, method, path, headers: { Host: 'docker', 'Content-Length': 0 } }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_BODY_BYTES) {
            req.destroy(new EngineError(`the Docker Engine's answer to ${method} ${path} is larger than ${MAX_BODY_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (err) => reject(this.unreachable(err)));
      });
      req.setTimeout(timeoutMs, () => req.destroy(new EngineError(`the Docker Engine did not answer ${method} ${path} within ${timeoutMs} ms`)));
      req.on('error', (err) => reject(err instanceof EngineError ? err : this.unreachable(err)));
      req.end();
    });
  }

  /** Socket errors in words that say what to check. */
  private unreachable(err: unknown): EngineError {
    switch (errnoCode(err)) {
      case 'ENOENT':
        return new EngineError(`the Docker socket ${this.socketPath} does not exist (is Docker running, and is the socket mounted where the tools worker runs?)`);
      case 'EACCES':
      case 'EPERM':
        return new EngineError(`permission denied on the Docker socket ${this.socketPath} (the tools worker's user needs access to it, e.g. membership of its group)`);
      case 'ECONNREFUSED':
        return new EngineError(`nothing accepts connections on the Docker socket ${this.socketPath} (is the Docker daemon running?)`);
      case 'ENOTSOCK':
        return new EngineError(`${this.socketPath} is not a socket`);
      default:
        return new EngineError(`cannot talk to the Docker Engine on ${this.socketPath}: ${messageOf(err)}`);
    }
  }

  private apiVersion(): Promise<string> {
    this.version ??= this.send('GET', '/_ping', this.timeoutMs).then(
      (res) => {
        if (res.status !== 200) throw new EngineError(`the Docker Engine answered /_ping with ${res.status}${describeBody(res.body)}`, res.status);
        const header = res.headers['api-version'];
        return negotiateVersion(typeof header === 'string' ? header : undefined);
      },
      (err: unknown) => {
        // A failed negotiation is tried again on the next call (the daemon may be starting).
        this.version = undefined;
        throw err;
      },
    );
    return this.version;
  }

  /** One versioned call; `timeoutMs` beyond the default for calls that wait on the container (stop, restart). */
  async call(method: 'GET' | 'POST', path: string, timeoutMs = this.timeoutMs): Promise<EngineResponse> {
    const version = await this.apiVersion();
    return this.send(method, `/v${version}${path}`, timeoutMs);
  }
}

/** The Engine's own message from an error body, for the end of a sentence. */
export function describeBody(body: string): string {
  try {
    const parsed = engineErrorBody.safeParse(JSON.parse(body));
    if (parsed.success) return `: ${parsed.data.message.slice(0, 500)}`;
  } catch {
    // Not JSON: the text itself, shortened.
  }
  const text = body.trim().slice(0, 200);
  return text === '' ? '' : `: ${text}`;
}
