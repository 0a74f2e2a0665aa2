import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ReplayScript } from '../../core/model/replay-script';

export const DEMO_FOLDER = 'airlock-demo';

export const DEMO_GOAL =
  'Free some space in the airlock-demo folder: remove backups that are no longer needed, but keep the current one.';

/**
 * The offline demo: the scripted model looks around, reads a note, proposes
 * to delete an obsolete backup (which parks on approval), then completes.
 */
export const demoScript: ReplayScript = {
  turns: [
    { content: 'Let me look at the folder first.', tool_calls: [{ name: 'fs_list', arguments: { path: DEMO_FOLDER } }] },
    { tool_calls: [{ name: 'fs_read', arguments: { path: `${DEMO_FOLDER}/NOTES.txt` } }] },
    {
      content: 'The note says old-backup.tar is superseded. Deleting it needs approval.',
      tool_calls: [{ name: 'fs_delete', arguments: { path: `${DEMO_FOLDER}/old-backup.tar` } }],
    },
    { tool_calls: [{ name: 'complete', arguments: { summary: 'Removed the obsolete old-backup.tar; kept backups/current.tar.' } }] },
  ],
};

/** (Re)creates the demo files under the first tools root. */
export async function seedDemoFiles(root: string): Promise<string> {
  const folder = join(root, DEMO_FOLDER);
  const mode = 0o600;
  await mkdir(join(folder, 'backups'), { recursive: true, mode: 0o700 });
  await writeFile(
    join(folder, 'NOTES.txt'),
    'old-backup.tar was replaced by backups/current.tar in November; old-backup.tar can be removed.\n',
    { mode },
  );
  await writeFile(join(folder, 'old-backup.tar'), Buffer.alloc(256 * 1024, 7), { mode });
  await writeFile(join(folder, 'backups', 'current.tar'), Buffer.alloc(128 * 1024, 9), { mode });
  return folder;
}
