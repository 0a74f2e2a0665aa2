import { statePaths } from '../../host/config/paths';
import type { CommandRun } from '../command';
import { UsageError } from '../../client/errors';
import { untilStopped } from '../stop-signal';

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`codec-server takes no arguments; usage: ${command.usage}`);
  const config = io.config();
  const portText = typeof args.values.port === 'string' ? args.values.port : undefined;
  const port = portText === undefined ? config.codec.port : Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port takes a port number, got ${JSON.stringify(portText)}`);
  const paths = statePaths(config);
  const origin = config.codec.uiOrigin ?? `http://127.0.0.1:${config.dev.uiPort}`;
  // The codec (and Temporal's protobuf types) load only once the port is known to be right.
  const [{ AesGcmCodec, loadCodecKeys }, { loadOrCreateCodecToken, startCodecServer }] = await Promise.all([
    import('../../host/temporal/payload-codec'),
    import('../../servers/codec/codec-server'),
  ]);
  const stopped = untilStopped();
  const server = await startCodecServer({
    codec: new AesGcmCodec(loadCodecKeys(paths.codecKeys)),
    token: loadOrCreateCodecToken(paths.codecToken),
    port,
    origins: [origin, origin.replace('//127.0.0.1:', '//localhost:')],
  });
  io.out(`airlock codec-server: serving ${origin}; set the Web UI's codec endpoint to\n  ${server.endpoint}`);
  await stopped;
  await server.close();
};
