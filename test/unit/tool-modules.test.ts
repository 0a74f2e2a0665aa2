import { z } from 'zod';
import { describeChanges, describeObserved, observedStateSchema, type ObservedState, type ServiceState } from '../../core/tools/observed-state';
import { revalidateWith } from '../../core/tools/compare';
import { lendHost } from '../../core/tools/lend';
import { allTools, availableToolNames, getTool, offeredByDefault } from '../../core/tools/registry';
import { agentJobInputSchema, allowedToolsFor } from '../../core/job/job-input';
import { defineTool, pathTargets, type Prepared } from '../../core/tools/tool-module';

const oldFile = { path: '/srv/a.txt', exists: true, type: 'file', size: 3, mtimeMs: 1, mode: '644', dev: 1, ino: 2, sha256: 'x', entries: null } as const;
const web: ServiceState = { kind: 'service', service: 'web', adapter: 'process', exists: true, identity: 'pid 10', running: true, health: 'unhealthy', status: 'running', facts: {} };

test('observed states recorded before kinds existed parse unchanged; service and subject states parse by kind', () => {
  expect(observedStateSchema.parse(oldFile)).toEqual(oldFile);
  expect(observedStateSchema.parse({ path: '/srv/gone', exists: false })).toEqual({ path: '/srv/gone', exists: false });
  expect(observedStateSchema.parse(web)).toEqual(web);
  const subject = { kind: 'subject', subject: '/usr/local/bin/backup', exists: true, identity: 'ino 77', summary: 'program, 2 KiB', facts: { size: 2048 } };
  expect(observedStateSchema.parse(subject)).toEqual(subject);
  // A file state with a stray kind, or a service without its identity, is no state at all.
  expect(observedStateSchema.safeParse({ ...oldFile, kind: 'file' }).success).toBe(false);
  const { identity: _identity, ...noIdentity } = web;
  expect(observedStateSchema.safeParse(noIdentity).success).toBe(false);
});

test('every registered tool is one module with a schema, a category, its needs and targets', () => {
  for (const tool of allTools()) {
    expect(tool.name).toMatch(/^[a-z][a-z0-9_]*$/);
    expect(tool.parameters).toBeInstanceOf(z.ZodType);
    expect(tool.pathFields.every((f) => tool.targetFields.includes(f))).toBe(true);
  }
  expect(getTool('fs_move')?.targets({ from: '/a', to: '/b', overwrite: false })).toEqual(['/a', '/b']);
  expect(pathTargets(getTool('service_status')!, { service: 'web' })).toEqual([]);
  expect(availableToolNames({ files: true, services: false, http: false, commands: false })).not.toContain('service_status');
  expect(lendHost(getTool('service_status')!, {})).toEqual({ ok: false, missing: ['services'] });
});

test('service changes say what changed; another instance is named as such', () => {
  expect(describeChanges(web, { ...web, identity: 'pid 11' })).toEqual(['web: it is another instance now (pid 10 → pid 11)']);
  expect(describeChanges(web, { ...web, health: 'healthy' })).toEqual(['web: health unhealthy → healthy']);
  expect(describeChanges(web, { path: 'web', exists: false })).toEqual(['web no longer exists']);
  expect(describeObserved(web)).toBe('process running, unhealthy, pid 10');
});

test('revalidation: by default any change refuses; a module may answer "not needed" instead', async () => {
  const now = (state: ObservedState): Prepared => ({ observed: [state], problems: [undefined] });
  const restartLike = defineTool({
    name: 'restart_like',
    description: 'test module',
    category: 'service_control',
    risk: 'medium',
    needs: ['services'],
    parameters: z.strictObject({ service: z.string() }),
    targetFields: ['service'],
    prepare: () => Promise.resolve(now(web)),
    revalidate: (_host, check) => {
      const [then, seen] = [check.approved[0], check.now.observed[0]];
      if (seen !== undefined && 'kind' in seen && seen.kind === 'service' && seen.health === 'healthy') return { kind: 'not_needed', reason: `${seen.service} is healthy again` };
      return then !== undefined && seen !== undefined && describeChanges(then, seen).length > 0 ? { kind: 'changed', reason: 'changed' } : { kind: 'ok' };
    },
    execute: () => Promise.resolve({ ok: true, output: '' }),
  });
  const loan = lendHost(restartLike, { services: { names: ['web'], observe: () => Promise.resolve(web), act: () => Promise.reject(new Error('unused')) } });
  if (!loan.ok) throw new Error('the services capability was not lent');
  const host = loan.host;
  const check = (seen: ServiceState) => ({ args: { service: 'web' }, approved: [web], now: now(seen), targetsThen: ['web'], targetsNow: ['web'] });
  expect(await revalidateWith(restartLike, host, check({ ...web, health: 'healthy' }))).toEqual({ kind: 'not_needed', reason: 'web is healthy again' });
  expect(await revalidateWith(restartLike, host, check(web))).toEqual({ kind: 'ok' });
  const fsDelete = getTool('fs_delete')!;
  expect(await revalidateWith(fsDelete, host, { args: { path: '/srv/a.txt' }, approved: [oldFile], now: now({ ...oldFile, size: 4 }), targetsThen: ['/srv/a.txt'], targetsNow: ['/srv/a.txt'] })).toEqual({
    kind: 'changed',
    reason: 'the target changed since it was approved: /srv/a.txt: size 3 → 4 bytes',
  });
});

test('fs_undo is offered only to a job that names it: a model job, or an MCP agent, with no tools named never gets it', () => {
  const available = availableToolNames({ files: true, services: false, http: false, commands: false });
  expect(available).toContain('fs_undo');
  const job = (tools?: string[]) => agentJobInputSchema.parse({ schemaVersion: 1, goal: 'g', ...(tools !== undefined ? { tools } : {}) });
  expect(allowedToolsFor(job(), available)).not.toContain('fs_undo');
  expect(allowedToolsFor(job(), available)).toContain('fs_delete');
  expect(allowedToolsFor(job(), undefined)).not.toContain('fs_undo');
  expect(allowedToolsFor(job(['fs_undo']), available)).toEqual(['fs_undo']);
  expect(offeredByDefault(['fs_delete', 'fs_undo', 'mcp_notes_add'])).toEqual(['fs_delete', 'mcp_notes_add']);
});
