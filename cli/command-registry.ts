import type { Command, CommandGroup, OptionDef, OptionSpec } from './command';

/**
 * Every command's name, summary, usage, arguments, flags (each with one line
 * of help), examples, and how to load it. The CLI parser, `--help` and shell
 * completion are all built from this list. Nothing here imports a command's
 * module: `airlock --help` and usage errors load no Temporal package, and
 * each command loads only what it uses.
 */

const json: OptionDef = { type: 'boolean', description: 'Print JSON instead of text' };
const rulesFile: OptionDef = { type: 'string', value: 'FILE', description: 'The rules file (default: AIRLOCK_RULES_FILE, else the built-in rules)' };
const jobId = { name: 'JOB_ID', description: 'The job (its workflow id), as `run`, `pending` or the Web UI show it' } as const;

const toggleOptions: OptionSpec = { file: rulesFile, json };

const rulesCommands: CommandGroup = {
  name: 'rules',
  summary: 'List, validate, dry-run, rehearse on past jobs, add, enable and disable rules',
  examples: ['airlock rules list', 'airlock rules test --tool fs_delete --args \'{"path": "old.tar"}\''],
  subcommands: [
    {
      name: 'list',
      summary: 'List the rules a new job would get',
      usage: 'airlock rules list [--file FILE] [--json]',
      options: { file: rulesFile, json },
      examples: ['airlock rules list', 'airlock rules list --file rules.yaml --json'],
      load: async () => (await import('./commands/rules/list')).run,
    },
    {
      name: 'validate',
      summary: 'Check a rules file; every problem is listed with its rule id and field',
      usage: 'airlock rules validate [FILE] [--json]',
      arguments: [{ name: 'FILE', description: 'The rules file (default: AIRLOCK_RULES_FILE, else the built-in rules)', optional: true }],
      options: { json },
      examples: ['airlock rules validate rules.yaml'],
      load: async () => (await import('./commands/rules/validate')).run,
    },
    {
      name: 'test',
      summary: 'Dry-run one call against the rules: candidates, matches, decision and why (no job, no judge call); --tools lists every tool',
      usage: 'airlock rules test --tool NAME --args JSON [--piece P] [--movement M] [--file FILE] [--json] | airlock rules test --tools [--json]',
      options: {
        tools: { type: 'boolean', description: 'List every tool with its category and whether this machine offers it, instead of testing a call' },
        tool: { type: 'string', value: 'NAME', description: 'The tool the call is for (fs_delete, fs_write, …); required' },
        args: { type: 'string', value: 'JSON', description: "The call's arguments as a JSON object (default {})" },
        piece: { type: 'string', value: 'P', description: 'The piece the call is made in, for rules scoped to pieces' },
        movement: { type: 'string', value: 'M', description: 'The movement the call is made in, for rules scoped to movements' },
        file: rulesFile,
        json,
      },
      examples: ['airlock rules test --tool fs_delete --args \'{"path": "old.tar", "recursive": true}\'', 'airlock rules test --tools'],
      load: async () => (await import('./commands/rules/test')).run,
    },
    {
      name: 'rehearse',
      summary: 'Decide the tool calls of past jobs again under other rules and list every decision that would change (nothing runs)',
      usage: 'airlock rules rehearse --rules NEW.yaml [--since 7d|2026-11-30T14:00:00Z] [--job JOB_ID] [--json]',
      options: {
        rules: { type: 'string', value: 'FILE', description: 'The rules file to rehearse (YAML or JSON); required' },
        since: { type: 'string', value: 'SINCE', description: 'Only jobs started since this age (7d, 12h) or ISO time (default 7d)' },
        job: { type: 'string', value: 'JOB_ID', description: 'Only this job (all its runs)' },
        json,
      },
      examples: ['airlock rules rehearse --rules stricter.yaml', 'airlock rules rehearse --rules stricter.yaml --since 30d --json', 'airlock rules rehearse --rules new.yaml --job nightly-cleanup'],
      load: async () => (await import('./commands/rules/rehearse')).run,
    },
    {
      name: 'add',
      summary: 'Add a rule (YAML or JSON, inline or @file) to the rules file; running jobs keep their snapshot',
      usage: "airlock rules add --rule '{id: x, name: ..., action: audit_only}' | --rule @rule.yaml [--file FILE] [--json]",
      options: {
        rule: { type: 'string', value: 'RULE', description: 'The rule as YAML or JSON, or @FILE to read it from a file; required' },
        file: rulesFile,
        json,
      },
      examples: ["airlock rules add --rule '{id: audit-reads, name: Record reads, scope: {categories: [read]}, action: audit_only}'", 'airlock rules add --rule @rule.yaml'],
      load: async () => (await import('./commands/rules/add')).run,
    },
    {
      name: 'enable',
      summary: 'Enable a rule, writing it as a new version; running jobs keep their snapshot',
      usage: 'airlock rules enable RULE_ID [--file FILE] [--json]',
      arguments: [{ name: 'RULE_ID', description: "The rule's id, as `rules list` shows it" }],
      options: toggleOptions,
      examples: ['airlock rules enable no-recursive'],
      load: async () => (await import('./commands/rules/toggle')).enable,
    },
    {
      name: 'disable',
      summary: 'Disable a rule, writing it as a new version; running jobs keep their snapshot',
      usage: 'airlock rules disable RULE_ID [--file FILE] [--json]',
      arguments: [{ name: 'RULE_ID', description: "The rule's id, as `rules list` shows it" }],
      options: toggleOptions,
      examples: ['airlock rules disable no-recursive'],
      load: async () => (await import('./commands/rules/toggle')).disable,
    },
  ],
};

const reviewerCommands: CommandGroup = {
  name: 'reviewer',
  summary: 'Manage reviewer signing keys (decisions the built-in rules accept must be signed)',
  examples: ['airlock reviewer add alice'],
  subcommands: [
    {
      name: 'add',
      summary: "Create a reviewer's signing key on this machine (or, with --passkey, a link to register a passkey on the approval page) for the agent workers",
      usage: 'airlock reviewer add NAME [--passkey] [--json]',
      arguments: [{ name: 'NAME', description: "The reviewer's name, as decisions will carry it" }],
      options: {
        passkey: { type: 'boolean', description: 'Print a single-use link (15 minutes) that registers a passkey for NAME on the approval page (airlock inbox)' },
        json,
      },
      examples: ['airlock reviewer add alice', 'airlock reviewer add alice --passkey'],
      load: async () => (await import('./commands/reviewer/add')).run,
    },
  ],
};

const agentName = { name: 'NAME', description: "The agent's name: its job is mcp-NAME, and rules and cards see NAME as the requester" } as const;

const agentCommands: CommandGroup = {
  name: 'agent',
  summary: 'Manage the bearer tokens MCP agents send to `airlock mcp --listen` (one per agent; only its hash is kept)',
  examples: ['airlock agent add claude', 'airlock agent list'],
  subcommands: [
    {
      name: 'add',
      summary: 'Make a token for an agent and print it once; its calls over HTTP go to job mcp-NAME',
      usage: 'airlock agent add NAME [--json]',
      arguments: [agentName],
      options: { json },
      examples: ['airlock agent add claude', 'airlock agent add ci-bot --json'],
      load: async () => (await import('./commands/agent/add')).run,
    },
    {
      name: 'revoke',
      summary: "Revoke an agent's token: `airlock mcp --listen` refuses it from the next request on, and the requests it left waiting are withdrawn",
      usage: 'airlock agent revoke NAME [--keep-requests] [--reviewer NAME] [--json]',
      arguments: [agentName],
      options: {
        'keep-requests': { type: 'boolean', description: "Leave the agent's waiting requests with their reviewers (default: they end as withdrawn, not run)" },
        reviewer: { type: 'string', value: 'NAME', description: 'Who withdraws them, as the audit and the agent read it (default: AIRLOCK_REVIEWER, else the login name)' },
        json,
      },
      examples: ['airlock agent revoke claude', 'airlock agent revoke claude --keep-requests'],
      load: async () => (await import('./commands/agent/revoke')).run,
    },
    {
      name: 'list',
      summary: 'List the agents with tokens: when each was made, revoked and last used',
      usage: 'airlock agent list [--json]',
      options: { json },
      examples: ['airlock agent list', 'airlock agent list --json'],
      load: async () => (await import('./commands/agent/list')).run,
    },
  ],
};

const standingId = { name: 'ID', description: 'The standing approval (S-…), as `standing list` and `approve --also-for` show it' } as const;

const standingCommands: CommandGroup = {
  name: 'standing',
  summary: 'List, show and revoke standing approvals: a signed approval that also covers later calls of the exact same operation',
  examples: ['airlock standing list', 'airlock standing revoke S-3f9a0c1d2e4b5a67'],
  subcommands: [
    {
      name: 'list',
      summary: 'List the standing approvals that can still be used (--all: revoked, expired and used up ones too)',
      usage: 'airlock standing list [--all] [--json]',
      options: { all: { type: 'boolean', description: 'Include revoked, expired and used-up standing approvals' }, json },
      examples: ['airlock standing list', 'airlock standing list --all --json'],
      load: async () => (await import('./commands/standing/list')).run,
    },
    {
      name: 'show',
      summary: 'Show what a standing approval covers, who signed it, and every use: which job and request, when',
      usage: 'airlock standing show ID [--json]',
      arguments: [standingId],
      options: { json },
      examples: ['airlock standing show S-3f9a0c1d2e4b5a67'],
      load: async () => (await import('./commands/standing/show')).run,
    },
    {
      name: 'revoke',
      summary: 'Revoke a standing approval: the next call it would have covered asks a reviewer again',
      usage: 'airlock standing revoke ID [--reason TEXT] [--reviewer NAME] [--json]',
      arguments: [standingId],
      options: {
        reason: { type: 'string', value: 'TEXT', description: 'Why, for the audit log' },
        reviewer: { type: 'string', value: 'NAME', description: 'Who revokes it, as the audit log records it (default: AIRLOCK_REVIEWER, else the login name)' },
        json,
      },
      examples: ['airlock standing revoke S-3f9a0c1d2e4b5a67 --reason "the service moved"'],
      load: async () => (await import('./commands/standing/revoke')).run,
    },
  ],
};

const judgeCommands: CommandGroup = {
  name: 'judge',
  summary: 'Measure the small-LLM rule judge against a labelled set',
  examples: ['airlock judge eval --set rules/judge-eval.json'],
  subcommands: [
    {
      name: 'eval',
      summary: 'Run a labelled set against the configured judge: precision, recall, unknown rate, routing rate, latency',
      usage: 'airlock judge eval --set FILE [--json]',
      options: { set: { type: 'string', value: 'FILE', description: 'The labelled set (JSON); rules/judge-eval.json is a starting set; required' }, json },
      examples: ['airlock judge eval --set rules/judge-eval.json'],
      load: async () => (await import('./commands/judge/eval')).run,
    },
  ],
};

const topologyDirOption = { type: 'string', value: 'DIR', description: 'The folder holding the topology: its PostgreSQL, Temporal, data and logs (default: <data>/topology)' } as const;

const topologyCommands: CommandGroup = {
  name: 'topology',
  summary: 'Run the production shape on this machine: PostgreSQL, the Temporal server and Web UI, and every airlock process',
  examples: ['OPENAI_BASE_URL=http://127.0.0.1:8000/v1 airlock topology up', 'airlock topology status', 'airlock topology down'],
  subcommands: [
    {
      name: 'up',
      summary: 'Start it and wait until every part is healthy: PostgreSQL, Temporal (built from its Go module once), the Web UI, setup, the codec server, the approval page, 2 agent, 2 tools and 1 judge worker',
      details:
        'Without --database-url, a private PostgreSQL is created in the folder (Debian\'s postgresql package). Ports derive from --base-port: Temporal on it, the Web UI on base+1000, the approval page on base+11, the codec server on base+1001. ' +
        'The workers get this environment (OPENAI_BASE_URL, AIRLOCK_RULES_FILE, AIRLOCK_TOOLS_CONFIG, …). A second up on a folder whose topology runs is refused.',
      usage: 'airlock topology up [--dir DIR] [--base-port N] [--database-url URL]',
      options: {
        dir: topologyDirOption,
        'base-port': { type: 'string', value: 'N', description: 'The Temporal frontend port; the others derive from it (default 7233)' },
        'database-url': { type: 'string', value: 'URL', description: 'An existing PostgreSQL (a role that may create databases) instead of a private one (AIRLOCK_TOPOLOGY_DATABASE_URL)' },
      },
      examples: ['airlock topology up', 'airlock topology up --dir /srv/airlock --base-port 17233'],
      load: async () => (await import('./commands/topology/up')).run,
    },
    {
      name: 'down',
      summary: 'Stop what up started in the folder (only those processes), last started first; the data stays',
      usage: 'airlock topology down [--dir DIR]',
      options: { dir: topologyDirOption },
      examples: ['airlock topology down'],
      load: async () => (await import('./commands/topology/down')).run,
    },
    {
      name: 'restart',
      summary: 'Stop one part if it still runs, start it again as up did, and wait until it is healthy (after a crash, or to take new settings)',
      usage: 'airlock topology restart PART [--dir DIR]',
      arguments: [{ name: 'PART', description: 'postgres, temporal, codec-server, ui, inbox, agent-1, agent-2, tools-1, tools-2 or judge' }],
      options: { dir: topologyDirOption },
      examples: ['airlock topology restart temporal', 'airlock topology restart agent-1'],
      load: async () => (await import('./commands/topology/restart')).run,
    },
    {
      name: 'status',
      summary: "Each part's process and health check now; exits 1 when any is down or unhealthy",
      usage: 'airlock topology status [--dir DIR] [--json]',
      options: { dir: topologyDirOption, json },
      examples: ['airlock topology status', 'airlock topology status --json'],
      load: async () => (await import('./commands/topology/status')).run,
    },
  ],
};

const deployCommands: CommandGroup = {
  name: 'deploy',
  summary: 'Move jobs between builds (Worker Deployments): a job runs on the build it started on until a newer one is current',
  examples: ['airlock deploy status', 'airlock deploy promote', 'airlock deploy wake'],
  subcommands: [
    {
      name: 'status',
      summary: "The agent deployment's builds: which is current, which drain, and how many running and parked jobs each still holds",
      usage: 'airlock deploy status [--json]',
      options: { json },
      examples: ['airlock deploy status'],
      load: async () => (await import('./commands/deploy/status')).run,
    },
    {
      name: 'promote',
      summary: 'Make a build current (default: this installation\'s), then wake the parked jobs of older builds with one batch signal; each continues as new on it',
      details:
        'Start the new build\'s agent worker first. Jobs that are not parked finish on the build they started on: keep its agent worker until deploy status shows RUNNING 0. ' +
        'Moving parked jobs needs Temporal server 1.32 or later (earlier servers leave them on their build). The build id is AIRLOCK_BUILD_ID, else the package version plus a hash of the workflow bundle.',
      usage: 'airlock deploy promote [BUILD] [--keep-parked] [--json]',
      arguments: [{ name: 'BUILD', description: "The build id to make current (default: this installation's)" }],
      options: { 'keep-parked': { type: 'boolean', description: 'Only make the build current; parked jobs move when next woken (a decision, an expiry, or deploy wake)' }, json },
      examples: ['airlock deploy promote', 'airlock deploy promote 0.2.0-3f2a9c1b7d4e'],
      load: async () => (await import('./commands/deploy/promote')).run,
    },
    {
      name: 'wake',
      summary: 'Wake the parked jobs of builds other than the current one with one batch signal (after temporal worker deployment set-current-version)',
      usage: 'airlock deploy wake [--json]',
      options: { json },
      examples: ['airlock deploy wake'],
      load: async () => (await import('./commands/deploy/wake')).run,
    },
  ],
};

const decisionOptions = {
  request: { type: 'string', value: 'ID', description: 'The request to decide (needed when the job waits on more than one)' },
  reason: { type: 'string', value: 'TEXT', description: 'Why; recorded with the decision and in the audit log' },
  reviewer: { type: 'string', value: 'NAME', description: 'Who decides (default: AIRLOCK_REVIEWER, else the login name)' },
  sign: { type: 'string', value: 'KEYFILE', description: "Sign with this reviewer's private key (default: this machine's key for the reviewer, if any)" },
} as const satisfies OptionSpec;

export const commands: ReadonlyArray<Command | CommandGroup> = [
  {
    name: 'dev',
    summary: 'Run the embedded stack: Temporal dev server (Web UI on 8233), workers, replay model, approval page (7244)',
    usage: 'airlock dev [--demo] [--codec] [--inbox-listen ADDRESS]',
    options: {
      demo: { type: 'boolean', description: 'Seed demo files and start the demo job' },
      codec: { type: 'boolean', description: 'Turn payload encryption on (creates the keys and runs the codec server)' },
      'inbox-listen': { type: 'string', value: 'ADDRESS', description: 'Where the approval page listens, IP:PORT (default: AIRLOCK_INBOX_LISTEN, else 127.0.0.1:7244)' },
    },
    examples: ['airlock dev --demo', 'airlock dev --codec'],
    load: async () => (await import('./commands/dev')).run,
  },
  {
    name: 'run',
    summary: 'Start a job toward a goal',
    usage: 'airlock run --goal TEXT [--id JOB_ID [--new-run]] [--max-turns N] [--tools fs_read,fs_list] [--wait] [--json]',
    options: {
      goal: { type: 'string', value: 'TEXT', description: 'What the agent should achieve; required' },
      id: { type: 'string', value: 'JOB_ID', description: "The job's id (default: a new random id); an id in use or already run is refused" },
      'new-run': { type: 'boolean', description: 'With --id: start a new run under an id whose job has finished' },
      'max-turns': { type: 'string', value: 'N', description: 'Stop after N model turns (1-1000)' },
      tools: { type: 'string', value: 'LIST', description: 'The tools the agent may use, comma-separated (default: all)' },
      wait: { type: 'boolean', description: 'Wait for the job to end and print its result (exit 1 unless completed)' },
      json,
    },
    examples: ['airlock run --goal "Tidy the downloads folder"', 'airlock run --goal "Archive old backups" --id backups-2026-05 --wait', 'airlock run --goal "Archive old backups" --id backups-2026-05 --new-run'],
    load: async () => (await import('./commands/run')).run,
  },
  {
    name: 'cancel',
    summary: 'Cancel a running job (its pending requests can no longer be decided)',
    usage: 'airlock cancel JOB_ID [--reason TEXT] [--json]',
    arguments: [jobId],
    options: { reason: { type: 'string', value: 'TEXT', description: "Why; recorded in the job's history with the cancellation" }, json },
    examples: ['airlock cancel job-1f0c2a --reason "wrong folder"'],
    load: async () => (await import('./commands/cancel')).run,
  },
  {
    name: 'pending',
    summary: 'List requests waiting for approval as a table, newest jobs first, a page at a time (--card: full approval cards; --watch: refresh until Ctrl-C)',
    details:
      'Shows the first 50 parked jobs (newest start first) and, when more wait, a last line with the token of the next page. With --json and --limit or --page it prints {"jobs": [...], "nextPageToken": TOKEN or null}; with --json alone or --all it prints the bare array of every job, as earlier versions did.',
    usage: 'airlock pending [--limit N] [--page TOKEN | --all] [--card] [--watch [--interval 5s]] [--json]',
    options: {
      limit: { type: 'string', value: 'N', description: 'Jobs per page, 1 to 1000 (default 50; with --all, jobs per visibility call, default 1000)' },
      page: { type: 'string', value: 'TOKEN', description: 'Continue from the page token a previous listing printed (nextPageToken in --json)' },
      all: { type: 'boolean', description: 'List every page; --json without --limit or --page does too, as a bare array' },
      card: { type: 'boolean', description: 'Print the full approval card of every request instead of the table' },
      watch: { type: 'boolean', description: 'Refresh the listing until Ctrl-C' },
      interval: { type: 'string', value: 'DURATION', description: 'How often --watch refreshes (default 5s)' },
      json,
    },
    examples: [
      'airlock pending',
      'airlock pending --limit 20 --card',
      'airlock pending --json --limit 100',
      'airlock pending --json --limit 100 --page AQ...',
      'airlock pending --all',
      'airlock pending --watch --interval 10s',
      'airlock pending --json',
    ],
    load: async () => (await import('./commands/pending')).run,
  },
  {
    name: 'show',
    summary: "Show a job's status, pending requests and counters",
    usage: 'airlock show JOB_ID [--json]',
    arguments: [jobId],
    options: { json },
    examples: ['airlock show job-1f0c2a', 'airlock show job-1f0c2a --json'],
    load: async () => (await import('./commands/show')).run,
  },
  {
    name: 'approve',
    summary: 'Approve a pending request (optionally editing its editable fields)',
    usage: 'airlock approve JOB_ID [--request ID] [--set field=value]... [--also-for DURATION --uses N] [--reason TEXT] [--reviewer NAME] [--sign KEYFILE] [--json]',
    arguments: [jobId],
    options: {
      request: decisionOptions.request,
      set: { type: 'string', multiple: true, value: 'FIELD=VALUE', description: 'Change an editable field before approving; the edited call gets a new fingerprint' },
      'also-for': {
        type: 'string',
        value: 'DURATION',
        description: "Also approve later calls of the same operation (tool, real targets, requester, arguments but the rule's free fields) for this long; signed; only where the rule allows a standing approval",
      },
      uses: { type: 'string', value: 'N', description: 'With --also-for: how many later calls the standing approval covers at most' },
      reason: decisionOptions.reason,
      reviewer: decisionOptions.reviewer,
      sign: decisionOptions.sign,
      json,
    },
    examples: [
      'airlock approve job-1f0c2a',
      'airlock approve job-1f0c2a --request req-2 --set recursive=false --reason "only the top folder"',
      'airlock approve job-1f0c2a --also-for 7d --uses 10',
    ],
    load: async () => (await import('./commands/approve')).run,
  },
  {
    name: 'deny',
    summary: 'Deny a pending request; the model is told the reason',
    usage: 'airlock deny JOB_ID [--request ID] --reason TEXT [--reviewer NAME] [--sign KEYFILE] [--json]',
    arguments: [jobId],
    options: { ...decisionOptions, reason: { type: 'string', value: 'TEXT', description: 'Why (required): the model is told, and the audit log records it' }, json },
    examples: ['airlock deny job-1f0c2a --reason "keep the backups"'],
    load: async () => (await import('./commands/deny')).run,
  },
  {
    name: 'undo',
    summary: "Take back a job's approved delete or mode change (in folders set up for undo, within their undo time)",
    details:
      'Runs the undo as a call of its own job (undo-…, its goal names the job and call): the same rules, approval and checks as any change. The built-in rule asks for a signed decision, which this command gives itself when you approved the change, and only for that very undo; anyone else\'s undo waits for a reviewer. It restores only while the path is as the change left it.',
    usage: 'airlock undo JOB_ID [--call ID] [--wait 60s] [--reviewer NAME] [--sign KEYFILE] [--json] | airlock undo --list [JOB_ID] [--json]',
    arguments: [{ ...jobId, optional: true }],
    options: {
      list: { type: 'boolean', description: 'List what can still be undone (of one job, or all), with what each keeps and until when, instead of undoing' },
      call: { type: 'string', value: 'ID', description: 'The call to undo (needed when the job ran more than one delete)' },
      wait: { type: 'string', value: 'DURATION', description: 'How long to wait for the restore once approved (default 60s)' },
      reviewer: decisionOptions.reviewer,
      sign: decisionOptions.sign,
      json,
    },
    examples: ['airlock undo job-1f0c2a', 'airlock undo job-1f0c2a --call call_2 --json', 'airlock undo --list'],
    load: async () => (await import('./commands/undo')).run,
  },
  {
    name: 'inbox',
    summary: 'Serve the approval page: pending requests as cards, decided with a passkey from a phone or browser',
    details:
      'Listens on 127.0.0.1:7244 unless --listen or AIRLOCK_INBOX_LISTEN say otherwise; the page is opened at AIRLOCK_APPROVAL_PAGE_URL (to use it from another device, put it behind a TLS proxy or serve HTTPS itself with --tls), else http://localhost:PORT. With --tls it makes a local CA under the data folder (trust it once on each phone; the start output says how) and serves https. Register a passkey with `airlock reviewer add NAME --passkey`.',
    usage: 'airlock inbox [--listen ADDRESS] [--tls]   (AIRLOCK_INBOX_LISTEN, AIRLOCK_INBOX_TLS, AIRLOCK_APPROVAL_PAGE_URL)',
    options: {
      listen: { type: 'string', value: 'ADDRESS', description: 'Where to listen, IP:PORT (default: AIRLOCK_INBOX_LISTEN, else 127.0.0.1:7244)' },
      tls: { type: 'boolean', description: 'Serve HTTPS with a certificate from a local CA kept in the data folder, so a phone can use passkeys without a proxy (default: AIRLOCK_INBOX_TLS)' },
    },
    examples: [
      'airlock inbox',
      'AIRLOCK_APPROVAL_PAGE_URL=https://airlock.home.example airlock inbox --listen 127.0.0.1:7244',
      'AIRLOCK_APPROVAL_PAGE_URL=https://homeserver.lan:7244 airlock inbox --tls --listen 0.0.0.0:7244',
    ],
    load: async () => (await import('./commands/inbox')).run,
  },
  {
    name: 'mcp',
    summary: "Serve airlock's tools to an MCP client over stdio, or over HTTP with --listen; every call goes through the agent's airlock job",
    details:
      "One job per agent (mcp-AGENT), driven by the client instead of a model: the same rules, approvals, re-checks and execute-once. An allowed call answers at once; a call that needs a person is held open with progress up to --wait, then answered as waiting with a call id for the airlock_wait tool. The agent's name is the job's requester, which rules can match and cards show. " +
      'With --listen it serves Streamable HTTP at /mcp (stateless: every state is in Temporal, so clients keep working across a restart); each request needs Authorization: Bearer with a token of `airlock agent add NAME`, whose NAME is the agent. ' +
      'Only the listen address is accepted as Host (add names with --allow-host), and a request from a browser page (an Origin header) only from an origin given with --allow-origin; every refusal is audited (mcp_refused).',
    usage: 'airlock mcp [--agent NAME] [--wait DURATION] | airlock mcp --listen [HOST:]PORT [--allow-host NAME]... [--allow-origin ORIGIN]... [--wait DURATION]',
    options: {
      agent: { type: 'string', value: 'NAME', description: "Over stdio: the agent's name (default: AIRLOCK_REVIEWER, else the login name); over HTTP the token names it" },
      wait: { type: 'string', value: 'DURATION', description: 'How long a call that waits for a person is held open (default 50s; MCP clients often give up at 60s)' },
      listen: { type: 'string', value: 'ADDRESS', description: 'Serve MCP over HTTP at http://ADDRESS/mcp instead of stdio: [HOST:]PORT, HOST 127.0.0.1 unless given explicitly' },
      'allow-host': { type: 'string', multiple: true, value: 'NAME', description: 'Also accept this Host (NAME or NAME:PORT), e.g. the name a reverse proxy forwards' },
      'allow-origin': { type: 'string', multiple: true, value: 'ORIGIN', description: 'Accept requests from a browser page of this origin (e.g. http://localhost:6274); others with an Origin are refused' },
    },
    examples: ['airlock mcp --agent claude', 'airlock mcp --agent backup-bot --wait 20s', 'airlock mcp --listen 8765', 'airlock mcp --listen 0.0.0.0:8765 --allow-host mcp.home.example'],
    load: async () => (await import('./commands/mcp')).run,
  },
  {
    name: 'worker',
    summary: 'Run the workers of one task queue (or all) until stopped',
    usage: 'airlock worker [--queue all|agent|tools|judge]',
    options: { queue: { type: 'string', value: 'QUEUE', description: 'all (default), agent, tools or judge' } },
    examples: ['airlock worker', 'airlock worker --queue tools'],
    load: async () => (await import('./commands/worker')).run,
  },
  rulesCommands,
  reviewerCommands,
  agentCommands,
  standingCommands,
  judgeCommands,
  topologyCommands,
  deployCommands,
  {
    name: 'audit',
    summary: 'Read the audit log (newest last), filtered by job, run and event type; or write back what ended jobs could not write',
    details:
      'Each event names the run of its job that wrote it; with --job, the events of each run are headed by the run. ' +
      'With --recover, the events of jobs that ended while the audit log could not be written (their results carry them) are written to it now; running it again adds nothing.',
    // The first two of core/audit/events' event types; spelled out, since loading it loads zod.
    usage: 'airlock audit [--job JOB_ID [--run RUN_ID]] [--type policy_evaluation|policy_rule_matched|…] [--limit N] [--json] | airlock audit --recover [--since DURATION] [--json]',
    options: {
      job: { type: 'string', value: 'JOB_ID', description: "Only this job's events" },
      run: { type: 'string', value: 'RUN_ID', description: 'Only the events of this run of the job (its id or a prefix of it)' },
      type: { type: 'string', value: 'TYPE', description: 'Only events of this type (approval_decided, tool_executed, …)' },
      limit: { type: 'string', value: 'N', description: 'At most the last N events (default 100)' },
      recover: { type: 'boolean', description: 'Write back the events of ended jobs that could not write them (from their results)' },
      since: { type: 'string', value: 'DURATION', description: 'With --recover: jobs that ended within this long (default 30d)' },
      json,
    },
    examples: ['airlock audit --job job-1f0c2a', 'airlock audit --type approval_decided --limit 20 --json', 'airlock audit --recover --since 7d'],
    load: async () => (await import('./commands/audit')).run,
  },
  {
    name: 'replay',
    summary: 'Serve a scripted conversation as a local OpenAI-compatible endpoint',
    usage: 'airlock replay --script FILE [--port N]',
    options: {
      script: { type: 'string', value: 'FILE', description: 'The replay script (JSON); required' },
      port: { type: 'string', value: 'N', description: 'The port to listen on (default: any free port)' },
    },
    examples: ['airlock replay --script script.json --port 8600'],
    load: async () => (await import('./commands/replay')).run,
  },
  {
    name: 'codec-server',
    summary: 'Serve the payload codec to the Web UI, so it shows encrypted jobs decoded',
    usage: 'airlock codec-server [--port N]   (AIRLOCK_CODEC_KEYS, AIRLOCK_CODEC_UI_ORIGIN)',
    options: { port: { type: 'string', value: 'N', description: 'The port to listen on (default: AIRLOCK_CODEC_PORT, else 8234)' } },
    examples: ['airlock codec-server', 'AIRLOCK_CODEC_UI_ORIGIN=http://nas:8233 airlock codec-server --port 8234'],
    load: async () => (await import('./commands/codec-server')).run,
  },
  {
    name: 'setup',
    summary:
      "Register airlock's search attributes in the configured namespace, migrate the shared database (AIRLOCK_DATABASE_URL) when one is set, and create payload encryption keys when Temporal is another machine",
    details:
      'Safe to run again, and from several machines at once. Workers refuse to start against a database whose schema is not the one they know, and say to run this. ' +
      'Keys are created once (AIRLOCK_CODEC_KEYS, default <data>/keys/codec.yaml); copy that file to every machine running airlock.',
    usage: 'airlock setup [--codec] [--json]',
    options: { codec: { type: 'boolean', description: 'Create payload encryption keys even though Temporal is on this machine' }, json },
    examples: ['TEMPORAL_ADDRESS=temporal.lan:7233 airlock setup', 'AIRLOCK_DATABASE_URL=postgres://airlock@db.lan/airlock airlock setup'],
    load: async () => (await import('./commands/setup')).run,
  },
  {
    name: 'completion',
    summary: 'Print a shell completion script (bash or zsh) for airlock',
    details: 'Load it in your shell\'s startup file, e.g. `source <(airlock completion bash)` in ~/.bashrc.',
    usage: 'airlock completion bash|zsh',
    arguments: [{ name: 'SHELL', description: 'bash or zsh' }],
    options: {},
    examples: ['source <(airlock completion bash)', 'airlock completion zsh > "${fpath[1]}/_airlock"'],
    load: async () => (await import('./commands/completion')).completionCommand(commands),
  },
];
