import type { ApprovalCard, CardChange } from '../../core/approval/card';
import { displayText } from '../../core/redaction/display-text';
import { utcMinute } from '../../core/reviewer/approval-card';
import { changeLines } from '../../core/reviewer/change-view';

/** Text for HTML element content or a quoted attribute: every markup character escaped, control characters shown. */
export function esc(text: string): string {
  return displayText(text, { newlines: 'keep' }).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A tagged template whose values are escaped (a value that is already `Html` is kept). */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export function html(strings: TemplateStringsArray, ...values: ReadonlyArray<string | number | Html | readonly Html[]>): Html {
  let out = strings[0] ?? '';
  values.forEach((v, i) => {
    const part = v instanceof Html ? v.text : Array.isArray(v) ? v.map((h: Html) => h.text).join('') : esc(String(v));
    out += part + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/**
 * Escaped text that may break after a path separator or a comma (`<wbr>`):
 * a long path wraps at its folders on a phone instead of mid-name (the
 * stylesheet still breaks anywhere when one part is wider than the screen).
 */
export function breakable(text: string): Html {
  return new Html(text.split(/(?<=[/\\,])/).map(esc).join('<wbr>'));
}

export interface PageOptions {
  readonly title: string;
  readonly base: string;
  /** Which behaviour the page script gives this page. */
  readonly kind: 'list' | 'card' | 'register' | 'undo' | 'error';
  readonly body: Html;
  /** The WebAuthn browser library is loaded only on pages that use a passkey. */
  readonly passkeys?: boolean;
}

/**
 * A whole page: our stylesheet and script only (the CSP allows nothing
 * inline). `data-now` is the server's clock, so relative times stay right
 * on a device whose clock is off.
 */
export function page(options: PageOptions): string {
  const { base } = options;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${options.title} · airlock</title>
<link rel="stylesheet" href="${base}/assets/inbox.css">
</head>
<body data-base="${base}" data-page="${options.kind}" data-now="${new Date().toISOString()}">
<a class="skip" href="#main">Skip to content</a>
<header class="top"><a href="${base}/">airlock inbox</a></header>
<main id="main" tabindex="-1">
${options.body}
</main>
${options.passkeys === true ? html`<script src="${base}/assets/webauthn.js"></script>\n` : html``}<script src="${base}/assets/inbox.js"></script>
</body>
</html>
`.text;
}

/**
 * A moment as the server knows it: the words rendered now (`since`:
 * "waiting 3m", `until`: "expires in 23h", `at`: the UTC minute), the UTC
 * minute as its title; the page script rewrites both in the reader's time
 * zone and keeps the words current.
 */
export function timeHtml({ iso, rel, text }: { readonly iso: string; readonly rel: 'since' | 'until' | 'at'; readonly text: string }): Html {
  const late = rel === 'until' && text.startsWith('expired');
  return html`<time datetime="${iso}" data-rel="${rel}" title="${utcMinute(iso)}"${late ? html` class="late"` : html``}>${text}</time>`;
}

/** "waiting 3m · expires in 23h", each a `<time>`. */
export function whenHtml(card: ApprovalCard): Html {
  return html`${timeHtml({ iso: card.createdAt, rel: 'since', text: card.waiting })} · ${timeHtml({ iso: card.expiresAt, rel: 'until', text: card.expires })}`;
}

/** The page for one request. */
export function cardHref(card: ApprovalCard, base: string): string {
  return `${base}/jobs/${encodeURIComponent(card.jobId)}/requests/${encodeURIComponent(card.requestId)}`;
}

/** What will happen in one sentence, or the bare call on cards from builds before sentences. */
export function actionText(card: ApprovalCard): string {
  return card.action ?? `${card.operation.tool} ${card.operation.target}`;
}

/** The call exactly as the model asked it: tool and target. */
export function callHtml(card: ApprovalCard): Html {
  return html`<span class="tool">${card.operation.tool}</span> <span class="mono target">${breakable(card.operation.target)}</span>`;
}

/** One row of the list: the sentence (a link to its page, two lines at most), the rule, how long it waits. */
export function rowHtml(card: ApprovalCard, base: string): Html {
  return html`<li class="row" data-job="${card.jobId}" data-request="${card.requestId}">
<a class="row-link" href="${cardHref(card, base)}" title="${actionText(card)}"><span class="row-action">${actionText(card)}</span></a>
<p class="row-meta"><span class="mono">${card.rule.id}</span> · ${whenHtml(card)}</p>
</li>`;
}

/** One collapsible section of the details; `name` marks it for tests and styles. */
function section({ name, title, open, body }: { readonly name: string; readonly title: string; readonly open: boolean; readonly body: Html }): Html {
  return html`<details class="detail" data-detail="${name}"${open ? html` open` : html``}><summary>${title}</summary><div class="detail-body">${body}</div></details>`;
}

/** What the call changes: its heading, then the diff (each line marked added, removed or context) or the moves. */
function changeHtml(change: CardChange): Html {
  const [heading = '', ...body] = changeLines(change);
  const kind = (line: string) => (change.kind !== 'diff' ? '' : line.startsWith('@@') ? 'hunk' : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : '');
  const lines = body.length === 0 ? html`` : html`<pre class="diff mono">${body.map((line) => html`<span class="${kind(line)}">${line}</span>\n`)}</pre>`;
  return html`<p>${breakable(heading)}</p>${lines}`;
}

/**
 * The card's details, each a collapsible section: what is asked and why
 * open, who and the technical ids closed.
 */
export function detailsHtml(card: ApprovalCard): Html {
  const observed =
    card.observed.length === 0
      ? html`<p>nothing observed</p>`
      : html`<ul class="plain">${card.observed.map((o) => html`<li><span class="mono">${breakable(o.path)}</span>: ${o.text}</li>`)}</ul>`;
  const others =
    card.otherCalls.length === 0
      ? html``
      : section({
          name: 'batch',
          title: `Same batch (${card.otherCalls.length} more ${card.otherCalls.length === 1 ? 'call' : 'calls'})`,
          open: false,
          body: html`<ul class="plain">${card.otherCalls.map((c) => html`<li><span class="mono">${c.tool} ${breakable(c.target)}</span>: ${c.decision}</li>`)}</ul>`,
        });
  const people = html`<dl>
<dt>Job</dt><dd><span class="mono">${breakable(card.jobId)}</span>: ${card.goal}</dd>
<dt>May edit</dt><dd>${card.editable.length > 0 ? card.editable.join(', ') : 'nothing'} (${card.editNote})</dd>
<dt>Requested by</dt><dd>${card.requester}, ${timeHtml({ iso: card.createdAt, rel: 'at', text: utcMinute(card.createdAt) })}</dd>
<dt>May decide</dt><dd>${card.mayDecide ?? (card.reviewers === null ? 'anyone' : card.reviewers.join(', '))}</dd>
</dl>`;
  const ids = html`<dl>
<dt>Request</dt><dd class="mono small">${card.requestId}</dd>
<dt>Fingerprint</dt><dd class="mono small">${card.fingerprint}</dd>
</dl>`;
  const change = card.change === undefined ? html`` : section({ name: 'change', title: 'What changes', open: true, body: changeHtml(card.change) });
  return html`${change}
${section({ name: 'arguments', title: 'Arguments', open: true, body: html`<p class="mono">${breakable(card.operation.summary)}</p>` })}
${section({ name: 'observed', title: 'Target as observed', open: true, body: observed })}
${section({ name: 'rule', title: 'Rule', open: true, body: html`<p><span class="mono">${card.rule.id}</span> v${card.rule.version}: ${card.rule.reason}</p>` })}
${section({ name: 'said', title: "The model's reason", open: true, body: html`<p class="said">${card.statedReason ?? '(none given)'}</p>` })}
${others}
${section({ name: 'people', title: 'Job and people', open: false, body: people })}
${section({ name: 'ids', title: 'Request id and fingerprint', open: false, body: ids })}`;
}
