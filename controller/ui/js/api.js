// The API client. The token lives in this module's memory only: never in the URL, never in storage;
// reloading the page signs the operator out. Requests carry it as a bearer header (no cookies, so no
// cross-site request can borrow it).

let token = null;
let role = null;

/** An API error with the server's JSON error shape. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || body?.error || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** Signs in: checks the token with /whoami and keeps it. */
export async function login(t) {
  token = t;
  try {
    role = (await get('/whoami')).role;
  } catch (e) {
    token = null;
    throw e;
  }
  return role;
}

/** Forgets the token. */
export function logout() { token = null; role = null; }

/** Whether a token is held. */
export function signedIn() { return token !== null; }

/** `admin` or `read_only`. */
export function currentRole() { return role; }

/** Whether the token may change things. */
export function canAct() { return role === 'admin'; }

/** Calls the API; answers parsed JSON (or text), and the response headers. */
export async function request(method, path, body, opts = {}) {
  const headers = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`/api/v1${path}`, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit', cache: 'no-store', signal: opts.signal,
  });
  const text = await res.text();
  let data = text;
  try { data = text ? JSON.parse(text) : null; } catch (_) { /* not JSON */ }
  if (!res.ok) throw new ApiError(res.status, data);
  return opts.withHeaders ? { data, headers: res.headers } : data;
}

export const get = (p, o) => request('GET', p, undefined, o);
export const post = (p, b) => request('POST', p, b);
export const put = (p, b) => request('PUT', p, b);

/** A query string from an object, leaving out empty values. */
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  const s = u.toString();
  return s ? `?${s}` : '';
}

/**
 * Follows a Server-Sent Events stream with the bearer header (EventSource cannot send one), calling
 * onEvent(kind, data, id) for each event; resumes with Last-Event-ID after a dropped connection until
 * the stream ends normally or stop() is called. Answers { stop }.
 */
export function stream(path, onEvent, onEnd) {
  const ctl = new AbortController();
  let last = null;
  let stopped = false;
  (async () => {
    for (let tries = 0; !stopped && tries < 20; tries++) {
      try {
        const headers = { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' };
        if (last !== null) headers['Last-Event-ID'] = last;
        const res = await fetch(`/api/v1${path}`, { headers, signal: ctl.signal, credentials: 'omit', cache: 'no-store' });
        if (!res.ok) throw new ApiError(res.status, null);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) { stopped = true; break; }
          buf += value;
          let cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            let kind = 'message', data = '', id = null;
            for (const line of block.split('\n')) {
              if (line.startsWith('event:')) kind = line.slice(6).trim();
              else if (line.startsWith('data:')) data += line.slice(5).trimStart();
              else if (line.startsWith('id:')) id = line.slice(3).trim();
            }
            if (id !== null) last = id;
            if (!data) continue;
            let parsed = data;
            try { parsed = JSON.parse(data); } catch (_) { /* text */ }
            onEvent(kind, parsed, id);
          }
        }
      } catch (e) {
        if (stopped || ctl.signal.aborted) break;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    if (onEnd) onEnd();
  })();
  return { stop() { stopped = true; ctl.abort(); } };
}
