import { AesGcmCodec, loadCodecKeys } from '../../host/payload-codec';
import { statePaths } from '../../host/paths';
import { defineCommand } from '../command';
import { UsageError } from '../errors';
import { loadOrCreateCodecToken, startCodecServer } from '../dev/codec-server';

export const codecServerCommand = defineCommand({
  name: 'codec-server',
  summary: "Serve the payload codec to the Web UI, so it shows encrypted jobs decoded",
  usage: 'airlock codec-server [--port N]   (AIRLOCK_CODEC_KEYS, AIRLOCK_CODEC_UI_ORIGIN)',
  options: { port: { type: 'string' } },
  async run(args, io) {
    if (args.positionals.length > 0) throw new UsageError(`codec-server takes no arguments; usage: ${this.usage}`);
    const config = io.config();
    const portText = typeof args.values.port === 'string' ? args.values.port : undefined;
    const port = portText === undefined ? config.codec.port : Number(portText);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port takes a port number, got ${JSON.stringify(portText)}`);
    const paths = statePaths(config);
    const origin = config.codec.uiOrigin ?? `http://127.0.0.1:${config.dev.uiPort}`;
    const server = await startCodecServer({
      codec: new AesGcmCodec(loadCodecKeys(paths.codecKeys)),
      token: loadOrCreateCodecToken(paths.codecToken),
      port,
      origins: [origin, origin.replace('//127.0.0.1:', '//localhost:')],
    });
    io.out(`airlock codec-server: serving ${origin}; set the Web UI's codec endpoint to\n  ${server.endpoint}`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await server.close();
  },
});
