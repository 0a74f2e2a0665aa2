import { DefaultLogger, Runtime } from '@temporalio/worker';

/**
 * The bench process's Temporal runtime, with the SDK core's own log lines
 * forwarded here: payload-size warnings are counted (the history part
 * reports them) instead of flooding the table's terminal.
 */
export const logCounts = { payloadWarnings: 0, otherWarnings: 0 };

// TMPRL1103: a payload over the SDK's warning size (512 KiB), well before the server's hard limit.
const PAYLOAD_WARNING = /TMPRL1103/;
// Activity-only workers always say this; it is not news.
const EXPECTED = [/^No workflows registered/, /^No Nexus services registered/];

export function installBenchRuntime(): void {
  Runtime.install({
    shutdownSignals: [],
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
    logger: new DefaultLogger('WARN', (entry) => {
      if (EXPECTED.some((re) => re.test(entry.message))) return;
      if (PAYLOAD_WARNING.test(entry.message)) {
        logCounts.payloadWarnings++;
        return;
      }
      logCounts.otherWarnings++;
      process.stderr.write(`bench: [${entry.level}] ${entry.message}\n`);
    }),
  });
}
