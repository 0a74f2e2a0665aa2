import { type IncomingMessage,type RequestListener,type Server,type ServerResponse,createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { undoableCalls } from '../../client/history/undoable-calls';
import type { ApprovalCard,CliName } from '../../core/approval/card';
import type { AirlockConfig } from '../../core/config/config';
import { maskString } from '../../core/redaction/masking';
import { approvalCard } from '../../core/reviewer/approval-card';
import { describeError } from '../../core/temporal/describe-error';
import { statePaths } from '../../host/config/paths';
import { startRetention } from '../../host/retention';
import type { LocalTls } from '../../host/tls/local-ca';
import { HttpError,checkHost,checkPost,readJson,send,sendError,sendJson } from '../http/guard';
import { PAGE_SCRIPT } from './assets/page-script';
import { PAGE_STYLE } from './assets/page-style';
import { authenticationResponseSchema,parseBody,prepareDecision,submitDecision } from './decisions';
import { Identify } from './identify';
import { openInviteStores } from './invite-stores';
import { cardPage,errorPage,listFragment,listPage,registerPage,requestGonePage,undoPage } from './pages';
import { DEFAULT_DECISION_LIMITS,type DecisionLimits,RateLimit } from './rate-limit';
import { Registration } from './registration';
import { localTls,webauthnBundle } from './server-tls';
import { CA_CERT_PATH,type InboxSite } from './site';
import { TemporalLink,TemporalUnavailable } from './temporal-link';
import { renewTls,decodePart,failure } from './server-parts';

export interface InboxServerOptions {
  readonly config: AirlockConfig;
  readonly site: InboxSite;
  /** How the CLI is typed in the commands a card carries. */
  readonly cli: CliName;
  readonly log: (line: string) => void;
  /** How many decisions it forwards per job and in all (default `DEFAULT_DECISION_LIMITS`). */
  readonly decisionLimits?: DecisionLimits;
  /** Open connections it keeps at most; more are closed at once (default `MAX_CONNECTIONS`). */
  readonly maxConnections?: number;
}

/**
 * Open connections the page keeps at once: a phone or two and a few tabs
 * need a handful; a client that opens thousands (and holds them) gets the
 * rest closed at once instead of exhausting the process's descriptors.
 */
export const MAX_CONNECTIONS = 256;

export interface InboxServer {
  /** The public URL pages are opened at. */
  readonly url: string;
  /** Where it listens (the port the OS gave, for `:0`). */
  readonly address: string;
  /** With TLS: the local CA phones must trust, and the certificate served at start. */
  readonly tls: InboxTlsState | undefined;
  close(): Promise<void>;
}

/** What the command prints of the inbox's certificates: the CA a phone trusts (its file is also served at `<url>/ca.crt`) and the server certificate's names and end. */
export type InboxTlsState = Pick<LocalTls, 'caFile' | 'caFingerprint' | 'caName' | 'hosts' | 'notAfter' | 'issued'>;

/** How often a long-running inbox checks that its certificate is not near its end. */
const undoRequestSchema = z.strictObject({
  jobId: z.string().min(1).max(300),
  callId: z.string().min(1).max(300),
  response: authenticationResponseSchema,
});

const JS = 'text/javascript; charset=utf-8';
const CA_TYPE = 'application/x-x509-ca-cert';
const HTML = 'text/html; charset=utf-8';

/**
 * The approval inbox: a node:http server (node:https with `site.tls`) with
 * server-rendered pages, one script and one stylesheet. It holds no secret
 * and sets no cookie: a decision counts only with the reviewer's passkey
 * assertion, which the job verifies. Temporal being unreachable is shown,
 * never fatal.
 */
export async function startInboxServer(options: InboxServerOptions): Promise<InboxServer> {
  const { site, log } = options;
  // First: a CA that cannot be made or read stops the start before anything is opened.
  const tls = site.tls === undefined ? undefined : await localTls(site.tls);
  const paths = statePaths(options.config);
  const temporal = new TemporalLink(options.config);
  const inviteStores = await openInviteStores(options.config);
  const retention = startRetention([{ name: 'expired passkey invites', run: () => inviteStores.invites.prune(options.config.retention.finishedMs) }], { log });
  const registration = new Registration({ site, invites: inviteStores.invites, challenges: inviteStores.challenges, keysFile: paths.reviewerKeys });
  const identify = new Identify({ site, keysFile: paths.reviewerKeys, challenges: inviteStores.challenges });
  const assets = new Map<string, { readonly type: string; readonly body: string | Buffer }>([
    ['/assets/inbox.js', { type: JS, body: PAGE_SCRIPT }],
    ['/assets/inbox.css', { type: 'text/css; charset=utf-8', body: PAGE_STYLE }],
    ['/assets/webauthn.js', { type: JS, body: webauthnBundle() }],
  ]);
  // PEM, which iOS and Android both install from a download; this content type makes them offer to.
  if (tls !== undefined) assets.set(CA_CERT_PATH, { type: CA_TYPE, body: tls.caPem });
  const base = site.basePath;
  const limits = options.decisionLimits ?? DEFAULT_DECISION_LIMITS;
  const perJob = new RateLimit(limits.perJob, limits.windowMs);
  const overall = new RateLimit(limits.overall, limits.windowMs);
  const minutes = Math.round(limits.windowMs / 60_000);
  /** Refuses a well-formed decision over the limits before it reaches Temporal (a malformed one never does). */
  const admit = (jobId: string): void => {
    if (!overall.take('all')) throw new HttpError(429, `the page took ${limits.overall} decisions in ${minutes} minutes; try again later, or decide from the command line`);
    if (!perJob.take(jobId)) throw new HttpError(429, `the page took ${limits.perJob} decisions for job ${jobId} in ${minutes} minutes; try again later, or decide from the command line`);
  };

  const cardsOf = async (): Promise<ApprovalCard[]> => {
    // Every page, not the CLI's first: the page sorts all cards by when each request was made.
    const jobs = await temporal.use((c) => c.listPending());
    const now = Date.now();
    return jobs
      .flatMap((job) => job.pending.map((request) => approvalCard({ jobId: job.jobId, goal: job.goal, request, batch: job.batch ?? null }, { now, cli: options.cli })))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  };

  const listOrError = async (): Promise<ApprovalCard[] | { error: string }> => {
    try {
      return await cardsOf();
    } catch (err) {
      if (err instanceof TemporalUnavailable) return { error: err.message };
      throw err;
    }
  };

  /**
   * Starts the undo of one of a job's changes as its own request: the
   * passkey's answer to a one-time challenge names who asks (the undo
   * job's requester), and the request is then decided on its card.
   */
  async function startUndo(body: unknown): Promise<Record<string, unknown>> {
    const { jobId, callId, response } = parseBody(undoRequestSchema, body);
    admit(jobId);
    const { reviewer } = await identify.answer({ response });
    const calls = await temporal.use((c) => undoableCalls(c.client, jobId));
    const call = calls.find((c) => c.callId === callId);
    if (call === undefined) throw new HttpError(404, `job ${jobId} ran no change ${callId}`);
    const { undoJobId, view } = await temporal.use((c) => c.submitUndo({ jobId, callId, path: call.path, ...(call.to !== undefined ? { to: call.to } : {}), ...(call.moves !== undefined ? { moves: call.moves } : {}), requester: reviewer }));
    if (view.status === 'parked') return { reviewer, undoJob: undoJobId, status: 'parked', requestId: view.requestId };
    return { reviewer, undoJob: undoJobId, status: 'answered', text: maskString(view.text), isError: view.isError };
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    checkHost(req, site);
    const url = new URL(req.url ?? '/', 'http://inbox.invalid');
    // Behind a proxy that keeps the public URL's path, or one that strips it: both are served.
    const path = base !== '' && (url.pathname === base || url.pathname.startsWith(`${base}/`)) ? url.pathname.slice(base.length) || '/' : url.pathname;
    const method = req.method ?? 'GET';
    if (method === 'POST') {
      checkPost(req, site);
      const body = await readJson(req);
      switch (path) {
        case '/api/decision/options':
          return sendJson(res, 200, await prepareDecision({ temporal, site, keysFile: paths.reviewerKeys }, body));
        case '/api/decision':
          return sendJson(res, 200, await submitDecision({ temporal, admit }, body));
        case '/api/identify/options':
          return sendJson(res, 200, await identify.options(body));
        case '/api/identify':
          return sendJson(res, 200, await identify.answer(body));
        case '/api/undo':
          return sendJson(res, 200, await startUndo(body));
        case '/api/register/options':
          return sendJson(res, 200, await registration.options(body));
        case '/api/register': {
          const done = await registration.complete(body);
          log(`airlock inbox: registered a passkey for reviewer ${done.reviewer}`);
          return sendJson(res, 200, done);
        }
        default:
          throw new HttpError(404, `nothing to POST at ${path}`);
      }
    }
    if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, `${method} is not served here`);
    const asset = assets.get(path);
    if (asset !== undefined) return send(res, 200, asset.type, asset.body);
    if (path === '/') return send(res, 200, HTML, listPage(await listOrError(), base));
    if (path === '/partials/list') {
      const cards = await listOrError();
      return send(res, 200, HTML, listFragment(cards, base).text, { 'X-Airlock-Count': Array.isArray(cards) ? String(cards.length) : '' });
    }
    if (path === '/api/pending') {
      const cards = await listOrError();
      return Array.isArray(cards) ? sendJson(res, 200, { cards }) : sendError(res, 503, cards.error);
    }
    if (path === '/register') return send(res, 200, HTML, registerPage(base));
    const undoOf = /^\/jobs\/([^/]+)\/undo$/.exec(path);
    if (undoOf !== null) {
      const jobId = decodePart(undoOf[1] ?? '');
      const calls = await temporal.use((c) => undoableCalls(c.client, jobId));
      return send(res, 200, HTML, undoPage(jobId, calls.map((c) => ({ callId: c.callId, toolName: c.toolName, path: c.moves !== undefined ? `${c.moves.length} ${c.moves.length === 1 ? 'entry' : 'entries'} (first ${maskString(c.path)})` : maskString(c.path), approvedBy: c.approvedBy })), base));
    }
    const request = /^\/(api\/)?jobs\/([^/]+)\/requests\/([^/]+)$/.exec(path);
    if (request !== null) {
      const [, api, jobPart = '', requestPart = ''] = request;
      const jobId = decodePart(jobPart);
      const requestId = decodePart(requestPart);
      const found = await temporal.use((c) => c.pendingOf(jobId));
      const pending = found.execution === 'RUNNING' ? found.pending.find((r) => r.requestId === requestId) : undefined;
      if (api !== undefined) return sendJson(res, 200, { jobId, requestId, waiting: pending !== undefined, status: found.status });
      if (pending === undefined) {
        const why = found.execution === 'RUNNING' ? 'it was decided elsewhere or expired.' : `the job is ${found.status}.`;
        return send(res, 404, HTML, requestGonePage(jobId, requestId, base, why));
      }
      const card = approvalCard({ jobId, goal: found.goal ?? '', request: pending, batch: found.batch ?? null }, { now: Date.now(), cli: options.cli });
      return send(res, 200, HTML, cardPage(card, base));
    }
    throw new HttpError(404, `nothing at ${path}`);
  }

  const handle: RequestListener = (req, res) => {
    route(req, res).catch((err: unknown) => {
      const wantsHtml = req.method !== 'POST' && !(req.url ?? '').includes('/api/');
      const [status, message] = failure(err);
      if (status >= 500 && !(err instanceof TemporalUnavailable)) log(`airlock inbox: ${req.method ?? ''} ${req.url ?? ''}: ${describeError(err)}`);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      // A body cut off midway leaves the connection unusable: close it after answering.
      if (status === 413) res.setHeader('Connection', 'close');
      if (wantsHtml) send(res, status, HTML, errorPage(status === 503 ? 'Temporal is not reachable' : 'Not available', message, base));
      else sendError(res, status, message);
    });
  };
  const secure = tls === undefined ? undefined : createHttpsServer({ cert: tls.certPem, key: tls.keyPem, handshakeTimeout: 20_000 }, handle);
  const server: Server = secure ?? createServer(handle);
  server.headersTimeout = 20_000;
  server.requestTimeout = 30_000;
  server.maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(site.port, site.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const address = `${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  const renewal =
    secure === undefined || site.tls === undefined
      ? undefined
      : renewTls({
          tls: site.tls,
          log,
          serve: (fresh) => {
            secure.setSecureContext({ cert: fresh.certPem, key: fresh.keyPem });
            assets.set(CA_CERT_PATH, { type: CA_TYPE, body: fresh.caPem });
          },
        });
  return {
    url: site.publicUrl,
    address,
    tls: tls === undefined ? undefined : { caFile: tls.caFile, caFingerprint: tls.caFingerprint, caName: tls.caName, hosts: tls.hosts, notAfter: tls.notAfter, issued: tls.issued },
    close: async () => {
      if (renewal !== undefined) clearInterval(renewal);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await temporal.close();
      retention.stop();
      await inviteStores.close();
    },
  };
}

