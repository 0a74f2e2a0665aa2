import type { z } from 'zod';
import type { rulesFileSchema } from './rules';

/**
 * The rules a job gets when no rules file is configured: reads run,
 * changes are audited, deletions and permission changes wait for a person.
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
      version: 1,
      name: 'Deleting files needs approval',
      scope: { categories: ['delete'] },
      action: 'request_approval',
      instruction: 'Deletion cannot be undone. Check the target and whether a backup exists.',
      approval: { ttl: '24h', editable: ['recursive'] },
    },
    {
      id: 'approve-permission-changes',
      version: 1,
      name: 'Changing permissions needs approval',
      scope: { tools: ['fs_chmod'] },
      action: 'request_approval',
      instruction: 'Permission changes can expose files; prefer the narrowest mode.',
      approval: { ttl: '24h', editable: ['mode'] },
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
