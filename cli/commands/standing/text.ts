import type { StandingView } from '../../../core/approval/standing';
import { useRefusal } from '../../../host/stores/standing-approvals/store';

/** Whether it can still be used, in a word: active, revoked, expired, used up. */
export function standingState(view: StandingView, now: number): string {
  const why = useRefusal(view, now);
  return why === undefined ? 'active' : why.replace('_', ' ');
}

/** What it covers, in one line: the tool, its targets, the requester and what may vary. */
export function coversLine(view: StandingView): string {
  const s = view.record.scope;
  const targets = s.targets.length === 0 ? JSON.stringify(s.args) : s.targets.join(', ');
  const free = s.varies.length === 0 ? '' : `; free: ${s.varies.join(', ')}`;
  return `${s.toolName} ${targets} by ${s.requester}${free}`;
}

/** A plain JSON form for --json: the record as kept, its state and uses. */
export function standingJson(view: StandingView, now: number): Record<string, unknown> {
  const { origin, ...record } = view.record;
  const { payload: _payload, ...from } = origin;
  return { ...record, from, used: view.used, left: Math.max(0, view.record.uses - view.used), state: standingState(view, now), revoked: view.revoked };
}
