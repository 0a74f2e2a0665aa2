import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveTemporalCli, TEMPORAL_CLI_MODULE, TEMPORAL_CLI_VERSION } from '../../ops/dev/temporal-cli';

let dir: string;
const lines: string[] = [];
const log = (line: string) => lines.push(line);

function executable(path: string, body: string): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-cli-'));
  lines.length = 0;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('TEMPORAL_CLI wins, and a bad value is named', async () => {
  const fake = executable(join(dir, 'mine', 'temporal'), 'exit 0');
  executable(join(dir, 'bin', 'temporal'), 'exit 0');
  expect(await resolveTemporalCli({ env: { TEMPORAL_CLI: fake, PATH: join(dir, 'bin') }, cacheDir: join(dir, 'cache'), log })).toEqual({
    path: fake,
    source: 'TEMPORAL_CLI',
  });
  await expect(resolveTemporalCli({ env: { TEMPORAL_CLI: join(dir, 'nope') }, cacheDir: join(dir, 'cache'), log })).rejects.toThrow(
    /^TEMPORAL_CLI: ".*nope" is not an executable file/,
  );
});

test('then temporal on PATH, then the cached build; a user with the CLI never builds', async () => {
  const onPath = executable(join(dir, 'bin', 'temporal'), 'exit 0');
  const cached = executable(join(dir, 'cache', 'temporal'), 'exit 0');
  expect(await resolveTemporalCli({ env: { PATH: join(dir, 'bin') }, cacheDir: join(dir, 'cache'), log })).toEqual({ path: onPath, source: 'PATH' });
  expect(await resolveTemporalCli({ env: { PATH: join(dir, 'empty') }, cacheDir: join(dir, 'cache'), log })).toEqual({ path: cached, source: 'cache' });
  expect(lines).toEqual([]);
});

test('otherwise go install builds it once into the cache, saying so', async () => {
  const record = join(dir, 'go-args');
  // A stand-in for `go` (a Node script, so it needs nothing on PATH): records its call, drops a binary into GOBIN.
  const goPath = join(dir, 'gobin', 'go');
  mkdirSync(join(dir, 'gobin'));
  writeFileSync(
    goPath,
    `#!${process.execPath}\nconst fs = require('node:fs');\n` +
      `fs.writeFileSync(${JSON.stringify(record)}, process.argv.slice(2).join(' ') + '\\nGOBIN=' + process.env.GOBIN);\n` +
      `fs.writeFileSync(process.env.GOBIN + '/temporal', '#!/bin/sh\\n', { mode: 0o755 });\n`,
  );
  chmodSync(goPath, 0o755);
  const env = { PATH: join(dir, 'gobin') };
  const cacheDir = join(dir, 'cache');
  expect(await resolveTemporalCli({ env, cacheDir, log })).toEqual({ path: join(cacheDir, 'temporal'), source: 'built' });
  const called = readFileSync(record, 'utf8');
  expect(called).toContain(`install ${TEMPORAL_CLI_MODULE}@${TEMPORAL_CLI_VERSION}`);
  expect(called).toMatch(/GOBIN=.*cache\/\.build-/);
  expect(lines[0]).toMatch(/building the Temporal CLI v1\.5\.1 .*first time only/);
  // The scratch folder is gone, the binary stays; the second call reuses it.
  expect(existsSync(join(cacheDir, 'temporal'))).toBe(true);
  expect(await resolveTemporalCli({ env, cacheDir, log })).toMatchObject({ source: 'cache' });
});

test('a failed build and a machine without Go get one clear message each', async () => {
  executable(join(dir, 'gobin', 'go'), 'echo "go: module lookup disabled" >&2; exit 1');
  await expect(resolveTemporalCli({ env: { PATH: join(dir, 'gobin') }, cacheDir: join(dir, 'cache'), log })).rejects.toThrow(
    /building the Temporal CLI v1\.5\.1 with Go failed \(exit 1, .*\): go: module lookup disabled; install the Temporal CLI yourself/,
  );
  expect(existsSync(join(dir, 'cache', 'temporal'))).toBe(false);
  await expect(resolveTemporalCli({ env: { PATH: join(dir, 'empty') }, cacheDir: join(dir, 'cache'), log })).rejects.toThrow(
    /^no Temporal CLI found: install it .* or install Go so airlock can build/,
  );
});
