import type { z } from 'zod';
import type { rulesFileSchema } from './rules';

/**
 * The rules a job gets when no rules file is configured: reads run (service
 * status included), changes are audited, and anything that replaces,
 * truncates or removes existing data (deletes, overwriting writes and
 * moves, permission changes), moves many entries at once, starts, stops or
 * restarts a service, sends something to a host outside `allowedHosts`, or
 * runs a command waits for a person whose decision is signed with their
 * reviewer key. Commands the
 * `denied_command` detector knows are refused outright.
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
      id: 'approve-undo',
      version: 1,
      name: 'Undoing an approved change needs a signed decision',
      scope: { tools: ['fs_undo'] },
      action: 'request_approval',
      instruction: 'This puts back what an approved change moved aside. `airlock undo` run by the reviewer who approved that change decides this at once.',
      approval: { ttl: '24h', editable: [], signatureRequired: true },
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
      version: 2,
      name: 'Replacing existing data needs approval',
      // Not fs_chmod: its own rule gates it, and this rule's empty `editable` would take `mode` from the reviewer.
      scope: { categories: ['file_change'], tools: ['fs_write', 'fs_move'] },
      when: { detector: 'destroys_data' },
      action: 'request_approval',
      instruction: 'This replaces or truncates something that exists. Check that nothing is lost.',
      approval: { ttl: '24h', signatureRequired: true },
    },
    {
      id: 'approve-hard-linked-writes',
      version: 1,
      name: 'Writing to a file that has other names needs approval',
      scope: { tools: ['fs_write'] },
      when: { detector: 'hard_link' },
      action: 'request_approval',
      instruction: 'This file has other names (hard links), possibly outside the allowed folders: writing here changes it under every name.',
      approval: { ttl: '24h', signatureRequired: true },
    },
    {
      id: 'approve-bulk-moves',
      version: 1,
      name: 'Moving many entries at once needs approval',
      scope: { tools: ['fs_move_many'] },
      action: 'request_approval',
      instruction: 'A bulk move rearranges many files at once. Check the count, the total size and the first entries.',
      // The set is what was approved: an edited list would be another set.
      approval: { ttl: '24h', editable: [], signatureRequired: true },
    },
    {
      id: 'approve-service-control',
      version: 1,
      name: 'Starting, stopping or restarting a service needs approval',
      scope: { categories: ['service_control'] },
      action: 'request_approval',
      instruction: 'A service change interrupts whoever uses it. Check its status first; the call is skipped if the service is healthy again.',
      // The service is what was approved: a reviewer may approve or deny it, never point it at another one.
      approval: { ttl: '24h', editable: [], signatureRequired: true },
    },
    {
      id: 'approve-outbound-sends',
      version: 1,
      name: 'Requests to hosts outside allowedHosts need approval',
      scope: { categories: ['network', 'external_send'] },
      when: { detector: 'external_send' },
      action: 'request_approval',
      instruction: 'This sends data to a host that is not on the allowed list. Send nothing secret.',
      approval: { ttl: '24h', editable: [], signatureRequired: true },
    },
    {
      id: 'approve-upstream-changes',
      version: 1,
      name: "Changes through an MCP server's tools need approval",
      // Deletes and sends have their own rules above; this is what is left of an upstream tool that is not read-only.
      scope: { categories: ['file_change'] },
      when: { detector: 'upstream_change' },
      action: 'request_approval',
      instruction: 'airlock cannot check what this MCP tool will change before it runs: approval is for these exact arguments.',
      approval: { ttl: '24h', editable: [], signatureRequired: true },
    },
    {
      id: 'deny-dangerous-commands',
      version: 1,
      name: 'Commands that can destroy a system are refused',
      scope: { categories: ['command_execution'] },
      when: { detector: 'denied_command' },
      action: 'deny_current_tool',
      instruction: 'This command is refused on this server; find another way or ask the operator.',
    },
    {
      id: 'approve-commands',
      version: 1,
      name: 'Running a command needs approval',
      scope: { categories: ['command_execution'] },
      action: 'request_approval',
      instruction: 'A command can do anything its program does. Check the arguments exactly.',
      approval: { ttl: '24h', editable: [], signatureRequired: true },
    },
    {
      id: 'audit-outbound',
      version: 1,
      name: 'Record every outbound request',
      scope: { categories: ['network', 'external_send'] },
      action: 'audit_only',
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
