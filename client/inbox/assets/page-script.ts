/**
 * The inbox's one script, served as `/assets/inbox.js` (no build step: it
 * is plain ES2017 for the browser). Every text it shows goes in through
 * `textContent`; list updates are the server's escaped HTML. It keeps no
 * secret: the reviewer's name is remembered, and a passkey signs each
 * decision.
 */
export const PAGE_SCRIPT = String.raw`(function () {
  'use strict';
  var body = document.body;
  var base = body.getAttribute('data-base') || '';
  var kind = body.getAttribute('data-page');
  var REFRESH_MS = 5000;
  var REVIEWER_KEY = 'airlock.reviewer';

  function byId(id) { return document.getElementById(id); }

  function postJson(path, value) {
    return fetch(base + path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(value),
      credentials: 'omit',
      cache: 'no-store'
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (json) {
        if (!res.ok) throw new Error(json && typeof json.error === 'string' ? json.error : 'the server answered ' + res.status);
        return json;
      });
    });
  }

  function show(el, state, lines) {
    el.textContent = '';
    el.setAttribute('data-state', state);
    el.className = 'result ' + state;
    lines.forEach(function (line) {
      var p = document.createElement('p');
      p.textContent = line;
      el.appendChild(p);
    });
  }

  function passkeyError(err) {
    var name = err && err.name ? err.name : '';
    if (name === 'NotAllowedError') return 'The passkey prompt was cancelled or timed out, or this device has no passkey registered for that reviewer here.';
    if (name === 'InvalidStateError') return 'This device already has a passkey registered for this reviewer.';
    if (name === 'SecurityError') return 'This browser refused passkeys on this address: open the page at its public https:// (or http://localhost) URL.';
    return err && err.message ? err.message : String(err);
  }

  function webauthn() {
    if (typeof window.SimpleWebAuthnBrowser === 'undefined' || !window.PublicKeyCredential) {
      throw new Error('This browser cannot use passkeys here (a secure context is needed: https, or http://localhost).');
    }
    return window.SimpleWebAuthnBrowser;
  }

  function time() {
    return new Date().toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  }

  function listPage() {
    var list = byId('list');
    var status = byId('list-status');
    var last = list.innerHTML;
    function refresh() {
      fetch(base + '/partials/list', { cache: 'no-store', credentials: 'omit' }).then(function (res) {
        var count = res.headers.get('X-Airlock-Count');
        return res.text().then(function (text) {
          if (text !== last) {
            last = text;
            // The server's HTML, every value in it escaped.
            list.innerHTML = text;
          }
          status.textContent = (count === null || count === '' ? 'Not connected to Temporal' : count + ' waiting') + ' · updated ' + time();
        });
      }).catch(function () {
        status.textContent = 'The inbox server cannot be reached; trying again · ' + time();
      }).then(function () { setTimeout(refresh, REFRESH_MS); });
    }
    setTimeout(refresh, REFRESH_MS);
  }

  function cardPage() {
    var form = byId('decide');
    var jobId = form.getAttribute('data-job');
    var requestId = form.getAttribute('data-request');
    var reviewer = byId('reviewer');
    var reason = byId('reason');
    var result = byId('result');
    var approve = byId('approve');
    var deny = byId('deny');
    var edits = Array.prototype.slice.call(document.querySelectorAll('input.edit'));
    var decided = false;
    var busy = false;

    try { reviewer.value = localStorage.getItem(REVIEWER_KEY) || ''; } catch (e) { /* storage off */ }
    reviewer.addEventListener('change', function () {
      try { localStorage.setItem(REVIEWER_KEY, reviewer.value.trim()); } catch (e) { /* storage off */ }
    });
    form.addEventListener('submit', function (e) { e.preventDefault(); });

    function changed() {
      var out = {};
      edits.forEach(function (input) {
        if (input.value !== input.getAttribute('data-before')) out[input.getAttribute('data-field')] = input.value;
      });
      return out;
    }

    function preview() {
      var changes = changed();
      var fields = Object.keys(changes);
      var box = byId('edit-preview');
      if (box === null) return;
      var ul = byId('edit-changes');
      ul.textContent = '';
      edits.forEach(function (input) {
        var field = input.getAttribute('data-field');
        if (!(field in changes)) return;
        var li = document.createElement('li');
        li.textContent = field + ': ' + input.getAttribute('data-before') + ' → ' + changes[field];
        ul.appendChild(li);
      });
      box.hidden = fields.length === 0;
      approve.textContent = fields.length === 0 ? 'Approve' : 'Approve with edits';
    }
    edits.forEach(function (input) { input.addEventListener('input', preview); });

    function setBusy(on) {
      busy = on;
      approve.disabled = on || decided;
      deny.disabled = on || decided;
    }

    function outcomeLines(outcome, decision) {
      if (outcome.accepted === true) {
        var done = outcome.status === 'denied' ? 'Denied: the job took your decision and tells the model your reason.' : 'Approved: the job took your decision; the call runs once it is checked against the target as it is now.';
        var lines = [done];
        if (outcome.editedFingerprint) lines.push('Edited call, new fingerprint ' + outcome.editedFingerprint + '.');
        return ['accepted', lines];
      }
      if (outcome.accepted === 'queued') return ['queued', ['Sent, not yet taken: ' + outcome.reason]];
      return ['rejected', ['The job rejected this ' + decision + ' (' + outcome.code + '): ' + outcome.reason, 'Nothing ran. The rejection is in the audit log.']];
    }

    function decide(decision) {
      if (busy || decided) return;
      var name = reviewer.value.trim();
      if (name === '') {
        show(result, 'error', ['Enter your reviewer name first.']);
        reviewer.focus();
        return;
      }
      var why = reason.value.trim();
      if (decision === 'deny' && why === '') {
        show(result, 'error', ['Say why you deny it: the model is told your reason.']);
        reason.focus();
        return;
      }
      try { localStorage.setItem(REVIEWER_KEY, name); } catch (e) { /* storage off */ }
      var request = { jobId: jobId, requestId: requestId, decision: decision, reviewer: name };
      if (why !== '') request.reason = why;
      var args = changed();
      if (decision === 'approve' && Object.keys(args).length > 0) request.args = args;
      setBusy(true);
      show(result, 'working', ['Preparing the decision…']);
      postJson('/api/decision/options', request).then(function (prepared) {
        show(result, 'working', prepared.summary.concat(['Confirm with your passkey…']));
        return webauthn().startAuthentication({ optionsJSON: prepared.options }).catch(function (err) {
          throw new Error(passkeyError(err));
        }).then(function (response) {
          show(result, 'working', ['Sending the signed decision to the job…']);
          return postJson('/api/decision', { jobId: jobId, payload: prepared.payload, response: response });
        });
      }).then(function (outcome) {
        var shown = outcomeLines(outcome, decision);
        if (shown[0] === 'accepted' || shown[0] === 'queued') decided = true;
        show(result, shown[0], shown[1]);
      }).catch(function (err) {
        show(result, 'error', [err && err.message ? err.message : String(err)]);
      }).then(function () { setBusy(false); });
    }
    approve.addEventListener('click', function () { decide('approve'); });
    deny.addEventListener('click', function () { decide('deny'); });

    function watch() {
      fetch(base + '/api/jobs/' + encodeURIComponent(jobId) + '/requests/' + encodeURIComponent(requestId), { cache: 'no-store', credentials: 'omit' })
        .then(function (res) { return res.ok ? res.json() : null; })
        .then(function (state) {
          if (state && state.waiting === false && !decided && !busy) {
            decided = true;
            byId('gone').hidden = false;
            setBusy(false);
          }
        })
        .catch(function () { /* the next round tries again */ })
        .then(function () { if (!decided) setTimeout(watch, REFRESH_MS); });
    }
    setTimeout(watch, REFRESH_MS);
  }

  function registerPage() {
    var token = location.hash.slice(1);
    var intro = byId('register-for');
    var button = byId('register');
    var result = byId('result');
    if (token === '') {
      intro.textContent = 'This link has no registration token. Run airlock reviewer add NAME --passkey and open the link it prints.';
      return;
    }
    postJson('/api/register/options', { token: token }).then(function (prepared) {
      intro.textContent = 'Create a passkey for reviewer ' + prepared.reviewer + ' on this device. The link works once, until ' + new Date(prepared.expiresAt).toLocaleString() + '.';
      button.disabled = false;
      button.addEventListener('click', function () {
        button.disabled = true;
        show(result, 'working', ['Follow your device’s prompt…']);
        webauthn().startRegistration({ optionsJSON: prepared.options }).catch(function (err) {
          throw new Error(passkeyError(err));
        }).then(function (response) {
          return postJson('/api/register', { token: token, response: response });
        }).then(function (done) {
          history.replaceState(null, '', location.pathname);
          show(result, 'accepted', ['Passkey registered for ' + done.reviewer + '. Decisions you sign with it on this site are accepted by the jobs.']);
          var a = document.createElement('a');
          a.href = base + '/';
          a.textContent = 'See what is waiting';
          result.appendChild(a);
        }).catch(function (err) {
          button.disabled = false;
          show(result, 'error', [err && err.message ? err.message : String(err)]);
        });
      });
    }).catch(function (err) {
      intro.textContent = err && err.message ? err.message : String(err);
      intro.setAttribute('data-state', 'error');
    });
  }

  if (kind === 'list') listPage();
  else if (kind === 'card') cardPage();
  else if (kind === 'register') registerPage();
})();
`;
