import { readFileSync } from 'node:fs';
import { createContext, runInContext } from 'node:vm';

/**
 * Each workflow thread runs the bundle's `preloadModules` once, into the
 * module cache its workflows share; what a workflow then loads itself is
 * evaluated again for every new job. zod is most of a job's start-up, so
 * it must be in the shared part: the bundler once dropped the preload
 * silently (zod says it has no side effects), leaving an empty function.
 */
function evaluatedBy(bundlePath: string): { preloaded: string[]; perJob: string[]; jitless: unknown } {
  const cache: Record<string, unknown> = {};
  const context = createContext({ __webpack_module_cache__: cache });
  runInContext(readFileSync(bundlePath, 'utf8'), context);
  const atStart = new Set(Object.keys(cache));
  runInContext('__TEMPORAL__.preloadModules?.()', context);
  const preloaded = Object.keys(cache).filter((k) => !atStart.has(k));
  const shared = new Set(Object.keys(cache));
  runInContext('__TEMPORAL__.importWorkflows()', context);
  return { preloaded, perJob: Object.keys(cache).filter((k) => !shared.has(k)), jitless: runInContext('globalThis.__zod_globalConfig?.jitless', context) };
}

test.each([
  ['encoded', 'AIRLOCK_TEST_WORKFLOW_BUNDLE'],
  ['plain', 'AIRLOCK_TEST_WORKFLOW_BUNDLE_PLAIN'],
])('the %s workflow bundle loads zod once per workflow thread, never again per job', (_kind, variable) => {
  const path = process.env[variable];
  if (path === undefined) throw new Error(`${variable} is not set: run this through jest, whose global setup builds the bundles`);
  const { preloaded, perJob, jitless } = evaluatedBy(path);
  expect(preloaded.some((m) => m.includes('/zod/v4/classic/schemas.'))).toBe(true);
  // The workflows do load their own modules, and none of them is zod's.
  expect(perJob.length).toBeGreaterThan(0);
  expect(perJob.filter((m) => m.includes('/node_modules/zod/'))).toEqual([]);
  // A job's schemas are its own and parsed a few times each: compiling a fast path for each costs more than it saves.
  expect(jitless).toBe(true);
});
