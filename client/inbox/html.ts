import type { ApprovalCard } from '../../core/approval/card';
import { displayText } from '../../core/redaction/display-text';

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

export interface PageOptions {
  readonly title: string;
  readonly base: string;
  /** Which behaviour the page script gives this page. */
  readonly kind: 'list' | 'card' | 'register' | 'error';
  readonly body: Html;
  /** The WebAuthn browser library is loaded only on pages that use a passkey. */
  readonly passkeys?: boolean;
}

/** A whole page: our stylesheet and script only (the CSP allows nothing inline). */
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
<body data-base="${base}" data-page="${options.kind}">
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

function observedList(card: ApprovalCard): Html {
  if (card.observed.length === 0) return html`<dd>nothing observed</dd>`;
  return html`${card.observed.map((o) => html`<dd><span class="mono">${o.path}</span>: ${o.text}</dd>`)}`;
}

/** The approval card, the fields every other surface shows; `link` makes its title open the card's own page. */
export function cardHtml(card: ApprovalCard, options: { readonly base: string; readonly link: boolean }): Html {
  const href = `${options.base}/jobs/${encodeURIComponent(card.jobId)}/requests/${encodeURIComponent(card.requestId)}`;
  const call = html`<span class="tool">${card.operation.tool}</span> <span class="mono target">${card.operation.target}</span>`;
  // The sentence is the title; the exact call stays under it.
  const title = card.action !== undefined ? html`<span class="action">${card.action}</span>` : call;
  const heading = options.link ? html`<h2><a href="${href}">${title}</a></h2>` : html`<h1>${title}</h1>`;
  const others = card.otherCalls.length === 0 ? html`` : html`<dt>Same batch</dt>${card.otherCalls.map((c) => html`<dd><span class="mono">${c.tool} ${c.target}</span>: ${c.decision}</dd>`)}`;
  return html`<article class="card" data-job="${card.jobId}" data-request="${card.requestId}">
${heading}
${card.action !== undefined ? html`<p class="call">${call}</p>` : html``}
<p class="when"><span>${card.waiting}</span> · <span class="${card.expires.startsWith('expired') ? 'late' : ''}">${card.expires}</span></p>
<dl>
<dt>Job</dt><dd><span class="mono">${card.jobId}</span>: ${card.goal}</dd>
<dt>Arguments</dt><dd class="mono">${card.operation.summary}</dd>
<dt>Target as observed</dt>${observedList(card)}
<dt>Rule</dt><dd><span class="mono">${card.rule.id}</span> v${card.rule.version}: ${card.rule.reason}</dd>
<dt>The model's reason</dt><dd class="said">${card.statedReason ?? '(none given)'}</dd>
${others}
<dt>May edit</dt><dd>${card.editable.length > 0 ? card.editable.join(', ') : 'nothing'} (${card.editNote})</dd>
<dt>Requested by</dt><dd>${card.requester}, ${card.createdAt}</dd>
<dt>May decide</dt><dd>${card.mayDecide ?? (card.reviewers === null ? 'anyone' : card.reviewers.join(', '))}</dd>
<dt>Request</dt><dd class="mono small">${card.requestId}</dd>
<dt>Fingerprint</dt><dd class="mono small">${card.fingerprint}</dd>
</dl>
${options.link ? html`<p><a class="button" href="${href}">Review and decide</a></p>` : html``}
</article>`;
}
