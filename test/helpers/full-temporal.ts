import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';
import { isPortFree } from '../../ops/dev/ports';
import { allPorts, portsFrom, type TopologyPorts } from '../../ops/topology/layout';
import { spawnDetached, stillRunning, stopProcess } from '../../ops/topology/processes';
import { ensureNamespace, resolveTemporalServer, setupTemporalSchema, temporalServerArgs, writeTemporalConfig, type FrontendTls } from '../../ops/topology/temporal-server';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres';

export interface FullTemporal {
  readonly address: string;
  readonly ports: TopologyPorts;
  stop(): Promise<void>;
}

/**
 * The Temporal server the topology runs (built from its Go module, on a
 * private PostgreSQL), started in `dir` with the `default` namespace; with
 * `tls`, its frontend wants client certificates and `clientTls` is how the
 * harness itself connects.
 */
export async function startFullTemporal(dir: string, options: { readonly tls?: FrontendTls; readonly clientTls?: TLSConfig } = {}): Promise<FullTemporal> {
  const pg: PrivatePostgres = await startPrivatePostgres();
  try {
    await pg.sql('CREATE DATABASE temporal');
    await pg.sql('CREATE DATABASE temporal_visibility');
    const binaries = await resolveTemporalServer(process.env, (line) => process.stderr.write(`${line}\n`));
    // Trust authentication: any password does.
    const db = { host: '127.0.0.1', port: pg.port, user: 'airlock', password: 'trust' };
    await setupTemporalSchema(binaries.sqlTool, db, { temporal: true, visibility: true });
    // 10000–19999 (the UI at +1000 included): below the ports test servers take (test/helpers/ports.ts) and the ephemeral range.
    let ports = portsFrom(10_000 + Math.floor(Math.random() * 180) * 50);
    for (let attempt = 0; attempt < 5; attempt++) {
      const free = await Promise.all(allPorts(ports, false).map((p) => isPortFree(p)));
      if (free.every(Boolean)) break;
      ports = portsFrom(10_000 + Math.floor(Math.random() * 180) * 50);
    }
    const folder = join(dir, 'temporal');
    mkdirSync(folder);
    writeTemporalConfig(folder, ports, db, options.tls);
    const args = temporalServerArgs(folder);
    const log = join(dir, 'temporal.log');
    const server = spawnDetached({ command: binaries.server, args: args.args, cwd: args.cwd, env: { PATH: process.env.PATH }, log });
    const address = `127.0.0.1:${ports.temporal}`;
    for (let i = 0; ; i++) {
      try {
        await ensureNamespace({ address, ...(options.clientTls !== undefined ? { tls: options.clientTls } : {}) }, 'default');
        break;
      } catch (err) {
        if (i > 200 || !stillRunning(server)) {
          await stopProcess(server, 5_000);
          throw new Error(`the Temporal server did not come up (${String(err)}): ${readFileSync(log, 'utf8').slice(-3000)}`);
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    return {
      address,
      ports,
      async stop() {
        await stopProcess(server, 10_000);
        await pg.stop();
      },
    };
  } catch (err) {
    await pg.stop();
    throw err;
  }
}
