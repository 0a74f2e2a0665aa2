/**
 * Run once in each workflow thread's V8 context, after zod
 * (workflow-preload.ts) and the workflows themselves were loaded there as
 * the bundle's `preloadModules`: airlock's modules are then evaluated once
 * per thread and shared by its jobs, instead of once for every new job.
 * They keep no state of a job at module level (`core/` is pure; what
 * modules keep is a cache of pure results).
 *
 * The SDK freezes what the shared modules export, and zod builds some of
 * a schema's members on first read and stores them on the schema (bound
 * methods such as `safeParse`, derived fields such as `shape`): on a
 * frozen schema that store throws, as does the first parse of a schema,
 * which settles how it parses. So every schema the shared modules export,
 * and every schema inside one, is read and parsed here once, while it can
 * still be written.
 * The walk reaches what the SDK's freeze reaches: own properties, from
 * each loaded module's exports down.
 */

declare const __webpack_modules__: Readonly<Record<string, unknown>> | undefined;

type ModuleCache = Readonly<Record<string, { readonly exports?: unknown } | undefined>>;

function moduleCache(): ModuleCache | undefined {
  const cache: unknown = Reflect.get(globalThis, '__webpack_module_cache__');
  return typeof cache === 'object' && cache !== null ? (cache as ModuleCache) : undefined;
}

const visited = new WeakSet<object>();

/** zod's internals of a schema or a check (`_zod`, with its definition), or undefined for anything else. */
function internalsOf(value: object): { readonly internals: object; readonly def: object } | undefined {
  const internals: unknown = Reflect.get(value, '_zod');
  if (typeof internals !== 'object' || internals === null) return undefined;
  const def: unknown = Reflect.get(internals, 'def');
  return typeof def === 'object' && def !== null ? { internals, def } : undefined;
}

/** Reads every accessor `value` inherits, so zod stores what it builds on first read. */
function readInherited(value: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  for (let proto: unknown = Reflect.getPrototypeOf(value); typeof proto === 'object' && proto !== null && proto !== Object.prototype; proto = Reflect.getPrototypeOf(proto)) {
    for (const key of Reflect.ownKeys(proto)) {
      if (Object.getOwnPropertyDescriptor(proto, key)?.get === undefined) continue;
      try {
        Reflect.get(value, key);
      } catch {
        // A member that cannot be built fails the same way when a job reads it.
      }
    }
  }
}

/**
 * zod resets a check's pattern (`lastIndex = 0`) before each test, which a
 * frozen RegExp refuses: the check's definition hands out a copy of the
 * pattern each time instead (V8 keeps the compiled pattern, so a copy is
 * cheap), and the freeze freezes a copy.
 */
function unfreezablePattern(def: object): void {
  const pattern: unknown = Reflect.get(def, 'pattern');
  const descriptor = Object.getOwnPropertyDescriptor(def, 'pattern');
  if (!(pattern instanceof RegExp) || descriptor === undefined || !('value' in descriptor)) return;
  const { source, flags } = pattern;
  Object.defineProperty(def, 'pattern', { configurable: false, enumerable: descriptor.enumerable ?? true, get: () => new RegExp(source, flags) });
}

function visit(value: unknown): void {
  if (typeof value !== 'object' || value === null || visited.has(value)) return;
  visited.add(value);
  const zod = internalsOf(value);
  if (zod !== undefined) {
    unfreezablePattern(zod.def);
    readInherited(value);
    readInherited(zod.internals);
    // A schema's first parses settle how it parses (zod's cycle support takes its wrapper back out of one that
    // cannot recurse, and latches one that can after asking twice), stored on the schema.
    const safeParse: unknown = Reflect.get(value, 'safeParse');
    for (let i = 0; typeof safeParse === 'function' && i < 2; i++) {
      try {
        Reflect.apply(safeParse, value, [undefined]);
      } catch {
        // A refinement that throws on the wrong type, or an asynchronous one: workflows parse none of those alone.
      }
    }
  }
  for (const key of Reflect.ownKeys(value)) {
    let child: unknown;
    try {
      child = Reflect.get(value, key);
    } catch {
      // The freeze skips what it cannot read as well.
      continue;
    }
    // Outside the catch: a schema that cannot be readied fails the thread's preload, loudly, not a job later.
    visit(child);
  }
}

const cache = moduleCache();
if (typeof __webpack_modules__ === 'object' && __webpack_modules__ !== undefined && cache !== undefined) {
  for (const id of Object.keys(__webpack_modules__)) visit(cache[id]?.exports);
}
