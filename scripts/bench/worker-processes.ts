import { join } from 'node:path';
import { projectRoot } from '../../ops/dev/project-root';
import { spawnChild, type Child } from './processes';

/**
 * airlock's agent and tools workers as their own processes, started from
 * `dist/workers/*.js` exactly as an operator starts them, so the agent
 * worker's memory can be read on its own.
 */
export interface WorkerProcesses {
  readonly agent: Child;
  readonly tools: Child;
  stop(): Promise<void>;
}

const READY = /workers polling/;

/** Where a part's own worker processes work: their server and namespace, folders, rules and model. */
export interface PartWorkers {
  readonly address: string;
  readonly namespace: string;
  /** The part's folder: the workers keep their data in `data/` below it. */
  readonly base: string;
  readonly root: string;
  readonly rulesFile: string;
  readonly modelUrl: string;
}

/** The environment an operator would give such workers (the clients of a part use it too). */
export function partWorkerEnv(w: PartWorkers): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: w.address,
    TEMPORAL_NAMESPACE: w.namespace,
    AIRLOCK_DATA_DIR: join(w.base, 'data'),
    AIRLOCK_ROOTS: w.root,
    AIRLOCK_RULES_FILE: w.rulesFile,
    OPENAI_BASE_URL: w.modelUrl,
    AIRLOCK_LOG_LEVEL: 'warn',
    // The parts' own `airlock pending` runs are timed in their process, as before the resident CLI process came.
    AIRLOCK_CLI_RESIDENT: 'off',
  };
}

/** Worker settings a bench run passes on to its worker processes, to compare them (`AIRLOCK_WORKFLOW_CACHE=200 npm run bench ...`). */
const TUNABLES = ['AIRLOCK_WORKFLOW_CACHE', 'AIRLOCK_WORKFLOW_CONCURRENCY', 'AIRLOCK_STICKY_TIMEOUT', 'AIRLOCK_AGENT_CONCURRENCY', 'AIRLOCK_TOOLS_CONCURRENCY'] as const;

export async function startWorkerProcesses(part: NodeJS.ProcessEnv): Promise<WorkerProcesses> {
  const env = { ...part, ...Object.fromEntries(TUNABLES.flatMap((name) => (process.env[name] !== undefined ? [[name, process.env[name]]] : []))) };
  const script = (name: string) => join(projectRoot(), 'dist', 'workers', `${name}.js`);
  const started: Child[] = [];
  const stop = async () => {
    await Promise.all(started.map((c) => c.stop()));
  };
  try {
    // The agent worker creates the grant key pair on first start; the tools worker only reads its public half.
    const agent = spawnChild(process.execPath, [script('airlock-agent')], env);
    started.push(agent);
    await agent.waitFor(READY, 60_000);
    const tools = spawnChild(process.execPath, [script('airlock-tools')], env);
    started.push(tools);
    await tools.waitFor(READY, 60_000);
    return { agent, tools, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
