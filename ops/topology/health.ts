import { request } from 'node:http';
import { z } from 'zod';

/** How `status` (and `up`, before it goes on) knows a part works, not only that its process runs. */
export const healthCheckSchema = z.discriminatedUnion('kind', [
  /** PostgreSQL answers `select 1`. */
  z.object({ kind: z.literal('postgres'), url: z.string() }),
  /** The Temporal frontend answers GetSystemInfo, and the namespace exists once `up` made it. */
  z.object({ kind: z.literal('temporal'), address: z.string(), namespace: z.string().optional() }),
  /** An HTTP endpoint answers with one of the accepted statuses. */
  z.object({ kind: z.literal('http'), url: z.string(), accept: z.enum(['2xx', 'any']) }),
]);
export type HealthCheck = z.infer<typeof healthCheckSchema>;

export type HealthResult = { readonly healthy: true; readonly detail: string } | { readonly healthy: false; readonly detail: string };

const message = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';

export async function checkHealth(check: HealthCheck, timeoutMs = 3_000): Promise<HealthResult> {
  try {
    switch (check.kind) {
      case 'postgres':
        return await checkPostgres(check.url, timeoutMs);
      case 'temporal':
        return await checkTemporal(check.address, check.namespace, timeoutMs);
      case 'http':
        return await checkHttp(check.url, check.accept, timeoutMs);
    }
  } catch (err) {
    return { healthy: false, detail: message(err) };
  }
}

async function checkPostgres(url: string, timeoutMs: number): Promise<HealthResult> {
  const { Client } = await import('pg');
  const client = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  await client.connect();
  try {
    await client.query('select 1');
    return { healthy: true, detail: 'answers queries' };
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function checkTemporal(address: string, namespace: string | undefined, timeoutMs: number): Promise<HealthResult> {
  const { Connection } = await import('@temporalio/client');
  const connection = await Connection.connect({ address, connectTimeout: timeoutMs });
  try {
    const deadline = () => new Date(Date.now() + timeoutMs);
    const info = await connection.withDeadline(deadline(), () => connection.workflowService.getSystemInfo({}));
    if (namespace !== undefined) await connection.withDeadline(deadline(), () => connection.workflowService.describeNamespace({ namespace }));
    return { healthy: true, detail: `server ${info.serverVersion}${namespace !== undefined ? `, namespace ${namespace}` : ''}` };
  } finally {
    await connection.close();
  }
}

function checkHttp(url: string, accept: '2xx' | 'any', timeoutMs: number): Promise<HealthResult> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'GET', timeout: timeoutMs }, (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      const ok = accept === 'any' ? status > 0 && status < 500 : status >= 200 && status < 300;
      resolve({ healthy: ok, detail: `HTTP ${status}` });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ healthy: false, detail: message(err) }));
    req.end();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the check passes; the last failure when time runs out. */
export async function waitHealthy(check: HealthCheck, withinMs: number, stillAlive: () => boolean): Promise<HealthResult> {
  const deadline = Date.now() + withinMs;
  let last: HealthResult = { healthy: false, detail: 'not checked yet' };
  while (Date.now() < deadline) {
    last = await checkHealth(check);
    if (last.healthy) return last;
    if (!stillAlive()) return { healthy: false, detail: `the process exited (${last.detail})` };
    await sleep(300);
  }
  return last;
}
