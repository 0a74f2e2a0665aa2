import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startReplayServer, type ReplayServer } from '../../ops/dev/replay-server';
import { JobHarness } from '../helpers/job-harness';

const verdict = (ruleId: string, result: string) => ({
  turns: [{ content: JSON.stringify({ version: 1, decisions: [{ rule_id: ruleId, result, confidence: 0.9 }] }) }],
});

describe('the judge on the real dev server, with the replay server as its endpoint', () => {
  let judge: ReplayServer;
  let h: JobHarness;

  beforeAll(async () => {
    judge = await startReplayServer({ script: { turns: [] } });
    h = await JobHarness.create({
      judge: { baseUrl: judge.baseUrl, timeoutMs: 2000 },
      rules: {
        version: 1,
        rules: [
          { id: 'j-shadow', version: 1, name: 'watch writes', scope: { tools: ['fs_write'] }, condition: 'writes credentials', action: 'request_approval' },
          {
            id: 'j-enforced',
            version: 1,
            name: 'irreplaceable deletes',
            scope: { categories: ['delete'] },
            condition: 'deletes something irreplaceable',
            action: 'request_approval',
            enforceJudge: true,
          },
        ],
      },
    });
  });
  afterAll(async () => {
    await h.close();
    await judge.close();
  });
  afterEach(async () => h.terminateRunning());

  test('a shadow rule match is audited as judge_result and changes nothing', async () => {
    judge.setScript(verdict('j-shadow', 'match'));
    const { jobId } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_write', arguments: { path: 'cred.txt', content: 'password=hunter2' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'written' } }] },
        ],
      },
    });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(existsSync(join(h.root, 'cred.txt'))).toBe(true);
    expect(h.audit(jobId, 'approval_requested')).toHaveLength(0);
    expect(h.audit(jobId, 'judge_result')[0]!.data).toMatchObject({ ruleId: 'j-shadow', result: 'match', status: 'ok', enforced: false, shadow: true });
    expect(h.audit(jobId, 'policy_rule_matched').find((e) => e.data.ruleId === 'j-shadow')!.data).toMatchObject({ shadow: true });
    // The judge saw the call as masked data, never the raw secret.
    const asked = judge.requests[judge.requests.length - 1]!.messages[1]!.content as string;
    expect(asked).toContain('cred.txt');
    expect(asked).not.toContain('hunter2');
  });

  test('an enforced request_approval judged rule parks the job on a match', async () => {
    judge.setScript(verdict('j-enforced', 'match'));
    writeFileSync(join(h.root, 'album.zip'), 'memories');
    const { jobId } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_delete', arguments: { path: 'album.zip' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'asked' } }] },
        ],
      },
    });
    const parked = await h.waitForPending(jobId);
    expect(parked.pending[0]).toMatchObject({ ruleId: 'j-enforced', toolName: 'fs_delete' });
    await h.airlock.decide(jobId, { decision: 'deny', reviewer: 'alice', reason: 'keep' });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(existsSync(join(h.root, 'album.zip'))).toBe(true);
  });
});

describe('a judge that does not answer', () => {
  let silent: Server;
  let h: JobHarness;

  beforeAll(async () => {
    silent = createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    h = await JobHarness.create({
      judge: { baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`, timeoutMs: 500 },
      rules: {
        version: 1,
        rules: [
          { id: 'gate', version: 1, name: 'deletes need approval', scope: { categories: ['delete'] }, action: 'request_approval' },
          { id: 'semantic', version: 1, name: 'semantic', condition: 'looks dangerous', action: 'inject_instruction', instruction: 'Stop and think.', enforceJudge: true },
        ],
      },
    });
  });
  afterAll(async () => {
    await h.close();
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
  });

  test('a judge timeout leaves the deterministic gate in force and never stops the job', async () => {
    writeFileSync(join(h.root, 'x.txt'), 'x');
    writeFileSync(join(h.root, 'y.txt'), 'y');
    const { jobId } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_read', arguments: { path: 'y.txt' } }] },
          { tool_calls: [{ name: 'fs_delete', arguments: { path: 'x.txt' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
        ],
      },
    });
    const parked = await h.waitForPending(jobId);
    expect(parked.pending[0]).toMatchObject({ ruleId: 'gate' });
    // The read ran: a failed judge on an enforced hint rule does not fire it.
    expect(h.toolResults(jobId).get('call_0_0')).toBe('y');
    const judged = h.audit(jobId, 'judge_result');
    expect(judged.length).toBeGreaterThanOrEqual(2);
    expect(judged.every((e) => e.data.result === 'failed' && e.data.status === 'timeout')).toBe(true);
    await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(existsSync(join(h.root, 'x.txt'))).toBe(false);
  });
});

describe('signed decisions, detectors, notifications and odd batches', () => {
  let h: JobHarness;
  let alice: { privateKey: KeyObject; publicKey: KeyObject };
  let mallory: { privateKey: KeyObject; publicKey: KeyObject };
  let aliceKeyFile: string;

  beforeAll(async () => {
    alice = generateKeyPairSync('ed25519');
    mallory = generateKeyPairSync('ed25519');
    h = await JobHarness.create({
      reviewerKeys: new Map([['alice', alice.publicKey]]),
      rules: {
        version: 1,
        rules: [
          {
            id: 'signed-deletes',
            version: 1,
            name: 'deletes need a signed approval',
            scope: { categories: ['delete'] },
            action: 'request_approval',
            approval: { reviewers: ['alice'], signatureRequired: true },
          },
          { id: 'no-escape', version: 1, name: 'no escapes', scope: { categories: ['read'] }, when: { any: [{ detector: 'outside_roots' }, { detector: 'symlink_path' }] }, action: 'deny_current_tool', instruction: 'Stay inside the allowed folders.' },
          { id: 'tell-admin', version: 1, name: 'chmods are reported', scope: { tools: ['fs_chmod'] }, action: 'notify_admin' },
          {
            id: 'tmp-writes',
            version: 1,
            name: 'temporary files: anyone, path editable',
            scope: { tools: ['fs_write'] },
            when: { arg: 'path', glob: '**/tmp/**' },
            action: 'request_approval',
            approval: { editable: ['path'] },
          },
          { id: 'etc-writes', version: 1, name: 'config: admins only', scope: { tools: ['fs_write'] }, when: { arg: 'path', glob: '**/etc/**' }, action: 'request_approval', approval: { reviewers: ['admin'] } },
          { id: 'moves', version: 1, name: 'moves need approval', scope: { tools: ['fs_move'] }, action: 'request_approval' },
          {
            id: 'moves-into-etc',
            version: 1,
            name: 'moving into etc needs alice, signed',
            scope: { tools: ['fs_move'] },
            when: { arg: 'to', glob: '**/etc/**' },
            action: 'request_approval',
            approval: { reviewers: ['alice'], signatureRequired: true, ttl: '1h' },
          },
          {
            id: 'say-done',
            version: 1,
            name: 'strict summaries',
            point: 'completion.before_accept',
            scope: { movement: ['strict'] },
            when: { not: { arg: 'summary', regex: 'done' } },
            action: 'deny_current_tool',
            instruction: 'Say done.',
          },
        ],
      },
    });
    aliceKeyFile = join(h.dir, 'alice.pem');
    writeFileSync(aliceKeyFile, alice.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  });
  afterAll(async () => h.close());
  afterEach(async () => h.terminateRunning());

  test('a rule that requires a signature rejects unsigned and forged decisions and accepts a signed one', async () => {
    writeFileSync(join(h.root, 'signed.txt'), 's');
    const { jobId } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_delete', arguments: { path: 'signed.txt' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'ok' } }] },
        ],
      },
    });
    const [request] = (await h.waitForPending(jobId)).pending;
    if (request === undefined) throw new Error('no pending request');
    // airlock's client refuses an unsigned decision before sending it; sent anyway (any Temporal client can), the job rejects it.
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: false, code: 'signature_required' });
    expect(h.audit(jobId, 'approval_rejected')).toEqual([]);
    const unsigned = { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve' as const, reviewer: 'alice' };
    expect(await h.airlock.sendDecision(jobId, unsigned)).toMatchObject({ accepted: false, code: 'signature_required' });
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: mallory.privateKey })).toMatchObject({
      accepted: false,
      code: 'signature_invalid',
    });
    expect((await h.state(jobId)).pending).toHaveLength(1);
    expect(existsSync(join(h.root, 'signed.txt'))).toBe(true);
    const signed = await h.cli(['approve', jobId, '--reviewer', 'alice', '--sign', aliceKeyFile]);
    expect(signed.stdout).toMatch(/^accepted/);
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(existsSync(join(h.root, 'signed.txt'))).toBe(false);
    expect(
      h.audit(jobId).flatMap((e) =>
        e.type === 'approval_rejected' ? [['rejected', e.data.code]] : e.type === 'approval_decided' ? [['accepted', e.data.signed ? 'signed' : 'unsigned']] : [],
      ),
    ).toEqual([
      ['rejected', 'signature_required'],
      ['rejected', 'signature_invalid'],
      ['accepted', 'signed'],
    ]);
  });

  test('when several approval rules gate a call, the request carries the strictest settings of all', async () => {
    mkdirSync(join(h.root, 'etc'), { recursive: true });
    writeFileSync(join(h.root, 'app.conf'), 'x');
    const { jobId } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_move', arguments: { from: 'app.conf', to: 'etc/app.conf' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
        ],
      },
    });
    const request = (await h.waitForPending(jobId)).pending[0]!;
    expect(request).toMatchObject({ ruleId: 'moves', reviewers: ['alice'] });
    expect(Date.parse(request.expiresAt) - Date.parse(request.createdAt)).toBe(3_600_000);
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'bob' })).toMatchObject({ accepted: false, code: 'reviewer_not_allowed' });
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: false, code: 'signature_required' });
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey })).toMatchObject({ accepted: true });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(existsSync(join(h.root, 'etc', 'app.conf'))).toBe(true);
  });

  test('detectors deny reads outside the roots or through a symlink before any tool runs', async () => {
    mkdirSync(join(h.dir, 'elsewhere'), { recursive: true });
    writeFileSync(join(h.dir, 'elsewhere', 'secret'), 'nope');
    symlinkSync(join(h.dir, 'elsewhere'), join(h.root, 'door'));
    const { jobId } = await h.start({
      script: {
        turns: [
          {
            tool_calls: [
              { name: 'fs_read', arguments: { path: '../elsewhere/secret' } },
              { name: 'fs_read', arguments: { path: 'door/secret' } },
            ],
          },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'ok' } }] },
        ],
      },
    });
    await h.result(jobId);
    const results = h.toolResults(jobId);
    expect(results.get('call_0_0')).toBe('Not executed: policy rule no-escape denies this call. Stay inside the allowed folders.');
    expect(results.get('call_0_1')).toBe('Not executed: policy rule no-escape denies this call. Stay inside the allowed folders.');
    const matched = h.audit(jobId, 'policy_rule_matched').map((e) => e.data.detectors);
    expect(matched).toEqual([['outside_roots'], ['symlink_path']]);
    expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);
  });

  test('notify_admin queues one note per call state, and repeated call ids keep results one-to-one, in call order', async () => {
    writeFileSync(join(h.root, 'n.sh'), 'n');
    const chmod = { name: 'fs_chmod', arguments: { path: 'n.sh', mode: '700' } };
    const { jobId } = await h.start({
      script: {
        turns: [
          {
            tool_calls: [
              { id: 'same', ...chmod },
              { id: 'same', name: 'fs_list', arguments: { path: '.' } },
              { id: '', name: 'fs_stat', arguments: { path: 'n.sh' } },
            ],
          },
          { tool_calls: [chmod] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
        ],
      },
    });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    const second = h.requestsOf(jobId)[1]!.messages;
    const ids = (second[2] as { tool_calls: Array<{ id: string }> }).tool_calls.map((c) => c.id);
    expect(new Set(ids).size).toBe(3);
    expect(ids[0]).toBe('same');
    expect(second.slice(3).map((m) => m.tool_call_id)).toEqual(ids);
    // The same chmod again is the same call state: noted once.
    expect(h.audit(jobId, 'policy_notification_queued')).toHaveLength(1);
  });

  test('a complete that waits for the completion gate keeps its place in call order', async () => {
    const { jobId } = await h.start({
      input: { scope: { movement: 'strict' } },
      script: {
        turns: [
          {
            tool_calls: [
              { name: 'complete', arguments: { summary: 'early' } },
              { name: 'fs_list', arguments: { path: '.' } },
            ],
          },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
        ],
      },
    });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed', summary: 'done' });
    const second = h.requestsOf(jobId)[1]!.messages;
    expect(second.slice(2).map((m) => m.role)).toEqual(['assistant', 'tool', 'tool', 'user']);
    expect(second[3]).toMatchObject({ tool_call_id: 'call_0_0', content: 'Error: completion is not accepted yet (rule say-done): Say done.' });
    expect(second[4]).toMatchObject({ tool_call_id: 'call_0_1' });
  });

  test('an edit that moves the call under a stricter rule does not run on the first approval', async () => {
    mkdirSync(join(h.root, 'tmp'), { recursive: true });
    mkdirSync(join(h.root, 'etc'), { recursive: true });
    const { jobId } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_write', arguments: { path: 'tmp/a.conf', content: 'x=1' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'ok' } }] },
        ],
      },
    });
    await h.waitForPending(jobId);
    const outcome = await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'bob', set: { path: 'etc/a.conf' } });
    expect(outcome).toMatchObject({ accepted: true });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(existsSync(join(h.root, 'etc', 'a.conf'))).toBe(false);
    expect(h.toolResults(jobId).get('call_0_0')).toMatch(/brings the call under rule etc-writes, which needs its own approval/);
  });
});
