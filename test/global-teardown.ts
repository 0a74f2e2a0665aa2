import { rmSync } from 'node:fs';
import type { DevServer } from '../ops/dev/dev-server';

export default async function globalTeardown(): Promise<void> {
  const server = (globalThis as Record<string, unknown>).__airlockTestServer as DevServer | undefined;
  await server?.stop();
  const dir = process.env.AIRLOCK_TEST_TMP;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
}
