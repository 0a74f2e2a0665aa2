import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';
import type { loadClientConnectConfig as LoadClientConnectConfig } from '@temporalio/envconfig';
import type { AirlockConfig } from '../../core/config/config';
import { ConfigError } from '../../core/util/errors';

/**
 * Where and how airlock reaches Temporal: the address and namespace, and
 * TLS, mTLS, an API key and gRPC metadata, read exactly as the `temporal`
 * CLI reads them (`@temporalio/envconfig`): `TEMPORAL_ADDRESS`,
 * `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*`,
 * `TEMPORAL_GRPC_META_*`, over the `temporal.toml` profile named by
 * `TEMPORAL_PROFILE` (file: `TEMPORAL_CONFIG_FILE`, else
 * `~/.config/temporalio/temporal.toml` when it exists; set empty, none).
 */
export interface TemporalTarget {
  readonly address: string;
  readonly namespace: string;
  readonly tls?: TLSConfig | boolean;
  readonly apiKey?: string;
  readonly metadata?: Record<string, string>;
  /** The settings that secure the connection, by variable name, for messages ("TEMPORAL_TLS_CLIENT_CERT_PATH=…"). */
  readonly secured: readonly string[];
}

/** Variables whose presence means a profile or a secured connection is asked for. */
const PROFILE_VARIABLES = ['TEMPORAL_PROFILE', 'TEMPORAL_CONFIG_FILE', 'TEMPORAL_API_KEY', 'TEMPORAL_TLS'];
const FILE_VARIABLES = ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_CONFIG_FILE'];

function defaultProfileFile(env: Readonly<Record<string, string>>): string | undefined {
  const base = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME !== '' ? env.XDG_CONFIG_HOME : env.HOME !== undefined ? join(env.HOME, '.config') : undefined;
  return base === undefined ? undefined : join(base, 'temporalio', 'temporal.toml');
}

/** The Temporal connection of this configuration; a missing file or a profile that does not exist is a ConfigError naming the variable. */
export function temporalTarget(config: AirlockConfig): TemporalTarget {
  // TEMPORAL_CONFIG_FILE set empty: no profile file at all, not even the default one.
  const { TEMPORAL_CONFIG_FILE: configFile, ...rest } = config.temporal.connectionEnv;
  const env = configFile === '' ? rest : config.temporal.connectionEnv;
  const defaultFile = configFile === '' ? undefined : defaultProfileFile(env);
  const usesFile = env.TEMPORAL_CONFIG_FILE !== undefined || (defaultFile !== undefined && existsSync(defaultFile));
  const asked = usesFile || Object.keys(env).some((name) => PROFILE_VARIABLES.includes(name) || name.startsWith('TEMPORAL_TLS_') || name.startsWith('TEMPORAL_GRPC_META_'));
  // The plain case (an address, maybe a namespace) needs nothing more: no file to read, no TLS.
  if (!asked) return { address: config.temporal.address, namespace: config.temporal.namespace, secured: [] };

  for (const name of FILE_VARIABLES) {
    const file = env[name];
    if (file === undefined) continue;
    try {
      readFileSync(file);
    } catch (err) {
      throw new ConfigError([{ variable: name, message: `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)}); point it at the file or unset it` }]);
    }
  }
  const certPath = env.TEMPORAL_TLS_CLIENT_CERT_PATH ?? env.TEMPORAL_TLS_CLIENT_CERT_DATA;
  const keyPath = env.TEMPORAL_TLS_CLIENT_KEY_PATH ?? env.TEMPORAL_TLS_CLIENT_KEY_DATA;
  if ((certPath === undefined) !== (keyPath === undefined)) {
    const missing = certPath === undefined ? 'TEMPORAL_TLS_CLIENT_CERT_PATH' : 'TEMPORAL_TLS_CLIENT_KEY_PATH';
    throw new ConfigError([{ variable: missing, message: 'a client certificate needs both the certificate and its key; set it too (or the matching _DATA variable)' }]);
  }

  // Loaded only here: most installations never need it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a static import would load it for every command
  const { loadClientConnectConfig } = require('@temporalio/envconfig') as { loadClientConnectConfig: typeof LoadClientConnectConfig };
  let loaded: ReturnType<typeof LoadClientConnectConfig>;
  try {
    loaded = loadClientConnectConfig({ overrideEnvVars: { ...env }, ...(usesFile ? {} : { disableFile: true }) });
  } catch (err) {
    const variable = env.TEMPORAL_PROFILE !== undefined && /Profile '.*' not found/.test(String(err)) ? 'TEMPORAL_PROFILE' : 'TEMPORAL_CONFIG_FILE';
    throw new ConfigError([{ variable, message: `${(err as Error).message} (file ${env.TEMPORAL_CONFIG_FILE ?? defaultFile ?? 'none'})` }]);
  }
  const options = loaded.connectionOptions;
  const namespace = loaded.namespace ?? config.temporal.namespace;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(namespace)) {
    throw new ConfigError([{ variable: 'TEMPORAL_NAMESPACE', message: `the profile's namespace ${JSON.stringify(namespace)} is not a namespace name` }]);
  }
  const secured = [
    ...Object.keys(env)
      .filter((name) => name.startsWith('TEMPORAL_TLS'))
      .map((name) => (name.endsWith('_PATH') || name === 'TEMPORAL_TLS_SERVER_NAME' ? `${name}=${env[name] ?? ''}` : name)),
    ...(env.TEMPORAL_API_KEY !== undefined ? ['TEMPORAL_API_KEY'] : []),
    ...(usesFile ? [`profile ${env.TEMPORAL_PROFILE ?? 'default'} of ${env.TEMPORAL_CONFIG_FILE ?? defaultFile ?? ''}`] : []),
  ];
  return {
    address: options.address ?? config.temporal.address,
    namespace,
    ...(options.tls !== undefined && options.tls !== null ? { tls: options.tls } : {}),
    ...(options.apiKey !== undefined && typeof options.apiKey === 'string' ? { apiKey: options.apiKey } : {}),
    ...(options.metadata !== undefined ? { metadata: Object.fromEntries(Object.entries(options.metadata).filter((e): e is [string, string] => typeof e[1] === 'string')) } : {}),
    secured,
  };
}

/** The options `Connection.connect` and `NativeConnection.connect` take, from a target. */
export function connectionOptionsOf(target: TemporalTarget): { address: string; tls?: TLSConfig | boolean; apiKey?: string; metadata?: Record<string, string> } {
  return {
    address: target.address,
    ...(target.tls !== undefined ? { tls: target.tls } : {}),
    ...(target.apiKey !== undefined ? { apiKey: target.apiKey } : {}),
    ...(target.metadata !== undefined ? { metadata: target.metadata } : {}),
  };
}

/** A secured connection to Temporal failed: says with which settings, so the operator knows which variable to check. */
export class TemporalConnectError extends ConfigError {
  override name = 'TemporalConnectError';
}

/**
 * Connects with `connect`, turning the failure of a secured connection into
 * one line naming the settings used. (A plain connection keeps its own
 * errors: they already say the address cannot be reached.)
 */
export async function connectTo<T>(target: TemporalTarget, connect: () => Promise<T>): Promise<T> {
  try {
    return await connect();
  } catch (err) {
    if (target.secured.length === 0) throw err;
    const reason = (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
    throw new TemporalConnectError([
      { variable: 'TEMPORAL_ADDRESS', message: `cannot connect to ${target.address} with ${target.secured.join(', ')}: ${reason}; check that the server accepts that certificate or key, and that it is the server's CA` },
    ]);
  }
}
