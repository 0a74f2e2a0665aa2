import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { AirlockError } from '../../core/util/errors';
import { grantSchema, grantSigningText, type Grant, type GrantClaims } from '../../core/approval/grants';

/** A grant key file is missing or unreadable. */
export class GrantKeyError extends AirlockError {
  override name = 'GrantKeyError';
  constructor(
    readonly file: string,
    detail: string,
    cause?: unknown,
  ) {
    super(`grant key ${file}: ${detail}`, { cause });
  }
}

/** Agent side: issues grants. */
export interface GrantSigner {
  sign(claims: GrantClaims): Grant;
}

/** Tools side: checks a grant's signature (binding and expiry are checked by the caller). */
export interface GrantVerifier {
  verify(grant: unknown): grant is Grant;
}

export function createGrantSigner(privateKey: KeyObject): GrantSigner {
  return {
    sign(claims) {
      const signature = sign(null, Buffer.from(grantSigningText(claims)), privateKey).toString('base64');
      return { claims, signature };
    },
  };
}

export function createGrantVerifier(publicKey: KeyObject): GrantVerifier {
  return {
    verify(grant): grant is Grant {
      const parsed = grantSchema.safeParse(grant);
      if (!parsed.success) return false;
      try {
        return verify(
          null,
          Buffer.from(grantSigningText(parsed.data.claims)),
          publicKey,
          Buffer.from(parsed.data.signature, 'base64'),
        );
      } catch {
        return false;
      }
    },
  };
}

/**
 * The agent worker's Ed25519 key pair: created on first use (private key
 * 0600), so a single-host install needs no setup. Tools workers only need
 * the public half.
 */
export function loadOrCreateGrantKeyPair(privateFile: string, publicFile: string): { privateKey: KeyObject; publicKey: KeyObject } {
  if (!existsSync(privateFile)) {
    const pair = generateKeyPairSync('ed25519');
    mkdirSync(dirname(privateFile), { recursive: true, mode: 0o700 });
    try {
      writeFileSync(privateFile, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    } catch (err) {
      // Another replica created it first: use theirs.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new GrantKeyError(privateFile, (err as Error).message, err);
    }
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(readFileSync(privateFile));
  } catch (err) {
    throw new GrantKeyError(privateFile, `not a readable Ed25519 private key (${(err as Error).message})`, err);
  }
  const publicKey = createPublicKey(privateKey);
  if (!existsSync(publicFile)) {
    mkdirSync(dirname(publicFile), { recursive: true, mode: 0o700 });
    // Not a secret, but nothing under the data folder is readable by others; copy it where tools workers run.
    writeFileSync(publicFile, publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o600 });
  }
  return { privateKey, publicKey };
}

export function loadGrantPublicKey(publicFile: string): KeyObject {
  if (!existsSync(publicFile)) {
    throw new GrantKeyError(
      publicFile,
      'not found; start the agent worker once to create the key pair, or copy its public key here (AIRLOCK_GRANT_PUBLIC_KEY)',
    );
  }
  try {
    return createPublicKey(readFileSync(publicFile));
  } catch (err) {
    throw new GrantKeyError(publicFile, `not a readable Ed25519 public key (${(err as Error).message})`, err);
  }
}
