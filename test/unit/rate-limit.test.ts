import { RateLimit } from '../../servers/inbox/rate-limit';

test('a key gets `limit` events per sliding window; refused ones are not counted; keys are apart', () => {
  let now = 0;
  const limit = new RateLimit(3, 1_000, () => now);
  expect([1, 2, 3, 4].map(() => limit.take('job-a'))).toEqual([true, true, true, false]);
  expect(limit.take('job-b')).toBe(true);
  now = 999;
  expect(limit.take('job-a')).toBe(false);
  // The first three age out together: three more fit, not four (the refusals left no trace).
  now = 1_000;
  expect([1, 2, 3, 4].map(() => limit.take('job-a'))).toEqual([true, true, true, false]);
});

test('keys whose events aged out are forgotten, so random keys do not pile up', () => {
  let now = 0;
  const limit = new RateLimit(1, 100, () => now);
  for (let i = 0; i < 1_000; i++) limit.take(`job-${i}`);
  now = 200;
  limit.take('fresh');
  expect(limit.keys).toBe(1);
});
