import type { ChatMessage } from './chat';

function size(m: ChatMessage): number {
  if (m.role === 'assistant') return (m.content?.length ?? 0) + m.toolCalls.reduce((n, c) => n + c.arguments.length + c.name.length, 0);
  return m.content.length;
}

const leftOut = (chars: number, what: string) =>
  `[${chars} characters of ${what} left out to fit the model's context; it was shown in full when it arrived]`;

/**
 * What the model gets when the whole conversation would not fit its
 * budget. Kept whole: the system prompt, the goal, and everything from the
 * last assistant message on (the calls the model is waiting to hear about).
 * Left out first: older tool results, oldest first; then the text of older
 * assistant messages. Every message keeps its place and its tool-call id,
 * so the conversation stays well-formed; nothing stored is changed.
 */
export function fitToBudget(messages: readonly ChatMessage[], maxChars: number): ChatMessage[] {
  let total = messages.reduce((n, m) => n + size(m), 0);
  if (total <= maxChars) return [...messages];
  const out = [...messages];
  let lastAssistant = -1;
  out.forEach((m, i) => {
    if (m.role === 'assistant') lastAssistant = i;
  });
  const firstUser = out.findIndex((m) => m.role === 'user');
  const older = (i: number) => i < lastAssistant && i !== firstUser && out[i]?.role !== 'system';
  for (const pass of ['tool', 'assistant'] as const) {
    for (let i = 0; i < out.length && total > maxChars; i++) {
      const m = out[i];
      if (m === undefined || !older(i)) continue;
      if (pass === 'tool' && m.role === 'tool' && m.content.length > 200) {
        const note = leftOut(m.content.length, 'tool output');
        total -= m.content.length - note.length;
        out[i] = { ...m, content: note };
      } else if (pass === 'assistant' && m.role === 'assistant' && (m.content?.length ?? 0) > 200) {
        const text = m.content ?? '';
        const note = leftOut(text.length, 'your earlier message');
        total -= text.length - note.length;
        out[i] = { ...m, content: note };
      }
    }
  }
  return out;
}
