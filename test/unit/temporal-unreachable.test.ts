import { describeOtherError, temporalUnreachable } from '../../host/temporal/describe-other-error';

/** An error as the Temporal client throws it: a gRPC status code, maybe wrapped. */
function grpc(code: number, message = 'rpc failed', cause?: unknown): Error {
  return Object.assign(new Error(message, cause === undefined ? {} : { cause }), { code });
}

test('a server that is not there is unreachable for the CLI and the approval page alike', () => {
  const down = [
    Object.assign(new Error('connect failed'), { name: 'TransportError' }),
    grpc(14, 'UNAVAILABLE: No connection established'),
    new Error('outer', { cause: grpc(14) }),
    new Error('Failed to connect before the deadline'),
    Object.assign(new Error('socket'), { code: 'ECONNREFUSED' }),
    new Error('outer', { cause: new Error('connect ECONNREFUSED 127.0.0.1:7233') }),
  ];
  for (const err of down) {
    expect(temporalUnreachable(err)).toBe(true);
    expect(temporalUnreachable(err, { deadlineExceeded: true })).toBe(true);
  }
});

test('DEADLINE_EXCEEDED counts only where asked (the approval page), not for the CLI', () => {
  const late = new Error('outer', { cause: grpc(4, 'DEADLINE_EXCEEDED: Deadline exceeded') });
  expect(temporalUnreachable(late)).toBe(false);
  expect(temporalUnreachable(late, { deadlineExceeded: true })).toBe(true);
  expect(describeOtherError(late)).not.toMatch(/cannot reach the Temporal server/);
});

test('other errors are not taken for an unreachable server; the first gRPC status decides', () => {
  for (const err of [new Error('workflow not found'), grpc(5, 'NOT_FOUND', grpc(14)), 'a string', null, undefined, { code: 3 }]) {
    expect(temporalUnreachable(err, { deadlineExceeded: true })).toBe(false);
  }
  expect(describeOtherError(grpc(14, 'UNAVAILABLE: x\nsecond line'))).toBe(
    'cannot reach the Temporal server (UNAVAILABLE: x); is it running? `airlock dev` starts one, TEMPORAL_ADDRESS points elsewhere; ' +
      'a server that wants TLS or a client certificate needs TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH and TEMPORAL_TLS_SERVER_CA_CERT_PATH (or TEMPORAL_API_KEY, or a TEMPORAL_PROFILE)',
  );
});
