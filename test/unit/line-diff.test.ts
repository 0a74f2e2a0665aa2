import { lineDiff, splitLines } from '../../core/util/line-diff';

/** Applies a unified diff's hunks to `before`: a diff that cannot rebuild `after` is wrong however it looks. */
function apply(before: string, lines: readonly string[]): string[] {
  const a = splitLines(before);
  const out: string[] = [];
  let at = 0;
  for (const line of lines) {
    const header = /^@@ -(\d+),(\d+) \+\d+,\d+ @@$/.exec(line);
    if (header !== null) {
      const start = Number(header[2]) === 0 ? Number(header[1]) : Number(header[1]) - 1;
      while (at < start) out.push(a[at++] ?? '');
      continue;
    }
    if (line.startsWith(' ')) {
      expect(a[at]).toBe(line.slice(1));
      out.push(a[at++] ?? '');
    } else if (line.startsWith('-')) {
      expect(a[at]).toBe(line.slice(1));
      at++;
    } else out.push(line.slice(1));
  }
  while (at < a.length) out.push(a[at++] ?? '');
  return out;
}

const numbered = (n: number, word = 'line') => Array.from({ length: n }, (_, i) => `${word} ${i}`).join('\n') + '\n';

describe('lineDiff', () => {
  test('a changed line and an added one: hunks with context, counts, and the diff rebuilds the new text', () => {
    const before = 'a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n';
    const after = 'a\nb\nX\nd\ne\nf\ng\nh\ni\nj\nk\n';
    const d = lineDiff(before, after, { context: 2 });
    expect(d).toEqual({
      kind: 'diff',
      lines: ['@@ -1,5 +1,5 @@', ' a', ' b', '-c', '+X', ' d', ' e', '@@ -9,2 +9,3 @@', ' i', ' j', '+k'],
      added: 2,
      removed: 1,
      omitted: 0,
    });
    expect(apply(before, d.kind === 'diff' ? d.lines : [])).toEqual(splitLines(after));
  });

  test('a new file is all additions, an emptied one all removals, equal texts no lines', () => {
    expect(lineDiff('', 'x\ny\n')).toMatchObject({ lines: ['@@ -0,0 +1,2 @@', '+x', '+y'], added: 2, removed: 0 });
    expect(lineDiff('x\ny\n', '')).toMatchObject({ lines: ['@@ -1,2 +0,0 @@', '-x', '-y'], added: 0, removed: 2 });
    expect(lineDiff('same\n', 'same\n')).toEqual({ kind: 'diff', lines: [], added: 0, removed: 0, omitted: 0 });
  });

  test('random edits of a long text: the shown diff always rebuilds the new text', () => {
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let round = 0; round < 40; round++) {
      const lines = splitLines(numbered(200));
      const edited = [...lines];
      for (let e = 0; e < 12; e++) {
        const at = rand(edited.length);
        const kind = rand(3);
        if (kind === 0) edited.splice(at, 1);
        else if (kind === 1) edited.splice(at, 0, `new ${round}-${e}`);
        else edited[at] = `changed ${round}-${e}`;
      }
      const after = edited.join('\n') + '\n';
      const d = lineDiff(lines.join('\n') + '\n', after);
      if (d.kind !== 'diff') throw new Error('expected a diff');
      expect(apply(lines.join('\n') + '\n', d.lines)).toEqual(edited);
    }
  });

  test('one line changed in 5,000 is one small hunk; two unrelated texts give up instead of spending seconds', () => {
    const big = numbered(5000);
    const d = lineDiff(big, big.replace('line 2500\n', 'changed\n'));
    expect(d).toMatchObject({ kind: 'diff', added: 1, removed: 1, lines: ['@@ -2498,7 +2498,7 @@', ' line 2497', ' line 2498', ' line 2499', '-line 2500', '+changed', ' line 2501', ' line 2502', ' line 2503'] });
    expect(lineDiff(big, numbered(5000, 'other'))).toEqual({ kind: 'tooDifferent', beforeLines: 5000, afterLines: 5000 });
  });

  test('maxLines caps the output and counts what it left out', () => {
    const d = lineDiff('', numbered(100), { maxLines: 10 });
    expect(d).toMatchObject({ kind: 'diff', added: 100, omitted: 91 });
    expect(d.kind === 'diff' ? d.lines : []).toHaveLength(10);
  });
});

describe('lineDiff on large inputs', () => {
  test('a new file or an append of thousands of lines is all additions, not "too different"', () => {
    const big = numbered(5000);
    expect(lineDiff('', big, { maxLines: 80 })).toMatchObject({ kind: 'diff', added: 5000, removed: 0, omitted: 5001 - 80 });
    const appended = lineDiff(big, big + numbered(3000, 'more'), { maxLines: 80 });
    expect(appended).toMatchObject({ kind: 'diff', added: 3000, removed: 0 });
    expect(appended.kind === 'diff' ? appended.lines[0] : '').toBe('@@ -4998,3 +4998,3003 @@');
  });

  test('hundreds of scattered changes in a long file: counted whole, only the first lines made', () => {
    const lines = splitLines(numbered(40_000));
    const edited = lines.map((l, i) => (i % 97 === 0 ? `${l} changed` : l));
    const d = lineDiff(lines.join('\n') + '\n', edited.join('\n') + '\n', { maxLines: 80 });
    expect(d).toMatchObject({ kind: 'diff', added: 413, removed: 413 });
    // Each change its own hunk of 9 lines (header, 3 context, -, +, 3 context); the first, on line 1, has no context before it.
    expect(d.kind === 'diff' ? d.lines.length + d.omitted : 0).toBe(413 * 9 - 3);
    expect(d.kind === 'diff' ? d.lines : []).toHaveLength(80);
  });
});
