// Signing in. The server says how (GET /v1/auth/methods): by name where it signs people in
// itself, or with Firebase where a project is configured. Firebase is spoken to through its
// REST services (Identity Toolkit and Secure Token), whose addresses the server gives, so
// there is no SDK to download and the tests run it against an offline twin; the server
// then verifies the ID token like any other (docs/webapp.md#firebase-sign-in).

import { api, session, setRefresher } from "./api.js";
import { clear, notice } from "./notices.js";

const $ = (id) => document.getElementById(id);
const FIREBASE_KEY = "avagenc.firebase"; // {refresh, expiresAt} beside the ID token
const IDP_KEY = "avagenc.idp"; // the Google round trip's sessionId, across the redirect
const REFRESH_MARGIN_MS = 5 * 60 * 1000; // a token this close to expiring is renewed first
const CALLBACK = "/sign-in/callback";

// Firebase's error codes, said as sentences a person can act on.
const SAID = {
  INVALID_LOGIN_CREDENTIALS: "That email and password do not match an account.",
  EMAIL_NOT_FOUND: "That email and password do not match an account.",
  INVALID_PASSWORD: "That email and password do not match an account.",
  EMAIL_EXISTS: "An account with that email exists already: sign in instead.",
  WEAK_PASSWORD: "The password needs at least 6 characters.",
  INVALID_EMAIL: "That is not an email address.",
  TOO_MANY_ATTEMPTS_TRY_LATER: "Too many attempts: wait a little, then try again.",
  USER_DISABLED: "This account has been disabled.",
};

class FirebaseRefused extends Error {}

let config = null; // the server's Firebase settings, when it signs people in with Firebase
let refreshing = null;

async function firebaseCall(base, path, body) {
  let response;
  try {
    response = await fetch(`${base}${path}?key=${encodeURIComponent(config.api_key)}`, {
      method: "POST",
      headers: body instanceof URLSearchParams ? {} : { "Content-Type": "application/json" },
      body: body instanceof URLSearchParams ? body : JSON.stringify(body),
    });
  } catch {
    throw new FirebaseRefused("Firebase's sign-in service could not be reached.");
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const code = String(data.error?.message || response.status).split(" ")[0];
    throw new FirebaseRefused(SAID[code] || `Firebase refused: ${data.error?.message || response.status}.`);
  }
  return data;
}

function keep(idToken, refreshToken, expiresInS) {
  session.token = idToken;
  const expiresAt = Date.now() + Number(expiresInS) * 1000;
  localStorage.setItem(FIREBASE_KEY, JSON.stringify({ refresh: refreshToken, expiresAt }));
}

// Before a request: an ID token about to expire is exchanged for a new one. One exchange
// at a time; a refused refresh token means signing in again.
async function fresh() {
  const kept = JSON.parse(localStorage.getItem(FIREBASE_KEY) || "null");
  if (!kept || !session.token || kept.expiresAt - Date.now() > REFRESH_MARGIN_MS) return;
  refreshing ??= (async () => {
    try {
      const params = new URLSearchParams({ grant_type: "refresh_token", refresh_token: kept.refresh });
      const data = await firebaseCall(config.token_url, "/v1/token", params);
      keep(data.id_token, data.refresh_token, data.expires_in);
    } catch (error) {
      if (error instanceof FirebaseRefused && !error.message.includes("reached")) {
        localStorage.removeItem(FIREBASE_KEY);
      }
    } finally {
      refreshing = null;
    }
  })();
  await refreshing;
}

async function signedIn(start, idToken, refreshToken, expiresInS) {
  keep(idToken, refreshToken, expiresInS);
  clear("signin");
  await start(await api("GET", "/v1/me"));
}

function failed(error) {
  notice("signin", `Could not sign in: ${error.message}`);
}

function showFirebase(start) {
  $("firebase-signin").hidden = false;
  performance.mark("avagenc:signin-ready");
  // Without the web API key Firebase answers nothing: the card says why there is no form
  // (a fact for the server's operator, not an error the person made).
  if (!config.api_key) {
    $("firebase-password").hidden = true;
    $("google").hidden = true;
    $("firebase-unavailable").hidden = false;
    return;
  }
  const providers = new Set(config.providers);
  $("firebase-password").hidden = !providers.has("password");
  $("google").hidden = !providers.has("google.com");
  // Google alone is the one way in: a main button, not the quiet alternative.
  $("google").classList.toggle("quiet", providers.has("password"));
  $("firebase-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const data = await firebaseCall(config.auth_url, "/v1/accounts:signInWithPassword", {
        email: $("email").value.trim(),
        password: $("password").value,
        returnSecureToken: true,
      });
      await signedIn(start, data.idToken, data.refreshToken, data.expiresIn);
    } catch (error) {
      failed(error);
    }
  });
  $("signup-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const made = await firebaseCall(config.auth_url, "/v1/accounts:signUp", {
        email: $("signup-email").value.trim(),
        password: $("signup-password").value,
        returnSecureToken: true,
      });
      // The name goes on the account, and a token carrying it is issued in the same call.
      const named = await firebaseCall(config.auth_url, "/v1/accounts:update", {
        idToken: made.idToken,
        displayName: $("signup-name").value.trim(),
        returnSecureToken: true,
      });
      await signedIn(start, named.idToken, named.refreshToken, named.expiresIn);
    } catch (error) {
      failed(error);
    }
  });
  $("google").addEventListener("click", async () => {
    try {
      const data = await firebaseCall(config.auth_url, "/v1/accounts:createAuthUri", {
        providerId: "google.com",
        continueUri: `${location.origin}${CALLBACK}`,
      });
      sessionStorage.setItem(IDP_KEY, data.sessionId);
      location.assign(data.authUri);
    } catch (error) {
      failed(error);
    }
  });
}

// Back from Google: Firebase is handed the whole answer (the page's address) with the
// session it began, and answers with the ID token.
async function finishGoogle(start) {
  const requestUri = location.href;
  const declined = new URLSearchParams(location.search).has("error");
  history.replaceState(null, "", "/");
  const sessionId = sessionStorage.getItem(IDP_KEY);
  sessionStorage.removeItem(IDP_KEY);
  if (!sessionId || declined) {
    notice("signin", "Signing in with Google was cancelled.");
    return;
  }
  try {
    const data = await firebaseCall(config.auth_url, "/v1/accounts:signInWithIdp", {
      requestUri,
      sessionId,
      returnSecureToken: true,
    });
    await signedIn(start, data.idToken, data.refreshToken, data.expiresIn);
  } catch (error) {
    failed(error);
  }
}

function showLocal(start) {
  $("signin-form").hidden = false; // shown only once it can be answered
  performance.mark("avagenc:signin-ready"); // read by the speed figures
  $("signin-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const data = await api("POST", "/v1/auth/local", { name: $("name").value.trim() });
      session.token = data.token;
      clear("signin");
      await start(data.user);
    } catch (error) {
      failed(error);
    }
  });
}

// Shows the sign-in the server offers (local by name when it cannot say; neither form is
// shown before, so nothing typed early goes unanswered), keeps a Firebase
// token fresh, and finishes a Google sign-in the browser came back from.
export async function prepareSignIn(start) {
  const methods = await api("GET", "/v1/auth/methods").catch(() => ({ local: true, firebase: null }));
  config = methods.firebase;
  if (!config) {
    localStorage.removeItem(FIREBASE_KEY);
    showLocal(start);
    return;
  }
  setRefresher(fresh);
  showFirebase(start);
  if (location.pathname === CALLBACK) await finishGoogle(start);
}

// Signing out ends the session on the server too, and forgets Firebase's refresh token.
export async function signOut() {
  if (session.token) await api("POST", "/v1/auth/sign-out").catch(() => {});
  localStorage.removeItem(FIREBASE_KEY);
  session.token = null;
}
