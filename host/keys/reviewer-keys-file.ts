import { closeSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { z } from 'zod';
import { AirlockError } from '../../core/util/errors';

/** The reviewer keys file is unreadable or invalid. */
export class ReviewerKeysError extends AirlockError {
  override name = 'ReviewerKeysError';
  constructor(
    readonly file: string,
    detail: string,
    cause?: unknown,
  ) {
    super(`reviewer keys ${file}: ${detail}`, { cause });
  }
}

const pem = z.string().includes('BEGIN PUBLIC KEY', { message: 'expected a PEM public key' });
const base64url = z.string().min(1).regex(/^[A-Za-z0-9_-]+$/, 'expected base64url');

/** A passkey registered on the approval page: its public key, and the site it was made for. */
export const reviewerPasskeySchema = z.strictObject({
  /** The credential id, base64url. */
  id: base64url.max(1_400),
  /** The COSE public key, base64url. */
  publicKey: base64url.max(2_000),
  /** The relying party (host name of the approval page) the passkey is scoped to. */
  rpId: z.string().min(1).max(253),
  /** The approval page's origin the registration came from; assertions must come from it too. */
  origin: z.string().url(),
  addedAt: z.string(),
  transports: z.array(z.string().max(40)).max(10).optional(),
});
export type ReviewerPasskey = z.infer<typeof reviewerPasskeySchema>;

const reviewerEntrySchema = z.strictObject({
  /** Ed25519 public key (PEM) of the key `airlock approve` signs with. */
  key: pem.optional(),
  passkeys: z.array(reviewerPasskeySchema).max(50).optional(),
});
export type ReviewerEntry = z.infer<typeof reviewerEntrySchema>;

const reviewerName = z.string().min(1).max(200);

/** Version 1 lists Ed25519 keys only; version 2 adds passkeys. Both are read; version 2 is written. */
const keysFileSchema = z.discriminatedUnion('version', [
  z.strictObject({ version: z.literal(1), reviewers: z.record(reviewerName, pem) }),
  z.strictObject({ version: z.literal(2), reviewers: z.record(reviewerName, reviewerEntrySchema) }),
]);

export type ReviewerEntries = Readonly<Record<string, ReviewerEntry>>;

/** Reads a keys file (either version) as version 2 entries. */
export function readReviewerKeysFile(file: string): ReviewerEntries {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ReviewerKeysError(file, `cannot read it (${(err as Error).message.split('\n')[0]})`, err);
  }
  const parsed = keysFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ReviewerKeysError(
      file,
      `${issue?.path.join('.') || '(file)'}: ${issue?.message ?? 'invalid'} (expected version: 2, reviewers: {NAME: {key: PEM, passkeys: [...]}}; fix it, then try again)`,
    );
  }
  if (parsed.data.version === 2) return parsed.data.reviewers;
  return Object.fromEntries(Object.entries(parsed.data.reviewers).map(([name, key]) => [name, { key }]));
}

const LOCK_WAIT_MS = 5_000;
const LOCK_STALE_MS = 30_000;

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** One try at the lock: taken, or held by another writer (a dead writer's is taken over when old enough). */
function tryLock(lock: string, file: string): boolean {
  try {
    closeSync(openSync(lock, 'wx', 0o600));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new ReviewerKeysError(file, `cannot lock it (${(err as Error).message})`, err);
  }
  try {
    if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) unlinkSync(lock);
  } catch {
    // Released meanwhile.
  }
  return false;
}

const lockHeld = (lock: string, file: string) => new ReviewerKeysError(file, `another process holds ${lock}; try again (remove it if no airlock command is running)`);

function takeLock(lock: string, file: string): void {
  const until = Date.now() + LOCK_WAIT_MS;
  while (!tryLock(lock, file)) {
    if (Date.now() > until) throw lockHeld(lock, file);
    sleepSync(20);
  }
}

/** The same wait without blocking the event loop: a server keeps answering others meanwhile. */
async function takeLockAsync(lock: string, file: string): Promise<void> {
  const until = Date.now() + LOCK_WAIT_MS;
  while (!tryLock(lock, file)) {
    if (Date.now() > until) throw lockHeld(lock, file);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Changes the keys file under a lock (so `reviewer add` and a passkey
 * registration never lose each other's entry), written whole and renamed:
 * the agent workers never read half a file.
 */
export function updateReviewerKeysFile(file: string, change: (entries: ReviewerEntries) => ReviewerEntries): ReviewerEntries {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  takeLock(`${file}.lock`, file);
  return changeLocked(file, change);
}

/** `updateReviewerKeysFile` for a server: waiting for the lock does not stop it answering other requests. */
export async function updateReviewerKeysFileAsync(file: string, change: (entries: ReviewerEntries) => ReviewerEntries): Promise<ReviewerEntries> {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  await takeLockAsync(`${file}.lock`, file);
  return changeLocked(file, change);
}

/** Reads, changes and writes the file with the lock held; releases it. */
function changeLocked(file: string, change: (entries: ReviewerEntries) => ReviewerEntries): ReviewerEntries {
  try {
    let current: ReviewerEntries = {};
    try {
      statSync(file);
      current = readReviewerKeysFile(file);
    } catch (err) {
      if (err instanceof ReviewerKeysError) throw err;
    }
    const next = change(current);
    const scratch = `${file}.${process.pid}.tmp`;
    writeFileSync(scratch, stringifyYaml({ version: 2, reviewers: next }), { mode: 0o600 });
    renameSync(scratch, file);
    return next;
  } finally {
    try {
      unlinkSync(`${file}.lock`);
    } catch {
      // Already gone.
    }
  }
}
