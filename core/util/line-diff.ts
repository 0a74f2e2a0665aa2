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

/** The script as hunks of unified diff with `context` lines around each change: at most `maxLines` lines made, all of them counted. */
function hunks(ops: readonly Op[], context: number, maxLines: number): { lines: string[]; total: number } {
  // Line numbers before each op, in one pass.
  const aAt = new Int32Array(ops.length + 1);
  const bAt = new Int32Array(ops.length + 1);
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]?.op;
    aAt[i + 1] = (aAt[i] ?? 0) + (op !== '+' ? 1 : 0);
    bAt[i + 1] = (bAt[i] ?? 0) + (op !== '-' ? 1 : 0);
  }
  const ranges: Array<{ start: number; end: number }> = [];
  let last = -Infinity;
  for (let i = 0; i < ops.length; i++) {
    if (ops[i]?.op === ' ') continue;
    const open = ranges[ranges.length - 1];
    // Changes closer than two contexts apart share a hunk.
    if (open !== undefined && i - last <= 2 * context + 1) open.end = Math.min(ops.length, i + context + 1);
    else ranges.push({ start: Math.max(0, i - context), end: Math.min(ops.length, i + context + 1) });
    last = i;
  }
  const lines: string[] = [];
  let total = 0;
  for (const { start, end } of ranges) {
    total += end - start + 1;
    if (lines.length >= maxLines) continue;
    const aCount = (aAt[end] ?? 0) - (aAt[start] ?? 0);
    const bCount = (bAt[end] ?? 0) - (bAt[start] ?? 0);
    const aLine = (aAt[start] ?? 0) + 1;
    const bLine = (bAt[start] ?? 0) + 1;
    lines.push(`@@ -${aCount === 0 ? aLine - 1 : aLine},${aCount} +${bCount === 0 ? bLine - 1 : bLine},${bCount} @@`);
    for (let i = start; i < end && lines.length < maxLines; i++) lines.push(`${ops[i]?.op ?? ' '}${ops[i]?.line ?? ''}`);
  }
  return { lines: lines.slice(0, maxLines), total };
}

export function lineDiff(before: string, after: string, options: LineDiffOptions = {}): LineDiff {
  const a = splitLines(before);
  const b = splitLines(after);
  // The common start and end are context, not edits: an append or a one-line change costs nothing to find.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const aMid = a.slice(head, a.length - tail);
  const bMid = b.slice(head, b.length - tail);
  const middle =
    aMid.length === 0 || bMid.length === 0
      ? [...aMid.map((line): Op => ({ op: '-', line })), ...bMid.map((line): Op => ({ op: '+', line }))]
      : editScript(aMid, bMid, options.maxEdits ?? 1_000);
  if (middle === null) return { kind: 'tooDifferent', beforeLines: a.length, afterLines: b.length };
  const ops: Op[] = [...a.slice(0, head).map((line): Op => ({ op: ' ', line })), ...middle, ...a.slice(a.length - tail).map((line): Op => ({ op: ' ', line }))];
  const { lines, total } = hunks(ops, options.context ?? 3, options.maxLines ?? Number.POSITIVE_INFINITY);
  return {
    kind: 'diff',
    lines,
    added: ops.filter((o) => o.op === '+').length,
    removed: ops.filter((o) => o.op === '-').length,
    omitted: total - lines.length,
  };
}
