import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '../../core/config/config';
import { availabilityOf } from '../../core/config/tools/tools-config';
import { loadToolsSetup, parseToolsConfig, ToolsConfigError } from '../../host/config/tools-config-file';
import { repoRoot } from '../helpers/processes';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-tools-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function setupFor(text: string, env: Record<string, string> = {}) {
  const file = join(dir, 'tools.yaml');
  writeFileSync(file, text);
  return loadToolsSetup(parseConfig({ AIRLOCK_DATA_DIR: join(dir, 'data'), AIRLOCK_TOOLS_CONFIG: file, ...env }));
}

/** The message a bad file gets, or a failure when it loads. */
async function problem(text: string, env: Record<string, string> = {}): Promise<string> {
  const err = await setupFor(text, env).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ToolsConfigError)) throw new Error(`expected a ToolsConfigError, got ${String(err)}`);
  return err.message;
}

test("the configuration guide's home-server example is a valid tools config offering every capability", () => {
  const readme = readFileSync(join(repoRoot, 'docs', 'configuration.md'), 'utf8');
  const block = /```yaml\n(# tools\.yaml[\s\S]*?)```/.exec(readme)?.[1];
  expect(block).toBeDefined();
  const config = parseToolsConfig(parseYaml(block ?? ''), 'docs/configuration.md');
  expect(config.roots).toEqual(['/srv/share']);
  expect(config.services?.jellyfin).toEqual({ adapter: 'docker', container: 'jellyfin', socket: '/var/run/docker.sock', stopTimeoutSeconds: 10 });
  expect(config.services?.samba).toEqual({ adapter: 'systemd', unit: 'smbd.service', timeoutMs: 90_000 });
  expect(config.commands?.backup).toEqual({ path: '/usr/local/bin/backup-share', timeoutSeconds: 60, maxTimeoutSeconds: 60, killGraceSeconds: 2, maxOutputBytes: 65536, env: {} });
  expect(availabilityOf(config)).toEqual({ files: true, services: true, http: true, commands: true });
});

test('a valid file gives the roots and the tools it can run; without services no service tool is available', async () => {
  const withServices = await setupFor('version: 1\nroots: [/srv/share]\nservices:\n  web: { adapter: process, command: [/usr/bin/web, --port, "8080"], pidFile: /run/web.pid }\n');
  expect(withServices.roots).toEqual(['/srv/share']);
  expect(withServices.availableTools).toContain('service_status');
  expect(withServices.availableTools).toContain('fs_read');

  const filesOnly = await setupFor('version: 1\n');
  expect(filesOnly.availability).toEqual({ files: true, services: false, http: false, commands: false });
  expect(filesOnly.availableTools).not.toContain('service_status');
  expect(filesOnly.availableTools).toEqual(['fs_list', 'fs_read', 'fs_stat', 'fs_write', 'fs_move', 'fs_move_many', 'fs_delete', 'fs_chmod', 'fs_undo']);
  // No file at all: the roots come from AIRLOCK_ROOTS as before, and only the file tools are offered.
  const none = await loadToolsSetup(parseConfig({ AIRLOCK_DATA_DIR: join(dir, 'data'), AIRLOCK_ROOTS: '/srv/a:/srv/b' }));
  expect(none).toMatchObject({ file: undefined, roots: ['/srv/a', '/srv/b'] });
  expect(none.availableTools).toEqual(filesOnly.availableTools);
});

test('an invalid file is refused with one line naming the file, the field and what to do', async () => {
  const file = join(dir, 'tools.yaml');
  const bad = await problem('version: 1\nservices:\n  jellyfin: { adapter: podman, container: jellyfin }\n');
  expect(bad).toContain(`tools config ${file} (AIRLOCK_TOOLS_CONFIG) is invalid`);
  expect(bad).toMatch(/services\.jellyfin(\.adapter)?: expected adapter: docker, systemd or process/);
  expect(bad).toContain('Fix the file (docs/configuration.md shows an example) or unset AIRLOCK_TOOLS_CONFIG');
  expect(bad.split('\n')).toHaveLength(1);

  expect(await problem('version: 1\nservices:\n  web: { adapter: process, command: [web], pidFile: run/web.pid }\n')).toContain(
    'services.web.pidFile: pidFile must be an absolute path',
  );
  expect(await problem('version: 1\nservice:\n  web: {}\n')).toContain('(top level): unknown field(s) service');
  expect(await problem('version: 1\nservices:\n  Jelly Fin: { adapter: docker, container: jellyfin }\n')).toMatch(/services(\.Jelly Fin)?: bad name: expected a service name/);
  expect(await problem('services: {}\n')).toContain('version: expected version: 1');
  expect(await problem('version: 1\ncommands:\n  backup: { path: backup.sh }\n')).toContain("commands.backup.path: expected the program's absolute path");
  expect(await problem('version: 1\nhosts: { allow: [] }\n')).toContain('hosts.allow: list at least one host');
  expect(await problem('version: [1\n')).toContain('(file): not valid YAML/JSON');
  expect(await problem('version: 1\nroots: [/srv/share]\n', { AIRLOCK_ROOTS: '/srv/other' })).toContain('roots: roots are also set in AIRLOCK_ROOTS; keep them in one place');
});

test('a missing file is refused naming it', async () => {
  const missing = join(dir, 'nope.yaml');
  const err = await loadToolsSetup(parseConfig({ AIRLOCK_DATA_DIR: join(dir, 'data'), AIRLOCK_TOOLS_CONFIG: missing })).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ToolsConfigError);
  expect(String((err as Error).message)).toContain(`tools config ${missing} (AIRLOCK_TOOLS_CONFIG) is invalid: (file): cannot read it (ENOENT)`);
});
