import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../core/config/config';
import { machineTableOf } from '../../core/config/tools/tools-config';
import { planBatch } from '../../core/job/batch-plan';
import { callContext } from '../../core/job/call-context';
import { preflight } from '../../core/job/preflight';
import { evaluateCall } from '../../core/policy/evaluate';
import { buildSnapshot } from '../../core/policy/snapshot';
import { machineOfQueue, toolsQueueFor } from '../../core/temporal/task-queues';
import { ownerOf, type MachineTable } from '../../core/tools/machines';
import { loadToolsSetup, machineSetup, parseToolsConfig, snapshotSettingsOf, ToolsConfigError } from '../../host/config/tools-config-file';
import { checkRuleMachines, parseRulesDocument, RulesFileError } from '../../host/config/rules-file';
import { parse as parseYaml } from 'yaml';

const twoMachines = `version: 1
machines:
  nas:
    roots: [/srv/share]
    services:
      samba: { adapter: systemd, unit: smbd.service }
    commands:
      backup: { path: /usr/local/bin/backup-share }
  media:
    roots: [/srv/media, /srv/share-media]
    services:
      jellyfin: { adapter: docker, container: jellyfin }
    hosts:
      allow: [api.themoviedb.org]
      allowInternal: [192.168.1.0/24, "*.home.arpa"]
`;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-machines-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function envFor(text: string, env: Record<string, string> = {}) {
  const file = join(dir, 'tools.yaml');
  writeFileSync(file, text);
  return parseConfig({ AIRLOCK_DATA_DIR: join(dir, 'data'), AIRLOCK_TOOLS_CONFIG: file, ...env });
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ToolsConfigError)) throw new Error(`expected a ToolsConfigError, got ${String(err)}`);
  return err.message;
}

const table = (): MachineTable => {
  const t = machineTableOf(parseToolsConfig(parseYaml(twoMachines), 'tools.yaml'));
  if (t === undefined) throw new Error('expected machines');
  return t;
};

describe('which machine owns a call', () => {
  test.each<[string, Record<string, unknown>, string]>([
    ['fs_delete', { path: '/srv/share/old.tar' }, 'nas'],
    ['fs_write', { path: '/srv/media/films/list.txt', content: 'x' }, 'media'],
    // A root that shares a prefix with another machine's root is not inside it.
    ['fs_read', { path: '/srv/share-media/a' }, 'media'],
    ['fs_move', { from: '/srv/share/a', to: '/srv/share/b' }, 'nas'],
    ['fs_move_many', { moves: [{ from: '/srv/media/a', to: '/srv/media/b' }] }, 'media'],
    ['service_restart', { service: 'jellyfin' }, 'media'],
    ['service_stop', { service: 'samba' }, 'nas'],
    ['command_run', { argv: ['backup', '--all'] }, 'nas'],
    ['command_run', { argv: ['backup'], cwd: '/srv/share/x' }, 'nas'],
    ['http_request', { url: 'https://api.themoviedb.org/3/movie/1' }, 'media'],
    ['http_request', { url: 'http://192.168.1.20:8096/health' }, 'media'],
    ['http_request', { url: 'http://jellyfin.home.arpa/' }, 'media'],
  ])('%s %j → %s', (tool, args, machine) => {
    expect(ownerOf(table(), tool, args)).toEqual({ kind: 'machine', machine });
  });

  test.each<[string, Record<string, unknown>, RegExp]>([
    ['fs_read', { path: '/etc/passwd' }, /"\/etc\/passwd" is under no machine's roots \(nas: \/srv\/share; media: \/srv\/media, \/srv\/share-media\)/],
    ['fs_move', { from: '/srv/share/a', to: '/srv/media/a' }, /spans two machines: "\/srv\/share\/a" is on nas, "\/srv\/media\/a" on media/],
    ['fs_move_many', { moves: [{ from: '/srv/media/a', to: '/srv/share/a' }] }, /spans two machines/],
    ['service_restart', { service: 'plex' }, /no machine lists the service "plex" \(nas: samba; media: jellyfin\)/],
    ['command_run', { argv: ['rsync'] }, /no machine lists the command "rsync"/],
    ['command_run', { argv: ['backup'], cwd: '/srv/media' }, /the command "backup" is on nas but its folder is on media/],
    ['http_request', { url: 'https://example.com/' }, /no machine's hosts allow "example.com"/],
    ['http_request', { url: 'http://192.168.2.1/' }, /no machine's hosts allow/],
  ])('%s %j is refused', (tool, args, reason) => {
    const owner = ownerOf(table(), tool, args);
    expect(owner.kind).toBe('none');
    expect(owner.kind === 'none' ? owner.reason : '').toMatch(reason);
  });

  test('a megabyte path is not echoed back whole', () => {
    const owner = ownerOf(table(), 'fs_read', { path: `/x/${'a'.repeat(1_000_000)}` });
    expect(owner.kind === 'none' ? owner.reason.length : 0).toBeLessThan(400);
  });

  test('one machine (no machines:) routes everything to the plain tools queue', () => {
    expect(ownerOf(undefined, 'fs_read', { path: '/anywhere' })).toEqual({ kind: 'single' });
    expect(toolsQueueFor(undefined)).toBe('airlock-tools');
    expect(toolsQueueFor('nas')).toBe('airlock-tools.nas');
    expect(machineOfQueue('airlock-tools.nas')).toBe('nas');
    expect(machineOfQueue('airlock-tools')).toBeUndefined();
    expect(machineOfQueue('airlock-agent')).toBeUndefined();
  });
});

describe('the tools config with machines', () => {
  test('the agent sees every machine; each tools worker only its own section', async () => {
    const config = envFor(twoMachines);
    const setup = await loadToolsSetup(config);
    expect(setup.roots).toEqual(['/srv/share', '/srv/media', '/srv/share-media']);
    expect(setup.availability).toEqual({ files: true, services: true, http: true, commands: true });
    expect(setup.machines?.map((m) => m.name)).toEqual(['nas', 'media']);
    expect(snapshotSettingsOf(config, setup).machines).toEqual(setup.machines);

    const nas = machineSetup(setup, envFor(twoMachines, { AIRLOCK_MACHINE: 'nas' }));
    expect(nas).toMatchObject({ machine: 'nas', roots: ['/srv/share'], availability: { files: true, services: true, http: false, commands: true } });
    expect(Object.keys(nas.section?.services ?? {})).toEqual(['samba']);
    const media = machineSetup(setup, envFor(twoMachines, { AIRLOCK_MACHINE: 'media' }));
    expect(media).toMatchObject({ machine: 'media', availability: { services: true, http: true, commands: false } });
  });

  test('a tools worker must say which machine it is, and only a listed one', async () => {
    const setup = await loadToolsSetup(envFor(twoMachines));
    expect(() => machineSetup(setup, envFor(twoMachines))).toThrow(/lists machines nas, media and AIRLOCK_MACHINE is not set; set AIRLOCK_MACHINE/);
    expect(() => machineSetup(setup, envFor(twoMachines, { AIRLOCK_MACHINE: 'nsa' }))).toThrow(/AIRLOCK_MACHINE=nsa is not one of them/);
    const single = await loadToolsSetup(envFor('version: 1\nroots: [/srv/share]\n'));
    expect(() => machineSetup(single, envFor('version: 1\nroots: [/srv/share]\n', { AIRLOCK_MACHINE: 'nas' }))).toThrow(
      /AIRLOCK_MACHINE=nas is set but the tools config lists no machines/,
    );
    // Today's single-machine file stays valid unchanged.
    expect(machineSetup(single, envFor('version: 1\nroots: [/srv/share]\n'))).toMatchObject({ machine: undefined, roots: ['/srv/share'] });
    expect(single.machines).toBeUndefined();
  });

  test('every target has one owner: overlapping roots, shared names and top-level sections are refused', async () => {
    expect(await refusal(loadToolsSetup(envFor('version: 1\nmachines:\n  a: { roots: [/srv] }\n  b: { roots: [/srv/media] }\n')))).toMatch(
      /machines\.a\.roots: \/srv overlaps \/srv\/media of machine b/,
    );
    expect(
      await refusal(
        loadToolsSetup(envFor('version: 1\nmachines:\n  a: { commands: { backup: { path: /bin/true } } }\n  b: { commands: { backup: { path: /bin/false } } }\n')),
      ),
    ).toMatch(/machines\.a\.commands\.backup: machine b lists a command of the same name/);
    expect(await refusal(loadToolsSetup(envFor('version: 1\nroots: [/srv]\nmachines:\n  a: { roots: [/data] }\n')))).toMatch(
      /roots: with machines listed, roots go under each machine/,
    );
    expect(await refusal(loadToolsSetup(envFor('version: 1\nmachines:\n  NAS: { roots: [/srv] }\n')))).toMatch(/expected a machine name/);
    expect(await refusal(loadToolsSetup(envFor('version: 1\nmachines: {}\n')))).toMatch(/list at least one machine/);
    expect(await refusal(loadToolsSetup(envFor(twoMachines, { AIRLOCK_ROOTS: '/srv/x' })))).toMatch(/roots are also set in AIRLOCK_ROOTS/);
  });

  test('AIRLOCK_MACHINE must be a machine name', () => {
    expect(() => parseConfig({ AIRLOCK_MACHINE: 'Not A Name' })).toThrow(/AIRLOCK_MACHINE/);
  });
});

describe('policy and planning on several machines', () => {
  const rules = parseRulesDocument(
    {
      version: 1,
      rules: [{ id: 'media-deletes', version: 1, name: 'deletes on the media box', scope: { tools: ['fs_delete'], machines: ['media'] }, action: 'request_approval' }],
    },
    'test',
  );
  const snap = () => buildSnapshot(rules, 'test', { roots: ['/srv/share', '/srv/media'], judgeModel: 'x', judgeTimeoutMs: 1000, machines: table() });
  const tools = ['fs_delete', 'fs_move'];
  const toolCall = (id: string, name: string, args: Record<string, unknown>) => {
    const c = preflight({ id, name, arguments: JSON.stringify(args) }, tools, ['/srv/share']);
    if (c.kind !== 'tool') throw new Error(`expected a tool call, got ${c.kind}`);
    return c;
  };

  test('a rule scoped to a machine matches only that machine’s calls', () => {
    const s = snap();
    const onMedia = callContext('j', {}, toolCall('c1', 'fs_delete', { path: '/srv/media/a' }), undefined, s.machines);
    const onNas = callContext('j', {}, toolCall('c2', 'fs_delete', { path: '/srv/share/a' }), undefined, s.machines);
    expect(onMedia.machine).toBe('media');
    expect(evaluateCall(s, 'tool.before', onMedia, {}, 0).decision).toBe('require_approval');
    expect(evaluateCall(s, 'tool.before', onNas, {}, 0).decision).toBe('allow');
    // Without machines in the snapshot a machine-scoped rule never matches.
    const single = buildSnapshot(rules, 'test');
    expect(evaluateCall(single, 'tool.before', callContext('j', {}, toolCall('c3', 'fs_delete', { path: '/srv/media/a' }), undefined), {}, 0).decision).toBe('allow');
  });

  test('a call no machine owns, or that spans two, is denied before anything runs; the others are planned as usual', () => {
    const s = snap();
    const calls = [
      toolCall('c1', 'fs_delete', { path: '/etc/hosts' }),
      toolCall('c2', 'fs_move', { from: '/srv/share/a', to: '/srv/media/a' }),
      toolCall('c3', 'fs_delete', { path: '/srv/share/a' }),
    ];
    const evaluations = new Map(calls.map((c) => [c.callId, evaluateCall(s, 'tool.before', callContext('j', {}, c, undefined, s.machines), {}, 0)] as const));
    const memory = { deniedFingerprints: [], redirectedFingerprints: [], approvalRequests: 0, maxApprovalRequests: 5, completionRuleFires: [] };
    const plan = planBatch({ jobId: 'j', scope: {}, snapshot: s, calls, evaluations, memory, ruleCounters: {}, now: 0 });
    expect(plan.calls.map((p) => p.kind)).toEqual(['deny', 'deny', 'run']);
    expect(plan.calls[0]).toMatchObject({ ruleId: null, message: expect.stringMatching(/^Not executed: "\/etc\/hosts" is under no machine's roots/) });
    expect(plan.calls[1]).toMatchObject({ ruleId: null, message: expect.stringMatching(/spans two machines/) });
  });
});

test('a rule scoped to a machine the tools config does not list is refused where the tools config is known, naming the rule', () => {
  const rules = parseRulesDocument(
    { version: 1, rules: [{ id: 'typo', version: 1, name: 'typo', scope: { machines: ['nsa'] }, action: 'audit_only' }] },
    'rules.yaml',
  );
  const snap = buildSnapshot(rules, 'rules.yaml');
  expect(() => checkRuleMachines(snap, ['nas', 'media'])).toThrow(RulesFileError);
  expect(() => checkRuleMachines(snap, ['nas', 'media'])).toThrow(/typo.*scope\.machines.*names machine "nsa", which the tools config does not list \(it lists nas, media\)/);
  expect(() => checkRuleMachines(snap, undefined)).toThrow(/the tools config lists no machines/);
  expect(() => checkRuleMachines(snap, ['nsa'])).not.toThrow();
});
