// The one door to the server: JSON in and out, the bearer token, the person's time zone,
// and every error as a Problem carrying the API's stable `type` (docs/http.md#errors).

const TOKEN_KEY = "avagenc.token";

export class Problem extends Error {
  constructor(status, body) {
    super(body.detail || body.title || `The server answered ${status}.`);
    this.status = status;
    this.type = body.type || "unknown";
  }
}

// Thrown when the server could not be reached at all: the request may or may not have
// arrived, so whatever sent it must reconcile before trying again.
export class Unreachable extends Error {}

export const session = {
  get token() {
    return localStorage.getItem(TOKEN_KEY);
  },
  set token(value) {
    if (value) localStorage.setItem(TOKEN_KEY, value);
    else localStorage.removeItem(TOKEN_KEY);
  },
};

// Set where tokens expire and can be renewed (Firebase's, signin.js): run before a request.
let refresher = null;
export function setRefresher(renew) {
  refresher = renew;
}

// A token good for the next request (the live stream's address carries one too).
export async function freshToken() {
  if (refresher) await refresher();
  return session.token;
}

export async function api(method, path, body) {
  if (refresher) await refresher();
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (session.token) headers.Authorization = `Bearer ${session.token}`;
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone && zone !== "Etc/Unknown") headers["Time-Zone"] = zone;
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    throw new Unreachable(`The server could not be reached (${error.message}).`);
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const problem = new Problem(response.status, data);
    if (response.status === 401 && path !== "/v1/auth/local" && path !== "/v1/auth/sign-out") {
      document.dispatchEvent(new CustomEvent("signed-out"));
    }
    throw problem;
  }
  return data;
}

// Emotion tags (#happy#) belong to the voice; they never reach the screen as text.
export function withoutTags(text) {
  return text.replace(/#[a-z_]+#/gi, "").replace(/[ \t]{2,}/g, " ").trim();
}

export function emotionWord(emotion) {
  return emotion.replaceAll("#", "").replaceAll("_", " ");
}

export function rupiah(micros) {
  const whole = micros / 1_000_000;
  return `Rp ${whole.toLocaleString("id-ID", { maximumFractionDigits: 2 })}`;
}

export function when(iso) {
  return new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-") || key.startsWith("aria-") || key === "role") node.setAttribute(key, value);
    else node[key] = value;
  }
  node.append(...children);
  return node;
}
