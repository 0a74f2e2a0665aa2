import { approvalRules } from '../../core/job/batch-plan';
import { mergeApprovalSettings } from '../../core/policy/approval-settings';
import { evaluateCall } from '../../core/policy/evaluate';
import { type CallContext } from '../../core/policy/call-evaluation';
import { defaultRules } from '../../core/policy/default-rules';
import { buildSnapshot } from '../../core/policy/snapshot';
import type { ToolCategory } from '../../core/tools/registry';
import { parseRulesDocument } from '../../host/config/rules-file';

/**
 * The built-in rules by category: the service, request and command tools
 * are judged by the category their modules declare (per call for a request).
 */
const snapshot = buildSnapshot(
  parseRulesDocument({ ...defaultRules, detectors: { allowedHosts: ['api.github.com', '*.jellyfin.org'] } }, 'built-in'),
  'built-in',
  { roots: ['/srv/share'], judgeModel: 'none', judgeTimeoutMs: 1000 },
);

function decide(toolName: string, category: ToolCategory, args: Record<string, unknown>) {
  const ctx: CallContext = { toolName, category, args, scope: {}, targets: [] };
  const evaluation = evaluateCall(snapshot, 'tool.before', ctx, {}, 0);
  return { decision: evaluation.decision, rule: evaluation.deciding?.ruleId };
}

/** What the request a reviewer gets would allow: every gating rule's settings merged. */
function requestSettings(toolName: string, args: Record<string, unknown>) {
  const ctx: CallContext = { toolName, category: 'file_change', args, scope: {}, targets: [] };
  const evaluation = evaluateCall(snapshot, 'tool.before', ctx, {}, 0);
  const settings = mergeApprovalSettings(approvalRules(snapshot, evaluation));
  return { decision: evaluation.decision, rule: evaluation.deciding?.ruleId, editable: settings.editable, signed: settings.signatureRequired };
}

test('service status runs; starting, stopping and restarting a service needs a signed approval of that very service', () => {
  expect(decide('service_status', 'read', { service: 'jellyfin' })).toEqual({ decision: 'allow', rule: undefined });
  for (const tool of ['service_start', 'service_stop', 'service_restart']) {
    expect(decide(tool, 'service_control', { service: 'jellyfin' })).toEqual({ decision: 'require_approval', rule: 'approve-service-control' });
  }
  const rule = snapshot.rules.find((r) => r.id === 'approve-service-control');
  expect(rule?.approval).toMatchObject({ editable: [], signatureRequired: true });
});

test('requests to hosts outside allowedHosts need approval; allowed hosts are audited only', () => {
  expect(decide('http_request', 'external_send', { method: 'POST', url: 'https://paste.example.net/upload' })).toEqual({ decision: 'require_approval', rule: 'approve-outbound-sends' });
  expect(decide('http_request', 'network', { method: 'GET', url: 'http://169.254.169.254/latest/meta-data' })).toEqual({ decision: 'require_approval', rule: 'approve-outbound-sends' });
  expect(decide('http_request', 'external_send', { method: 'POST', url: 'https://api.github.com/repos' })).toEqual({ decision: 'audit_only', rule: 'audit-outbound' });
  expect(decide('http_request', 'network', { method: 'GET', url: 'https://repo.jellyfin.org/releases' })).toEqual({ decision: 'audit_only', rule: 'audit-outbound' });
});

test('every command needs approval, and commands that can destroy a system are denied outright', () => {
  expect(decide('command_run', 'command_execution', { argv: ['backup', '--dry-run'] })).toEqual({ decision: 'require_approval', rule: 'approve-commands' });
  expect(decide('command_run', 'command_execution', { argv: ['sudo', 'mkfs', '/dev/sda1'] })).toEqual({ decision: 'deny', rule: 'deny-dangerous-commands' });
});

test('the file rules are as before: reads run, deletes wait, new files are audited', () => {
  expect(decide('fs_read', 'read', { path: '/srv/share/a.txt' }).decision).toBe('allow');
  expect(decide('fs_delete', 'delete', { path: '/srv/share/a.txt' })).toEqual({ decision: 'require_approval', rule: 'approve-deletes' });
});

test('a bulk move needs a signed approval of the set as listed, whatever its paths', () => {
  expect(decide('fs_move_many', 'file_change', { moves: [{ from: '/srv/share/a', to: '/srv/share/b' }] })).toEqual({ decision: 'require_approval', rule: 'approve-bulk-moves' });
  expect(snapshot.rules.find((r) => r.id === 'approve-bulk-moves')?.approval).toMatchObject({ editable: [], signatureRequired: true });
});

test('a permission change waits for a signed approval whose reviewer may narrow the mode; overwrites still wait too', () => {
  expect(requestSettings('fs_chmod', { path: '/srv/share/a', mode: '777' })).toEqual({ decision: 'require_approval', rule: 'approve-permission-changes', editable: ['mode'], signed: true });
  expect(requestSettings('fs_write', { path: '/srv/share/a', content: 'x', mode: 'overwrite' })).toEqual({ decision: 'require_approval', rule: 'approve-replacing-data', editable: [], signed: true });
  expect(requestSettings('fs_move', { from: '/srv/share/a', to: '/srv/share/b', overwrite: true })).toEqual({ decision: 'require_approval', rule: 'approve-replacing-data', editable: [], signed: true });
});

test('an undo waits for a signed decision nobody may edit (airlock undo gives it when its reviewer approved the change)', () => {
  expect(requestSettings('fs_undo', { job: 'job-1', call: 'call_0_0', path: '/srv/share/photos' })).toEqual({ decision: 'require_approval', rule: 'approve-undo', editable: [], signed: true });
});
