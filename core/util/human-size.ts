/**
 * Sizes as people read them: "612 bytes", "1.5 KiB", "256 KiB", "3.2 GiB".
 * Every surface that shows a size to a reviewer uses this one form; exact
 * byte counts stay in the JSON views.
 */
const UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

export function humanSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 1024) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`;
  let value = bytes;
  let unit: string = 'bytes';
  for (const u of UNITS) {
    if (value < 1024) break;
    value /= 1024;
    unit = u;
  }
  const shown = value < 10 ? Math.round(value * 10) / 10 : Math.round(value);
  return `${shown} ${unit}`;
}

/** A change of size: human forms, or the exact counts when both are small or the human forms would read the same. */
export function sizeChange(before: number, after: number): string {
  const a = humanSize(before);
  const b = humanSize(after);
  return a === b || (before < 1024 && after < 1024) ? `${before} → ${after} bytes` : `${a} → ${b}`;
}
