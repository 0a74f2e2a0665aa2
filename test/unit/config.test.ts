import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkModelEndpoint, configVariableNames, parseConfig } from '../../core/config/config';
import { ConfigError } from '../../core/util/errors';

function problem(env: Record<string, string>): string {
  try {
    parseConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

test('defaults describe the embedded stack', () => {
  const config = parseConfig({});
  expect(config.temporal).toEqual({ address: '127.0.0.1:7233', namespace: 'default', connectionEnv: {} });
  expect(config.dataDir).toBe('.airlock');
  expect(config.concurrency).toEqual({ agent: 10, tools: 4, judge: 2 });
  expect(config.model.baseUrl).toBeUndefined();
  expect(config.grants.ttlMs).toBe(15 * 60_000);
  expect(config.roots).toBeUndefined();
});

test.each([
  ['TEMPORAL_ADDRESS', 'not an address', /TEMPORAL_ADDRESS: expected host:port, for example 127\.0\.0\.1:7233 \(got "not an address"\)/],
  ['TEMPORAL_ADDRESS', 'localhost:99999', /TEMPORAL_ADDRESS: port must be between 1 and 65535/],
  ['TEMPORAL_NAMESPACE', 'a b', /TEMPORAL_NAMESPACE: expected a namespace name/],
  ['AIRLOCK_TOOLS_CONCURRENCY', '0', /AIRLOCK_TOOLS_CONCURRENCY: expected a whole number between 1 and 1000 \(got "0"\)/],
  ['AIRLOCK_AGENT_CONCURRENCY', 'ten', /AIRLOCK_AGENT_CONCURRENCY: expected a whole number/],
  ['OPENAI_BASE_URL', 'ftp://x', /OPENAI_BASE_URL: expected an http\(s\) URL/],
  ['AIRLOCK_LOG_LEVEL', 'loud', /AIRLOCK_LOG_LEVEL: expected one of error, warn, info, debug/],
  ['AIRLOCK_GRANT_TTL', 'soon', /AIRLOCK_GRANT_TTL: expected a duration/],
  ['AIRLOCK_ROOTS', 'relative/path', /AIRLOCK_ROOTS: every root must be an absolute path/],
  ['AIRLOCK_UI_PORT', '70000', /AIRLOCK_UI_PORT: expected a whole number between 1 and 65535/],
  ['AIRLOCK_CONTENT_DB', 'mysql://db.lan/airlock', /AIRLOCK_CONTENT_DB: expected a PostgreSQL URL \(postgres:\/\/ or postgresql:\/\/\)/],
  ['AIRLOCK_CONTENT_DB', 'db.lan:5432', /AIRLOCK_CONTENT_DB: expected a PostgreSQL URL/],
  ['AIRLOCK_CONTENT_DB', 'postgres://db.lan:port/airlock', /AIRLOCK_CONTENT_DB: expected a PostgreSQL URL/],
  ['AIRLOCK_METRICS_ADDRESS', '9464', /AIRLOCK_METRICS_ADDRESS: expected IP:port to listen on, for example 127\.0\.0\.1:9464/],
  ['AIRLOCK_METRICS_ADDRESS', 'localhost:9464', /AIRLOCK_METRICS_ADDRESS: expected IP:port/],
  ['AIRLOCK_METRICS_ADDRESS', '127.0.0.1:0', /AIRLOCK_METRICS_ADDRESS: expected IP:port/],
  ['AIRLOCK_METRICS_ADDRESS', '256.1.1.1:9464', /AIRLOCK_METRICS_ADDRESS: expected IP:port/],
  ['AIRLOCK_METRICS_ADDRESS', '[::1::2]:9464', /AIRLOCK_METRICS_ADDRESS: expected IP:port/],
  ['AIRLOCK_METRICS_ADDRESS', 'http://127.0.0.1:9464', /AIRLOCK_METRICS_ADDRESS: expected IP:port/],
])('%s=%s is refused with a message naming the variable', (variable, value, message) => {
  expect(problem({ [variable]: value })).toMatch(message);
});

test('every bad variable is listed on one line', () => {
  const message = problem({ TEMPORAL_ADDRESS: 'x', AIRLOCK_LOG_LEVEL: 'loud' });
  expect(message.split('\n')).toHaveLength(1);
  expect(message).toMatch(/TEMPORAL_ADDRESS: .*; AIRLOCK_LOG_LEVEL: /);
});

test('values are parsed to their types; empty means unset', () => {
  const config = parseConfig({
    TEMPORAL_ADDRESS: 'temporal.lan:7233',
    AIRLOCK_TOOLS_CONCURRENCY: '8',
    AIRLOCK_GRANT_TTL: '1h30m',
    AIRLOCK_ROOTS: '/srv/media:/srv/backups',
    OPENAI_BASE_URL: '',
  });
  expect(config.temporal.address).toBe('temporal.lan:7233');
  expect(config.concurrency.tools).toBe(8);
  expect(config.grants.ttlMs).toBe(90 * 60_000);
  expect(config.roots).toEqual(['/srv/media', '/srv/backups']);
  expect(config.model.baseUrl).toBeUndefined();
});

test('shared state is in the data folder unless AIRLOCK_DATABASE_URL (or its earlier name AIRLOCK_CONTENT_DB) names a PostgreSQL database', () => {
  expect(parseConfig({}).database).toBeUndefined();
  expect(parseConfig({ AIRLOCK_DATABASE_URL: '', AIRLOCK_CONTENT_DB: '' }).database).toBeUndefined();
  for (const url of ['postgres://airlock:pw@db.lan:5432/airlock', 'postgresql://airlock@db.lan/airlock?sslmode=verify-full']) {
    expect(parseConfig({ AIRLOCK_DATABASE_URL: url }).database).toEqual({ url, setting: 'AIRLOCK_DATABASE_URL', poolSize: 4, statementTimeoutMs: 15_000 });
    expect(parseConfig({ AIRLOCK_CONTENT_DB: url }).database).toMatchObject({ url, setting: 'AIRLOCK_CONTENT_DB' });
    expect(parseConfig({ AIRLOCK_DATABASE_URL: url, AIRLOCK_CONTENT_DB: url }).database).toMatchObject({ url, setting: 'AIRLOCK_DATABASE_URL' });
  }
  expect(parseConfig({ AIRLOCK_DATABASE_URL: 'postgres://db.lan/a', AIRLOCK_DATABASE_POOL: '12', AIRLOCK_DATABASE_STATEMENT_TIMEOUT: '2m' }).database).toMatchObject({
    poolSize: 12,
    statementTimeoutMs: 120_000,
  });
});

test('two different databases under the two names are refused, naming the variable to unset', () => {
  expect(problem({ AIRLOCK_DATABASE_URL: 'postgres://db.lan/a', AIRLOCK_CONTENT_DB: 'postgres://db.lan/b' })).toContain(
    'AIRLOCK_CONTENT_DB: is the earlier name of AIRLOCK_DATABASE_URL, which is set to another database; unset AIRLOCK_CONTENT_DB',
  );
});

test('a bad database URL is reported without its password, under either name', () => {
  for (const name of ['AIRLOCK_DATABASE_URL', 'AIRLOCK_CONTENT_DB']) {
    const message = problem({ [name]: 'postgres://airlock:hunter2-pw@db.lan:port/airlock?password=hunter2-pw' });
    expect(message).toContain(`${name}: `);
    expect(message).toContain('(got "postgres://airlock:***@db.lan:port/airlock?password=***")');
    expect(message).not.toContain('hunter2');
  }
});

test('metrics are off unless AIRLOCK_METRICS_ADDRESS gives an IP and a port to listen on', () => {
  expect(parseConfig({}).metrics).toEqual({ address: undefined });
  expect(parseConfig({ AIRLOCK_METRICS_ADDRESS: '' }).metrics).toEqual({ address: undefined });
  for (const address of ['127.0.0.1:9464', '0.0.0.0:9090', '[::]:9464', '[::1]:65535']) {
    expect(parseConfig({ AIRLOCK_METRICS_ADDRESS: address }).metrics).toEqual({ address });
  }
});

test('a model caller needs an endpoint or a key', () => {
  expect(() => checkModelEndpoint(parseConfig({}))).toThrow(/OPENAI_API_KEY: required when OPENAI_BASE_URL is not set/);
  expect(() => checkModelEndpoint(parseConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:8080/v1' }))).not.toThrow();
  expect(() => checkModelEndpoint(parseConfig({ OPENAI_API_KEY: 'sk-abc' }))).not.toThrow();
  // The judge follows the model endpoint unless it has its own.
  expect(() => checkModelEndpoint(parseConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:8080/v1' }), 'judge')).not.toThrow();
  expect(() => checkModelEndpoint(parseConfig({}), 'judge')).toThrow(/AIRLOCK_JUDGE_API_KEY: required when AIRLOCK_JUDGE_BASE_URL is not set/);
  expect(parseConfig({ OPENAI_BASE_URL: 'http://a:1/v1', AIRLOCK_JUDGE_BASE_URL: 'http://b:2/v1', AIRLOCK_JUDGE_MODEL: 'small' }).judge).toMatchObject({
    baseUrl: 'http://b:2/v1',
    model: 'small',
    timeoutMs: 3000,
  });
});

test('the configuration guide documents every configuration variable', () => {
  const readme = readFileSync(join(__dirname, '..', '..', 'docs', 'configuration.md'), 'utf8');
  for (const name of configVariableNames) expect(readme).toContain(`\`${name}\``);
});

test('retention: 30 days for what finished jobs leave, a year for audit events, at least a day each', () => {
  expect(parseConfig({}).retention).toEqual({ finishedMs: 30 * 86_400_000, auditMs: 365 * 86_400_000 });
  expect(parseConfig({ AIRLOCK_RETENTION: '7d', AIRLOCK_AUDIT_RETENTION: '90d' }).retention).toEqual({ finishedMs: 7 * 86_400_000, auditMs: 90 * 86_400_000 });
  expect(problem({ AIRLOCK_RETENTION: '2h' })).toContain('AIRLOCK_RETENTION: at least 1d');
  expect(problem({ AIRLOCK_AUDIT_RETENTION: 'forever' })).toContain('AIRLOCK_AUDIT_RETENTION: expected a duration');
});
