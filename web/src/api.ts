// The credential the login page asks for, and every API call made with it.
// The credential lives in sessionStorage (this tab only, gone when it closes) until "forget".

export type Credential = { kind: "basic"; user: string; secret: string } | { kind: "bearer"; token: string };

const KEY = "fjord.credential";

export function loadCredential(): Credential | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Credential) : null;
  } catch {
    return null;
  }
}

export function saveCredential(c: Credential): void {
  sessionStorage.setItem(KEY, JSON.stringify(c));
}

export function forgetCredential(): void {
  sessionStorage.removeItem(KEY);
}

export function authHeader(c: Credential): string {
  if (c.kind === "bearer") return `Bearer ${c.token}`;
  const bytes = new TextEncoder().encode(`${c.user}:${c.secret}`);
  let bin = "";
  bytes.forEach((b) => (bin += String.fromCharCode(b)));
  return `Basic ${btoa(bin)}`;
}

export class ApiError extends Error {
  /** status 0: no answer at all (the server is stopped or the network is down) */
  constructor(public status: number, message: string, public path?: string) {
    super(message);
  }
}

/** fetch, with "no answer" as an ApiError of status 0 that says so (the browser's own words,
 * "Failed to fetch", tell a user nothing). */
async function send(path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(path, init);
  } catch {
    throw new ApiError(0, "The server did not answer: fjord may be stopped or restarting, or the network is down.", path);
  }
}

/** Called on a 401: the page goes back to the login form, saying why. */
let onUnauthorized: (why: string) => void = () => {};
export function setUnauthorizedHandler(fn: (why: string) => void): void {
  onUnauthorized = fn;
}

const REFUSED = "The server no longer accepts the credential this tab held (it was revoked or its secret changed): sign in again.";

async function call(path: string, accept: string, cred?: Credential): Promise<Response> {
  const c = cred ?? loadCredential();
  const headers: Record<string, string> = {
    Accept: accept,
    // Asks the server to leave out its Basic challenge on a 401, so the browser does not pop up its
    // own login dialog over the page's.
    "X-Requested-With": "fetch",
  };
  if (c) headers.Authorization = authHeader(c);
  const r = await send(path, { headers, credentials: "omit", cache: "no-store" });
  if (!r.ok) {
    let msg = `${r.status} ${r.statusText}`;
    let where: string | undefined;
    try {
      const e = (await r.json()).error;
      if (e) {
        msg = e.message;
        where = e.path;
      }
    } catch {
      /* not JSON */
    }
    if (r.status === 401 && !cred) onUnauthorized(REFUSED);
    throw new ApiError(r.status, msg, where);
  }
  return r;
}

/** GET a JSON answer of the API (path with its query string). */
export async function getJson<T = any>(path: string, cred?: Credential): Promise<T> {
  return (await call(path, "application/json", cred)).json();
}

/** GET a text answer (the topology's SVG, CSV). */
export async function getText(path: string, accept = "*/*"): Promise<string> {
  return (await call(path, accept)).text();
}

/** POST a JSON body (cc-metric-store's /api/query takes its request so). */
export async function postJson<T = any>(path: string, body: unknown): Promise<T> {
  const c = loadCredential();
  const headers: Record<string, string> = { "Content-Type": "application/json", Accept: "application/json",
    "X-Requested-With": "fetch" };
  if (c) headers.Authorization = authHeader(c);
  const r = await send(path, { method: "POST", headers, body: JSON.stringify(body), credentials: "omit" });
  const j = await r.json().catch(() => ({}));
  if (!r.ok) {
    if (r.status === 401) onUnauthorized(REFUSED);
    throw new ApiError(r.status, j?.error?.message ?? `${r.status}`, j?.error?.path);
  }
  return j as T;
}

/** Saves an API answer as a file (CSV download): fetched with the credential, handed over as a blob. */
export async function download(path: string, filename: string): Promise<void> {
  const blob = await (await call(path, "text/csv")).blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
