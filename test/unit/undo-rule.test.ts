import { buildApprovalRequest } from '../../core/job/approval-request';
import { mergeApprovalSettings } from '../../core/policy/approval-settings';
import { evaluateCall } from '../../core/policy/evaluate';
import { type CallContext } from '../../core/policy/call-evaluation';
import { buildSnapshot } from '../../core/policy/snapshot';
import { parseRulesDocument } from '../../host/config/rules-file';

/**
 * A rule can choose that the changes it gates keep nothing for undo (a job
 * freeing space): the card says so, naming the rule, even where the tools
 * side could keep it; the run then keeps nothing (`keep: false`).
 */
const snapshot = buildSnapshot(
  parseRulesDocument(
    {
      version: 1,
      rules: [
        { id: 'free-space', version: 1, name: 'Cleaning the downloads folder frees space', scope: { tools: ['fs_delete'] }, when: { arg: 'path', glob: 'downloads/**' }, action: 'request_approval', approval: { reversible: false } },
        { id: 'approve-deletes', version: 1, name: 'Deletes need approval', scope: { tools: ['fs_delete'] }, action: 'request_approval' },
      ],
    },
    'test',
  ),
  'test',
);

function requestFor(path: string) {
  const args = { path, recursive: false };
  const ctx: CallContext = { toolName: 'fs_delete', category: 'delete', args, scope: {}, targets: [path] };
  const evaluation = evaluateCall(snapshot, 'tool.before', ctx, {}, 0);
  return buildApprovalRequest({
    snapshot,
    planned: { kind: 'approval', call: { callId: 'c1', toolName: 'fs_delete', kind: 'tool', category: 'delete', args }, ruleId: evaluation.deciding?.ruleId ?? '', ruleVersion: 1, fingerprint: 'a'.repeat(64), evaluation },
    prepared: { requestId: 'r1', nonce: 'b'.repeat(32), observed: [], warnings: [], undo: { reversible: true, keepDays: 7 } },
    requester: 'tester',
    now: 0,
  });
}

test('a change a rule chose not to keep: the card says why, naming the rule, though the tools side could keep it', () => {
  expect(requestFor('downloads/big.iso').undo).toEqual({ reversible: false, why: 'the rule free-space (Cleaning the downloads folder frees space) keeps nothing of it for undo', byRule: 'free-space' });
  // Only where the rule applies: elsewhere the tools side's answer stands.
  expect(requestFor('photos/cat.jpg').undo).toEqual({ reversible: true, keepDays: 7 });
});

test('merged settings name the first rule that keeps nothing', () => {
  expect(mergeApprovalSettings(snapshot.rules).notKeptBy?.id).toBe('free-space');
  expect(mergeApprovalSettings(snapshot.rules.filter((r) => r.id !== 'free-space')).notKeptBy).toBeNull();
});
