import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { findGo, goInstall, isExecutableFile } from '../dev/go-install';
import { projectRoot } from '../dev/project-root';
import { TemporalServerError } from './temporal-server';

/** The Web UI server the topology runs: the same one the Temporal CLI 1.5.1 embeds. */
export const UI_SERVER_VERSION = 'v2.42.1';
const MODULE = 'github.com/temporalio/ui-server/v2';

/** `AIRLOCK_UI_SERVER` (the binary), else the project's cache, built there the first time. */
export async function resolveUiServer(env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<string> {
  const given = env.AIRLOCK_UI_SERVER;
  if (given !== undefined && given !== '') {
    if (!isExecutableFile(given)) throw new TemporalServerError(`AIRLOCK_UI_SERVER: ${given} is not an executable file; point it at the Temporal UI server or unset it`);
    return given;
  }
  const dir = join(projectRoot(), '.cache', 'temporal-ui-server', UI_SERVER_VERSION);
  const binary = join(dir, 'temporal-ui-server');
  if (isExecutableFile(binary)) return binary;
  const go = findGo(env);
  if (go === undefined) throw new TemporalServerError(`the Web UI is built from ${MODULE}@${UI_SERVER_VERSION} with Go, and no go command was found: install Go, or set AIRLOCK_UI_SERVER`);
  await goInstall({ go, packages: [{ target: `${MODULE}/cmd/server@${UI_SERVER_VERSION}`, builds: 'server', keepAs: 'temporal-ui-server' }], cacheDir: dir, what: `the Temporal Web UI ${UI_SERVER_VERSION}`, env, log });
  return binary;
}

export interface UiConfigInput {
  readonly folder: string;
  readonly temporalAddress: string;
  readonly port: number;
  /** The codec server's endpoint (with its token), so encrypted jobs show decoded. */
  readonly codecEndpoint: string;
}

/** The UI's configuration (`base.yaml` + `topology.yaml`) and how to start it. */
export function writeUiConfig(input: UiConfigInput): { args: string[]; cwd: string } {
  const configDir = join(input.folder, 'config');
  mkdirSync(configDir, { recursive: true, mode: 0o700 });
  writeFileSync(join(configDir, 'base.yaml'), stringify({ temporalGrpcAddress: input.temporalAddress }), { mode: 0o600 });
  writeFileSync(
    join(configDir, 'topology.yaml'),
    stringify({
      temporalGrpcAddress: input.temporalAddress,
      host: '127.0.0.1',
      port: input.port,
      enableUi: true,
      defaultNamespace: 'default',
      notifyOnNewVersion: false,
      cors: { allowOrigins: [`http://127.0.0.1:${input.port}`, `http://localhost:${input.port}`], cookieInsecure: true },
      codec: { endpoint: input.codecEndpoint },
    }),
    { mode: 0o600 },
  );
  return { args: ['--root', input.folder, '--config', 'config', '--env', 'topology', 'start'], cwd: input.folder };
}
