//! Crash points, continued: committed attempts resumed only through their MAC'd meta, and what a store writer plants in the crash window.

use super::crash_points::*;
use crate::common;
use common::*;
use std::path::Path;

// ---------------------------------------------------------------------------------------------
// A committed attempt is resumed only through its MAC'd meta and the answer it names: bytes a
// store writer plants in the crash window (between `meta.json` and the `raw.json` copy) are
// never judged or sealed.

/// What the writer does in the window after roll 1's judge A committed attempt 1.
#[derive(Clone, Copy, Debug)]
enum Plant {
    /// Nothing: the restart copies `raw.json` from `cas/` and seals.
    Nothing,
    /// Writes its own `raw.json` (a well-formed answer, every obligation satisfied).
    Raw,
    /// Rewrites the answer's bytes in `cas/` under the hash the meta names.
    Cas,
    /// Replaces `meta.json` with one that names its own answer (stored in `cas/`), MAC kept.
    Meta,
}

/// Replaces a stored file's bytes the way a writer with folder access does (unlink, create).
fn replace_file(path: &Path, bytes: &[u8]) {
    std::fs::remove_file(path).unwrap();
    std::fs::write(path, bytes).unwrap();
}

async fn committed_attempt_with(plant: Plant) -> (Point, Option<serde_json::Value>, String) {
    let p = Point::new(Backend::File, "committed-window").await;
    let run = p.folder.run().to_string();
    let attempt = p
        .dir
        .path()
        .join(format!("store/runs/{run}/roll-1/judge-a/attempt-1"));
    let spec = "key:runs/*/roll-1/judge-a/attempt-1/meta.json";
    let mut d = p.daemon(&[(CRASH_ENV, spec)]);
    let first = submit_run(&d.client(), &p.folder).await;
    assert!(matches!(first, Err(Stopped::Gone(_))), "{first:?}");
    let _ = d.child.wait();
    assert!(attempt.join("meta.json").exists() && !attempt.join("raw.json").exists());
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(attempt.join("meta.json")).unwrap()).unwrap();
    let raw_hash = meta["rawHash"].as_str().unwrap().to_string();
    let cas = |h: &str| {
        p.dir
            .path()
            .join(format!("store/cas/sha256/{}/{h}", &h[..2]))
    };
    let forged = serde_json::to_vec(&serde_json::json!({
        "id": "chatcmpl-forged",
        "object": "chat.completion",
        "model": MODEL_A,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant",
            "content": "{\"verdicts\": []}"}}]
    }))
    .unwrap();
    match plant {
        Plant::Nothing => {}
        Plant::Raw => std::fs::write(attempt.join("raw.json"), &forged).unwrap(),
        Plant::Cas => replace_file(&cas(&raw_hash), &forged),
        Plant::Meta => {
            let h = seal_core::canonical::Hash::of(&forged);
            std::fs::create_dir_all(cas(h.as_str()).parent().unwrap()).unwrap();
            std::fs::write(cas(h.as_str()), &forged).unwrap();
            let mut m = meta.clone();
            m["rawHash"] = h.to_string().into();
            replace_file(&attempt.join("meta.json"), &serde_json::to_vec(&m).unwrap());
        }
    }
    let d2 = p.daemon(&[]);
    let done = submit_run(&d2.client(), &p.folder).await;
    let answer = match done {
        Ok(v) => Some(v),
        Err(Stopped::Refused(status, body)) => {
            assert_eq!(status, 500, "{plant:?}: {body}");
            // "<what>: <json>"
            let json = body.split_once(": ").map_or("", |(_, j)| j);
            let v: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
            let code = v["error"]["code"].as_str().unwrap_or_default().to_string();
            assert!(!code.is_empty(), "{plant:?}: {body}");
            return (p, None, format!("{code}: {}", v["error"]["message"]));
        }
        Err(e) => panic!("{plant:?}: {e}"),
    };
    (p, answer, String::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_committed_attempt_resumes_only_through_its_mac_and_the_answer_it_names() {
    // The window itself is survived (the control: without it the refusals below prove nothing).
    let (p, sealed, _) = committed_attempt_with(Plant::Nothing).await;
    assert!(sealed.is_some_and(|v| v["evidenceSha256"].is_string()));
    assert_eq!(p.verify_all().await.status.code(), Some(0));

    for (plant, expected) in [
        // `raw.json` must be the bytes the meta's MAC covers.
        (
            Plant::Raw,
            "the SlotMeta names another request or raw answer",
        ),
        // The `cas/` copy is read verified against the meta's `rawHash`.
        (Plant::Cas, "hash mismatch"),
        // A meta naming another answer fails its MAC.
        (Plant::Meta, "its attemptMac does not verify"),
    ] {
        let (p, sealed, code) = committed_attempt_with(plant).await;
        assert!(sealed.is_none(), "{plant:?}: the planted answer was sealed");
        assert!(code.starts_with("corrupt_store: "), "{plant:?}: {code}");
        assert!(code.contains(expected), "{plant:?}: {code}");
        let seal = p
            .dir
            .path()
            .join(format!("store/runs/{}/seal.dsse.json", p.folder.run()));
        assert!(!seal.exists(), "{plant:?}: sealed");
    }
}

// ---------------------------------------------------------------------------------------------
// A step found without its commit object is not done: the caller is told what to re-send
// (409 `uncommitted`), never that the store is corrupt.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_without_its_commit_is_409_uncommitted_until_the_worker_resends_it() {
    // The header stored, its receipt not: the brief alone is refused, naming the header.
    let p = Point::new(Backend::File, "uncommitted-header").await;
    let run = p.folder.run().to_string();
    let mut d = p.daemon(&[(CRASH_ENV, "key:runs/*/header.json")]);
    let first = submit_run(&d.client(), &p.folder).await;
    assert!(matches!(first, Err(Stopped::Gone(_))), "{first:?}");
    let _ = d.child.wait();
    let d2 = p.daemon(&[]);
    let c = d2.client();
    let (status, v) = c
        .put_brief(&run, p.folder.brief().to_vec())
        .await
        .status_json();
    assert_eq!(status, 409, "{v}");
    assert_eq!(v["error"]["code"], "uncommitted", "{v}");
    assert_eq!(
        v["error"]["object"],
        format!("runs/{run}/header.json"),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("re-send the run's header"),
        "{v}"
    );
    // The worker's resend commits it, and the run seals.
    let done = submit_run(&c, &p.folder).await;
    assert!(done.is_ok(), "{:?}", done.err().map(|e| e.to_string()));
    assert_eq!(p.verify_all().await.status.code(), Some(0));

    // Roll 1's record stored, its receipt not: roll 2 alone is refused, naming roll 1.
    let p = Point::new(Backend::File, "uncommitted-roll").await;
    let run = p.folder.run().to_string();
    let mut d = p.daemon(&[(CRASH_ENV, "key:runs/*/roll-1/roll.json")]);
    let first = submit_run(&d.client(), &p.folder).await;
    assert!(matches!(first, Err(Stopped::Gone(_))), "{first:?}");
    let _ = d.child.wait();
    let calls = p.lb.calls().len();
    let d2 = p.daemon(&[]);
    let c = d2.client();
    let (status, v) = c
        .post_roll(&run, 2, p.folder.rolls()[1].canonical().clone())
        .await
        .status_json();
    assert_eq!(status, 409, "{v}");
    assert_eq!(v["error"]["code"], "uncommitted", "{v}");
    assert_eq!(
        v["error"]["object"],
        format!("runs/{run}/roll-1/roll.json"),
        "{v}"
    );
    assert_eq!(
        p.lb.calls().len(),
        calls,
        "roll 2 was judged after an uncommitted roll 1"
    );
    // Re-sending roll 1 commits it from its committed attempts (no judge is called again).
    let done = submit_run(&c, &p.folder).await;
    assert!(done.is_ok(), "{:?}", done.err().map(|e| e.to_string()));
    // Roll 2's two judges only: roll 1's were not called again.
    assert_eq!(
        p.lb.calls().len(),
        calls + 2,
        "roll 1's judges were called again"
    );
    assert_eq!(p.verify_all().await.status.code(), Some(0));
}
