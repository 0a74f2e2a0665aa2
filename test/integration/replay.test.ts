import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker, bundleWorkflowCode, type ReplayResult } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { ensureRuntime, testServer } from '../helpers/temporal-env';

/**
 * Jobs park for weeks: every history recorded under an earlier build
 * (`npm run record:histories`) must replay against today's workflow code.
 */
const dir = join(__dirname, '..', 'replay', 'histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

/** The shapes the recorded set must cover (DESIGN §3–4). */
const shapes = [
  'allowed-call',
  'allowed-batch',
  'deny',
  'redirect',
  'stop',
  'approved',
  'approved-with-edit',
  'denied-by-reviewer',
  'expired',
  'cancelled-while-parked',
  'rejected-forged-decision',
  'completion-gate',
  'continue-as-new-parked',
  'judge-shadow',
  'signed-decision',
  'passkey-decision',
  'client-driven',
  'client-expired',
];

/** `<shape>.<tag>[.runN].json` holds a run of job `<shape>-<tag>` (fingerprints include the job id). */
function workflowIdOf(file: string): string {
  const [shape, tag] = file.split('.');
  return `${shape}-${tag}`;
}

function histories() {
  return files.map((file) => ({ workflowId: workflowIdOf(file), history: historyFromJSON(JSON.parse(readFileSync(join(dir, file), 'utf8'))) }));
}

async function replay(options: Parameters<typeof Worker.runReplayHistories>[0]): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  for await (const result of Worker.runReplayHistories(options, histories())) results.push(result);
  return results;
}

beforeAll(() => ensureRuntime());

test('the recorded set holds every job shape', () => {
  for (const shape of shapes) expect(files.some((f) => f.startsWith(`${shape}.`))).toBe(true);
});

test('every recorded history replays against the current workflow code', async () => {
  const results = await replay({ workflowBundle: { codePath: testServer.bundle }, replayName: 'airlock-replay' });
  expect(results.map((r) => r.workflowId)).toEqual(files.map(workflowIdOf));
  const failures = results.flatMap((r, i) => (r.error === undefined ? [] : [`${files[i] ?? r.workflowId}: ${r.error.message}`]));
  expect(failures).toEqual([]);
});

test('a workflow that emits different commands fails the replay', async () => {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../replay/divergent-workflow'),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  const results = await replay({ workflowBundle: { code }, replayName: 'airlock-divergent' });
  expect(results).toHaveLength(files.length);
  for (const r of results) expect(r.error).toBeInstanceOf(DeterminismViolationError);
});
