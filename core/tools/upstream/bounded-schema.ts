/**
 * The part of an upstream's JSON Schema airlock checks itself, in the
 * workflow, on every call and every replay: so it must cost little and
 * the same every time, whatever the upstream listed. What could cost more
 * is left to the upstream, which checks its own arguments anyway:
 * `pattern` (a backtracking regular expression on text the agent
 * chooses), references (`$ref` fan-out is exponential), formats, ids
 * (zod keeps them in a registry). Too deep, too wide or too large, and
 * nothing but "a JSON object" is checked here.
 *
 * What this keeps decides which calls a running job refuses, on replay as
 * live: changing it is a workflow change (a new build, or `patched()`).
 */

/** Nesting kept at most; an upstream's tool nested deeper is not offered at all (see `schemaDepth`). */
export const MAX_CHECKED_DEPTH = 12;
/** Schema nodes checked at most. */
const MAX_NODES = 400;
/** Alternatives in one `anyOf`/`oneOf`/`allOf`. */
const MAX_ALTERNATIVES = 8;

const dropped = new Set(['pattern', 'patternProperties', 'format', 'id', '$id', '$schema', '$anchor', '$comment', 'contentEncoding', 'contentMediaType']);
const references = new Set(['$ref', '$dynamicRef', '$recursiveRef', '$defs', 'definitions']);
const combinators = new Set(['anyOf', 'oneOf', 'allOf']);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The schema to check, or undefined when only "an object" can be checked here. */
export function boundedSchema(schema: Record<string, unknown>): Record<string, unknown> | undefined {
  let nodes = 0;
  const walk = (node: unknown, depth: number): unknown => {
    if (typeof node === 'boolean') return node;
    if (!isRecord(node)) throw new TooComplex();
    if (++nodes > MAX_NODES || depth > MAX_CHECKED_DEPTH) throw new TooComplex();
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (references.has(key)) throw new TooComplex();
      if (dropped.has(key)) continue;
      if (combinators.has(key)) {
        if (!Array.isArray(value) || value.length > MAX_ALTERNATIVES) throw new TooComplex();
        out[key] = value.map((v) => walk(v, depth + 1));
      } else if (key === 'properties' || key === 'dependentSchemas') {
        if (!isRecord(value)) throw new TooComplex();
        out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, depth + 1)]));
      } else if (key === 'items' || key === 'additionalProperties' || key === 'not' || key === 'contains' || key === 'propertyNames') {
        out[key] = Array.isArray(value) ? value.map((v) => walk(v, depth + 1)) : walk(value, depth + 1);
      } else if (key === 'prefixItems') {
        if (!Array.isArray(value)) throw new TooComplex();
        out[key] = value.map((v) => walk(v, depth + 1));
      } else {
        // Keywords whose value is data (type, enum, const, required, minimum, default, description…): copied as they are.
        out[key] = value;
      }
    }
    // Extra properties matched by a pattern airlock does not check stay allowed.
    if ('patternProperties' in node && out.additionalProperties === false) delete out.additionalProperties;
    return out;
  };
  try {
    const bounded = walk(schema, 0);
    return isRecord(bounded) ? bounded : undefined;
  } catch (err) {
    if (err instanceof TooComplex) return undefined;
    throw err;
  }
}

class TooComplex extends Error {}

/** How deeply a value nests, without recursion (an upstream's schema may nest thousands deep). */
export function schemaDepth(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: Array<{ readonly v: unknown; readonly d: number }> = [{ v: value, d: 0 }];
  while (stack.length > 0) {
    const top = stack.pop();
    if (top === undefined) break;
    if (top.d > deepest) deepest = top.d;
    if (deepest > limit) return deepest;
    if (typeof top.v === 'object' && top.v !== null) for (const child of Object.values(top.v)) stack.push({ v: child, d: top.d + 1 });
  }
  return deepest;
}
