import { type DecisionPayload } from './approvals';
import { decisionSigningText } from './decision-check';
import { sha256Hex } from '../util/sha256';

const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

function hexToBase64url(hex: string): string {
  const bytes = hex.match(/../g)?.map((pair) => Number.parseInt(pair, 16)) ?? [];
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const [a = 0, b = 0, c = 0] = [bytes[i], bytes[i + 1], bytes[i + 2]];
    const n = (a << 16) | (b << 8) | c;
    const chars = i + 1 >= bytes.length ? 2 : i + 2 >= bytes.length ? 3 : 4;
    for (let k = 0; k < chars; k++) out += alphabet[(n >> (18 - 6 * k)) & 63];
  }
  return out;
}

/**
 * The WebAuthn challenge for a decision: SHA-256 of the text a key signs,
 * base64url. A passkey assertion over it binds the reviewer's gesture to
 * this job, request, fingerprint, nonce, decision, edit, reviewer and
 * reason; the nonce makes it single-use. The assertion itself is not part
 * of what it signs.
 */
export function decisionChallenge(jobId: string, payload: Omit<DecisionPayload, 'signature' | 'passkey'>): string {
  return hexToBase64url(sha256Hex(decisionSigningText(jobId, payload)));
}
