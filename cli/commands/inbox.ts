import { hostname } from 'node:os';
import type { CliName } from '../../core/approval/card';
import { bindAddress } from '../../core/config/config';
import { cliName } from '../../client/cli-name';
import type { CommandIo, CommandRun } from '../command';
import { UsageError } from '../../client/errors';
import type { InboxTlsState } from '../../servers/inbox/inbox-server';
import { untilStopped } from '../stop-signal';

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`inbox takes no arguments; usage: ${command.usage}`);
  const given = io.config();
  const listenText = typeof args.values.listen === 'string' ? args.values.listen : undefined;
  if (listenText !== undefined && !bindAddress.safeParse(listenText).success) {
    throw new UsageError(`--listen takes IP:port, for example 127.0.0.1:7244 (0.0.0.0:7244 to serve other machines), got ${JSON.stringify(listenText)}`);
  }
  const config = args.values.tls === true ? { ...given, inbox: { ...given.inbox, tls: true } } : given;
  // The server (and Temporal's client) load only once the command line is known to be right.
  const [{ inboxSite, isLoopbackHost, CA_CERT_PATH }, { startInboxServer }] = await Promise.all([import('../../servers/inbox/site'), import('../../servers/inbox/inbox-server')]);
  const site = inboxSite(config, listenText);
  const cli = cliName(io.env);
  const stopped = untilStopped();
  const server = await startInboxServer({ config, site, cli, log: io.err });
  io.out(`airlock inbox: serving ${server.url} (listening on ${server.address}; Temporal ${config.temporal.address}, namespace ${config.temporal.namespace})`);
  if (server.tls !== undefined) {
    const loopback = isLoopbackHost(site.rpId);
    // A phone cannot download from localhost: then the file is the way.
    printTrustSteps({ io, tls: server.tls, caUrl: loopback ? undefined : `${server.url}${CA_CERT_PATH}` });
    printPhoneHints({ io, cli, port: site.port, loopback, publicUrlSet: config.notify.approvalPageUrl !== undefined, tlsInEnv: given.inbox.tls });
  }
  if (!config.notify.approvalPageUrl) io.out('  set AIRLOCK_APPROVAL_PAGE_URL to this URL on the agent workers so notifications link to it');
  await stopped;
  await server.close();
};

/** Where the CA is, how to tell it is the right one, and how a phone comes to trust it. */
function printTrustSteps(input: { io: CommandIo; tls: InboxTlsState; caUrl: string | undefined }): void {
  const { io, tls } = input;
  const made = tls.issued === 'ca' ? ' (made now: trust it on each phone once)' : '';
  io.out(`  HTTPS with airlock's own CA: ${tls.caFile}${made}`);
  io.out(`    CA SHA-256 ${tls.caFingerprint}`);
  io.out(`    certificate for ${tls.hosts.join(', ')}, until ${tls.notAfter.toISOString().slice(0, 10)}${tls.issued === 'certificate' ? ' (issued now)' : ''}`);
  const download = input.caUrl === undefined ? '' : `, or open ${input.caUrl} on it`;
  io.out(`  trust the CA on each phone: send it that file (AirDrop, mail, a message)${download}; check the SHA-256 the phone shows against the one above`);
  io.out(
    `    iOS: open the file, then Settings › Profile Downloaded (or General › VPN & Device Management) › Install; then Settings › General › About › Certificate Trust Settings › turn on full trust for "${tls.caName}"`,
  );
  io.out('    Android: Settings › Security › Encryption & credentials › Install a certificate › CA certificate, and pick the file');
}

/** A localhost URL reaches no phone; passkey links must be made with the same settings as the page. */
function printPhoneHints(input: { io: CommandIo; cli: CliName; port: number; loopback: boolean; publicUrlSet: boolean; tlsInEnv: boolean }): void {
  const { io, port } = input;
  if (input.loopback) {
    io.out(`  a phone cannot open localhost: set AIRLOCK_APPROVAL_PAGE_URL to a name it resolves (for example https://${hostname()}:${port}; passkeys are bound to it) and listen where it reaches (--listen 0.0.0.0:${port})`);
  }
  // `reviewer add` reads the environment, not this command line: without the variable its link would be http://.
  const env = input.publicUrlSet || input.tlsInEnv ? '' : 'AIRLOCK_INBOX_TLS=1 ';
  io.out(`  register a passkey: ${env}${input.cli} reviewer add NAME --passkey, and open its link on the phone`);
}
