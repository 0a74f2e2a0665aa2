/**
 * A unified diff of two texts, line by line, for a reviewer to read what a
 * write changes. Shortest edit script (Myers' O(ND) greedy search), bounded:
 * past `maxEdits` differing lines it gives up rather than spend seconds on
 * two unrelated texts, and the output stops at `maxLines` lines.
 */

export interface LineDiffOptions {
  /** Unchanged lines shown around each change. */
  readonly context?: number;
  /** Lines of output at most (hunk headers included); the rest is counted, not shown. */
  readonly maxLines?: number;
  /** More differing lines than this: no line-by-line diff (`tooDifferent`). */
  readonly maxEdits?: number;
}

export type LineDiff =
  | {
      readonly kind: 'diff';
      /** Unified diff lines: `@@ -a,b +c,d @@`, then ` `, `-`, `+` prefixed lines. Empty when the texts are equal. */
      readonly lines: readonly string[];
      readonly added: number;
      readonly removed: number;
      /** Lines of the diff not shown because of `maxLines`. */
      readonly omitted: number;
    }
  | { readonly kind: 'tooDifferent'; readonly beforeLines: number; readonly afterLines: number };

/** Lines as a file holds them; a final newline ends the last line rather than starting an empty one. */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

type Op = { readonly op: ' ' | '-' | '+'; readonly line: string };

/** The edit script from `a` to `b`, or null when it needs more than `maxEdits` edits. */
function editScript(a: readonly string[], b: readonly string[], maxEdits: number): Op[] | null {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  // v[k + offset]: the furthest x reached on diagonal k; one copy per d to walk back.
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  search: for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    const next = v.slice();
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[k - 1 + offset] ?? 0) < (v[k + 1 + offset] ?? 0));
      let x = down ? (v[k + 1 + offset] ?? 0) : (v[k - 1 + offset] ?? 0) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      next[k + offset] = x;
      if (x >= n && y >= m) {
        v = next;
        trace.push(v.slice());
        found = d;
        break search;
      }
    }
    v = next;
  }
  if (found < 0) return null;
  // Walk back from (n, m) through the saved frontiers.
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const before = trace[d] ?? new Int32Array(0);
    const k = x - y;
    const down = k === -d || (k !== d && (before[k - 1 + offset] ?? 0) < (before[k + 1 + offset] ?? 0));
    const prevK = down ? k + 1 : k - 1;
    const prevX = before[prevK + offset] ?? 0;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push({ op: ' ', line: a[--x] ?? '' });
      y--;
    }
    if (down) ops.push({ op: '+', line: b[--y] ?? '' });
    else ops.push({ op: '-', line: a[--x] ?? '' });
  }
  while (x > 0 && y > 0) {
    ops.push({ op: ' ', line: a[--x] ?? '' });
    y--;
  }
  return ops.reverse();
}

/** The script as hunks of unified diff with `context` lines around each change. */
function hunks(ops: readonly Op[], context: number): string[] {
  const out: string[] = [];
  const changed = ops.flatMap((o, i) => (o.op === ' ' ? [] : [i]));
  let i = 0;
  while (i < changed.length) {
    const first = changed[i] ?? 0;
    let last = first;
    // Changes closer than two contexts apart share a hunk.
    while (i + 1 < changed.length && (changed[i + 1] ?? 0) - last <= 2 * context + 1) last = changed[++i] ?? last;
    i++;
    const start = Math.max(0, first - context);
    const end = Math.min(ops.length, last + context + 1);
    // Line numbers where the hunk starts, counted over the ops before it.
    let aLine = 1;
    let bLine = 1;
    for (const o of ops.slice(0, start)) {
      if (o.op !== '+') aLine++;
      if (o.op !== '-') bLine++;
    }
    const body = ops.slice(start, end);
    const aCount = body.filter((o) => o.op !== '+').length;
    const bCount = body.filter((o) => o.op !== '-').length;
    out.push(`@@ -${aCount === 0 ? aLine - 1 : aLine},${aCount} +${bCount === 0 ? bLine - 1 : bLine},${bCount} @@`);
    for (const o of body) out.push(`${o.op}${o.line}`);
  }
  return out;
}

export function lineDiff(before: string, after: string, options: LineDiffOptions = {}): LineDiff {
  const a = splitLines(before);
  const b = splitLines(after);
  const ops = editScript(a, b, options.maxEdits ?? 1_000);
  if (ops === null) return { kind: 'tooDifferent', beforeLines: a.length, afterLines: b.length };
  const all = hunks(ops, options.context ?? 3);
  const maxLines = options.maxLines ?? Number.POSITIVE_INFINITY;
  return {
    kind: 'diff',
    lines: all.slice(0, maxLines),
    added: ops.filter((o) => o.op === '+').length,
    removed: ops.filter((o) => o.op === '-').length,
    omitted: Math.max(0, all.length - maxLines),
  };
}
