import type { Command, CommandGroup, OptionSpec } from './command';

/**
 * Every command's name, summary, usage and options, and how to load it.
 * Nothing here imports a command's module: `airlock --help` and usage errors
 * load no Temporal package, and each command loads only what it uses.
 */

const toggleOptions: OptionSpec = { file: { type: 'string' }, json: { type: 'boolean' } };

const rulesCommands: CommandGroup = {
  name: 'rules',
  summary: 'List, validate, dry-run, add, enable and disable rules',
  subcommands: [
    {
      name: 'list',
      summary: 'List the rules a new job would get',
      usage: 'airlock rules list [--file FILE] [--json]',
      options: { file: { type: 'string' }, json: { type: 'boolean' } },
      load: async () => (await import('./commands/rules/list')).run,
    },
    {
      name: 'validate',
      summary: 'Check a rules file; every problem is listed with its rule id and field',
      usage: 'airlock rules validate [FILE] [--json]',
      options: { json: { type: 'boolean' } },
      load: async () => (await import('./commands/rules/validate')).run,
    },
    {
      name: 'test',
      summary: 'Dry-run one call against the rules: candidates, matches, decision and why (no job, no judge call); --tools lists every tool',
      usage: 'airlock rules test --tool NAME --args JSON [--piece P] [--movement M] [--file FILE] [--json] | airlock rules test --tools [--json]',
      options: {
        tools: { type: 'boolean' },
        tool: { type: 'string' },
        args: { type: 'string' },
        piece: { type: 'string' },
        movement: { type: 'string' },
        file: { type: 'string' },
        json: { type: 'boolean' },
      },
      load: async () => (await import('./commands/rules/test')).run,
    },
    {
      name: 'add',
      summary: 'Add a rule (YAML or JSON, inline or @file) to the rules file; running jobs keep their snapshot',
      usage: "airlock rules add --rule '{id: x, name: ..., action: audit_only}' | --rule @rule.yaml [--file FILE] [--json]",
      options: { rule: { type: 'string' }, file: { type: 'string' }, json: { type: 'boolean' } },
      load: async () => (await import('./commands/rules/add')).run,
    },
    {
      name: 'enable',
      summary: 'Enable a rule, writing it as a new version; running jobs keep their snapshot',
      usage: 'airlock rules enable RULE_ID [--file FILE] [--json]',
      options: toggleOptions,
      load: async () => (await import('./commands/rules/toggle')).enable,
    },
    {
      name: 'disable',
      summary: 'Disable a rule, writing it as a new version; running jobs keep their snapshot',
      usage: 'airlock rules disable RULE_ID [--file FILE] [--json]',
      options: toggleOptions,
      load: async () => (await import('./commands/rules/toggle')).disable,
    },
  ],
};

const reviewerCommands: CommandGroup = {
  name: 'reviewer',
  summary: 'Manage reviewer signing keys (decisions the built-in rules accept must be signed)',
  subcommands: [
    {
      name: 'add',
      summary: "Create a reviewer's signing key on this machine and list its public key for the agent workers",
      usage: 'airlock reviewer add NAME [--json]',
      options: { json: { type: 'boolean' } },
      load: async () => (await import('./commands/reviewer/add')).run,
    },
  ],
};

const judgeCommands: CommandGroup = {
  name: 'judge',
  summary: 'Measure the small-LLM rule judge against a labelled set',
  subcommands: [
    {
      name: 'eval',
      summary: 'Run a labelled set against the configured judge: precision, recall, unknown rate, routing rate, latency',
      usage: 'airlock judge eval --set FILE [--json]',
      options: { set: { type: 'string' }, json: { type: 'boolean' } },
      load: async () => (await import('./commands/judge/eval')).run,
    },
  ],
};

export const commands: ReadonlyArray<Command | CommandGroup> = [
  {
    name: 'dev',
    summary: 'Run the embedded stack: Temporal dev server (Web UI on 8233), workers, replay model',
    usage: 'airlock dev [--demo] [--codec]',
    options: { demo: { type: 'boolean' }, codec: { type: 'boolean' } },
    load: async () => (await import('./commands/dev')).run,
  },
  {
    name: 'run',
    summary: 'Start a job toward a goal',
    usage: 'airlock run --goal TEXT [--id JOB_ID] [--max-turns N] [--tools fs_read,fs_list] [--wait] [--json]',
    options: {
      goal: { type: 'string' },
      id: { type: 'string' },
      'max-turns': { type: 'string' },
      tools: { type: 'string' },
      wait: { type: 'boolean' },
      json: { type: 'boolean' },
    },
    load: async () => (await import('./commands/run')).run,
  },
  {
    name: 'pending',
    summary: 'List jobs waiting for approval, with their requests',
    usage: 'airlock pending [--json]',
    options: { json: { type: 'boolean' } },
    load: async () => (await import('./commands/pending')).run,
  },
  {
    name: 'show',
    summary: "Show a job's status, pending requests and counters",
    usage: 'airlock show JOB_ID [--json]',
    options: { json: { type: 'boolean' } },
    load: async () => (await import('./commands/show')).run,
  },
  {
    name: 'approve',
    summary: 'Approve a pending request (optionally editing its editable fields)',
    usage: 'airlock approve JOB_ID [--request ID] [--set field=value]... [--reason TEXT] [--reviewer NAME] [--sign KEYFILE] [--json]',
    options: {
      request: { type: 'string' },
      set: { type: 'string', multiple: true },
      reason: { type: 'string' },
      reviewer: { type: 'string' },
      sign: { type: 'string' },
      json: { type: 'boolean' },
    },
    load: async () => (await import('./commands/approve')).run,
  },
  {
    name: 'deny',
    summary: 'Deny a pending request; the model is told the reason',
    usage: 'airlock deny JOB_ID [--request ID] [--reason TEXT] [--reviewer NAME] [--sign KEYFILE] [--json]',
    options: {
      request: { type: 'string' },
      reason: { type: 'string' },
      reviewer: { type: 'string' },
      sign: { type: 'string' },
      json: { type: 'boolean' },
    },
    load: async () => (await import('./commands/deny')).run,
  },
  {
    name: 'worker',
    summary: 'Run the workers of one task queue (or all) until stopped',
    usage: 'airlock worker [--queue all|agent|tools|judge]',
    options: { queue: { type: 'string' } },
    load: async () => (await import('./commands/worker')).run,
  },
  rulesCommands,
  reviewerCommands,
  judgeCommands,
  {
    name: 'audit',
    summary: "Read this machine's audit log (newest last), filtered by job and event type",
    // The first two of core/audit's event types; spelled out, since loading core/audit loads zod.
    usage: 'airlock audit [--job JOB_ID] [--type policy_evaluation|policy_rule_matched|…] [--limit N] [--json]',
    options: { job: { type: 'string' }, type: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } },
    load: async () => (await import('./commands/audit')).run,
  },
  {
    name: 'replay',
    summary: 'Serve a scripted conversation as a local OpenAI-compatible endpoint',
    usage: 'airlock replay --script FILE [--port N]',
    options: { script: { type: 'string' }, port: { type: 'string' } },
    load: async () => (await import('./commands/replay')).run,
  },
  {
    name: 'codec-server',
    summary: 'Serve the payload codec to the Web UI, so it shows encrypted jobs decoded',
    usage: 'airlock codec-server [--port N]   (AIRLOCK_CODEC_KEYS, AIRLOCK_CODEC_UI_ORIGIN)',
    options: { port: { type: 'string' } },
    load: async () => (await import('./commands/codec-server')).run,
  },
  {
    name: 'setup',
    summary: "Register airlock's search attributes in the configured namespace (for a server you run yourself)",
    usage: 'airlock setup [--json]',
    options: { json: { type: 'boolean' } },
    load: async () => (await import('./commands/setup')).run,
  },
];
