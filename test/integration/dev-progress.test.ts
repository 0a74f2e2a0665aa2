import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEMO_GOAL } from '../../ops/dev/demo';
import { airlock, devEnv, processesMentioning, startDev } from '../helpers/dev-stack';
import { spawnNode, type Spawned } from '../helpers/processes';

let dir: string;
let env: NodeJS.ProcessEnv;
let dev: Spawned | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-progress-'));
  env = await devEnv(join(dir, 'data'));
});
afterAll(() => {
  if (dev !== undefined) process.kill(-dev.child.pid!, 'SIGKILL');
  for (const line of processesMentioning(dir)) process.kill(Number(line.split(':')[0]), 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The lines of `text` that match each pattern, in this order; fails naming the first one missing. */
function inOrder(text: string, patterns: readonly RegExp[]): void {
  const lines = text.split('\n');
  let at = 0;
  for (const pattern of patterns) {
    const found = lines.findIndex((line, i) => i >= at && pattern.test(line));
    if (found < 0) throw new Error(`no line matching ${String(pattern)} after line ${at} in:\n${text}`);
    at = found + 1;
  }
}

/** The parked job that is neither of `others`, once visibility lists it. */
async function thirdParkedJob(others: readonly string[]): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const pending = JSON.parse((await airlock(env, ['pending', '--json'])).stdout) as Array<{ jobId: string }>;
    const found = pending.map((p) => p.jobId).find((id) => !others.includes(id));
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error('the third job never parked');
}

const SECRET = 'sk-live0123456789abcdefXYZ';

test('dev prints each event of every job; run --wait prints its own, says how to approve, and ends with the result', async () => {
  dev = await startDev(env, ['--demo']);
  await dev.waitFor(/Demo job (demo-\S+) started/);
  const demo = /Demo job (demo-\S+) started/.exec(dev.output())![1]!;
  await dev.waitFor(new RegExp(`${escape(demo)} parked: fs_delete `));

  // A job from another terminal, waited on; its goal holds a secret, which no line may show.
  const waiting = spawnNode('bin/airlock.js', ['run', '--goal', `${DEMO_GOAL} (api key ${SECRET})`, '--wait'], env);
  await waiting.waitFor(/waiting for approval/);
  const job = /^(job-\S+) started: /m.exec(waiting.output())![1]!;
  const request = new RegExp(`${escape(job)} parked: .* request (\\S+)$`, 'm').exec(waiting.output())![1]!;
  expect(waiting.output()).toContain(`npx airlock approve ${job} --request ${request}`);

  // A machine-readable wait prints its result only.
  const json = spawnNode('bin/airlock.js', ['run', '--goal', DEMO_GOAL, '--wait', '--json'], env);
  let jsonStdout = '';
  json.child.stdout!.on('data', (chunk: Buffer) => (jsonStdout += chunk.toString('utf8')));

  expect(await airlock(env, ['approve', job])).toMatchObject({ code: 0 });
  expect(await waiting.exited()).toBe(0);
  const j = escape(job);
  const target = escape(join(dir, 'data', 'sandbox', 'airlock-demo', 'old-backup.tar'));
  const ownLines = [
    new RegExp(`^${j} started: Free some space in the airlock-demo folder`),
    new RegExp(`^${j} parked: fs_delete ${target} \\(rule approve-deletes: .+\\) request ${escape(request)}$`),
    /^ {2}waiting for approval/,
    new RegExp(`^${j} approved by owner \\(fs_delete, request ${escape(request)}\\)$`),
    new RegExp(`^${j} executed: fs_delete ${target}$`),
  ];
  // The end leads with what the job recorded; the summary follows as the model's words.
  const ranEnd = `completed; 1 of 1 approved call ran\\. The model says: “`;
  inOrder(waiting.output(), [...ownLines, new RegExp(`^job ${j} ${ranEnd}`)]);
  // The same lines, from the stack, for a job it did not start.
  await dev.waitFor(new RegExp(`^${j} completed; `, 'm'));
  inOrder(dev.output(), [...ownLines.filter((_, i) => i !== 2), new RegExp(`^${j} ${ranEnd}`)]);
  expect(`${waiting.output()}\n${dev.output()}`).not.toContain(SECRET);
  expect(dev.output()).toMatch(new RegExp(`^${j} started: .*api key .*\\*`, 'm'));

  // The demo job's approved delete no longer holds (the file is gone): refused, with the reason.
  expect(await airlock(env, ['approve', demo])).toMatchObject({ code: 0 });
  const d = escape(demo);
  await dev.waitFor(new RegExp(`^${d} completed; `, 'm'));
  inOrder(dev.output(), [
    new RegExp(`^${d} started: `),
    new RegExp(`^${d} parked: fs_delete ${target} `),
    new RegExp(`^${d} approved by owner `),
    new RegExp(`^${d} refused: fs_delete ${target}: .*no longer exists`),
    // Whatever the model claims, the end says the delete did not run.
    new RegExp(`^${d} completed; 0 of 1 approved call ran: fs_delete ${target} refused \\(.*no longer exists.*\\)\\. The model says: “`),
  ]);

  // The JSON waiter's job parked too; denied, it still completes (the scripted model goes on), and stdout is one JSON document.
  const jsonJob = await thirdParkedJob([job, demo]);
  expect(await airlock(env, ['deny', jsonJob, '--reason', 'keep it'])).toMatchObject({ code: 0 });
  // Completed, but the call it asked for was denied: exit code 3, and the result says so.
  expect(await json.exited()).toBe(3);
  expect(JSON.parse(jsonStdout)).toMatchObject({
    jobId: jsonJob,
    result: { status: 'completed', facts: { gated: [{ toolName: 'fs_delete', outcome: 'denied', reviewer: 'owner', detail: 'keep it' }] } },
  });
  expect(json.output()).not.toMatch(/parked:|waiting for approval/);
  await dev.waitFor(new RegExp(`^${escape(jsonJob)} denied by owner: keep it `, 'm'));

  process.kill(-dev.child.pid!, 'SIGINT');
  expect(await dev.exited()).toBe(0);
  dev = undefined;
});
