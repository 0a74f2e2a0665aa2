import Long from 'long';
import { execFile } from 'node:child_process';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { AirlockError } from '../../core/util/errors';
import { findGo, goInstall, isExecutableFile } from '../dev/go-install';
import { projectRoot } from '../dev/project-root';
import { TEMPORAL_DYNAMIC_CONFIG } from '../temporal/dynamic-config';
import type { TopologyPorts } from './layout';

const run = promisify(execFile);

/**
 * The Temporal server version the topology builds and runs: the first line
 * whose workers learn at a workflow task that their deployment's target
 * version changed (upgrade on continue-as-new). It needs Go 1.26.10 or
 * later: the go command fetches `GO_TOOLCHAIN` from the module proxy.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.32.2';
const GO_TOOLCHAIN = 'go1.27.3';
const MODULE = 'go.temporal.io/server';

/** The Temporal server could not be built, set up or started. */
export class TemporalServerError extends AirlockError {
  override name = 'TemporalServerError';
}

export interface TemporalServerBinaries {
  readonly server: string;
  readonly sqlTool: string;
}

/**
 * The server and its SQL tool: `AIRLOCK_TEMPORAL_SERVER_DIR` (a folder
 * holding `temporal-server` and `temporal-sql-tool`), else the project's
 * cache, built there with `go install` the first time.
 */
export async function resolveTemporalServer(env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<TemporalServerBinaries> {
  const given = env.AIRLOCK_TEMPORAL_SERVER_DIR;
  const dir = given !== undefined && given !== '' ? given : join(projectRoot(), '.cache', 'temporal-server', TEMPORAL_SERVER_VERSION);
  const binaries = { server: join(dir, 'temporal-server'), sqlTool: join(dir, 'temporal-sql-tool') };
  if (isExecutableFile(binaries.server) && isExecutableFile(binaries.sqlTool)) return binaries;
  if (given !== undefined && given !== '') {
    throw new TemporalServerError(`AIRLOCK_TEMPORAL_SERVER_DIR: ${given} holds no executable temporal-server and temporal-sql-tool; point it at such a folder or unset it`);
  }
  const go = findGo(env);
  if (go === undefined) throw new TemporalServerError(`the Temporal server is built from ${MODULE}@${TEMPORAL_SERVER_VERSION} with Go, and no go command was found: install Go, or set AIRLOCK_TEMPORAL_SERVER_DIR`);
  await goInstall({
    go,
    packages: [
      { target: `${MODULE}/cmd/server@${TEMPORAL_SERVER_VERSION}`, builds: 'server', keepAs: 'temporal-server' },
      { target: `${MODULE}/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`, builds: 'sql', keepAs: 'temporal-sql-tool' },
    ],
    cacheDir: dir,
    what: `the Temporal server ${TEMPORAL_SERVER_VERSION}`,
    env: { ...env, GOTOOLCHAIN: env.GOTOOLCHAIN ?? GO_TOOLCHAIN },
    log,
  });
  return binaries;
}

export interface DatabaseEndpoint {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
}

export function endpointOf(url: string): DatabaseEndpoint {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port === '' ? 5432 : u.port), user: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
}

/** Creates the schema of Temporal's two databases on first use and upgrades it to this server's version every time. */
export async function setupTemporalSchema(tool: string, db: DatabaseEndpoint, fresh: { temporal: boolean; visibility: boolean }): Promise<void> {
  const common = ['--plugin', 'postgres12', '--ep', db.host, '-p', String(db.port), '-u', db.user, '--pw', db.password];
  const step = async (args: string[]) => {
    try {
      await run(tool, [...common, ...args], { env: { PATH: process.env.PATH } });
    } catch (err) {
      const out = err as { stderr?: string; stdout?: string };
      throw new TemporalServerError(`Temporal's SQL tool failed (${args.slice(0, 3).join(' ')}): ${(out.stderr ?? out.stdout ?? String(err)).trim().split('\n').slice(-3).join(' | ')}`);
    }
  };
  for (const [database, schema, isFresh] of [
    ['temporal', 'postgresql/v12/temporal', fresh.temporal],
    ['temporal_visibility', 'postgresql/v12/visibility', fresh.visibility],
  ] as const) {
    if (isFresh) await step(['--db', database, 'setup-schema', '-v', '0.0']);
    await step(['--db', database, 'update-schema', '--schema-name', schema]);
  }
}

/**
 * The server's configuration, written into `<dir>/temporal/config/` for
 * `--env topology`: PostgreSQL for history and visibility, every service on
 * loopback at the topology's ports, and the dynamic config that turns
 * Worker Deployments on and lets tasks reach matching without delay.
 */
/** Certificates for mTLS on the frontend: the server's, the CA its clients' certificates must chain to, and the internal worker's client certificate. */
export interface FrontendTls {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
}

export function writeTemporalConfig(folder: string, ports: TopologyPorts, db: DatabaseEndpoint, tls?: FrontendTls): void {
  const configDir = join(folder, 'config');
  mkdirSync(join(configDir, 'dynamicconfig'), { recursive: true, mode: 0o700 });
  const datastore = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${db.host}:${db.port}`,
      connectProtocol: 'tcp',
      user: db.user,
      password: db.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const service = (grpcPort: number, membershipPort: number, extra: Record<string, unknown> = {}) => ({ rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...extra } });
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: 4,
      datastores: { 'postgres-default': datastore('temporal', 20), 'postgres-visibility': datastore('temporal_visibility', 4) },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      // mTLS on the frontend only (the other services talk over loopback): clients must show a certificate of the CA.
      ...(tls === undefined
        ? {}
        : {
            tls: {
              frontend: {
                server: { certFile: tls.certFile, keyFile: tls.keyFile, clientCaFiles: [tls.caFile], requireClientAuth: true },
                client: { serverName: 'localhost', rootCaFiles: [tls.caFile] },
              },
              systemWorker: { certFile: tls.clientCertFile, keyFile: tls.clientKeyFile, client: { serverName: 'localhost', rootCaFiles: [tls.caFile] } },
            },
          }),
    },
    services: {
      frontend: service(ports.temporal, ports.membership[0], { httpPort: ports.temporalHttp }),
      history: service(ports.history, ports.membership[1]),
      matching: service(ports.matching, ports.membership[2]),
      worker: service(ports.internalWorker, ports.membership[3]),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${ports.temporal}` } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: 'config/dynamicconfig/topology.yaml', pollInterval: '10s' },
  };
  const dynamic = {
    'system.enableDeploymentVersions': [{ value: true }],
    'system.enableDeployments': [{ value: true }],
    'frontend.workerVersioningWorkflowAPIs': [{ value: true }],
    'frontend.enableUpdateWorkflowExecution': [{ value: true }],
    'frontend.enableExecuteMultiOperation': [{ value: true }],
    'limit.maxIDLength': [{ value: 255 }],
    // Activities and workflow tasks handed over in ~1 ms, not ~45 ms (see TEMPORAL_DYNAMIC_CONFIG).
    ...Object.fromEntries(Object.entries(TEMPORAL_DYNAMIC_CONFIG).map(([key, value]) => [key, [{ value }]])),
  };
  writeFileSync(join(configDir, 'topology.yaml'), stringify(config), { mode: 0o600 });
  writeFileSync(join(configDir, 'dynamicconfig', 'topology.yaml'), stringify(dynamic), { mode: 0o600 });
}

/** How the server is started: from its folder, on the config written above. */
export function temporalServerArgs(folder: string): { args: string[]; cwd: string } {
  return { args: ['--root', folder, '--config', 'config', '--env', 'topology', '--allow-no-auth', 'start'], cwd: folder };
}

/** Registers the namespace (30 days' retention) unless it exists, and waits until every service of the server knows it. */
export async function ensureNamespace(options: { readonly address: string; readonly tls?: TLSConfig }, namespace: string): Promise<void> {
  const { Connection } = await import('@temporalio/client');
  const connection = await Connection.connect(options);
  try {
    const exists = await connection.workflowService.describeNamespace({ namespace }).then(
      () => true,
      () => false,
    );
    if (!exists) {
      try {
        await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(30 * 86_400) } });
      } catch (err) {
        if (!/already exists|AlreadyExists/i.test(String(err))) throw err;
      }
    }
    // The server's services learn a new namespace through a cache refreshed every few seconds: wait until one answers for it.
    for (let i = 0; ; i++) {
      try {
        await connection.operatorService.listSearchAttributes({ namespace });
        return;
      } catch (err) {
        if (i >= 150) throw new TemporalServerError(`the namespace ${namespace} was created but the server does not know it after 30 s: ${String(err)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } finally {
    await connection.close();
  }
}
