import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KeyObject } from 'node:crypto';
import { updateReviewerKeysFile } from '../../host/keys/reviewer-keys-file';

/**
 * What jobs of signed, approved writes need, written into `dir`: a rules
 * file whose only rule asks a signed approval for every `fs_write`, and a
 * reviewer keys file naming alice by her public key. Paths for
 * AIRLOCK_RULES_FILE and AIRLOCK_REVIEWER_KEYS.
 */
export function writeSignedWriteRules(dir: string, alice: KeyObject, reviewersFile = join(dir, 'reviewers.yaml')): { rules: string; reviewers: string } {
  updateReviewerKeysFile(reviewersFile, () => ({ alice: { key: alice.export({ type: 'spki', format: 'pem' }).toString() } }));
  const rules = join(dir, 'rules.json');
  writeFileSync(
    rules,
    JSON.stringify({
      version: 1,
      rules: [{ id: 'approve-writes', version: 1, name: 'Writes need a signed approval', scope: { tools: ['fs_write'] }, action: 'request_approval', approval: { signatureRequired: true } }],
    }),
  );
  return { rules, reviewers: reviewersFile };
}
