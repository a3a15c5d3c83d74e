// The seal review workbench's only script (served from /review/static/, embedded in the
// binary; the pages' CSP runs nothing else). It holds the reviewer's Ed25519 key (WebCrypto,
// non-extractable, kept in IndexedDB), checks the statement the daemon offers against what
// the reviewer chose, signs its DSSE PAE, and posts the envelope. Text from the daemon is only
// ever set with textContent, never parsed as HTML.
"use strict";

const PAYLOAD_TYPE = "application/vnd.in-toto+json";
const STATEMENT_TYPE = "https://in-toto.io/Statement/v1";
const PREDICATE_TYPE = "https://wanxiang.ai/seal/review/v1";
const DB = "seal-review";
const STORE = "keys";
const SLOT = "reviewer";

// ---------- small helpers ----------
const $ = (id) => document.getElementById(id);
const enc = new TextEncoder();

function csrf() {
  const m = document.querySelector('meta[name="csrf-token"]');
  return m ? m.content : "";
}

function b64(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function unb64(text) {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function hex(buf) {
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function pem(label, der) {
  const body = b64(new Uint8Array(der)).replace(/.{1,64}/g, "$&\n");
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

function unpem(text) {
  const body = text.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "");
  return unb64(body);
}

function say(text, kind) {
  const s = $("status");
  if (!s) return;
  s.textContent = text;
  s.className = kind || "";
  // The panel scrolls: what happened to a submission must be in view.
  s.scrollIntoView({ block: "nearest" });
}

// ---------- DSSE and canonical JSON ----------

// DSSE pre-authentication encoding: "DSSEv1" SP len(type) SP type SP len(payload) SP payload,
// lengths in bytes (as seal_core::sealing::pae).
function pae(type, payload) {
  const t = enc.encode(type);
  return concat(enc.encode(`DSSEv1 ${t.length} `), t, enc.encode(` ${payload.length} `), payload);
}

// RFC 8785 for what a review statement holds (strings, integers, null, arrays, objects):
// keys sorted by UTF-16 code units, strings as ECMAScript's JSON.stringify writes them.
function canonical(v) {
  if (v === null || typeof v === "string" || typeof v === "boolean") return JSON.stringify(v);
  if (typeof v === "number") {
    if (!Number.isSafeInteger(v)) throw new Error("a number that is not a safe integer");
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  const keys = Object.keys(v).sort();
  return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
}

// ---------- the key, in IndexedDB ----------

function db() {
  return new Promise((resolve, reject) => {
    const r = indexedDB.open(DB, 1);
    r.onupgradeneeded = () => r.result.createObjectStore(STORE);
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

async function loadKey() {
  const d = await db();
  return new Promise((resolve, reject) => {
    const r = d.transaction(STORE).objectStore(STORE).get(SLOT);
    r.onsuccess = () => resolve(r.result || null);
    r.onerror = () => reject(r.error);
  });
}

async function saveKey(pair) {
  const d = await db();
  return new Promise((resolve, reject) => {
    const t = d.transaction(STORE, "readwrite");
    t.objectStore(STORE).put({ privateKey: pair.privateKey, publicKey: pair.publicKey }, SLOT);
    t.oncomplete = () => resolve();
    t.onerror = () => reject(t.error);
  });
}

// The key id seal uses: lowercase hex sha256 of the raw 32-byte public key.
async function keyId(publicKey) {
  const raw = await crypto.subtle.exportKey("raw", publicKey);
  return hex(await crypto.subtle.digest("SHA-256", raw));
}

async function showKey(pair) {
  const state = $("key-state");
  if (!state) return;
  if (!pair) {
    state.textContent = "No key in this browser yet: generate one (or import yours) to sign.";
    $("pub-box").hidden = true;
    return;
  }
  const spki = await crypto.subtle.exportKey("spki", pair.publicKey);
  $("key-id").textContent = await keyId(pair.publicKey);
  $("pub-pem").value = pem("PUBLIC KEY", spki);
  $("pub-box").hidden = false;
  state.textContent = "This browser holds your Ed25519 key (it cannot be read out of it).";
}

async function generate() {
  if ((await loadKey()) && !confirm("Replace the key this browser holds? Reviews it signed stay valid only while its public key stays trusted.")) return;
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, false, ["sign", "verify"]);
  await saveKey(pair);
  await showKey(pair);
}

// A PKCS#8 PEM (what `seal keygen` writes): read once as extractable to learn its public half,
// then kept non-extractable.
async function importPem(text) {
  const der = unpem(text);
  const tmp = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, true, ["sign"]);
  const jwk = await crypto.subtle.exportKey("jwk", tmp);
  const privateKey = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, false, ["sign"]);
  const publicKey = await crypto.subtle.importKey(
    "jwk", { kty: "OKP", crv: "Ed25519", x: jwk.x }, { name: "Ed25519" }, true, ["verify"]);
  const pair = { privateKey, publicKey };
  await saveKey(pair);
  await showKey(pair);
}

// ---------- the decision form ----------

function rows() {
  return Array.from(document.querySelectorAll("#obligations li.ob"));
}

function chosen() {
  const out = {};
  for (const li of rows()) {
    const r = li.querySelector("input[type=radio]:checked");
    if (r) out[li.dataset.ob] = r.value;
  }
  return out;
}

function focusRow(i) {
  const all = rows();
  if (all.length === 0) return;
  const at = Math.max(0, Math.min(all.length - 1, i));
  all[at].focus();
}

function currentRow() {
  return rows().indexOf(document.activeElement.closest ? document.activeElement.closest("li.ob") : null);
}

function decide(status) {
  const all = rows();
  let i = currentRow();
  if (i < 0) i = all.findIndex((li) => !li.querySelector("input:checked"));
  if (i < 0) return;
  const r = all[i].querySelector(`input[value="${status}"]`);
  if (r) r.checked = true;
  all[i].classList.add("decided");
  focusRow(i + 1 < all.length ? i + 1 : i);
}

// Every field of the offered statement against the page: the bytes signed are the canonical
// bytes of exactly what the reviewer chose, about this run's evidence and seal.
function check(payload, form, decisions, note) {
  const text = new TextDecoder("utf-8", { fatal: true }).decode(payload);
  const st = JSON.parse(text);
  if (canonical(st) !== text) throw new Error("the statement is not canonical JSON");
  const run = form.dataset.run;
  const p = st.predicate || {};
  const want = (ok, what) => {
    if (!ok) throw new Error(`the statement offered does not match the page: ${what}`);
  };
  want(st._type === STATEMENT_TYPE, "_type");
  want(st.predicateType === PREDICATE_TYPE, "predicateType");
  want(Array.isArray(st.subject) && st.subject.length === 2, "subjects");
  want(st.subject[0].name === `runs/${run}/evidence.json` && st.subject[0].digest.sha256 === form.dataset.evidence, "evidence subject");
  want(st.subject[1].name === `runs/${run}/seal.dsse.json` && st.subject[1].digest.sha256 === form.dataset.seal, "seal subject");
  want(p.schemaVersion === "seal.review/1", "schemaVersion");
  want(p.runId === run, "runId");
  want(p.reviewer === form.dataset.reviewer, "reviewer");
  want(p.shownSha256 === form.dataset.shown, "shownSha256");
  want((p.note === null && note === "") || p.note === note, "note");
  const got = {};
  for (const d of p.decisions || []) got[d.obligationId] = d.status;
  want(canonical(got) === canonical(decisions), "decisions");
  return st;
}

async function post(url, body, type) {
  const r = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": type, "X-CSRF-Token": csrf() },
    body,
  });
  let json = null;
  try {
    json = await r.json();
  } catch (_) {
    json = null;
  }
  return { status: r.status, json };
}

function refusal(res) {
  const e = (res.json && res.json.error) || {};
  const code = e.code || `HTTP ${res.status}`;
  let hint = "";
  if (code === "untrusted_reviewer") hint = " — your public key (above) is not in the daemon's reviewers.trusted: give it to an operator, then submit again.";
  return `Refused (${code}): ${e.message || ""}${hint}`;
}

let busy = false;

async function submit(ev) {
  if (ev) ev.preventDefault();
  if (busy) return;
  const form = $("decide");
  const decisions = chosen();
  const note = $("note").value;
  if (Object.keys(decisions).length === 0) {
    say("Decide at least one obligation first.", "bad");
    return;
  }
  const pair = await loadKey();
  if (!pair) {
    say("No signing key in this browser: generate or import one first.", "bad");
    return;
  }
  busy = true;
  try {
    say("Asking for the statement…");
    const run = encodeURIComponent(form.dataset.run);
    const draft = await post(`/review/api/runs/${run}/statement`,
      JSON.stringify({ shown: form.dataset.shown, decisions, note: note === "" ? null : note }),
      "application/json");
    if (draft.status !== 200) {
      say(refusal(draft), "bad");
      return;
    }
    const payload = unb64(draft.json.payload);
    check(payload, form, decisions, note);
    const sig = await crypto.subtle.sign({ name: "Ed25519" }, pair.privateKey, pae(PAYLOAD_TYPE, payload));
    const envelope = {
      payload: draft.json.payload,
      payloadType: PAYLOAD_TYPE,
      signatures: [{ keyid: await keyId(pair.publicKey), sig: b64(new Uint8Array(sig)) }],
    };
    say("Signed; submitting…");
    const done = await post(`/review/api/runs/${run}/reviews${form.dataset.back}`, JSON.stringify(envelope), "application/json");
    if (done.status === 201 || done.status === 200) {
      say(`Review ${done.json.reviewIndex} stored (log leaf ${done.json.leafIndex}). Next…`, "good");
      document.body.dataset.submitted = "yes";
      window.location.assign(done.json.next);
    } else {
      say(refusal(done), "bad");
    }
  } catch (e) {
    say(`Not submitted: ${e.message}`, "bad");
  } finally {
    busy = false;
  }
}

// ---------- keyboard ----------

function typing(el) {
  return el && (el.tagName === "TEXTAREA" || (el.tagName === "INPUT" && el.type !== "radio") || el.tagName === "SELECT");
}

function onKey(e) {
  const form = $("decide");
  if (form && (e.ctrlKey || e.metaKey) && e.key === "Enter") {
    submit(e);
    return;
  }
  if (typing(document.activeElement)) {
    if (e.key === "Escape") document.activeElement.blur();
    return;
  }
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (form) {
    const i = currentRow();
    const k = e.key;
    if (k === "j" || k === "ArrowDown") focusRow(i + 1);
    else if (k === "k" || k === "ArrowUp") focusRow(i < 0 ? 0 : i - 1);
    else if (k === "s") decide("satisfied");
    else if (k === "f") decide("failed");
    else if (k === "m") decide("missing");
    else if (k === "n") $("note").focus();
    else if (k === "?") $("shortcuts").open = !$("shortcuts").open;
    else return;
    e.preventDefault();
    return;
  }
  queueKey(e);
}

// On the queue: j/k move between runs, Enter opens the one focused.
function queueKey(e) {
  const links = Array.from(document.querySelectorAll("#queue a.run"));
  if (links.length === 0) return;
  const i = links.indexOf(document.activeElement);
  if (e.key === "j") links[Math.min(links.length - 1, i + 1)].focus();
  else if (e.key === "k") links[Math.max(0, i - 1)].focus();
  else return;
  e.preventDefault();
}

async function logout() {
  await post("/review/logout", "", "text/plain");
  window.location.assign("/review/login");
}

// ---------- start ----------

document.addEventListener("DOMContentLoaded", async () => {
  document.addEventListener("keydown", onKey);
  const out = $("logout");
  if (out) out.addEventListener("click", logout);
  const form = $("decide");
  if (!form) return;
  form.addEventListener("submit", submit);
  $("gen-key").addEventListener("click", () => generate().catch((e) => say(`No key: ${e.message}`, "bad")));
  $("import-key").addEventListener("click", () => {
    const area = $("import-pem");
    if (area.hidden) {
      area.hidden = false;
      area.focus();
      return;
    }
    importPem(area.value).then(() => { area.value = ""; area.hidden = true; })
      .catch((e) => say(`Not imported: ${e.message}`, "bad"));
  });
  for (const li of rows()) {
    li.addEventListener("change", () => li.classList.add("decided"));
  }
  if (!window.crypto || !crypto.subtle) {
    say("This browser offers no WebCrypto here (a secure context is needed: https, or localhost).", "bad");
    return;
  }
  try {
    await showKey(await loadKey());
  } catch (e) {
    say(`The key store of this browser is unavailable: ${e.message}`, "bad");
  }
  focusRow(0);
  document.body.dataset.ready = "yes";
});
