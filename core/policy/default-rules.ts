import type { z } from 'zod';
import type { rulesFileSchema } from './rules';

/**
 * The rules a job gets when no rules file is configured: reads run, changes
 * are audited, and anything that replaces, truncates or removes existing
 * data (deletes, overwriting writes and moves, permission changes) waits for
 * a person whose decision is signed with their reviewer key.
 */
export const defaultRules: z.input<typeof rulesFileSchema> = {
  version: 1,
  instructions: [
    'Work only inside the allowed folders. Look before you change anything: list or stat a target first.',
    'Some calls wait for a person to approve them; if a call is denied, do not repeat it unchanged.',
  ],
  rules: [
    {
      id: 'approve-deletes',
      version: 2,
      name: 'Deleting files needs approval',
      scope: { categories: ['delete'] },
      action: 'request_approval',
      instruction: 'Deletion cannot be undone. Check the target and whether a backup exists.',
      approval: { ttl: '24h', editable: ['recursive'], signatureRequired: true },
    },
    {
      id: 'approve-permission-changes',
      version: 2,
      name: 'Changing permissions needs approval',
      scope: { tools: ['fs_chmod'] },
      action: 'request_approval',
      instruction: 'Permission changes can expose files; prefer the narrowest mode.',
      approval: { ttl: '24h', editable: ['mode'], signatureRequired: true },
    },
    {
      id: 'approve-replacing-data',
      version: 1,
      name: 'Replacing existing data needs approval',
      scope: { categories: ['file_change'] },
      when: { detector: 'destroys_data' },
      action: 'request_approval',
      instruction: 'This replaces or truncates something that exists. Check that nothing is lost.',
      approval: { ttl: '24h', signatureRequired: true },
    },
    {
      id: 'audit-file-changes',
      version: 1,
      name: 'Record every file change',
      scope: { categories: ['file_change'] },
      action: 'audit_only',
    },
  ],
};
