#!/usr/bin/env python3
"""The review workbench end to end in the system Chromium, driven by Playwright over CDP.

Run by tests/it/review_workbench.rs, which seals a hostile inconclusive run and passes, in the
environment: SEAL_BIN, WB_DIR (a work folder holding seal.toml.in, the embedded config),
WB_STORE (file:// URL), WB_KEY (the daemon's seal key), WB_TRUST (its public key), WB_RUN,
WB_CHROMIUM, the judge settings `seal serve` loads, and optionally WB_SCREENS (a folder for
PNG screenshots). Prints WORKBENCH OK when every check held; any failure raises.
"""

import base64
import hashlib
import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from playwright.sync_api import sync_playwright

SEAL = os.environ["SEAL_BIN"]
WORK = pathlib.Path(os.environ["WB_DIR"])
STORE = os.environ["WB_STORE"]
KEY = os.environ["WB_KEY"]
TRUST = os.environ["WB_TRUST"]
RUN = os.environ["WB_RUN"]
CHROMIUM = os.environ["WB_CHROMIUM"]
SCREENS = os.environ.get("WB_SCREENS")
TOKEN = "wb-" + hashlib.sha256(os.urandom(16)).hexdigest()[:32]
REVIEWER = "ada"
REVIEWER_PUB = WORK / "reviewer.pub.pem"
WAIT_MS = 20_000
# The keys pressed for the obligations, in the page's order, and what each one means.
PRESSES = ["s", "f", "m", "s", "f"]
MEANS = {"s": "satisfied", "f": "failed", "m": "missing"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PORT = free_port()
BASE = f"http://127.0.0.1:{PORT}"


def write_config(trusted):
    """config/seal.toml in WORK: the embedded one, reviewers.trusted = `trusted`."""
    text = (WORK / "seal.toml.in").read_text()
    section = text.index("[reviewers]")
    head, tail = text[:section], text[section:]
    names = ", ".join(json.dumps(str(p)) for p in trusted)
    tail = tail.replace("trusted = []", f"trusted = [{names}]", 1)
    (WORK / "config").mkdir(exist_ok=True)
    (WORK / "config" / "seal.toml").write_text(head + tail)


class Daemon:
    """`seal serve` on PORT (fixed: the browser's key store is per origin)."""

    def __init__(self):
        env = dict(os.environ, SEAL_REVIEWER_TOKENS=f"{REVIEWER}:{TOKEN}")
        self.log = open(WORK / f"serve-{time.time_ns()}.log", "wb")
        self.proc = subprocess.Popen(
            [SEAL, "serve", "--listen", f"127.0.0.1:{PORT}", "--store", STORE, "--key", KEY],
            cwd=WORK, env=env, stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode()
        assert "listening on" in line, f"serve did not start: {line!r} {self.tail()}"
        # /livez, not /readyz: this daemon's judges are down on purpose (never called); a
        # review waits for the log admission by itself.
        for _ in range(100):
            try:
                with urllib.request.urlopen(BASE + "/livez", timeout=2) as r:
                    if r.status == 200:
                        return
            except urllib.error.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("serve never became ready " + self.tail())

    def tail(self):
        self.log.flush()
        return pathlib.Path(self.log.name).read_text(errors="replace")[-3000:]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def http(method, path, body=None, headers=None):
    """(status, headers, body) without following redirects."""
    req = urllib.request.Request(BASE + path, data=body, method=method, headers=headers or {})
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def refusals_without_a_browser():
    """No session, a wrong token, a cross-origin login: refused; /v1 tokens open nothing here."""
    status, headers, _ = http("GET", "/review/")
    assert status == 303 and headers.get("location") == "/review/login", (status, headers)
    status, _, body = http("POST", f"/review/api/runs/{RUN}/reviews", b"{}",
                           {"Content-Type": "application/json", "X-CSRF-Token": "x"})
    assert status == 401 and b"no_session" in body, (status, body)
    status, _, body = http("POST", "/review/login", b"token=not-the-token",
                           {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 401 and b"opens nothing" in body, (status, body)
    status, _, _ = http("POST", "/review/login", f"token={TOKEN}".encode(),
                        {"Content-Type": "application/x-www-form-urlencoded",
                         "Origin": "https://evil.example"})
    assert status == 403, status
    status, headers, _ = http("GET", "/review/static/workbench.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript"), headers


def shot(page, name, **kw):
    if SCREENS:
        pathlib.Path(SCREENS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(pathlib.Path(SCREENS) / name), **kw)


def login(page):
    page.goto(BASE + "/review/login")
    page.fill("#token", TOKEN)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    assert page.url == BASE + "/review/", (page.url, page.content()[:3000])
    cookie = [c for c in page.context.cookies() if c["name"] == "seal_review"]
    assert cookie and cookie[0]["httpOnly"] and cookie[0]["sameSite"] == "Strict", cookie


def check_queue(page):
    assert page.inner_text("#left") == "1", page.inner_text("#count")
    link = page.locator("#queue a.run")
    assert link.count() == 1 and link.first.inner_text() == RUN
    genres = [o for o in page.locator("select[name=genre] option").all_inner_texts() if o != "any"]
    assert genres, "no genre to filter by"
    page.goto(f"{BASE}/review/?genre=nonesuch")
    assert page.inner_text("#shown") == "0" and page.inner_text("#left") == "1"
    page.goto(f"{BASE}/review/?genre={genres[0]}&obligation=ui.text-readable")
    assert page.inner_text("#shown") == "1", page.inner_text("#count")
    shot(page, "queue.png", full_page=True)
    # Keyboard: j focuses the first run, Enter opens it.
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf".*/review/runs/{re.escape(RUN)}\?.*"), timeout=WAIT_MS)


def inert(page, dialogs, console):
    """The hostile game text is text: no dialog, the title as set, only our script."""
    page.wait_for_selector("body[data-ready=yes]", timeout=WAIT_MS)
    assert page.title() == f"seal review: {RUN}", page.title()
    assert not dialogs, dialogs
    scripts = page.eval_on_selector_all("script", "s => s.map(x => x.getAttribute('src'))")
    assert scripts == ["/review/static/workbench.js"], scripts
    assert page.locator("img[src=x]").count() == 0
    assert page.locator("[onerror], [onmouseover], [onfocus]").count() == 0
    body = page.inner_text("main")
    assert "<script>document.title='pwned'</script>" in body, "the script shown as text"
    assert "[U+202E]" in body and "[U+2067]" in body, "bidi controls shown as markers"
    assert "\u202e" not in page.content(), "a raw bidi override in the page"
    bad = [c for c in console if "Content Security Policy" in c or "Refused" in c]
    assert not bad, bad


def decide_by_keyboard(page, note):
    n = page.locator("#obligations li.ob").count()
    assert n == len(PRESSES), f"{n} obligations"
    page.locator("#obligations li.ob").first.focus()
    for k in PRESSES:
        page.keyboard.press(k)
    page.keyboard.press("n")
    page.keyboard.type(note)
    page.keyboard.press("Escape")
    ids = page.eval_on_selector_all("#obligations li.ob", "l => l.map(x => x.dataset.ob)")
    chosen = page.eval_on_selector_all(
        "#obligations li.ob", "l => l.map(x => (x.querySelector('input:checked') || {}).value)")
    assert chosen == [MEANS[k] for k in PRESSES], chosen
    return dict(zip(ids, chosen))


def csrf_is_checked(page):
    """A POST in the session with a wrong CSRF token, and one with none: 403."""
    for token in ["0" * 64, None]:
        status = page.evaluate(
            """async ([run, token]) => {
                 const h = {"Content-Type": "application/json"};
                 if (token) h["X-CSRF-Token"] = token;
                 const r = await fetch(`/review/api/runs/${run}/reviews`, {method: "POST", headers: h, body: "{}"});
                 return [r.status, (await r.json()).error.code];
               }""", [RUN, token])
        assert status == [403, "bad_csrf_token"], status


def untrusted_then_exported(page, dialogs, console):
    """First visit: a key made in the page, its review refused and said so; the key exported."""
    page.goto(f"{BASE}/review/runs/{RUN}")
    inert(page, dialogs, console)
    page.click("#gen-key")
    page.wait_for_function("() => document.getElementById('pub-pem').value.includes('BEGIN PUBLIC KEY')",
                           timeout=WAIT_MS)
    pem = page.input_value("#pub-pem")
    key_id = page.inner_text("#key-id")
    REVIEWER_PUB.write_text(pem)
    decide_by_keyboard(page, "first try")
    page.keyboard.press("Control+Enter")
    page.wait_for_function(
        "() => document.getElementById('status').textContent.includes('untrusted_reviewer')",
        timeout=WAIT_MS)
    assert "reviewers.trusted" in page.inner_text("#status")
    shot(page, "run-refused.png")
    csrf_is_checked(page)
    return key_id


def reviewed(page, key_id):
    """After the restart: the key still in the browser, decided by keyboard, signed, next page."""
    page.goto(f"{BASE}/review/runs/{RUN}?genre=&obligation=")
    if "/review/login" in page.url:
        login(page)
        page.goto(f"{BASE}/review/runs/{RUN}")
    page.wait_for_selector("body[data-ready=yes]", timeout=WAIT_MS)
    page.wait_for_function("() => document.getElementById('key-id').textContent.length === 64",
                           timeout=WAIT_MS)
    assert page.inner_text("#key-id") == key_id, "the key did not stay in IndexedDB"
    decisions = decide_by_keyboard(page, "checked <b>by keyboard</b> \u202e")
    shot(page, "run.png")
    if SCREENS:  # the decision tree up close (its boxes' labels)
        page.locator(".tree-wrap").first.screenshot(path=str(pathlib.Path(SCREENS) / "run-tree.png"))
    shot(page, "run-full.png", full_page=True)
    page.keyboard.press("Control+Enter")
    page.wait_for_url(BASE + "/review/", timeout=WAIT_MS)
    assert page.inner_text("#left") == "0", page.inner_text("#count")
    shot(page, "queue-empty.png")
    return decisions


def stats_page(page):
    page.goto(BASE + "/v1/stats")
    links = page.eval_on_selector_all("a[href^='/review/runs/']", "l => l.map(x => x.getAttribute('href'))")
    assert f"/review/runs/{RUN}" in links, links
    shot(page, "stats.png", full_page=True)
    if SCREENS:  # the confusion matrices up close (their headers against the row labels)
        page.locator(".maps").first.screenshot(path=str(pathlib.Path(SCREENS) / "stats-matrices.png"))


def browser_part():
    write_config([])
    daemon = Daemon()
    dialogs, console = [], []
    try:
        refusals_without_a_browser()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            page = context.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("console", lambda m: console.append(m.text))
            login(page)
            stats_page(page)
            page.goto(BASE + "/review/")
            check_queue(page)
            key_id = untrusted_then_exported(page, dialogs, console)
            # The operator adds the exported key to reviewers.trusted and restarts.
            daemon.stop()
            write_config([REVIEWER_PUB])
            daemon = Daemon()
            decisions = reviewed(page, key_id)
            assert not dialogs, dialogs
            browser.close()
        return decisions
    except Exception:
        print(daemon.tail(), file=sys.stderr)
        raise
    finally:
        daemon.stop()


def seal(*args):
    return subprocess.run([SEAL, *args], cwd=WORK, capture_output=True, text=True, timeout=120)


def verified_like_a_cli_review(decisions):
    root = pathlib.Path(STORE.removeprefix("file://"))
    stored = root / "runs" / RUN / "reviews" / "0.dsse.json"
    env = json.loads(stored.read_text())
    # seal verify: passes with the reviewer trusted, fails naming the review without.
    out = seal("verify", RUN, "--store", STORE, "--trust", TRUST, "--trust-reviewer", str(REVIEWER_PUB))
    assert out.returncode == 0, out.stdout + out.stderr
    # (the daemon's config in WORK trusts the reviewer: the embedded one does not)
    out = seal("--config", str(WORK / "seal.toml.in"), "verify", RUN, "--store", STORE, "--trust", TRUST)
    assert out.returncode == 1 and "review" in out.stdout + out.stderr, out.stdout + out.stderr
    # securesystemslib, under the exported key alone.
    from cryptography.hazmat.primitives.serialization import (Encoding, PublicFormat,
                                                              load_pem_public_key)
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import SSlibKey
    public = load_pem_public_key(REVIEWER_PUB.read_bytes())
    raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    key = SSlibKey.from_crypto(public, keyid=hashlib.sha256(raw).hexdigest())
    envelope = Envelope.from_dict(json.loads(stored.read_text()))  # from_dict takes the dict apart
    envelope.verify([key], 1)
    statement = json.loads(envelope.payload)
    p = statement["predicate"]
    assert p["reviewer"] == REVIEWER and p["reviewIndex"] == 0, p
    assert {d["obligationId"]: d["status"] for d in p["decisions"]} == decisions, p
    # OpenSSL: the signature over the DSSE PAE of the payload.
    payload = base64.b64decode(env["payload"])
    ptype = env["payloadType"].encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
    with tempfile.TemporaryDirectory() as t:
        t = pathlib.Path(t)
        (t / "pae").write_bytes(pae)
        (t / "sig").write_bytes(base64.b64decode(env["signatures"][0]["sig"]))
        out = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", str(REVIEWER_PUB),
                              "-rawin", "-in", str(t / "pae"), "-sigfile", str(t / "sig")],
                             capture_output=True, text=True)
        assert out.returncode == 0 and "Success" in out.stdout, out.stdout + out.stderr
    # Off the queue, and in the labels.
    out = seal("stats", "--store", STORE, "--trust", TRUST, "--trust-reviewer", str(REVIEWER_PUB), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["reviewQueue"] == [], out.stdout[:400]
    labels = WORK / "labels.jsonl"
    out = seal("export", "labels", "--store", STORE, "--trust", TRUST,
               "--trust-reviewer", str(REVIEWER_PUB), "--out", str(labels))
    assert out.returncode == 0, out.stderr
    human = {}
    for line in labels.read_text().splitlines():
        row = json.loads(line)
        if row["runId"] == RUN:
            human[row["obligationId"]] = row["human"]
    assert human == decisions, human


def main():
    started = time.monotonic()
    decisions = browser_part()
    verified_like_a_cli_review(decisions)
    print(f"WORKBENCH OK in {time.monotonic() - started:.1f}s: {json.dumps(decisions)}")


if __name__ == "__main__":
    main()
