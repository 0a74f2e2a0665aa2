import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

/**
 * History events per call, read from the recorded histories of the current
 * build: what a job spends of Temporal's history (and of the writes behind
 * each event) for an allowed call and for an approved one. A change that
 * adds a step to either path shows here. `npm run measure:history` prints
 * the same figures from a live run.
 */

const dir = join(__dirname, '..', 'replay', 'histories');

const historySchema = z.object({
  events: z.array(
    z.object({
      eventType: z.string(),
      activityTaskScheduledEventAttributes: z.object({ activityType: z.object({ name: z.string() }) }).optional(),
    }),
  ),
});

type RecordedEvent = z.infer<typeof historySchema>['events'][number];

function events(shape: string): RecordedEvent[] {
  return historySchema.parse(JSON.parse(readFileSync(join(dir, `${shape}.base.json`), 'utf8'))).events;
}

const isModelTurn = (e: RecordedEvent) => e.activityTaskScheduledEventAttributes?.activityType.name === 'modelTurn';

/** Events from each model turn's scheduling up to the next one's (the last turn: to the end). */
function turns(history: readonly RecordedEvent[]): RecordedEvent[][] {
  const starts = history.flatMap((e, i) => (isModelTurn(e) ? [i] : []));
  return starts.map((start, k) => history.slice(start, starts[k + 1] ?? history.length));
}

const kinds = (turn: readonly RecordedEvent[]) => turn.map((e) => e.eventType.replace('EVENT_TYPE_', ''));

describe('history events per call (recorded histories of this build)', () => {
  it('an allowed call costs 12 events in its own turn: the model turn, one workflow task, the call, one workflow task', () => {
    const [read] = turns(events('allowed-call'));
    const activity = ['ACTIVITY_TASK_SCHEDULED', 'ACTIVITY_TASK_STARTED', 'ACTIVITY_TASK_COMPLETED'];
    const task = ['WORKFLOW_TASK_SCHEDULED', 'WORKFLOW_TASK_STARTED', 'WORKFLOW_TASK_COMPLETED'];
    expect(kinds(read ?? [])).toEqual([...activity, ...task, ...activity, ...task]);
  });

  it('no policy or grant step of its own for an allowed call: the model turn brought the decision and the grant', () => {
    const [read] = turns(events('allowed-call'));
    expect(kinds(read ?? []).filter((k) => k === 'MARKER_RECORDED')).toEqual([]);
  });

  it('an approved delete with an allowed read in its batch stays within 38 events from its model turn to the next', () => {
    // Model turn 6, target facts with the approval prepared 6 + evaluation 1, park 4 (status, card, audit, timer),
    // decision 6 (its workflow task, update accepted and completed, timer cancelled), resume 3 (status, card,
    // grants), the delete 6 and the read 6.
    const [turn] = turns(events('approved'));
    expect(turn?.length).toBeLessThanOrEqual(38);
  });

  it('a call whose facts policy asked for parks without a prepareApproval of its own: the facts round prepared it', () => {
    for (const shape of ['approved', 'denied-by-reviewer', 'expired', 'two-machines']) {
      const [turn] = turns(events(shape));
      const activities = (turn ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes === undefined ? [] : [e.activityTaskScheduledEventAttributes.activityType.name]));
      expect({ shape, asked: activities.filter((a) => a === 'resolveTargets' || a === 'prepareApproval') }).toEqual({ shape, asked: ['resolveTargets'] });
    }
  });

  it('a denial by the reviewer costs no grant and no run: at most 25 events from its model turn to the next', () => {
    const [turn] = turns(events('denied-by-reviewer'));
    expect(turn?.length).toBeLessThanOrEqual(25);
  });
});
