import { patched } from '@temporalio/workflow';

/**
 * Hotfixes for runs already pinned to a released build.
 *
 * A change to workflow code ships as a new build: workers run as a Worker
 * Deployment version, every job is pinned to the build it started on, and
 * a parked job moves to a newer build only by continuing as new (see
 * `airlock deploy`). Nothing here is needed for that.
 *
 * A patch is for the rare fix that must reach runs pinned to a build
 * already released (a bug that would otherwise fail them): the fixed build
 * is deployed under the *same* build id, and the fix is branched on a patch
 * so that runs recorded without it replay as they ran. To add one: name it
 * in `Hotfix`, ask it in `askRunPatches` (at the start of a run, in a fixed
 * order, appended at the end: a patch first asked right after a local
 * activity can fall in another workflow task on replay than it did live),
 * branch on `job.patches`, and record the histories of the runs it must
 * keep replaying (`npm run record:histories`). Once no run of that build
 * can still be open, replace `patched` by `deprecatePatch` for one build,
 * then drop the old branch.
 */

/** The hotfix patches of the current baseline: none. */
export type Hotfix = never;

/** Whether this run follows `name` (it started on a build that has the fix, or reached it live). */
export function hotfix(name: Hotfix): boolean {
  return patched(name);
}

/** What a run follows of each hotfix, asked once when it starts. */
export type RunPatches = Readonly<Record<Hotfix, boolean>>;

/** Asks every hotfix in a fixed order, so their markers land in the run's first workflow task. */
export function askRunPatches(): RunPatches {
  return {};
}
