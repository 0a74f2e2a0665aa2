import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { JobHarness, type RulesInput } from '../helpers/job-harness';
import { clientCallQuery, submitCallUpdate } from '../../workflows/messages';

/**
 * `airlock rules rehearse` on jobs that really ran: the calls come from
 * their histories, and the report lists exactly the decisions other rules
 * would change, with counts per rule.
 */

const firstRules: RulesInput = {
  version: 1,
  rules: [
    { id: 'approve-deletes', version: 1, name: 'Deleting needs approval', scope: { categories: ['delete'] }, action: 'request_approval' },
    { id: 'deny-private', version: 1, name: 'Nothing is written under private/', scope: { tools: ['fs_write'] }, when: { arg: 'path', glob: '**/private/**' }, action: 'deny_current_tool' },
  ],
};

const stricter = `version: 1
rules:
  - { id: approve-deletes, version: 1, name: Deleting needs approval, scope: { categories: [delete] }, action: request_approval }
  - { id: deny-private, version: 1, name: Nothing is written under private/, scope: { tools: [fs_write] }, when: { arg: path, glob: "**/private/**" }, action: deny_current_tool }
  - { id: no-bak-deletes, version: 1, name: Backups are never deleted, scope: { tools: [fs_delete] }, when: { arg: path, glob: "**/*.bak" }, action: deny_current_tool }
  - { id: approve-writes, version: 1, name: Writes need approval, scope: { tools: [fs_write] }, action: request_approval }
  - { id: judge-stat, version: 1, name: Looking at secrets needs approval, scope: { tools: [fs_stat] }, condition: the path holds secrets, enforceJudge: true, action: request_approval }
`;

const looser = `version: 1
rules:
  - { id: approve-keep-deletes, version: 1, name: Deleting keep files needs approval, scope: { categories: [delete] }, when: { arg: path, glob: "**/keep*" }, action: request_approval }
`;

interface Change {
  jobId: string;
  callId: string;
  toolName: string;
  args: Record<string, unknown>;
  happened: string;
  before: { verdict: string; ruleId: string | null };
  after: { verdict: string; ruleId: string | null; judge: Array<{ ruleId: string; ifMatch: string }> };
  change: string;
  rule: string;
  facts: string;
}

interface Report {
  jobs: number;
  calls: number;
  changes: Change[];
  byRule: Array<{ ruleId: string; changes: number; by: Record<string, number> }>;
  skipped: unknown[];
}

let h: JobHarness;
let older: string;
let main: string;
let other: string;
/** A time after the older job ended and before the main job started. */
let between: string;
const files: Record<string, string> = {};

async function finished(jobId: string): Promise<void> {
  await expect(h.result(jobId)).resolves.toMatchObject({ status: 'completed' });
}

/** Waits until visibility lists every job (it is eventually consistent). */
async function listed(jobIds: readonly string[]): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const seen = new Set<string>();
    for await (const info of h.env.client.workflow.list({ query: 'WorkflowType = "agentJob" AND ExecutionStatus = "Completed"' })) seen.add(info.workflowId);
    if (jobIds.every((id) => seen.has(id))) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`visibility never listed ${jobIds.join(', ')}`);
}

async function rehearse(args: string[]): Promise<{ code: number; stdout: string; stderr: string; report: Report | undefined }> {
  const out = await h.cli(['rules', 'rehearse', ...args]);
  let report: Report | undefined;
  if (args.includes('--json') && out.code === 0) report = JSON.parse(out.stdout) as Report;
  return { ...out, report };
}

/** A change as the assertions name it, its path relative to the root (the gate saw canonical, absolute paths). */
function key(c: Change): string {
  const path = String(c.args.path);
  const relative = path === h.root ? '.' : path.startsWith(`${h.root}/`) ? path.slice(h.root.length + 1) : path;
  return `${c.jobId} ${c.toolName} ${relative}: ${c.change} [${c.rule}]`;
}

beforeAll(async () => {
  h = await JobHarness.create({ rules: firstRules });
  writeFileSync(join(h.root, 'old.bak'), 'old');
  writeFileSync(join(h.root, 'keep.bak'), 'keep');
  mkdirSync(join(h.root, 'private'));

  // An older job: one allowed write.
  older = `older-${Date.now()}`;
  await h.start({
    jobId: older,
    script: { turns: [{ tool_calls: [{ name: 'fs_write', arguments: { path: 'notes.txt', content: 'n' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
  });
  await finished(older);
  await new Promise((r) => setTimeout(r, 1100));
  between = new Date().toISOString();
  await new Promise((r) => setTimeout(r, 1100));

  // The main job: two allowed calls and an approved delete; then a write the rules deny and a delete the reviewer denies.
  main = `main-${Date.now()}`;
  await h.start({
    jobId: main,
    script: {
      turns: [
        {
          tool_calls: [
            { name: 'fs_write', arguments: { path: 'a.txt', content: 'a' } },
            { name: 'fs_stat', arguments: { path: '.' } },
            { name: 'fs_delete', arguments: { path: 'old.bak' } },
          ],
        },
        {
          tool_calls: [
            { name: 'fs_write', arguments: { path: 'private/x.txt', content: 'x' } },
            { name: 'fs_delete', arguments: { path: 'keep.bak' } },
          ],
        },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  await h.waitForPending(main);
  const approved = await h.airlock.decide(main, { decision: 'approve', reviewer: 'alice' });
  expect(approved).toMatchObject({ accepted: true, status: 'approved' });
  await h.waitFor(main, (s) => s.status === 'awaiting_approval' && s.pending.length === 1 && JSON.stringify(s.pending[0]?.args ?? {}).includes('keep.bak'), 'the second batch parked');
  const denied = await h.airlock.decide(main, { decision: 'deny', reviewer: 'alice', reason: 'keep it' });
  expect(denied).toMatchObject({ accepted: true, status: 'denied' });
  await finished(main);

  // Another job, to show `--job` restricting the rehearsal to one.
  other = `other-${Date.now()}`;
  await h.start({
    jobId: other,
    script: { turns: [{ tool_calls: [{ name: 'fs_write', arguments: { path: 'c.txt', content: 'c' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
  });
  await finished(other);
  await listed([older, main, other]);

  files.stricter = join(h.dir, 'stricter.yaml');
  files.looser = join(h.dir, 'looser.yaml');
  files.same = join(h.dir, 'same.json');
  writeFileSync(files.same, JSON.stringify(firstRules));
  writeFileSync(files.stricter, stricter);
  writeFileSync(files.looser, looser);
}, 120_000);
afterAll(async () => h.close());

test('stricter rules: exactly the calls whose decision changes, counted per rule', async () => {
  const { code, report, stderr } = await rehearse(['--rules', files.stricter ?? '', '--json']);
  expect(stderr).toBe('');
  expect(code).toBe(0);
  if (report === undefined) throw new Error('no report');
  expect(report.jobs).toBe(3);
  // notes.txt, a.txt, ".", old.bak, private/x.txt, keep.bak, c.txt.
  expect(report.calls).toBe(7);
  expect(report.changes.map(key).sort()).toEqual(
    [
      `${older} fs_write notes.txt: allowed → needs approval [approve-writes]`,
      `${main} fs_write a.txt: allowed → needs approval [approve-writes]`,
      `${main} fs_stat .: allowed → allowed, or needs approval if the judge matches [judge-stat]`,
      `${main} fs_delete old.bak: approved → denied [no-bak-deletes]`,
      // keep.bak was denied by the reviewer and would be denied by the rule: it did not run and would not, so no change.
      `${other} fs_write c.txt: allowed → needs approval [approve-writes]`,
    ].sort(),
  );
  // The write the rules denied is denied still: not listed. The job's arguments are the ones the gate saw (canonical paths).
  expect(report.changes.some((c) => String(c.args.path).includes('private'))).toBe(false);
  expect(report.changes.every((c) => String(c.args.path).startsWith(h.root))).toBe(true);
  // Facts: a write's targets were resolved by the job (deny-private looks at paths); a delete's were not, so they are read now.
  const byPath = new Map(report.changes.map((c) => [String(c.args.path).slice(h.root.length), c]));
  expect(byPath.get('/a.txt')?.facts).toBe('recorded');
  expect(byPath.get('/old.bak')?.facts).toBe('now');
  expect(byPath.get('/old.bak')?.before).toEqual({ verdict: 'needs approval', ruleId: 'approve-deletes' });
  expect(byPath.get('/old.bak')?.after).toEqual({ verdict: 'denied', ruleId: 'no-bak-deletes', judge: [] });
  expect(report.byRule).toEqual([
    { ruleId: 'approve-writes', changes: 3, by: { 'allowed → needs approval': 3 } },
    { ruleId: 'judge-stat', changes: 1, by: { 'allowed → allowed, or needs approval if the judge matches': 1 } },
    { ruleId: 'no-bak-deletes', changes: 1, by: { 'approved → denied': 1 } },
  ]);
  expect(report.skipped).toEqual([]);

  // The same in text: one line per change, then the counts per rule.
  const text = await rehearse(['--rules', files.stricter ?? '']);
  expect(text.code).toBe(0);
  const lines = text.stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^rehearsal of .*stricter\.yaml \(policy [0-9a-f]{12}\) on jobs started in the last 7d: 3 job\(s\), 7 tool call\(s\), 5 decision\(s\) would change$/);
  expect(lines.filter((l) => l.startsWith(`  ${main} `))).toHaveLength(3);
  expect(text.stdout).toMatch(new RegExp(`  ${main} \\S+ call_0_2 fs_delete \\{"path":"[^"]*old\\.bak","recursive":false\\}: approved → denied \\(rule no-bak-deletes\\) \\[targets as they are now\\]`));
  expect(lines).toContain('by rule:');
  expect(lines).toContain('  approve-writes: 3 (allowed → needs approval: 3)');
  expect(lines).toContain('  no-bak-deletes: 1 (approved → denied: 1)');
  expect(text.stdout).toContain('judged rules are not asked in a rehearsal');
}, 60_000);

test('the rules the jobs ran under: every call rehearsed, none changes (the rehearsal decides as the jobs did)', async () => {
  const { code, report } = await rehearse(['--rules', files.same ?? '', '--json']);
  expect(code).toBe(0);
  expect(report).toMatchObject({ jobs: 3, calls: 7, changes: [], byRule: [], skipped: [] });
  const text = await rehearse(['--rules', files.same ?? '']);
  expect(text.stdout).toMatch(/: 3 job\(s\), 7 tool call\(s\), 0 decision\(s\) would change\n$/);
}, 60_000);

test('looser rules: approved and denied calls that would now be allowed; the reviewer-denied one still needs approval', async () => {
  const { code, report } = await rehearse(['--rules', files.looser ?? '', '--json']);
  expect(code).toBe(0);
  if (report === undefined) throw new Error('no report');
  expect(report.changes.map(key).sort()).toEqual(
    [`${main} fs_delete old.bak: approved → allowed [approve-deletes]`, `${main} fs_write private/x.txt: denied → allowed [deny-private]`].sort(),
  );
  expect(report.byRule).toEqual([
    { ruleId: 'approve-deletes', changes: 1, by: { 'approved → allowed': 1 } },
    { ruleId: 'deny-private', changes: 1, by: { 'denied → allowed': 1 } },
  ]);
}, 60_000);

test('--job rehearses one job; --since leaves out jobs started before it', async () => {
  const one = await rehearse(['--rules', files.stricter ?? '', '--job', other, '--json']);
  expect(one.code).toBe(0);
  expect(one.report?.jobs).toBe(1);
  expect(one.report?.calls).toBe(1);
  expect(one.report?.changes.map(key)).toEqual([`${other} fs_write c.txt: allowed → needs approval [approve-writes]`]);

  // Jobs started since a time between the older job and the main one: the older job is out.
  const recent = await rehearse(['--rules', files.stricter ?? '', '--since', between, '--json']);
  expect(recent.code).toBe(0);
  expect(recent.report?.jobs).toBe(2);
  expect(new Set(recent.report?.changes.map((c) => c.jobId))).toEqual(new Set([main, other]));

  // Both together: the older job did not start in the window.
  const outside = await rehearse(['--rules', files.stricter ?? '', '--job', older, '--since', between]);
  expect(outside.code).toBe(1);
  expect(outside.stderr).toContain(`no job ${older} started since ${between}`);

  const missing = await rehearse(['--rules', files.stricter ?? '', '--job', 'no-such-job']);
  expect(missing.code).toBe(1);
  expect(missing.stderr).toMatch(/^airlock rules rehearse: no job no-such-job in namespace \S+ \(a history past the namespace's retention is gone\)\n$/);
}, 60_000);

test('an invalid rules file gets the same listing as `rules validate`, exit code 1, and nothing is read', async () => {
  const bad = join(h.dir, 'bad.yaml');
  writeFileSync(bad, 'version: 1\nrules:\n  - { id: a, version: 1, name: a, action: request_approval, limits: { maxFires: 1 } }\n  - { id: b, version: 0, name: b, action: audit_only, colour: red }\n');
  const rehearsed = await rehearse(['--rules', bad]);
  const validated = await h.cli(['rules', 'validate', bad]);
  expect(rehearsed.code).toBe(1);
  expect(validated.code).toBe(1);
  expect(rehearsed.stdout).toBe(validated.stdout);
  expect(rehearsed.stdout).toMatch(/invalid: .*bad\.yaml: 3 problem\(s\)/);
  expect(rehearsed.stdout).toMatch(/rule b: \(rule\): Unrecognized key: "colour"/);
  const json = await rehearse(['--rules', bad, '--json']);
  expect(json.code).toBe(1);
  expect(JSON.parse(json.stdout)).toMatchObject({ valid: false, problems: expect.arrayContaining([expect.objectContaining({ ruleId: 'b' })]) });

  const usage = await rehearse([]);
  expect(usage.code).toBe(2);
  expect(usage.stderr).toMatch(/--rules FILE is required/);
  const since = await rehearse(['--rules', files.stricter ?? '', '--since', 'last week']);
  expect(since.code).toBe(2);
  expect(since.stderr).toMatch(/--since takes a duration such as 7d, 24h or 90m, or a time such as/);
}, 60_000);

test('a job parked across continue-as-new and approved in its next run is one job: the approval is found', async () => {
  writeFileSync(join(h.root, 'long.bak'), 'long');
  const jobId = `long-${Date.now()}`;
  await h.start({
    jobId,
    script: { turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: 'long.bak' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
    input: { historyEventLimit: 60 },
  });
  const before = await h.waitForPending(jobId);
  const request = before.pending[0];
  if (request === undefined) throw new Error('no request');
  // Stray decisions (each audited) grow the parked job's history past its limit: it continues as new, still parked.
  let after = await h.state(jobId);
  for (let i = 0; i < 30 && after.counters.continuedAsNew === 0; i++) {
    await h.airlock.sendDecision(jobId, { requestId: 'stray', fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'nobody' });
    after = await h.state(jobId);
  }
  expect(after.counters.continuedAsNew).toBeGreaterThan(0);
  await h.waitForPending(jobId);
  await expect(h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).resolves.toMatchObject({ accepted: true, status: 'approved' });
  await finished(jobId);
  for (let i = 0; i < 100; i++) {
    const runs = await h.env.client.workflow.count(`WorkflowId = "${jobId}" AND ExecutionStatus != "Running"`);
    if (runs.count >= 2) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const { code, report } = await rehearse(['--rules', files.stricter ?? '', '--job', jobId, '--json']);
  expect(code).toBe(0);
  expect(report).toMatchObject({ jobs: 1, calls: 1, skipped: [] });
  expect(report?.changes.map(key)).toEqual([`${jobId} fs_delete long.bak: approved → denied [no-bak-deletes]`]);
}, 120_000);

test('a client-driven job: the calls its client submitted are rehearsed as a model job’s are; a retry of the parked delete is no call', async () => {
  writeFileSync(join(h.root, 'client.bak'), 'c');
  const jobId = `client-${Date.now()}`;
  const { handle } = await h.start({ jobId, goal: 'calls from MCP agent claude', script: { turns: [] }, input: { driver: 'client', requester: 'claude' } });
  const submit = (callKey: string, toolName: string, args: Record<string, unknown>) => handle.executeUpdate(submitCallUpdate, { args: [{ callKey, toolName, args }] });
  expect(await submit('client-write-1', 'fs_write', { path: 'client.txt', content: 'c' })).toMatchObject({ status: 'answered', isError: false });
  const parked = await submit('client-delete-1', 'fs_delete', { path: 'client.bak' });
  expect(parked).toMatchObject({ status: 'parked', ruleId: 'approve-deletes' });
  // The client sends it again (another update id): the same request answers.
  expect(await submit('client-delete-1', 'fs_delete', { path: 'client.bak' })).toEqual(parked);
  await expect(h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).resolves.toMatchObject({ accepted: true, status: 'approved' });
  for (let i = 0; (await handle.query(clientCallQuery, { callKey: 'client-delete-1' }))?.status !== 'answered'; i++) {
    if (i > 150) throw new Error('the approved delete was never answered');
    await new Promise((r) => setTimeout(r, 200));
  }
  // A client's job waits for its next call until it is stopped.
  await handle.cancel();
  for (let i = 0; (await h.env.client.workflow.count(`WorkflowId = "${jobId}" AND ExecutionStatus != "Running"`)).count < 1; i++) {
    if (i > 100) throw new Error('visibility never listed the cancelled job');
    await new Promise((r) => setTimeout(r, 200));
  }
  const { code, report } = await rehearse(['--rules', files.stricter ?? '', '--job', jobId, '--json']);
  expect(code).toBe(0);
  expect(report).toMatchObject({ jobs: 1, calls: 2, skipped: [] });
  expect(report?.changes.map(key).sort()).toEqual(
    [`${jobId} fs_write client.txt: allowed → needs approval [approve-writes]`, `${jobId} fs_delete client.bak: approved → denied [no-bak-deletes]`].sort(),
  );
  expect(report?.changes.map((c) => c.callId).sort()).toEqual(['client-delete-1', 'client-write-1']);
  // Under the rules it ran under, nothing changes.
  const same = await rehearse(['--rules', files.same ?? '', '--job', jobId, '--json']);
  expect(same.report).toMatchObject({ jobs: 1, calls: 2, changes: [] });
}, 120_000);
