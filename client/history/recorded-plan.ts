import { batchPlanSchema, type BatchPlan } from '../../core/job/plan-schema';
import { batchPlanV1Schema, heldPlanFromV1, LegacyShapeError } from '../../core/job/legacy-v1';
import type { Happened, PlannedToolKind } from '../../core/job/rehearsal';

/** A recorded plan in the current shape; builds before plan version 2 wrote another one. */
export function recordedPlan(raw: unknown): BatchPlan | undefined {
  const current = batchPlanSchema.safeParse(raw);
  if (current.success) return current.data;
  const v1 = batchPlanV1Schema.safeParse(raw);
  if (!v1.success) return undefined;
  try {
    return heldPlanFromV1(v1.data);
  } catch (err) {
    if (err instanceof LegacyShapeError) return undefined;
    throw err;
  }
}

export function happenedOfPlan(kind: PlannedToolKind): Happened {
  switch (kind) {
    case 'run':
      return 'allowed';
    case 'approval':
      // Until its target is observed and the request made; a call whose preparation failed never became a request.
      return 'undecided';
    case 'deny':
      return 'denied';
    case 'redirect':
      return 'redirected';
    case 'stop':
      return 'stopped';
  }
}
