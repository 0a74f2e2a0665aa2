import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { JobHarness } from '../helpers/job-harness';

/**
 * Where a refusal's reason sits in what the server hands the Web UI: in the
 * failure's own message with the codec off (the UI shows it as is), inside
 * the encrypted attributes with the codec on (the UI decodes it through the
 * codec server; the server holds no plaintext reason).
 */
describe.each([
  ['codec off', false],
  ['codec on', true],
])('%s', (_label, codec) => {
  let h: JobHarness;

  beforeAll(async () => {
    h = await JobHarness.create({
      codec,
      rules: {
        version: 1,
        rules: [{ id: 'bob-decides', version: 1, name: 'Deletes need bob', scope: { categories: ['delete'] }, action: 'request_approval', approval: { reviewers: ['bob'] } }],
      },
    });
  });
  afterAll(async () => h.close());

  test('a decision the job refuses: the reason as the server answers it', async () => {
    writeFileSync(join(h.root, 'old.tar'), 'old');
    const { jobId } = await h.start({
      script: { turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: 'old.tar' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
    });
    const [request] = (await h.waitForPending(jobId)).pending;
    if (request === undefined) throw new Error('the job never parked');

    // As the Web UI's "Send an Update" sends it: one payload, encoded the way this installation's clients encode.
    const plain = defaultPayloadConverter.toPayload({ requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'alice' });
    let args: Payload[] = [plain];
    for (const c of h.dataConverter.payloadCodecs ?? []) args = await c.encode(args);
    expect(codec ? args[0]?.metadata?.encoding : 'x').not.toEqual(plain.metadata?.encoding);
    const answer = await h.env.connection.workflowService.updateWorkflowExecution({
      namespace: h.env.namespace,
      workflowExecution: { workflowId: jobId },
      request: { meta: { updateId: randomUUID() }, input: { name: 'decide', args: { payloads: args } } },
      waitPolicy: { lifecycleStage: temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED },
    });
    const failure = answer.outcome?.failure;
    expect(failure?.applicationFailureInfo?.type).toBe('AirlockDecisionRejected');
    const bytes = Buffer.from(temporal.api.failure.v1.Failure.encode(failure ?? {}).finish()).toString('latin1');
    if (codec) {
      expect(failure?.message).toBe('Encoded failure');
      expect(bytes).not.toMatch(/alice|bob/);
    } else {
      expect(failure?.message).toBe('reviewer alice may not decide this request (allowed: bob)');
      expect(failure?.encodedAttributes ?? null).toBeNull();
    }

    // Either way the client of this installation reads the reason, and the request still waits.
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: false, reason: expect.stringContaining('alice may not decide') });
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'bob' })).toMatchObject({ accepted: true });
    expect((await h.result(jobId)).status).toBe('completed');
  });
});
