import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type { PasskeyAssertion } from '../../core/approval/approvals';
import type { ReviewerPasskey } from '../../host/keys/reviewer-keys-file';

/**
 * A passkey made in software for tests: a P-256 key pair, the COSE public
 * key a WebAuthn registration would store, and assertions built the way an
 * authenticator builds them (authenticator data, client data JSON, ECDSA
 * over both). Lets tests forge exactly what an attacker could send.
 */
export class SoftPasskey {
  readonly id: string;
  private readonly privateKey: KeyObject;
  readonly publicKeyCose: Buffer;
  /** Assertions made so far: the signature counter of the next is one more. */
  private signatures = 0;

  constructor(
    readonly rpId = 'localhost',
    readonly origin = 'http://localhost:7244',
    /** Another credential's id, for an authenticator that claims it. */
    id?: string,
  ) {
    this.id = id ?? randomBytes(16).toString('base64url');
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = pair.privateKey;
    const jwk = pair.publicKey.export({ format: 'jwk' });
    const x = Buffer.from(jwk.x ?? '', 'base64url');
    const y = Buffer.from(jwk.y ?? '', 'base64url');
    // COSE_Key map {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}, CBOR-encoded.
    this.publicKeyCose = Buffer.concat([Buffer.from([0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]), x, Buffer.from([0x22, 0x58, 0x20]), y]);
  }

  /** As `passkeys` entries of the reviewer keys file list it. */
  registered(): ReviewerPasskey {
    return { id: this.id, publicKey: this.publicKeyCose.toString('base64url'), rpId: this.rpId, origin: this.origin, addedAt: new Date(0).toISOString() };
  }

  /**
   * The browser's answer to a registration (RegistrationResponseJSON) over
   * `challenge`, with attestation "none", as an authenticator on `origin`
   * would make it.
   */
  registration(challenge: string, options: { readonly origin?: string; readonly userVerified?: boolean } = {}): Record<string, unknown> {
    const flags = 0x01 | 0x40 | (options.userVerified === false ? 0 : 0x04);
    const credentialId = Buffer.from(this.id, 'base64url');
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(credentialId.length);
    const authData = Buffer.concat([createHash('sha256').update(this.rpId).digest(), Buffer.from([flags]), Buffer.alloc(4), Buffer.alloc(16), idLength, credentialId, this.publicKeyCose]);
    // CBOR {"fmt": "none", "attStmt": {}, "authData": bytes}.
    const text = (t: string) => Buffer.concat([Buffer.from([0x60 + t.length]), Buffer.from(t)]);
    const bytesHead = authData.length < 256 ? Buffer.from([0x58, authData.length]) : Buffer.from([0x59, authData.length >> 8, authData.length & 0xff]);
    const attestationObject = Buffer.concat([Buffer.from([0xa3]), text('fmt'), text('none'), text('attStmt'), Buffer.from([0xa0]), text('authData'), bytesHead, authData]);
    const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.create', challenge, origin: options.origin ?? this.origin, crossOrigin: false }));
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: { clientDataJSON: clientDataJSON.toString('base64url'), attestationObject: attestationObject.toString('base64url'), transports: ['internal'] },
      clientExtensionResults: {},
    };
  }

  /** An assertion over `challenge` (base64url), as a browser on `origin` would return it. */
  assert(
    challenge: string,
    options: { readonly origin?: string; readonly rpId?: string; readonly userVerified?: boolean; readonly counter?: number; readonly userHandle?: string; readonly clientData?: Readonly<Record<string, unknown>> } = {},
  ): PasskeyAssertion {
    const flags = 0x01 | (options.userVerified === false ? 0 : 0x04);
    const counter = Buffer.alloc(4);
    // As a counting authenticator does: one more with every assertion.
    counter.writeUInt32BE(options.counter ?? ++this.signatures);
    const authenticatorData = Buffer.concat([createHash('sha256').update(options.rpId ?? this.rpId).digest(), Buffer.from([flags]), counter]);
    const clientDataJSON = Buffer.from(JSON.stringify(options.clientData ?? { type: 'webauthn.get', challenge, origin: options.origin ?? this.origin, crossOrigin: false }));
    const signature = sign('sha256', Buffer.concat([authenticatorData, createHash('sha256').update(clientDataJSON).digest()]), this.privateKey);
    return {
      credentialId: this.id,
      authenticatorData: authenticatorData.toString('base64url'),
      clientDataJSON: clientDataJSON.toString('base64url'),
      signature: signature.toString('base64url'),
      ...(options.userHandle !== undefined ? { userHandle: options.userHandle } : {}),
    };
  }
}
