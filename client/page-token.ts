import { createHash } from 'node:crypto';

/**
 * The page token `airlock pending` prints (`nextPageToken`) and takes
 * back (`--page`): Temporal's visibility page token behind a version byte
 * and a check of 4 bytes, in base64url so it needs no quoting in a shell.
 * Opaque to people. A token cut short or mistyped is refused here: the
 * server answers one it cannot read with a retryable internal error, so
 * the client would retry it for 20 s and then report nothing useful.
 */

const VERSION = 1;
const CHECK_BYTES = 4;

/** Jobs on one page of `airlock pending` unless `--limit` says otherwise: a screenful, listed in well under a second. */
export const DEFAULT_PAGE_SIZE = 50;
/** Temporal's default and usual maximum page (frontend.visibilityMaxPageSize); `--all` asks for pages of this size. */
export const MAX_PAGE_SIZE = 1000;

export type PageTokenRead = { readonly kind: 'token'; readonly temporal: Uint8Array } | { readonly kind: 'invalid' };

function check(temporal: Uint8Array): Buffer {
  return createHash('sha256').update(temporal).digest().subarray(0, CHECK_BYTES);
}

export function encodePageToken(temporal: Uint8Array): string {
  return Buffer.concat([Buffer.of(VERSION), check(temporal), temporal]).toString('base64url');
}

export function decodePageToken(token: string): PageTokenRead {
  if (!/^[A-Za-z0-9_-]+$/.test(token)) return { kind: 'invalid' };
  const bytes = Buffer.from(token, 'base64url');
  // Node decodes leniently: only the canonical spelling of the bytes is a token we printed.
  if (bytes.toString('base64url') !== token || bytes.length <= 1 + CHECK_BYTES || bytes[0] !== VERSION) return { kind: 'invalid' };
  const temporal = bytes.subarray(1 + CHECK_BYTES);
  return check(temporal).equals(bytes.subarray(1, 1 + CHECK_BYTES)) ? { kind: 'token', temporal } : { kind: 'invalid' };
}
