import type { ApprovalCard } from '../../core/approval/card';
import { argAt } from '../../core/policy/conditions';
import { cardHtml, html, page, type Html } from './html';

function isCards(cards: readonly ApprovalCard[] | { readonly error: string }): cards is readonly ApprovalCard[] {
  return Array.isArray(cards);
}

/** The cards of the list, or what stands in for them (nothing waits; Temporal is unreachable). */
export function listFragment(cards: readonly ApprovalCard[] | { readonly error: string }, base: string): Html {
  if (!isCards(cards)) return html`<p class="notice error" data-state="unavailable">${cards.error}</p>`;
  if (cards.length === 0) return html`<p class="notice" data-state="empty">Nothing is waiting for approval.</p>`;
  return html`${cards.map((card) => cardHtml(card, { base, link: true }))}`;
}

export function listPage(cards: readonly ApprovalCard[] | { readonly error: string }, base: string): string {
  const count = isCards(cards) ? cards.length : undefined;
  return page({
    title: 'Waiting for approval',
    base,
    kind: 'list',
    body: html`<h1>Waiting for approval</h1>
<p id="list-status" class="status" role="status" aria-live="polite">${count === undefined ? 'Not connected' : `${count} waiting`}</p>
<div id="list" aria-live="polite">${listFragment(cards, base)}</div>`,
  });
}

/** The value an edit field starts with: the requested value as text. */
function fieldText(args: unknown, field: string): string {
  const at = argAt(args, field);
  if (at === undefined) return '';
  return typeof at === 'string' ? at : JSON.stringify(at);
}

export function cardPage(card: ApprovalCard, base: string): string {
  const fieldId = (field: string) => `edit-${field.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  const edits =
    card.editable.length === 0
      ? html``
      : html`<fieldset id="edits">
<legend>Edit before approving (optional)</legend>
<p class="hint">Only these fields may change; an edited call is a new call with its own fingerprint.</p>
${card.editable.map((field) => {
  const before = fieldText(card.operation.args, field);
  return html`<div class="field"><label for="${fieldId(field)}">${field} <span class="hint">(requested: <span class="mono">${before}</span>)</span></label>
<input id="${fieldId(field)}" class="edit" data-field="${field}" data-before="${before}" value="${before}" autocomplete="off" spellcheck="false"></div>`;
})}
<div id="edit-preview" class="preview" aria-live="polite" hidden><p>You will approve this edited call:</p><ul id="edit-changes"></ul></div>
</fieldset>`;
  return page({
    title: `${card.operation.tool} ${card.operation.target}`,
    base,
    kind: 'card',
    passkeys: true,
    body: html`<p class="back"><a href="${base}/">← All waiting requests</a></p>
${cardHtml(card, { base, link: false })}
<form id="decide" class="decide" data-job="${card.jobId}" data-request="${card.requestId}" novalidate>
<h2>Decide</h2>
<p id="gone" class="notice" role="alert" hidden>This request is no longer waiting: it was decided elsewhere, or it expired.</p>
<div class="field"><label for="reviewer">Your reviewer name</label>
<input id="reviewer" name="reviewer" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="200"></div>
${edits}
<div class="field"><label for="reason">Reason <span class="hint">(recorded; the model is told when you deny, so a denial needs one)</span></label>
<textarea id="reason" name="reason" rows="3" maxlength="2000"></textarea></div>
<div class="actions">
<button type="button" id="approve" data-decision="approve">Approve</button>
<button type="button" id="deny" data-decision="deny" class="deny">Deny</button>
</div>
<p class="hint">Your passkey signs exactly this decision: the job checks the signature before anything runs.</p>
<div id="result" class="result" role="status" aria-live="polite"></div>
</form>`,
  });
}

export function requestGonePage(jobId: string, requestId: string, base: string, why: string): string {
  return page({
    title: 'Not waiting',
    base,
    kind: 'error',
    body: html`<p class="back"><a href="${base}/">← All waiting requests</a></p>
<h1>Nothing to decide</h1>
<p class="notice" data-state="gone">Request <span class="mono">${requestId}</span> of job <span class="mono">${jobId}</span> is not waiting for a decision: ${why}</p>`,
  });
}

export function errorPage(title: string, message: string, base: string): string {
  return page({ title, base, kind: 'error', body: html`<h1>${title}</h1><p class="notice error">${message}</p><p><a href="${base}/">All waiting requests</a></p>` });
}

export function registerPage(base: string): string {
  return page({
    title: 'Register a passkey',
    base,
    kind: 'register',
    passkeys: true,
    body: html`<h1>Register a passkey</h1>
<p id="register-for">Checking the registration link…</p>
<p class="hint">The passkey stays on your device; this server keeps only its public key, and jobs accept your decisions when your passkey signs them.</p>
<div class="actions"><button type="button" id="register" disabled>Create passkey</button></div>
<div id="result" class="result" role="status" aria-live="polite"></div>`,
  });
}
