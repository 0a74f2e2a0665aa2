import { z } from 'zod';
import { decodePageToken, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../client/page-token';
import type { ParsedArgs } from '../command';
import { UsageError } from '../../client/errors';

/**
 * What one `pending` listing asks of visibility: every page (`--all`, and
 * `--json` without `--limit` or `--page`, whose scripts read the whole array
 * as before) or one page (people: the first `--limit` jobs, or the page a
 * printed token names).
 */
export type PendingListing =
  | { readonly kind: 'all'; readonly pageSize: number }
  | { readonly kind: 'page'; readonly pageSize: number; readonly token: Uint8Array | undefined; readonly limitGiven: boolean };

const optionsSchema = z.object({
  limit: z.string().optional(),
  page: z.string().optional(),
  all: z.boolean().optional(),
  json: z.boolean().optional(),
});

const limitSchema = z.coerce.number().int().min(1).max(MAX_PAGE_SIZE);

function pageSizeOf(raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const parsed = limitSchema.safeParse(raw.trim() === '' ? undefined : raw);
  if (!parsed.success) throw new UsageError(`--limit takes a whole number of jobs between 1 and ${MAX_PAGE_SIZE}, got ${JSON.stringify(raw)}`);
  return parsed.data;
}

function tokenOf(raw: string | undefined): Uint8Array | undefined {
  if (raw === undefined) return undefined;
  const read = decodePageToken(raw);
  if (read.kind === 'invalid') throw new UsageError('--page takes the nextPageToken a previous `pending --json --limit N` printed (or the token its last line shows)');
  return read.temporal;
}

export function pendingListing(args: ParsedArgs): PendingListing {
  const options = optionsSchema.safeParse(args.values);
  if (!options.success) throw new UsageError('--limit and --page take one value each');
  const { limit, page, all, json } = options.data;
  if (all === true && page !== undefined) throw new UsageError('--all lists every page; it takes no --page');
  // Checked before the shape is chosen, so a bad value is refused whatever else is given.
  const token = tokenOf(page);
  if (all === true || (json === true && limit === undefined && page === undefined)) return { kind: 'all', pageSize: pageSizeOf(limit, MAX_PAGE_SIZE) };
  return { kind: 'page', pageSize: pageSizeOf(limit, DEFAULT_PAGE_SIZE), token, limitGiven: limit !== undefined };
}
