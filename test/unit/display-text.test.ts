import { display, displayText } from '../../core/redaction/display-text';

test.each([
  ['ESC sequences', 'a\x1b[31mred\x1b[0m', 'a\\x1b[31mred\\x1b[0m'],
  ['a C1 CSI', 'x\u009b2J', 'x\\u009b2J'],
  ['carriage return, tab, bell, DEL', 'ok\rfake\tbell\x07del\x7f', 'ok\\rfake\\tbell\\x07del\\u007f'],
  ['an OSC title', '\x1b]0;pwned\x07', '\\x1b]0;pwned\\x07'],
  ['bidi overrides and isolates', 'invoice\u202efdp.exe \u2066x\u2069 \u200f', 'invoice\\u202efdp.exe \\u2066x\\u2069 \\u200f'],
  ['invisible characters', 'r\u200bm \ufeff \u2060 \u2028', 'r\\u200bm \\ufeff \\u2060 \\u2028'],
  ['tag characters and lone surrogates', 'a\u{e0041}b\ud800c\udc00', 'a\\udb40\\udc41b\\ud800c\\udc00'],
  ['ordinary text', '写真/猫.jpg 🎬 👨‍👩‍👧 ok', '写真/猫.jpg 🎬 👨‍👩‍👧 ok'],
  ['a newline in a value', 'x\n  rule approve-all v1: harmless', 'x\\n  rule approve-all v1: harmless'],
])('displayText on %s', (_name, input, expected) => {
  expect(displayText(input)).toBe(expected);
});

test('a block keeps its newlines and nothing else', () => {
  expect(displayText('line one\nline\x1b[2K two\r\n', { newlines: 'keep' })).toBe('line one\nline\\x1b[2K two\\r\n');
});

test('escaping twice changes nothing', () => {
  const text = 'a\x1b[31m\u202e\n\u{e0041}\\x1b';
  expect(displayText(displayText(text))).toBe(displayText(text));
});

test('JSON passed through stays JSON with the same meaning', () => {
  const value = { path: 'a\x1b[31m\u202e\u009b\x7f\u{e0041}\ud800', n: 1, list: ['\u2028'] };
  const shown = displayText(JSON.stringify(value, null, 2), { newlines: 'keep' });
  expect(shown).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e\u2028]/); // eslint-disable-line no-control-regex
  expect(JSON.parse(shown)).toEqual(value);
});

test('display escapes every interpolated value, and only those', () => {
  const goal = 'tidy up\x1b[2J\nrule ok';
  expect(display`job ${'j1'}: ${goal} (turn ${3}/${30}, ${null})\n`).toBe('job j1: tidy up\\x1b[2J\\nrule ok (turn 3/30, null)\n');
});
