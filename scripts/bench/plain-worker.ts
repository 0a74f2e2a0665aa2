import { bundleWorkflowCode, Worker, type NativeConnection } from '@temporalio/worker';
import type { OpenAI } from 'openai';
import { createModelActivities } from '../../activities/model-turn';
import { parseConfig } from '../../core/config/config';
import { SqliteContentStore } from '../../host/stores/contents/sqlite';
import { fsChmod } from '../../core/tools/fs/fs-chmod';
import { fsDelete } from '../../core/tools/fs/fs-delete';
import { fsList } from '../../core/tools/fs/fs-list';
import { fsMove } from '../../core/tools/fs/fs-move';
import { fsRead } from '../../core/tools/fs/fs-read';
import { fsStat } from '../../core/tools/fs/fs-stat';
import { fsWrite } from '../../core/tools/fs/fs-write';
import { createFsTools, type FsTools, type ToolOutcome } from '../../host/tools/fs-tools';
import type { Roots } from '../../host/fs/roots';

/** The baseline's own task queue: nothing of airlock polls it. */
export const PLAIN_TASK_QUEUE = 'airlock-bench-plain';

/** The tool code airlock's tools worker runs, called directly: no grant, no nonce, no observation. */
function runTool(tools: FsTools, name: string, args: unknown): Promise<ToolOutcome> {
  switch (name) {
    case 'fs_list':
      return tools.fs_list(fsList.parameters.parse(args));
    case 'fs_read':
      return tools.fs_read(fsRead.parameters.parse(args));
    case 'fs_stat':
      return tools.fs_stat(fsStat.parameters.parse(args));
    case 'fs_write':
      return tools.fs_write(fsWrite.parameters.parse(args));
    case 'fs_move':
      return tools.fs_move(fsMove.parameters.parse(args));
    case 'fs_delete':
      return tools.fs_delete(fsDelete.parameters.parse(args));
    case 'fs_chmod':
      return tools.fs_chmod(fsChmod.parameters.parse(args));
    default:
      return Promise.resolve({ ok: false, output: `Error: unknown tool ${name}` });
  }
}

export function createPlainActivities(openai: OpenAI, model: string, roots: Roots) {
  const tools = createFsTools(roots);
  return {
    // The product's model-turn activity, unchanged.
    ...createModelActivities({ openai, model, contents: new SqliteContentStore(':memory:'), contextChars: 400_000 }),
    async plainTool(input: { name: string; arguments: string }): Promise<ToolOutcome> {
      let args: unknown;
      try {
        args = JSON.parse(input.arguments);
      } catch {
        return { ok: false, output: 'Error: the arguments are not JSON' };
      }
      return runTool(tools, input.name, args);
    },
    /** Does nothing: what a Temporal activity costs by itself (the `floor` part). */
    async plainNoop(): Promise<void> {},
  };
}

export type PlainActivities = ReturnType<typeof createPlainActivities>;

/** A worker in the bench process for the baseline workflow, from its own bundle. */
export async function createPlainWorker(connection: NativeConnection, activities: PlainActivities): Promise<Worker> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./plain-workflow'),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn: (m) => process.stderr.write(`${m}\n`), error: (m) => process.stderr.write(`${m}\n`) },
  });
  return Worker.create({
    connection,
    namespace: 'default',
    taskQueue: PLAIN_TASK_QUEUE,
    workflowBundle: { code },
    activities,
    // The tools worker's default limit (AIRLOCK_TOOLS_CONCURRENCY): the same reads in flight as airlock runs.
    maxConcurrentActivityTaskExecutions: parseConfig({}).concurrency.tools,
  });
}
