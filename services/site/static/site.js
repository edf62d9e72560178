// Site forms: each form[data-site-form] is posted URL-encoded with fetch; the result (or the RFC 9457
// problem's message and hint) is shown in its <output data-result>. The counter fills [data-counter].

async function postForm(form) {
  const out = form.querySelector('[data-result]');
  const button = form.querySelector('button[type="submit"]');
  out.className = '';
  out.textContent = 'Sending…';
  if (button) button.disabled = true;
  try {
    const res = await fetch(form.getAttribute('action'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(new FormData(form)),
    });
    const body = await res.json().catch(() => ({}));
    if (res.ok) {
      out.className = 'ok';
      out.textContent = body.message || 'Done.';
      form.dispatchEvent(new CustomEvent('site:submitted', { detail: body }));
      if (form.hasAttribute('data-unlock') && body.articleUrl) window.location.assign(body.articleUrl);
      return body;
    }
    out.className = 'error';
    const err = body.error || {};
    out.dataset.status = String(res.status);
    out.textContent =
      res.status === 429
        ? `Too many submissions — ${err.hint || 'try again later'} (retry after ${res.headers.get('retry-after')} s)`
        : `${err.message || body.detail || 'The form was not sent.'}${err.hint ? ` ${err.hint}` : ''}`;
  } catch {
    out.className = 'error';
    out.textContent = 'The site could not be reached; try again.';
  } finally {
    if (button) button.disabled = false;
  }
  return null;
}
window.sitePostForm = postForm;

document.addEventListener('submit', (ev) => {
  const form = ev.target;
  if (!(form instanceof HTMLFormElement) || !form.hasAttribute('data-site-form')) return;
  ev.preventDefault();
  postForm(form);
});

// the correction form sends the integration's name with its slug
document.addEventListener('change', (ev) => {
  const sel = ev.target;
  if (sel instanceof HTMLSelectElement && sel.hasAttribute('data-names')) {
    const hidden = sel.form.querySelector('input[name="integration_name"]');
    hidden.value = sel.options[sel.selectedIndex].text;
  }
});

async function loadCounter() {
  const els = document.querySelectorAll('[data-counter]');
  if (els.length === 0) return;
  try {
    const res = await fetch('/api/searches-served');
    if (!res.ok) return;
    const { label } = await res.json();
    for (const el of els) el.textContent = label;
  } catch {}
}
document.addEventListener('DOMContentLoaded', loadCounter);
