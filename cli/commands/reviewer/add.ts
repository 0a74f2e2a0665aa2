import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { statePaths } from '../../../host/config/paths';
import { localReviewerKeyFile } from '../../../host/keys/reviewer-key-file';
import { ensureLocalReviewer } from '../../../host/keys/reviewer-identity';
import { printJson, type CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';

export const run: CommandRun = async (args, io, command) => {
  const [name, ...rest] = args.positionals;
  if (name === undefined || rest.length > 0) throw new UsageError(`expected one reviewer name; usage: ${command.usage}`);
  const config = io.config();
  const paths = statePaths(config);
  if (args.values.passkey === true) {
    // The same names as a key file: they travel in decisions and in the keys file.
    localReviewerKeyFile(paths, name);
    const [{ openInviteStores }, { inboxSite, isLoopbackHost, CA_CERT_PATH }] = await Promise.all([import('../../../servers/inbox/invite-stores'), import('../../../servers/inbox/site')]);
    const stores = await openInviteStores(config);
    let invite: { readonly token: string; readonly expiresAt: number };
    try {
      invite = await stores.invites.create(name);
    } finally {
      await stores.close();
    }
    const site = inboxSite(config);
    // In the fragment: a browser never sends it to the server, a proxy's log or a Referer.
    const link = `${site.publicUrl}/register#${invite.token}`;
    const expiresAt = new Date(invite.expiresAt).toISOString();
    if (args.values.json === true) {
      printJson(io, { reviewer: name, link, expiresAt, reviewerKeys: paths.reviewerKeys });
      return;
    }
    io.out(`open this link on the device that will hold ${name}'s passkey (it works once, until ${expiresAt}):`);
    io.out(`  ${link}`);
    io.out(`  the approval page (${site.tls === undefined ? 'airlock inbox' : 'airlock inbox --tls'}) must be serving ${site.publicUrl}; the passkey's public key is added to ${paths.reviewerKeys}`);
    const loopback = isLoopbackHost(site.rpId);
    // Browsers allow passkeys on http only for localhost: a phone needs the page over HTTPS at a name it can reach.
    if (loopback && site.tls === undefined) {
      io.err(
        `airlock reviewer add: ${site.publicUrl} opens only on this machine; for a phone, serve the approval page over HTTPS (a reverse proxy such as Caddy or Tailscale Serve) and set AIRLOCK_APPROVAL_PAGE_URL to its https:// address before making the link`,
      );
    } else if (loopback) {
      io.err(
        `airlock reviewer add: ${site.publicUrl} opens only on this machine; for a phone, set AIRLOCK_APPROVAL_PAGE_URL to https://NAME:${site.port} with a NAME the phone resolves (for example ${hostname()}), serve it (airlock inbox --tls --listen 0.0.0.0:${site.port}) and make the link again`,
      );
    } else if (site.tls !== undefined) {
      // The page's certificate comes from airlock's own CA: a device that does not trust it yet cannot open the link.
      io.out(`  the device must trust airlock's CA first: open ${site.publicUrl}${CA_CERT_PATH} on it (airlock inbox --tls prints the steps and the CA's SHA-256)`);
    }
    return;
  }
  const { keyFile, created } = ensureLocalReviewer(paths, name);
  const result = { reviewer: name, created, keyFile, reviewerKeys: paths.reviewerKeys };
  if (args.values.json === true) {
    printJson(io, result);
    return;
  }
  io.out(
    created
      ? `created ${name}'s signing key ${keyFile} and listed its public key in ${paths.reviewerKeys}`
      : `${name} already has a signing key here: ${keyFile}`,
  );
  io.out('  decisions made on this machine as this reviewer are signed with it; the agent workers read the keys file again when it changes');
  // The key helps only if the workers read this file: say which file they must be pointed at.
  io.out(`  the agent workers must read ${paths.reviewerKeys}: they do when their AIRLOCK_DATA_DIR is ${resolve(io.config().dataDir)} (or their AIRLOCK_REVIEWER_KEYS names this file)`);
};
