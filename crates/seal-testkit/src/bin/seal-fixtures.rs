//! Regenerates `sealed-fixtures/`: input run folders, a test-only key pair, and a file store of
//! sealed runs judged by scripted loopback judges over real HTTP. Made by seal, never by hand:
//!
//! ```sh
//! cargo run -p seal-testkit --bin seal-fixtures -- --out sealed-fixtures
//! ```
//!
//! The three upstream example runs in `inputs/` are kept as they are; the other inputs are
//! derived from them deterministically (other genres, failure modes), so a regeneration
//! changes only timings and client ids inside the stored judge metas.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use seal_core::canonical::Hash;
use seal_engine::config::Config;
use seal_engine::engine::{Engine, FixedClock};
use seal_store::Store;
use seal_testkit::loopback::{Fault, Loopback, Persona};

const MODEL_A: &str = "fixture-judge-a";
const MODEL_B: &str = "fixture-judge-b";
const DECIDED_AT: &str = "2026-11-29T12:00:00Z";

/// Any failure ends the run with its message: a generator, not a service.
type Res<T> = Result<T, Box<dyn std::error::Error>>;
/// How the loopback judges behave for one run.
type Setup = Box<dyn Fn(&Loopback)>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn read_json(p: &Path) -> Res<Value> {
    let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", p.display()))?)
}

fn write_json(p: &Path, v: &Value) -> Res<()> {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).map_err(err)?;
    }
    let mut text = serde_json::to_string_pretty(v).map_err(err)?;
    text.push('\n');
    Ok(std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))?)
}

fn copy_blobs(from: &Path, to: &Path) -> Res<()> {
    std::fs::create_dir_all(to.join("blobs")).map_err(err)?;
    for e in std::fs::read_dir(from.join("blobs")).map_err(err)? {
        let e = e.map_err(err)?;
        std::fs::copy(e.path(), to.join("blobs").join(e.file_name())).map_err(err)?;
    }
    Ok(())
}

/// A derived input run: an example with another identity, genre and brief, edited further.
struct Derived<'a> {
    name: &'a str,
    base: &'a str,
    genre: &'a str,
    title: &'a str,
    keywords: [&'a str; 3],
    rolls: usize,
    edit: &'a dyn Fn(&mut Value, &mut Vec<Value>),
}

fn derive(inputs: &Path, d: &Derived) -> Res<PathBuf> {
    let base = inputs.join(d.base);
    let out = inputs.join(d.name);
    if out.exists() {
        std::fs::remove_dir_all(&out).map_err(err)?;
    }
    let brief = format!(
        "# {}\n\n一款竖屏{}小游戏。主题关键词：{}、{}、{}。玩家点击发光格子得分，完成一局。\n",
        d.title, d.genre, d.keywords[0], d.keywords[1], d.keywords[2]
    );
    std::fs::create_dir_all(&out).map_err(err)?;
    std::fs::write(out.join("brief.md"), &brief).map_err(err)?;
    let mut header = read_json(&base.join("header.json"))?;
    header["runId"] = json!(d.name);
    header["gameId"] = json!(format!(
        "game-{}",
        &Hash::of(d.name.as_bytes()).to_string()[..12]
    ));
    header["genre"] = json!(d.genre);
    header["templateRoute"] = json!(format!("_template-{}", d.genre));
    header["proofProfileId"] = json!(format!("{}.default", d.genre));
    header["briefHash"] = json!(Hash::of(brief.as_bytes()).to_string());
    let mut proofs = Vec::new();
    for n in 1..=d.rolls {
        let mut p = read_json(&base.join(format!("roll-{n}/proof-package.json")))?;
        if let Some(events) = p["events"].as_array_mut() {
            for e in events.iter_mut() {
                if e["name"] == "game_loaded" {
                    e["data"]["title"] = json!(d.title);
                }
                if e["name"] == "render" {
                    e["data"]["visibleText"] = json!(d.keywords.join(" "));
                }
            }
        }
        proofs.push(p);
    }
    (d.edit)(&mut header, &mut proofs);
    write_json(&out.join("header.json"), &header)?;
    if base.join("play-spec.json").exists() {
        std::fs::copy(base.join("play-spec.json"), out.join("play-spec.json")).map_err(err)?;
    }
    for (i, p) in proofs.iter().enumerate() {
        write_json(&out.join(format!("roll-{}/proof-package.json", i + 1)), p)?;
    }
    copy_blobs(&base, &out)?;
    Ok(out)
}

fn config(lb: &Loopback, budget: Option<&str>) -> Res<Config> {
    let url = lb.url();
    let env = move |k: &str| -> Option<String> {
        match k {
            "SEAL_JUDGE_A_URL" | "SEAL_JUDGE_B_URL" => Some(url.clone()),
            "SEAL_JUDGE_A_MODEL" => Some(MODEL_A.into()),
            "SEAL_JUDGE_B_MODEL" => Some(MODEL_B.into()),
            "SEAL_JUDGE_A_KEY" | "SEAL_JUDGE_B_KEY" => Some("sk-fixtures-loopback".into()),
            "SEAL_JUDGE_TIMEOUT_MS" => Some("3000".into()),
            "SEAL_SEED_SALT" => Some("sealed-fixtures-salt (test only)".into()),
            _ => None,
        }
    };
    let mut text = seal_engine::config::EMBEDDED
        .replace("backoff_base_ms = 500", "backoff_base_ms = 5")
        .replace("backoff_cap_ms = 8000", "backoff_cap_ms = 20");
    if let Some(b) = budget {
        text = text.replace("run_rmb = 5.0", &format!("run_rmb = {b}"));
    }
    Ok(Config::parse("sealed-fixtures", &text, &env)?)
}

async fn engine(store: &Store, lb: &Loopback, key: &Path, budget: Option<&str>) -> Res<Engine> {
    let key = seal_fs::keys::load_signing_key(key).map_err(err)?;
    Ok(Engine::new(store.clone(), config(lb, budget)?, Some(key))?
        .with_clock(Arc::new(FixedClock(DECIDED_AT.into()))))
}

fn key_pair(dir: &Path) -> Res<PathBuf> {
    let key = dir.join("seal.key.pem");
    if !key.exists() {
        seal_fs::keys::write_key_pair(&seal_fs::keys::generate_signing_key(), dir).map_err(err)?;
        let readme = "Test-only ed25519 key pair that signed the sealed fixtures. It is public:\nnever trust it outside tests and demos.\n";
        std::fs::write(dir.join("README"), readme).map_err(err)?;
    }
    // A checkout does not keep file modes: restore the owner-only mode the loader demands.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).map_err(err)?;
    }
    Ok(key)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("seal-fixtures: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

async fn run() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let mut out = PathBuf::from("sealed-fixtures");
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = PathBuf::from(args.next().ok_or("--out needs a folder")?),
            other => {
                return Err(format!(
                    "unknown argument {other:?} (usage: seal-fixtures [--out DIR])"
                )
                .into())
            }
        }
    }
    let inputs = out.join("inputs");
    let key = key_pair(&out.join("keys/test-only"))?;
    let store_dir = out.join("store");
    if store_dir.exists() {
        std::fs::remove_dir_all(&store_dir).map_err(err)?;
    }
    let store = Store::open(&format!("file://{}", store_dir.display()))
        .await
        .map_err(err)?;

    let keep = |_: &mut Value, _: &mut Vec<Value>| {};
    let floor_fail = |_: &mut Value, p: &mut Vec<Value>| {
        p[0]["floor"] = json!({"passed": false, "checks": [
            {"id": "loaded", "status": "pass", "detail": "game_loaded captured"},
            {"id": "progress", "status": "fail", "detail": "score never moved after the first tap"}
        ]});
    };
    let derived = [
        Derived {
            name: "run-trpg-0021-pass",
            base: "run-narrative-0010-pass",
            genre: "trpg",
            title: "龙与骰子",
            keywords: ["骰", "龙", "冒险"],
            rolls: 1,
            edit: &keep,
        },
        Derived {
            name: "run-trpg-0022-floor-fail",
            base: "run-narrative-0010-pass",
            genre: "trpg",
            title: "地牢回响",
            keywords: ["地牢", "火把", "宝箱"],
            rolls: 1,
            edit: &floor_fail,
        },
        Derived {
            name: "run-sim-business-0031-degraded",
            base: "run-narrative-0010-pass",
            genre: "sim-business",
            title: "街角茶铺",
            keywords: ["茶", "铺", "客人"],
            rolls: 1,
            edit: &keep,
        },
        Derived {
            name: "run-sim-business-0032-over-budget",
            base: "run-narrative-0010-pass",
            genre: "sim-business",
            title: "夜市摊主",
            keywords: ["夜市", "摊", "灯笼"],
            rolls: 1,
            edit: &keep,
        },
        Derived {
            name: "run-puzzle-0041-contradicted",
            base: "run-puzzle-0013-fail-end",
            genre: "puzzle",
            title: "星图拼合",
            keywords: ["星", "拼图", "夜空"],
            rolls: 1,
            edit: &keep,
        },
        Derived {
            name: "run-narrative-0011-inconclusive",
            base: "run-heritage-0017-disputed-font",
            genre: "narrative",
            title: "雾港来信",
            keywords: ["雾", "港", "信"],
            rolls: 1,
            edit: &keep,
        },
    ];
    for d in &derived {
        derive(&inputs, d)?;
    }
    // A legacy agent-loop Verdict, adapted into a run folder by seal itself.
    let legacy_dir = inputs.join("legacy-accept");
    if legacy_dir.exists() {
        std::fs::remove_dir_all(&legacy_dir).map_err(err)?;
    }
    let legacy_run = seal_fs::adapt::verdict_file_to_run_folder(
        &out.join("verdicts/accept.json"),
        seal_core::doc::Genre::Puzzle,
        &legacy_dir,
    )
    .map_err(err)?;
    println!("adapted verdicts/accept.json into inputs/legacy-accept (run {legacy_run})");

    let lb = Loopback::start(Duration::from_millis(1))
        .await
        .map_err(err)?;
    let lenient = Persona {
        min_font_px: 12.0,
        ..Persona::default()
    };
    let strict = Persona {
        min_font_px: 14.0,
        ..Persona::default()
    };
    let reset = |lb: &Loopback| {
        lb.persona(MODEL_A, lenient.clone());
        lb.persona(MODEL_B, strict.clone());
    };
    let normal = engine(&store, &lb, &key, None).await?;
    let poor = engine(&store, &lb, &key, Some("0.5")).await?;
    let e503 = || Fault::Status {
        code: 503,
        body: "{\"error\":{\"message\":\"overloaded\"}}".into(),
        retry_after: None,
    };

    let plan: Vec<(&str, &Engine, Setup)> = vec![
        ("run-narrative-0010-pass", &normal, Box::new(|_| {})),
        ("run-puzzle-0013-fail-end", &normal, Box::new(|_| {})),
        ("run-heritage-0017-disputed-font", &normal, Box::new(|_| {})),
        (
            "run-trpg-0021-pass",
            &normal,
            Box::new(|lb| lb.script(MODEL_A, [Fault::Hang])),
        ),
        ("run-trpg-0022-floor-fail", &normal, Box::new(|_| {})),
        (
            "run-sim-business-0031-degraded",
            &normal,
            Box::new(move |lb| lb.script(MODEL_B, [e503(), e503(), e503()])),
        ),
        ("run-sim-business-0032-over-budget", &poor, Box::new(|_| {})),
        (
            "run-puzzle-0041-contradicted",
            &normal,
            Box::new(|lb| {
                lb.persona(
                    MODEL_A,
                    Persona {
                        min_font_px: 12.0,
                        cite_missing_events: true,
                        ..Persona::default()
                    },
                )
            }),
        ),
        ("run-narrative-0011-inconclusive", &normal, Box::new(|_| {})),
        ("legacy-accept", &normal, Box::new(|_| {})),
    ];
    for (name, engine, setup) in plan {
        reset(&lb);
        setup(&lb);
        let folder =
            seal_fs::runfolder::RunFolder::read(&inputs.join(name), 1 << 26).map_err(err)?;
        let done = seal_engine::judge_run::judge(engine, &folder)
            .await
            .map_err(|e| format!("{name}: {e}"))?;
        let d = done
            .evidence()
            .decision
            .as_ref()
            .map(|d| {
                let reasons: Vec<String> = d.reasons.iter().map(|r| r.to_string()).collect();
                format!("{} {reasons:?}", d.action.as_str())
            })
            .unwrap_or_default();
        println!(
            "sealed {name}: {} ({d})",
            done.evidence().outcome.map(|o| o.as_str()).unwrap_or("?")
        );
    }
    reset(&lb);
    let replayed = seal_engine::replay::replay(
        &normal,
        &seal_core::ids::RunId::parse("run-narrative-0010-pass").map_err(err)?,
        seal_engine::replay::JudgesFrom::Stored,
        None,
        &[seal_fs::keys::load_signing_key(&key).map_err(err)?.public()],
        seal_engine::replay::SourceProof::Verify,
    )
    .await
    .map_err(err)?;
    println!(
        "sealed {} (historical_replay of {}, consensus reproduced: {})",
        replayed.replay, replayed.source, replayed.consensus_reproduced
    );
    println!("store: {}", store_dir.display());
    Ok(())
}
