import { humanSize, sizeChange } from '../../core/util/human-size';

test('sizes as people read them, one form on every surface', () => {
  expect([0, 1, 612, 1023].map(humanSize)).toEqual(['0 bytes', '1 byte', '612 bytes', '1023 bytes']);
  expect([1024, 1536, 262_144, 10 * 1024 * 1024 - 1, 3.2 * 1024 ** 3, 2 * 1024 ** 5].map(humanSize)).toEqual(['1 KiB', '1.5 KiB', '256 KiB', '10 MiB', '3.2 GiB', '2 PiB']);
});

test('a change of size says what changed: exact counts when both are small or would read the same', () => {
  expect(sizeChange(3, 4)).toBe('3 → 4 bytes');
  expect(sizeChange(262_144, 0)).toBe('256 KiB → 0 bytes');
  expect(sizeChange(1_048_576, 1_048_600)).toBe('1048576 → 1048600 bytes');
  expect(sizeChange(1024, 5 * 1024 * 1024)).toBe('1 KiB → 5 MiB');
});
