/**
 * Regular expressions for patterns an owner wrote (rule `regex` and
 * `glob`), matched on arguments a model chose. With V8's linear-time
 * engine (enabled by airlock's entry points: `host/linear-regex-engine.ts`)
 * a match costs time linear in the text, whatever the pattern; a pattern
 * that engine cannot run (a backreference, a lookaround) is refused when
 * the rules load. Where the engine is not enabled, the pattern runs as
 * written, and `pattern-cost` refuses the shapes known to backtrack.
 */

// eslint-disable-next-line airlock/no-module-state -- a fact of the process (a V8 flag), the same for every job
let available: boolean | undefined;

/** V8's flag for the linear-time engine (not in the ECMAScript standard, so lint does not know it). */
const LINEAR = 'l';

/** Whether this process can match in linear time (the `l` flag). */
export function linearEngine(): boolean {
  if (available === undefined) {
    try {
      // The flag is accepted only when the engine is enabled.
      new RegExp('a', LINEAR);
      available = true;
    } catch {
      available = false;
    }
  }
  return available;
}

/** A rule pattern, compiled for linear-time matching when the engine is there (code units, not code points), else as a Unicode regex. */
export function patternRegExp(source: string): RegExp {
  return linearEngine() ? new RegExp(source, LINEAR) : new RegExp(source, 'u');
}
