import { get } from 'node:http';
import { connect } from 'node:net';
import type { HealthCheckConfig } from '../../core/config/tools/services';
import { messageOf } from '../fs/descriptors';

/** The result of a process service's own health check; `detail` says what was tried. */
export interface HealthProbe {
  readonly healthy: boolean;
  readonly detail: string;
}

function probeTcp(host: string, port: number, timeoutMs: number): Promise<HealthProbe> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (probe: HealthProbe) => {
      socket.destroy();
      resolve(probe);
    };
    socket.setTimeout(timeoutMs, () => done({ healthy: false, detail: `tcp ${host}:${port}: no answer within ${timeoutMs} ms` }));
    socket.once('connect', () => done({ healthy: true, detail: `tcp ${host}:${port} accepts connections` }));
    socket.once('error', (err) => done({ healthy: false, detail: `tcp ${host}:${port}: ${messageOf(err)}` }));
  });
}

function probeHttp(url: string, timeoutMs: number): Promise<HealthProbe> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (probe: HealthProbe) => {
      if (settled) return;
      settled = true;
      req.destroy();
      resolve(probe);
    };
    const req = get(url, { timeout: timeoutMs, headers: { 'User-Agent': 'airlock-health-check' } }, (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      done({ healthy: status >= 200 && status < 400, detail: `GET ${url}: ${status}` });
    });
    req.on('timeout', () => done({ healthy: false, detail: `GET ${url}: no answer within ${timeoutMs} ms` }));
    req.on('error', (err) => done({ healthy: false, detail: `GET ${url}: ${messageOf(err)}` }));
  });
}

/** Runs the configured check against a live process; `pid` passes by being alive. */
export function probeHealth(check: HealthCheckConfig): Promise<HealthProbe> {
  switch (check.type) {
    case 'pid':
      return Promise.resolve({ healthy: true, detail: 'process alive' });
    case 'tcp':
      return probeTcp(check.host, check.port, check.timeoutMs);
    case 'http':
      return probeHttp(check.url, check.timeoutMs);
  }
}
