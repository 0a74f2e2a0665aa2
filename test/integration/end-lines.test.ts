import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DEMO_GOAL } from '../../ops/dev/demo';
import type { Notice } from '../../core/reviewer/notice';
import { airlock, devEnv, processesMentioning, startDev } from '../helpers/dev-stack';
import { spawnNode, type Spawned } from '../helpers/processes';
import { recordingServer, type RecordingServer } from '../helpers/recording-server';

/**
 * How a job's end is told after a denial, an edited approval refused at run
 * time, and a plain approval: on every surface the facts lead (which
 * approved calls ran, which were denied or refused and why) and the
 * model's summary follows, labelled as its words; `run --wait` exits 3
 * when an approved call did not run or a call was denied, 0 when all ran.
 */

let dir: string;
let env: NodeJS.ProcessEnv;
let dev: Spawned | undefined;
let hooks: RecordingServer;
let connection: Connection | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-ends-'));
  hooks = await recordingServer('127.0.0.1', (_req, res) => res.end('ok'));
  env = { ...(await devEnv(join(dir, 'data'))), AIRLOCK_NOTIFY_URLS: `generic:${hooks.origin}/generic` };
});
afterAll(async () => {
  await connection?.close();
  if (dev?.child.pid !== undefined) process.kill(-dev.child.pid, 'SIGKILL');
  for (const line of processesMentioning(dir)) process.kill(Number(line.split(':')[0]), 'SIGKILL');
  await hooks.close();
  rmSync(dir, { recursive: true, force: true });
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The generic notices of one job and event. */
function notices(jobId: string, event: string): Notice[] {
  return hooks.received.map((r) => JSON.parse(r.body) as Notice).filter((n) => n.jobId === jobId && n.event === event);
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const found = await probe();
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** `run --wait` of the demo goal, parked: the job, its request, and the waiting process. */
async function parkedRun(): Promise<{ job: string; request: string; waiting: Spawned }> {
  const waiting = spawnNode('bin/airlock.js', ['run', '--goal', DEMO_GOAL, '--wait'], env);
  await waiting.waitFor(/waiting for approval/);
  const job = /^(job-\S+) started: /m.exec(waiting.output())?.[1] ?? '';
  const request = new RegExp(`${escape(job)} parked: .* request (\\S+)$`, 'm').exec(waiting.output())?.[1] ?? '';
  return { job, request, waiting };
}

/** Every surface's end of one job: the last line of `run --wait` and its exit code, the dev line, `show`, the notice, the Web UI details. */
async function endsOf(job: string, waiting: Spawned) {
  const code = await waiting.exited();
  const last = waiting.output().trim().split('\n').at(-1) ?? '';
  const devLine = await until('the dev line', () => dev?.output().split('\n').find((l) => l.startsWith(`${job} completed`)));
  const shown = (await airlock(env, ['show', job])).stdout;
  const ended = await until('the job_ended notice', () => notices(job, 'job_ended')[0]);
  connection ??= await Connection.connect({ address: env.TEMPORAL_ADDRESS ?? '' });
  const metadata = await new Client({ connection }).workflow.getHandle(job).query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  return { code, last, devLine, shown, notice: ended.text, webUi: metadata.currentDetails ?? '' };
}

test('denied, edited into a refusal, approved, cancelled: every surface leads with the facts and labels the model’s words; each ending sends its notice', async () => {
  dev = await startDev(env, ['--demo']);
  await dev.waitFor(/Demo job (demo-\S+) started/);
  const demo = /Demo job (demo-\S+) started/.exec(dev.output())?.[1] ?? '';
  await dev.waitFor(new RegExp(`${escape(demo)} parked: `));
  const target = join(dir, 'data', 'sandbox', 'airlock-demo', 'old-backup.tar');
  const says = 'The model says: “';

  // 1. Denied with a reason.
  const denied = await parkedRun();
  expect(await airlock(env, ['deny', denied.job, '--request', denied.request, '--reason', 'keep it for now'])).toMatchObject({ code: 0 });
  const d = await endsOf(denied.job, denied.waiting);
  const deniedFacts = `completed; 1 denied: fs_delete ${target} denied by owner (keep it for now). ${says}`;
  expect(d.code).toBe(3);
  expect(d.last).toBe(`job ${denied.job} ${deniedFacts}${d.last.slice(d.last.indexOf(says) + says.length)}`);
  expect(d.devLine.startsWith(`${denied.job} ${deniedFacts}`)).toBe(true);
  expect(d.shown).toContain(`what happened: ${deniedFacts.slice('completed; '.length, -`. ${says}`.length)}`);
  expect(d.shown).toMatch(/\n {2}the model says: Removed the obsolete old-backup\.tar/);
  expect(d.notice.startsWith(`Job ${denied.job} ${deniedFacts}`)).toBe(true);
  expect(d.webUi.startsWith('**Ended:** completed; 1 denied: fs\\_delete')).toBe(true);
  expect(d.webUi).toContain('The model says: “');
  expect(notices(denied.job, 'approval_decided')[0]).toMatchObject({ requestId: denied.request, decision: { outcome: 'denied', reviewer: 'owner', reason: 'keep it for now' } });

  // 2. Approved with an edit, but the file changed meanwhile: refused when checked again, nothing deleted.
  const edited = await parkedRun();
  appendFileSync(target, 'one more line');
  expect(await airlock(env, ['approve', edited.job, '--request', edited.request, '--set', 'recursive=true'])).toMatchObject({ code: 0 });
  const e = await endsOf(edited.job, edited.waiting);
  expect(e.code).toBe(3);
  const refused = new RegExp(`^completed; 0 of 1 approved call ran: fs_delete ${escape(target)} refused \\(.*changed.*\\)\\. The model says: “`);
  expect(e.last.replace(`job ${edited.job} `, '')).toMatch(refused);
  expect(e.devLine.replace(`${edited.job} `, '')).toMatch(refused);
  expect(e.shown).toMatch(new RegExp(`what happened: 0 of 1 approved call ran: fs_delete ${escape(target)} refused`));
  expect(e.notice.replace(`Job ${edited.job} `, '')).toMatch(refused);
  expect(e.webUi).toMatch(/^\*\*Ended:\*\* completed; 0 of 1 approved call ran: fs\\_delete .* refused/);
  // The phone's "Approval needed" is closed by a notice saying why the approved call did not run.
  expect(notices(edited.job, 'approval_decided')[0]).toMatchObject({ requestId: edited.request, decision: { outcome: 'edited' } });
  expect(notices(edited.job, 'call_not_run')[0]).toMatchObject({ requestId: edited.request, outcome: expect.stringMatching(/^refused when checked again: .*size 262144 → 262157 bytes/) });

  // 3. Approved, and it ran.
  const approved = await parkedRun();
  expect(await airlock(env, ['approve', approved.job, '--request', approved.request])).toMatchObject({ code: 0 });
  const a = await endsOf(approved.job, approved.waiting);
  expect(a.code).toBe(0);
  expect(a.last.startsWith(`job ${approved.job} completed; 1 of 1 approved call ran. ${says}`)).toBe(true);
  expect(a.devLine.startsWith(`${approved.job} completed; 1 of 1 approved call ran. ${says}`)).toBe(true);
  expect(a.shown).toContain('what happened: 1 of 1 approved call ran');
  expect(a.notice.startsWith(`Job ${approved.job} completed; 1 of 1 approved call ran. ${says}`)).toBe(true);
  expect(a.webUi.startsWith('**Ended:** completed; 1 of 1 approved call ran. The model says: “')).toBe(true);
  expect(notices(approved.job, 'call_executed')[0]).toMatchObject({ requestId: approved.request, outcome: 'ran' });

  // The demo job, still parked, is cancelled: its notice closes the request it left waiting.
  const demoRequest = (await until('the demo request', () => notices(demo, 'approval_requested')[0])).requestId;
  expect(await airlock(env, ['cancel', demo, '--reason', 'not today'])).toMatchObject({ code: 0 });
  expect(await until('the cancel notice', () => notices(demo, 'job_cancelled')[0])).toMatchObject({ closes: [demoRequest] });

  // The note for the record: the exact end lines of the three.
  process.stdout.write(`end lines:\n${[d.last, e.last, a.last].join('\n')}\n`);
  process.kill(-(dev.child.pid ?? 0), 'SIGINT');
  expect(await dev.exited()).toBe(0);
  dev = undefined;
});
