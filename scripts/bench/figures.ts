import { writeFileSync } from 'node:fs';

/** One row of the table and one entry of the JSON file. */
export interface Figure {
  readonly part: string;
  readonly name: string;
  readonly unit: string;
  /** The figure itself: a median, or a single measurement. */
  readonly value: number;
  readonly p95?: number;
  readonly p99?: number;
  /** Samples behind the figure. */
  readonly n?: number;
  readonly note?: string;
}

function format(value: number | undefined, unit: string): string {
  if (value === undefined) return '';
  if (Number.isNaN(value)) return 'n/a';
  if (unit === 'ratio') return `${value.toFixed(2)}x`;
  if (Number.isInteger(value) || Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  return value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
}

/** The one table the suite prints. */
export function renderTable(figures: readonly Figure[]): string {
  const header = ['part', 'figure', 'median', 'p95', 'p99', 'unit', 'n', 'note'];
  const rows = figures.map((f) => [
    f.part,
    f.name,
    format(f.value, f.unit),
    format(f.p95, f.unit),
    format(f.p99, f.unit),
    f.unit === 'ratio' ? '' : f.unit,
    f.n === undefined ? '' : String(f.n),
    f.note ?? '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = new Set([2, 3, 4, 6]);
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : numeric.has(i) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export interface BenchReport {
  readonly meta: Readonly<Record<string, unknown>>;
  readonly figures: readonly Figure[];
  readonly errors: ReadonlyArray<{ readonly part: string; readonly error: string }>;
}

export function writeReport(file: string, report: BenchReport): void {
  // NaN is not JSON: a missing figure is written as null.
  const figures = report.figures.map((f) => Object.fromEntries(Object.entries(f).map(([k, v]) => [k, typeof v === 'number' && Number.isNaN(v) ? null : v])));
  writeFileSync(file, `${JSON.stringify({ ...report, figures }, null, 2)}\n`);
}
