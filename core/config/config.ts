/**
 * core/config/ — What airlock reads at start-up: environment variables (each
 * with its own schema, so an error names the variable), the notification
 * endpoints, and the tools worker's config file (commands, hosts, services).
 *
 * May import: util, redaction, tools, temporal.
 */

import { z } from 'zod';
import { parseDuration } from '../util/duration';
import { ConfigError } from '../util/errors';
import { notifyEndpointsSchema, showEndpointList, type NotifyEndpoint } from './notify-endpoints';
import { redactUrl } from '../redaction/redact-url';
import { machineNameSchema } from '../tools/machines';
import { buildIdSchema } from '../temporal/deployments';

/**
 * Environment configuration, parsed once at start-up. Each variable has its
 * own schema so an error names the variable and what was expected.
 */
export type Env = Readonly<Record<string, string | undefined>>;

const hostPort = z
  .string()
  .regex(
    /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]{1,5})$/,
    'expected host:port, for example 127.0.0.1:7233',
  )
  .refine((v) => {
    const port = Number(v.slice(v.lastIndexOf(':') + 1));
    return port >= 1 && port <= 65535;
  }, 'port must be between 1 and 65535');

const ipv4 = /^(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}$/;

/** Where a socket is bound: an IP address (not a name, which the runtime cannot bind) and a port. */
export const bindAddress = z
  .string()
  .refine((v) => {
    const colon = v.lastIndexOf(':');
    const host = v.slice(0, colon);
    const portText = v.slice(colon + 1);
    if (colon < 1 || !/^[0-9]{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) return false;
    return ipv4.test(host) || (/^\[[0-9a-fA-F:.]+\]$/.test(host) && URL.canParse(`http://${host}:1/`));
  }, 'expected IP:port to listen on, for example 127.0.0.1:9464 or 0.0.0.0:9464 ([::]:9464 for IPv6)');

const positiveInt = (max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/, `expected a whole number between 1 and ${max}`)
    .transform(Number)
    .refine((n) => n >= 1 && n <= max, `expected a whole number between 1 and ${max}`);

const port = positiveInt(65535);

const httpUrl = z
  .string()
  .refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'http:' || u.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'expected an http(s) URL, for example http://127.0.0.1:8080/v1');

const nonEmpty = z.string().trim().min(1, 'must not be empty');

const postgresUrl = z
  .string()
  .refine((v) => /^postgres(ql)?:\/\//i.test(v) && URL.canParse(v), 'expected a PostgreSQL URL (postgres:// or postgresql://), for example postgres://airlock:PASSWORD@db.lan:5432/airlock');

const durationText = z
  .string()
  .refine((v) => parseDuration(v) !== undefined, 'expected a duration such as "90s", "15m" or "2h"')
  .transform((v) => parseDuration(v)!);

const pathList = z
  .string()
  .transform((v) => v.split(':').filter((p) => p !== ''))
  .refine((paths) => paths.length > 0, 'expected one or more absolute folders separated by ":"')
  .refine((paths) => paths.every((p) => p.startsWith('/')), 'every root must be an absolute path');

const DAY_MS = 86_400_000;

/** A switch: 1/true/yes/on or 0/false/no/off, in any case. */
const onOff = z
  .string()
  .transform((v) => v.trim().toLowerCase())
  .refine((v) => ['1', 'true', 'yes', 'on', '0', 'false', 'no', 'off'].includes(v), 'expected 1 (on) or 0 (off)')
  .transform((v) => ['1', 'true', 'yes', 'on'].includes(v));

const logLevel = z.enum(['error', 'warn', 'info', 'debug'], {
  error: 'expected one of error, warn, info, debug',
});

const variables = {
  TEMPORAL_ADDRESS: hostPort.default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'expected a namespace name such as "default"')
    .default('default'),
  AIRLOCK_DATA_DIR: nonEmpty.default('.airlock'),
  AIRLOCK_DATABASE_URL: postgresUrl.optional(),
  // The earlier name of AIRLOCK_DATABASE_URL, from when the database held only conversations.
  AIRLOCK_CONTENT_DB: postgresUrl.optional(),
  AIRLOCK_DATABASE_POOL: positiveInt(100).default(4),
  AIRLOCK_DATABASE_STATEMENT_TIMEOUT: durationText.default(15_000),
  AIRLOCK_AGENT_CONCURRENCY: positiveInt(1000).default(10),
  AIRLOCK_TOOLS_CONCURRENCY: positiveInt(1000).default(4),
  AIRLOCK_JUDGE_CONCURRENCY: positiveInt(100).default(2),
  // Above the jobs running at once: an active job evicted between its turns replays its whole history on each one.
  AIRLOCK_WORKFLOW_CACHE: z.coerce.number().int('expected a whole number').min(0, 'expected 0 or more').max(100_000, 'at most 100000').default(200),
  AIRLOCK_WORKFLOW_CONCURRENCY: positiveInt(1000).refine((n) => n >= 2, 'at least 2').default(20),
  AIRLOCK_STICKY_TIMEOUT: durationText.default(5_000),
  OPENAI_BASE_URL: httpUrl.optional(),
  OPENAI_API_KEY: nonEmpty.optional(),
  AIRLOCK_MODEL: nonEmpty.default('gpt-4o-mini'),
  AIRLOCK_MODEL_TIMEOUT_MS: positiveInt(600_000).default(60_000),
  AIRLOCK_MODEL_CONTEXT_CHARS: positiveInt(100_000_000).refine((n) => n >= 10_000, 'at least 10000').default(400_000),
  AIRLOCK_UI_PORT: port.default(8233),
  AIRLOCK_REPLAY_SCRIPT: nonEmpty.optional(),
  AIRLOCK_LOG_LEVEL: logLevel.default('info'),
  AIRLOCK_RULES_FILE: nonEmpty.optional(),
  AIRLOCK_ROOTS: pathList.optional(),
  AIRLOCK_TOOLS_CONFIG: nonEmpty.optional(),
  AIRLOCK_MACHINE: machineNameSchema.optional(),
  AIRLOCK_BUILD_ID: buildIdSchema.optional(),
  AIRLOCK_GRANT_KEY: nonEmpty.optional(),
  AIRLOCK_GRANT_PUBLIC_KEY: nonEmpty.optional(),
  AIRLOCK_GRANT_TTL: durationText.default(15 * 60_000),
  AIRLOCK_RETENTION: durationText.refine((ms) => ms >= DAY_MS, 'at least 1d').default(30 * DAY_MS),
  AIRLOCK_AUDIT_RETENTION: durationText.refine((ms) => ms >= DAY_MS, 'at least 1d').default(365 * DAY_MS),
  AIRLOCK_REVIEWER: nonEmpty.optional(),
  AIRLOCK_REVIEWER_KEYS: nonEmpty.optional(),
  AIRLOCK_REVIEWER_KEY: nonEmpty.optional(),
  AIRLOCK_JUDGE_BASE_URL: httpUrl.optional(),
  AIRLOCK_JUDGE_API_KEY: nonEmpty.optional(),
  AIRLOCK_JUDGE_MODEL: nonEmpty.optional(),
  AIRLOCK_JUDGE_TIMEOUT_MS: positiveInt(60_000).default(3000),
  AIRLOCK_CODEC_KEYS: nonEmpty.optional(),
  AIRLOCK_CODEC: z.enum(['auto', 'off'], 'expected auto (payloads encrypted whenever Temporal is another machine) or off').default('auto'),
  AIRLOCK_CODEC_PORT: port.default(8234),
  AIRLOCK_CODEC_UI_ORIGIN: httpUrl.optional(),
  AIRLOCK_METRICS_ADDRESS: bindAddress.optional(),
  AIRLOCK_NOTIFY_URLS: notifyEndpointsSchema.optional(),
  AIRLOCK_NOTIFY_ATTEMPTS: positiveInt(50).default(6),
  AIRLOCK_NOTIFY_BACKOFF: durationText.default(5_000),
  AIRLOCK_NOTIFY_TIMEOUT: durationText.default(10_000),
  AIRLOCK_WEB_UI_URL: httpUrl.optional(),
  AIRLOCK_APPROVAL_PAGE_URL: httpUrl.optional(),
  AIRLOCK_INBOX_LISTEN: bindAddress.default('127.0.0.1:7244'),
  AIRLOCK_INBOX_TLS: onOff.default(false),
  // Read by bin/airlock.js before anything else loads (cli/startup/compile-cache.ts); checked here so a wrong value is said.
  AIRLOCK_COMPILE_CACHE: z
    .string()
    .refine((v) => v === 'off' || v.startsWith('/'), 'expected off or an absolute folder, for example /var/cache/airlock')
    .optional(),
  // Read by the CLI's short client and its resident process (cli/resident/); checked here so a wrong value is said.
  AIRLOCK_CLI_RESIDENT: z.enum(['auto', 'always', 'off'], { error: 'expected auto, always or off' }).default('auto'),
  AIRLOCK_CLI_RESIDENT_IDLE: durationText.default(600_000),
  // TEST ONLY: stops a tools worker's `execute` at a point, for crash tests to kill it there.
  AIRLOCK_TEST_CRASH_AT: z
    .string()
    .regex(/^(after-consume|after-effect|mid-write|mid-(batch|undo):\d{1,6})$/, 'expected after-consume, after-effect, mid-write, mid-batch:N or mid-undo:N (test only)')
    .transform((v) => v as 'after-consume' | 'after-effect' | 'mid-write' | `mid-batch:${number}` | `mid-undo:${number}`)
    .optional(),
} as const;

type Variables = typeof variables;

/** Variables whose value may hold a secret: an error shows them through these. */
const shownAs: Partial<Record<keyof Variables, (raw: string) => string>> = { AIRLOCK_DATABASE_URL: redactUrl, AIRLOCK_CONTENT_DB: redactUrl, AIRLOCK_NOTIFY_URLS: showEndpointList };
type Parsed = { [K in keyof Variables]: z.output<Variables[K]> };

export type LogLevel = z.output<typeof logLevel>;

export interface DatabaseConfig {
  readonly url: string;
  readonly setting: 'AIRLOCK_DATABASE_URL' | 'AIRLOCK_CONTENT_DB';
  readonly poolSize: number;
  readonly statementTimeoutMs: number;
}

export interface AirlockConfig {
  readonly temporal: {
    /** TEMPORAL_ADDRESS, else the default; a connection profile may name another (see host/temporal-target). */
    readonly address: string;
    readonly namespace: string;
    /**
     * The variables the Temporal CLI reads its connection from (`TEMPORAL_*`,
     * with HOME and XDG_CONFIG_HOME for the default `temporal.toml`), kept as
     * given: the host side resolves them into TLS, API key and profile.
     */
    readonly connectionEnv: Readonly<Record<string, string>>;
  };
  /** As given; relative paths are resolved against the working directory by the Node side. */
  readonly dataDir: string;
  /**
   * The PostgreSQL database that holds every piece of shared state (nonces
   * and outcomes, conversations); unset: the data folder's SQLite files.
   * `setting` is the variable it came from, for messages.
   */
  readonly database: DatabaseConfig | undefined;
  readonly concurrency: { readonly agent: number; readonly tools: number; readonly judge: number };
  /** The agent worker's workflow cache: parked jobs beyond it are evicted and replayed when they wake. */
  readonly workflows: { readonly cacheSize: number; readonly concurrency: number; readonly stickyTimeoutMs: number };
  readonly model: {
    /** Unset means: `airlock dev` starts the replay server; a worker talks to OpenAI's default endpoint. */
    readonly baseUrl: string | undefined;
    readonly apiKey: string | undefined;
    readonly name: string;
    readonly timeoutMs: number;
    /** Characters of conversation sent per turn at most; older tool output is left out first. */
    readonly contextChars: number;
  };
  readonly dev: { readonly uiPort: number; readonly replayScript: string | undefined };
  readonly logLevel: LogLevel;
  /** Unset: the built-in default rules. */
  readonly rulesFile: string | undefined;
  /** Folders the tools may touch; unset: the tools config's `roots`, else `<dataDir>/sandbox`. */
  readonly roots: readonly string[] | undefined;
  /** The tools config file (YAML): roots, services, hosts and commands the tools may touch; unset: file tools only. */
  readonly toolsConfigFile: string | undefined;
  /** The machine a tools worker acts on, when the tools config lists several (`machines:`); its queue is `airlock-tools.<machine>`. */
  readonly machine: string | undefined;
  /** AIRLOCK_BUILD_ID: this build's Worker Deployment version; default: package version plus a hash of the workflow bundle. */
  readonly buildId: string | undefined;
  /**
   * How long what finished jobs leave behind is kept before workers remove
   * it: outcome rows, conversations, expired invites (`finishedMs`), audit
   * events (`auditMs`).
   */
  readonly retention: { readonly finishedMs: number; readonly auditMs: number };
  readonly grants: {
    /** Agent side; unset: `<dataDir>/keys/grant-ed25519.pem` (created on first start). */
    readonly privateKeyFile: string | undefined;
    /** Tools side; unset: `<dataDir>/keys/grant-ed25519.pub.pem`. */
    readonly publicKeyFile: string | undefined;
    readonly ttlMs: number;
  };
  /** Default reviewer name for `airlock approve/deny`. */
  readonly reviewer: string | undefined;
  /** Agent side: reviewer name → Ed25519 public key file, for signed decisions. */
  readonly reviewerKeysFile: string | undefined;
  /** CLI side: the reviewer's Ed25519 private key (PEM) used by `--sign` when no file is given. */
  readonly reviewerKeyFile: string | undefined;
  readonly codec: {
    /** Payload encryption keys; unset: `<dataDir>/keys/codec.yaml` when it exists, else no encryption. */
    readonly keysFile: string | undefined;
    /** `auto`: workers refuse to write plain payloads into a Temporal server on another machine; `off`: they may. */
    readonly mode: 'auto' | 'off';
    /** Where `airlock codec-server` (and `airlock dev --codec`) listens. */
    readonly port: number;
    /** The Web UI allowed to call the codec server; unset: `airlock dev`'s own UI. */
    readonly uiOrigin: string | undefined;
  };
  /** Where a worker process serves Prometheus metrics (`/metrics`); unset: no metrics endpoint. */
  readonly metrics: { readonly address: string | undefined };
  /** Agent side: where job events are sent (parked, expired, decided, notify_admin); no endpoints: none are sent. */
  readonly notify: {
    readonly endpoints: readonly NotifyEndpoint[];
    /** Attempts per endpoint and event before the failure is audited. */
    readonly attempts: number;
    /** The wait after the first failed attempt, doubling after each further one. */
    readonly backoffMs: number;
    /** How long one attempt may take. */
    readonly timeoutMs: number;
    /** The Temporal Web UI that links open (default: `airlock dev`'s UI on this machine). */
    readonly webUiUrl: string;
    /** An approval page to link to, when one is served; unset: notifications link to the Web UI only. */
    readonly approvalPageUrl: string | undefined;
  };
  /**
   * `airlock inbox`: where it listens, and whether it serves HTTPS itself
   * with a certificate from its own local CA (`--tls`); its public URL is
   * `notify.approvalPageUrl`, else `http(s)://localhost:<port>`.
   */
  readonly inbox: { readonly listen: string; readonly tls: boolean };
  /** TEST ONLY (AIRLOCK_TEST_CRASH_AT): where a tools worker's `execute` stops and waits to be killed; never set it in production. */
  readonly testCrashAt: 'after-consume' | 'after-effect' | 'mid-write' | `mid-batch:${number}` | `mid-undo:${number}` | undefined;
  readonly judge: {
    /** Defaults to the model endpoint. */
    readonly baseUrl: string | undefined;
    readonly apiKey: string | undefined;
    /** Defaults to AIRLOCK_MODEL. */
    readonly model: string;
    readonly timeoutMs: number;
  };
}

/** The names of every variable airlock reads, for documentation and tests. */
export const configVariableNames = Object.keys(variables) as Array<keyof Variables>;

/** The Temporal CLI's connection variables, as given. */
function connectionEnvOf(env: Env): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && (name.startsWith('TEMPORAL_') || name === 'HOME' || name === 'XDG_CONFIG_HOME')) kept[name] = value;
  }
  return kept;
}

export function parseConfig(env: Env): AirlockConfig {
  const problems: Array<{ variable: string; message: string }> = [];
  const parsed: Partial<Record<keyof Variables, unknown>> = {};
  for (const name of configVariableNames) {
    const raw = env[name];
    // An empty variable is treated as unset, as shells commonly export them that way.
    const result = variables[name].safeParse(raw === '' ? undefined : raw);
    if (result.success) {
      parsed[name] = result.data;
    } else {
      const message = result.error.issues[0]?.message ?? 'invalid value';
      const shown = raw === undefined ? raw : (shownAs[name]?.(raw) ?? raw);
      problems.push({ variable: name, message: `${message} (got ${JSON.stringify(shown)})` });
    }
  }
  const both = env.AIRLOCK_DATABASE_URL && env.AIRLOCK_CONTENT_DB;
  if (both && env.AIRLOCK_DATABASE_URL !== env.AIRLOCK_CONTENT_DB) {
    problems.push({ variable: 'AIRLOCK_CONTENT_DB', message: 'is the earlier name of AIRLOCK_DATABASE_URL, which is set to another database; unset AIRLOCK_CONTENT_DB' });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const p = parsed as Parsed;
  const databaseUrl = p.AIRLOCK_DATABASE_URL ?? p.AIRLOCK_CONTENT_DB;
  const baseUrl = p.OPENAI_BASE_URL;
  return {
    temporal: { address: p.TEMPORAL_ADDRESS, namespace: p.TEMPORAL_NAMESPACE, connectionEnv: connectionEnvOf(env) },
    dataDir: p.AIRLOCK_DATA_DIR,
    database:
      databaseUrl === undefined
        ? undefined
        : {
            url: databaseUrl,
            setting: p.AIRLOCK_DATABASE_URL === undefined ? 'AIRLOCK_CONTENT_DB' : 'AIRLOCK_DATABASE_URL',
            poolSize: p.AIRLOCK_DATABASE_POOL,
            statementTimeoutMs: p.AIRLOCK_DATABASE_STATEMENT_TIMEOUT,
          },
    concurrency: {
      agent: p.AIRLOCK_AGENT_CONCURRENCY,
      tools: p.AIRLOCK_TOOLS_CONCURRENCY,
      judge: p.AIRLOCK_JUDGE_CONCURRENCY,
    },
    workflows: { cacheSize: p.AIRLOCK_WORKFLOW_CACHE, concurrency: p.AIRLOCK_WORKFLOW_CONCURRENCY, stickyTimeoutMs: p.AIRLOCK_STICKY_TIMEOUT },
    model: { baseUrl, apiKey: p.OPENAI_API_KEY, name: p.AIRLOCK_MODEL, timeoutMs: p.AIRLOCK_MODEL_TIMEOUT_MS, contextChars: p.AIRLOCK_MODEL_CONTEXT_CHARS },
    dev: { uiPort: p.AIRLOCK_UI_PORT, replayScript: p.AIRLOCK_REPLAY_SCRIPT },
    logLevel: p.AIRLOCK_LOG_LEVEL,
    rulesFile: p.AIRLOCK_RULES_FILE,
    roots: p.AIRLOCK_ROOTS,
    toolsConfigFile: p.AIRLOCK_TOOLS_CONFIG,
    machine: p.AIRLOCK_MACHINE,
    buildId: p.AIRLOCK_BUILD_ID,
    retention: { finishedMs: p.AIRLOCK_RETENTION, auditMs: p.AIRLOCK_AUDIT_RETENTION },
    grants: {
      privateKeyFile: p.AIRLOCK_GRANT_KEY,
      publicKeyFile: p.AIRLOCK_GRANT_PUBLIC_KEY,
      ttlMs: p.AIRLOCK_GRANT_TTL,
    },
    reviewer: p.AIRLOCK_REVIEWER,
    reviewerKeysFile: p.AIRLOCK_REVIEWER_KEYS,
    reviewerKeyFile: p.AIRLOCK_REVIEWER_KEY,
    codec: { keysFile: p.AIRLOCK_CODEC_KEYS, mode: p.AIRLOCK_CODEC, port: p.AIRLOCK_CODEC_PORT, uiOrigin: p.AIRLOCK_CODEC_UI_ORIGIN },
    metrics: { address: p.AIRLOCK_METRICS_ADDRESS },
    notify: {
      endpoints: p.AIRLOCK_NOTIFY_URLS ?? [],
      attempts: p.AIRLOCK_NOTIFY_ATTEMPTS,
      backoffMs: p.AIRLOCK_NOTIFY_BACKOFF,
      timeoutMs: p.AIRLOCK_NOTIFY_TIMEOUT,
      webUiUrl: p.AIRLOCK_WEB_UI_URL ?? `http://localhost:${p.AIRLOCK_UI_PORT}`,
      approvalPageUrl: p.AIRLOCK_APPROVAL_PAGE_URL,
    },
    inbox: { listen: p.AIRLOCK_INBOX_LISTEN, tls: p.AIRLOCK_INBOX_TLS },
    testCrashAt: p.AIRLOCK_TEST_CRASH_AT,
    judge: {
      baseUrl: p.AIRLOCK_JUDGE_BASE_URL ?? baseUrl,
      apiKey: p.AIRLOCK_JUDGE_API_KEY ?? p.OPENAI_API_KEY,
      model: p.AIRLOCK_JUDGE_MODEL ?? p.AIRLOCK_MODEL,
      timeoutMs: p.AIRLOCK_JUDGE_TIMEOUT_MS,
    },
  };
}

/**
 * Checked by the processes that call a model (agent and judge workers): a
 * hosted endpoint needs a key, a local OpenAI-compatible server may not.
 */
export function checkModelEndpoint(config: AirlockConfig, which: 'model' | 'judge' = 'model'): void {
  const endpoint = which === 'model' ? config.model : config.judge;
  if (endpoint.baseUrl === undefined && endpoint.apiKey === undefined) {
    const [url, key] = which === 'model' ? ['OPENAI_BASE_URL', 'OPENAI_API_KEY'] : ['AIRLOCK_JUDGE_BASE_URL', 'AIRLOCK_JUDGE_API_KEY'];
    throw new ConfigError([
      {
        variable: key,
        message: `required when ${url} is not set; set ${url} to an OpenAI-compatible endpoint (or run \`airlock dev\`, which starts the local replay server)`,
      },
    ]);
  }
}
