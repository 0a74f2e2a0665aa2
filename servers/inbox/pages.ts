import type { ApprovalCard } from '../../core/approval/card';
import { argAt } from '../../core/policy/conditions';
import { actionText, callHtml, detailsHtml, html, page, rowHtml, whenHtml, type Html } from './html';

function isCards(cards: readonly ApprovalCard[] | { readonly error: string }): cards is readonly ApprovalCard[] {
  return Array.isArray(cards);
}

/** The rows of the list, newest first, or what stands in for them (nothing waits; Temporal is unreachable). */
export function listFragment(cards: readonly ApprovalCard[] | { readonly error: string }, base: string): Html {
  if (!isCards(cards)) return html`<p class="notice error" data-state="unavailable">${cards.error}</p>`;
  if (cards.length === 0) return html`<p class="notice" data-state="empty">Nothing is waiting for approval.</p>`;
  const newest = [...cards].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  return html`<ol class="rows">${newest.map((card) => rowHtml(card, base))}</ol>`;
}

export function listPage(cards: readonly ApprovalCard[] | { readonly error: string }, base: string): string {
  const count = isCards(cards) ? cards.length : undefined;
  return page({
    title: 'Waiting for approval',
    base,
    kind: 'list',
    // The status line announces a change of count; the rows (whose times tick each minute) are not a live region.
    body: html`<h1>Waiting for approval</h1>
<p id="list-status" class="status" role="status" aria-live="polite">${count === undefined ? 'Not connected' : `${count} waiting`}</p>
<div id="list">${listFragment(cards, base)}</div>`,
  });
}

/** The value an edit field starts with: the requested value as text. */
function fieldText(args: unknown, field: string): string {
  const at = argAt(args, field);
  if (at === undefined) return '';
  return typeof at === 'string' ? at : JSON.stringify(at);
}

function editsHtml(card: ApprovalCard): Html {
  if (card.editable.length === 0) return html``;
  const fieldId = (field: string) => `edit-${field.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  return html`<fieldset id="edits">
<legend>Edit before approving (optional)</legend>
<p class="hint">Only these fields may change; an edited call is a new call with its own fingerprint.</p>
${card.editable.map((field) => {
  const before = fieldText(card.operation.args, field);
  return html`<div class="field"><label for="${fieldId(field)}">${field} <span class="hint">(requested: <span class="mono">${before}</span>)</span></label>
<input id="${fieldId(field)}" class="edit" data-field="${field}" data-before="${before}" value="${before}" autocomplete="off" spellcheck="false"></div>`;
})}
<div id="edit-preview" class="preview" aria-live="polite" hidden><p>You will approve this edited call:</p><ul id="edit-changes"></ul></div>
</fieldset>`;
}

/**
 * One request as a decision screen: what will happen, how long it waits,
 * who decides, and Approve / Deny in a bar that stays on screen (at the
 * bottom of a phone; beside the details on a wide screen). The reviewer is
 * whoever the passkey says: the script fills in the name it remembers.
 */
export function cardPage(card: ApprovalCard, base: string): string {
  return page({
    title: actionText(card),
    base,
    kind: 'card',
    passkeys: true,
    body: html`<p class="back"><a href="${base}/">← All waiting requests</a></p>
<div class="decision">
<div class="primary">
<article class="card summary" data-job="${card.jobId}" data-request="${card.requestId}">
<h1 id="action" class="action">${actionText(card)}</h1>
${card.action !== undefined ? html`<p class="call">${callHtml(card)}</p>` : html``}
${card.undoWhy !== undefined ? html`<p id="undo-why" class="hint">Cannot be undone: ${card.undoWhy}.</p>` : html``}
<p id="when" class="when">${whenHtml(card)}</p>
</article>
<form id="decide" class="decide" data-job="${card.jobId}" data-request="${card.requestId}" novalidate>
<p id="who" class="who"><span id="who-text">Your passkey tells the page who you are when you decide.</span><button type="button" id="not-you" class="quiet" hidden>not you?</button></p>
${editsHtml(card)}
<div id="bar" class="bar">
<p id="gone" class="notice" role="alert" hidden>This request is no longer waiting: it was decided elsewhere, or it expired.</p>
<div id="result" class="result" role="status" aria-live="polite"></div>
<div id="reason-box" class="field reason-box"><label for="reason">Reason <span class="hint">(the model is told it; a denial needs one)</span></label>
<textarea id="reason" name="reason" rows="2" maxlength="2000"></textarea></div>
<div class="actions">
<button type="button" id="approve" data-decision="approve">Approve</button>
<button type="button" id="deny" data-decision="deny" class="deny">Deny</button>
<button type="button" id="reason-toggle" class="quiet" aria-controls="reason-box">Add reason</button>
</div>
</div>
<p class="hint sign-note">Your passkey signs exactly this decision: the job checks the signature before anything runs.</p>
${card.undoDays !== undefined ? html`<p id="undo-later" class="hint" hidden>Changed your mind once it ran? <a href="${base}/jobs/${encodeURIComponent(card.jobId)}/undo">Undo it</a> within ${String(card.undoDays)} ${card.undoDays === 1 ? 'day' : 'days'}.</p>` : html``}
</form>
</div>
<section class="details" aria-labelledby="details-title">
<h2 id="details-title">Details</h2>
${detailsHtml(card)}
</section>
</div>`,
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
<p class="hint">The passkey stays on your device; this server keeps only its public key, and jobs accept your decisions when your passkey signs them. This browser remembers your reviewer name, so the approval page can say who is deciding.</p>
<div class="actions"><button type="button" id="register" disabled>Create passkey</button></div>
<div id="result" class="result" role="status" aria-live="polite"></div>`,
  });
}

/** A change of a job that the undo page offers to take back. */
export interface UndoOffer {
  readonly callId: string;
  readonly toolName: string;
  /** What it changed (masked). */
  readonly path: string;
  readonly approvedBy: string | undefined;
}

/** How the undo page names each kind of change. */
const UNDO_WORDS: Readonly<Record<string, { readonly verb: string; readonly done: string }>> = {
  fs_delete: { verb: 'Put back', done: 'Deleted' },
  fs_chmod: { verb: 'Put back the mode of', done: 'Mode changed' },
  fs_write: { verb: 'Put back the content of', done: 'Written' },
  fs_move: { verb: 'Move back to', done: 'Moved away' },
  fs_move_many: { verb: 'Move back', done: 'Moved away as one set' },
};

/**
 * A job's changes that ran, each with Undo: the undo is a request of its
 * own (its job `undo-JOB-CALL`), started once the reviewer's passkey says
 * who asks, and then decided on its own card like any other.
 */
export function undoPage(jobId: string, offers: readonly UndoOffer[], base: string): string {
  const rows =
    offers.length === 0
      ? html`<p class="notice" data-state="empty">Job <span class="mono">${jobId}</span> ran no change that can be taken back.</p>`
      : html`<ol class="rows">${offers.map(
          (o) => html`<li class="row undo-row"><p class="action">${UNDO_WORDS[o.toolName]?.verb ?? 'Put back'} <span class="mono">${o.path}</span></p>
<p class="hint">${UNDO_WORDS[o.toolName]?.done ?? 'Changed'} by call <span class="mono">${o.callId}</span>${o.approvedBy !== undefined ? html`, approved by ${o.approvedBy}` : html``}</p>
<button type="button" class="undo" data-call="${o.callId}">Undo</button></li>`,
        )}</ol>`;
  return page({
    title: `Undo a change of ${jobId}`,
    base,
    kind: 'undo',
    passkeys: true,
    body: html`<p class="back"><a href="${base}/">← All waiting requests</a></p>
<h1>Undo a change of job <span class="mono">${jobId}</span></h1>
<p class="hint">An undo puts back what a delete moved aside (only while nothing is at its place again), a file's content before a write (only while it still holds what the write left), the mode a mode change replaced (only while the file still has the mode it set), or the entries a move or a bulk move took elsewhere (only while each is unchanged there and nothing took its old place). It is a request of its own: you approve it on the next screen with your passkey.</p>
<div id="undo-list" data-job="${jobId}">${rows}</div>
<div id="result" class="result" role="status" aria-live="polite"></div>`,
  });
}
