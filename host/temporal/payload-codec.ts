import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { z } from 'zod';
import { AirlockError } from '../../core/util/errors';

const ENCODING = 'binary/encrypted';
const KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The codec keys file is missing, unreadable or invalid, or a payload needs a key it lacks. */
export class CodecKeysError extends AirlockError {
  override name = 'CodecKeysError';
}

const keysFileSchema = z.strictObject({
  version: z.literal(1),
  /** The key new payloads are encrypted with; older ones stay to decrypt what they encrypted. */
  current: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/),
  keys: z.record(
    z.string(),
    z
      .string()
      .refine((k) => Buffer.from(k, 'base64').length === 32, { message: 'a key is 32 bytes, base64 (openssl rand -base64 32)' }),
  ),
});

export interface CodecKeys {
  readonly current: string;
  readonly keys: ReadonlyMap<string, Buffer>;
}

export function loadCodecKeys(file: string): CodecKeys {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new CodecKeysError(`codec keys ${file}: cannot read it (${(err as Error).message.split('\n')[0]})`, { cause: err });
  }
  const parsed = keysFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CodecKeysError(`codec keys ${file}: ${issue?.path.join('.') || '(file)'}: ${issue?.message ?? 'invalid'}`);
  }
  const keys = new Map(Object.entries(parsed.data.keys).map(([id, k]) => [id, Buffer.from(k, 'base64')]));
  if (!keys.has(parsed.data.current)) throw new CodecKeysError(`codec keys ${file}: current key ${parsed.data.current} is not in keys`);
  return { current: parsed.data.current, keys };
}

/** Creates a keys file with one fresh key (0600), unless one exists. */
export function ensureCodecKeys(file: string): { readonly created: boolean } {
  if (existsSync(file)) return { created: false };
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  // The date says when; the random part keeps keys made elsewhere the same day from sharing an id (a mismatch then says "unknown key").
  const id = `k${new Date().toISOString().slice(0, 10).replace(/-/g, '')}-${randomBytes(3).toString('hex')}`;
  const scratch = `${file}.${process.pid}.tmp`;
  writeFileSync(scratch, stringifyYaml({ version: 1, current: id, keys: { [id]: randomBytes(32).toString('base64') } }), { mode: 0o600 });
  renameSync(scratch, file);
  return { created: true };
}

/**
 * AES-256-GCM over each whole payload (metadata and data), with the key id
 * in the clear so keys can rotate: new payloads use the current key, old
 * ones decrypt with theirs. Unencrypted payloads pass through decode, so
 * history written before the codec was turned on stays readable.
 */
export class AesGcmCodec implements PayloadCodec {
  constructor(private readonly keys: CodecKeys) {}

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const id = this.keys.current;
    const key = this.key(id);
    return payloads.map((payload) => {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(id));
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return { metadata: { encoding: Buffer.from(ENCODING), [KEY_ID]: Buffer.from(id) }, data: sealed };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      if (Buffer.from(payload.metadata?.encoding ?? []).toString() !== ENCODING) return payload;
      const id = Buffer.from(payload.metadata?.[KEY_ID] ?? []).toString();
      const data = Buffer.from(payload.data ?? []);
      const decipher = createDecipheriv('aes-256-gcm', this.key(id), data.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(id));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      return temporal.api.common.v1.Payload.decode(plain);
    });
  }

  private key(id: string): Buffer {
    const key = this.keys.keys.get(id);
    if (key === undefined) throw new CodecKeysError(`a payload is encrypted with key ${JSON.stringify(id)}, which this process does not have (AIRLOCK_CODEC_KEYS)`);
    return key;
  }
}
