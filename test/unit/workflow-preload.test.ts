import { readFileSync } from 'node:fs';
import { createContext, runInContext } from 'node:vm';

/**
 * Each workflow thread runs the bundle's `preloadModules` once, into the
 * module cache its workflows share; what a workflow then loads itself is
 * evaluated again for every new job. Everything the workflows load must be
 * in the shared part (the bundler once dropped the zod preload silently:
 * zod says it has no side effects), and the SDK then freezes it: every
 * schema a shared module exports must still parse once frozen.
 */
type Module = { exports?: unknown };

function evaluatedBy(bundlePath: string): { cache: Record<string, Module>; preloaded: string[]; perJob: string[]; jitless: unknown } {
  const cache: Record<string, Module> = {};
  const context = createContext({ __webpack_module_cache__: cache });
  runInContext(readFileSync(bundlePath, 'utf8'), context);
  const atStart = new Set(Object.keys(cache));
  runInContext('__TEMPORAL__.preloadModules?.()', context);
  const preloaded = Object.keys(cache).filter((k) => !atStart.has(k));
  const shared = new Set(Object.keys(cache));
  runInContext('__TEMPORAL__.importWorkflows()', context);
  return { cache, preloaded, perJob: Object.keys(cache).filter((k) => !shared.has(k)), jitless: runInContext('globalThis.__zod_globalConfig?.jitless', context) };
}

/** What the SDK's reusable V8 context does to the shared modules: own properties frozen, deep; a function frozen, not walked. */
function freeze(value: unknown, seen = new WeakSet<object>()): void {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null || seen.has(value)) return;
  seen.add(value);
  if (typeof value === 'object') {
    for (const key of Reflect.ownKeys(value)) {
      try {
        freeze(Reflect.get(value, key), seen);
      } catch {
        // Some objects cannot be frozen (typed arrays): the SDK skips them too.
      }
    }
  }
  Object.freeze(value);
}

type Schema = { safeParse(input: unknown): { success: boolean }; _zod: object };
function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && '_zod' in value && 'safeParse' in value;
}

/** Every schema reachable from a module's exports by own properties (nested ones too: an object's fields). */
function schemasIn(value: unknown, found: Set<Schema>, seen = new WeakSet<object>()): Set<Schema> {
  if (typeof value !== 'object' || value === null || seen.has(value)) return found;
  seen.add(value);
  if (isSchema(value)) found.add(value);
  for (const key of Reflect.ownKeys(value)) {
    try {
      schemasIn(Reflect.get(value, key), found, seen);
    } catch {
      // Unreadable: the freeze passes it by too.
    }
  }
  return found;
}

test.each([
  ['encoded', 'AIRLOCK_TEST_WORKFLOW_BUNDLE'],
  ['plain', 'AIRLOCK_TEST_WORKFLOW_BUNDLE_PLAIN'],
])('the %s workflow bundle loads zod and the workflows once per workflow thread, never again per job', (_kind, variable) => {
  const path = process.env[variable];
  if (path === undefined) throw new Error(`${variable} is not set: run this through jest, whose global setup builds the bundles`);
  const { cache, preloaded, perJob, jitless } = evaluatedBy(path);
  expect(preloaded.some((m) => m.includes('/zod/v4/classic/schemas.'))).toBe(true);
  expect(preloaded.some((m) => m.includes('/workflows/agent-job.'))).toBe(true);
  expect(preloaded.some((m) => m.includes('/core/job/job-input.'))).toBe(true);
  // A new job finds everything it loads in the shared part.
  expect(perJob).toEqual([]);
  // Every job builds schemas of its own too (inside functions), parsed a few times each: compiling a fast path for each costs more than it saves.
  expect(jitless).toBe(true);

  // Frozen as the SDK freezes them, the exported schemas still parse (zod stores members it builds on first read).
  for (const module of Object.values(cache)) freeze(module);
  const schemas = [...schemasIn(Object.values(cache).map((m) => m.exports), new Set())];
  expect(schemas.length).toBeGreaterThan(200);
  // Only a write to a frozen object counts: a refinement run alone on the wrong type may throw its own error.
  const broken: string[] = [];
  for (const schema of schemas) {
    for (const input of [undefined, {}, 'text', [1], { schemaVersion: 1 }]) {
      try {
        schema.safeParse(input);
      } catch (err) {
        const message = String(Reflect.get(Object(err), 'message'));
        if (/read only|not extensible|Cannot (add|define|redefine|assign|delete) property/.test(message)) broken.push(String(Reflect.get(Object(err), 'stack')).split('\n').slice(0, 5).join(' | '));
      }
    }
  }
  expect(broken.slice(0, 3)).toEqual([]);
});
