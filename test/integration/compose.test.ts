import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { readRulesFile } from '../../host/rules-file';
import { isTaskQueueName, TaskQueues, taskQueueNames, type QueueRole } from '../../core/temporal/task-queues';
import { repoRoot } from '../helpers/processes';

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  deploy?: { replicas?: number };
}

const compose = parse(readFileSync(join(repoRoot, 'docker-compose.temporal.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};

test('the stack has PostgreSQL, the Temporal server and the Web UI', () => {
  const images = Object.values(compose.services).map((s) => s.image ?? '');
  expect(images).toEqual(expect.arrayContaining([expect.stringMatching(/^postgres:/), expect.stringMatching(/^temporalio\/auto-setup:/), expect.stringMatching(/^temporalio\/ui:/)]));
});

test('every worker service runs a real per-queue entry point, and every queue has one', async () => {
  const workers = Object.entries(compose.services).filter(([, s]) => s.command?.some((part) => part.startsWith('dist/workers/')));
  const served = new Set<string>();
  for (const [name, service] of workers) {
    const script = service.command!.find((part) => part.startsWith('dist/workers/'))!;
    const queue = script.replace(/^dist\/workers\//, '').replace(/\.js$/, '');
    expect(isTaskQueueName(queue)).toBe(true);
    const source = join(repoRoot, 'workers', `${queue}.ts`);
    expect(existsSync(source)).toBe(true);
    const entry = (await import(source)) as { roles: QueueRole[] };
    expect(entry.roles.map((r) => TaskQueues[r])).toEqual([queue]);
    expect(service.image).toBe('airlock:latest');
    expect(service.deploy?.replicas).toBeGreaterThanOrEqual(1);
    served.add(queue);
    expect(name).toMatch(/^worker-/);
  }
  expect([...served].sort()).toEqual([...taskQueueNames].sort());
});

test('search attributes are registered by the airlock setup command, and the rules file it mounts is valid', async () => {
  const setup = Object.values(compose.services).find((s) => s.command?.includes('setup'));
  expect(setup?.command).toEqual(['node', 'bin/airlock.js', 'setup']);
  expect(setup?.build).toBe('.');
  expect(existsSync(join(repoRoot, 'Dockerfile'))).toBe(true);
  const rules = await readRulesFile(join(repoRoot, 'rules', 'home-server.yaml'));
  expect(rules.rules.map((r) => r.id)).toContain('approve-deletes');
});
