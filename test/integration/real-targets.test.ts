import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultRules } from '../../core/policy/default-rules';
import { JobHarness } from '../helpers/job-harness';

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
const oneCall = (name: string, args: Record<string, unknown>) => ({
  turns: [{ tool_calls: [call(name, args)] }, { tool_calls: [call('complete', { summary: 'done' })] }],
});

describe('the built-in rules gate whatever replaces, truncates or removes existing data', () => {
  let h: JobHarness;
  beforeAll(async () => {
    h = await JobHarness.create({ rules: defaultRules });
  });
  afterAll(async () => h.close());
  afterEach(async () => h.terminateRunning());

  test('an overwriting (or emptying) write of an existing file parks; a write that creates runs', async () => {
    writeFileSync(join(h.root, 'notes.txt'), 'years of notes');
    const truncate = await h.start({ script: oneCall('fs_write', { path: 'notes.txt', content: '', mode: 'overwrite' }) });
    const parked = await h.waitForPending(truncate.jobId);
    expect(parked.pending[0]).toMatchObject({ toolName: 'fs_write', ruleId: 'approve-replacing-data' });
    expect(readFileSync(join(h.root, 'notes.txt'), 'utf8')).toBe('years of notes');

    const create = await h.start({ script: oneCall('fs_write', { path: 'fresh.txt', content: 'new', mode: 'overwrite' }) });
    expect(await h.result(create.jobId)).toMatchObject({ status: 'completed' });
    expect(readFileSync(join(h.root, 'fresh.txt'), 'utf8')).toBe('new');
    expect(h.audit(create.jobId, 'approval_requested')).toHaveLength(0);
  });

  test('a move that overwrites an existing file parks; one onto a free name runs', async () => {
    writeFileSync(join(h.root, 'draft.txt'), 'draft');
    writeFileSync(join(h.root, 'final.txt'), 'final');
    const overwrite = await h.start({ script: oneCall('fs_move', { from: 'draft.txt', to: 'final.txt', overwrite: true }) });
    const parked = await h.waitForPending(overwrite.jobId);
    expect(parked.pending[0]).toMatchObject({ toolName: 'fs_move', ruleId: 'approve-replacing-data' });
    expect(readFileSync(join(h.root, 'final.txt'), 'utf8')).toBe('final');

    const rename = await h.start({ script: oneCall('fs_move', { from: 'draft.txt', to: 'draft-2.txt', overwrite: true }) });
    expect(await h.result(rename.jobId)).toMatchObject({ status: 'completed' });
    expect(existsSync(join(h.root, 'draft-2.txt'))).toBe(true);
  });

  test('an unsigned approval of a built-in gate is refused, whatever name it claims', async () => {
    writeFileSync(join(h.root, 'keep.txt'), 'keep');
    const { jobId } = await h.start({ script: oneCall('fs_delete', { path: 'keep.txt' }) });
    await h.waitForPending(jobId);
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'owner' })).toMatchObject({ accepted: false, code: 'signature_required' });
    expect(existsSync(join(h.root, 'keep.txt'))).toBe(true);
  });
});

describe('rules match the real target, not the spelling', () => {
  let h: JobHarness;
  beforeAll(async () => {
    h = await JobHarness.create({
      rules: {
        version: 1,
        rules: [
          {
            id: 'protect-secrets',
            version: 1,
            name: 'Anything touching secrets/ needs approval',
            scope: { categories: ['file_change', 'delete'] },
            when: { arg: 'path', glob: '**/secrets{,/**}' },
            action: 'request_approval',
          },
        ],
      },
    });
    mkdirSync(join(h.root, 'secrets'));
    writeFileSync(join(h.root, 'secrets', 'key.txt'), 'secret');
    symlinkSync(join(h.root, 'secrets'), join(h.root, 'alias'));
  });
  afterAll(async () => h.close());
  afterEach(async () => h.terminateRunning());

  test.each<[string, string, Record<string, unknown>]>([
    ['a write through an in-root symlink alias', 'fs_write', { path: 'alias/new.txt', content: 'x' }],
    ['a rename of the protected folder itself', 'fs_move', { from: 'secrets', to: 'public' }],
    ['a move out of the protected folder', 'fs_move', { from: 'secrets/key.txt', to: 'key.txt' }],
    ['a move into the protected folder', 'fs_move', { from: 'plain.txt', to: 'secrets/plain.txt' }],
  ])('%s parks', async (_what, tool, args) => {
    writeFileSync(join(h.root, 'plain.txt'), 'plain');
    const { jobId } = await h.start({ script: oneCall(tool, args) });
    const parked = await h.waitForPending(jobId);
    expect(parked.pending[0]).toMatchObject({ ruleId: 'protect-secrets', toolName: tool });
    expect(existsSync(join(h.root, 'secrets', 'key.txt'))).toBe(true);
    expect(existsSync(join(h.root, 'secrets', 'new.txt'))).toBe(false);
    // The facts came from the tools side before the decision.
    const requested = h.audit(jobId, 'policy_rule_matched').map((e) => e.data.ruleId);
    expect(requested).toContain('protect-secrets');
  });

  test('a call elsewhere, checked against its real target too, runs', async () => {
    const { jobId } = await h.start({ script: oneCall('fs_write', { path: 'elsewhere.txt', content: 'x' }) });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(h.audit(jobId, 'approval_requested')).toHaveLength(0);
  });
});
