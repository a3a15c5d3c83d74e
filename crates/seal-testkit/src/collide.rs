//! A generator of run folders with adversarial identity collisions, for the blinding rule's
//! end-to-end property (docs/DESIGN.md §3.3, `tests/it/blinding_e2e.rs`): an example run folder
//! made a `v3_shadow` run whose identity values collide with its own observations.
//!
//! - a numeric `_taskId` equal to a number of the events (a score, a `tMs`), or a lettered one;
//! - the design and trace ids and the run id inside the brief and an obligation description;
//! - per roll, some of: the task id echoed as a number and in text, the design id in text and
//!   as a key, a unicode look-alike of the run id, the trace id split across two events or in
//!   an event name, the actor's own words echoed by the game, a seed in an event's time.

use std::path::Path;

use rand::seq::SliceRandom;
use rand::Rng;
use serde_json::{json, Value};

fn read(p: &Path) -> std::io::Result<Value> {
    serde_json::from_slice(&std::fs::read(p)?).map_err(std::io::Error::other)
}

fn write(p: &Path, v: &Value) -> std::io::Result<()> {
    std::fs::write(p, serde_json::to_vec(v).map_err(std::io::Error::other)?)
}

/// Edits `header.json` and `brief.md` of a run folder, keeping `briefHash` right.
pub fn edit_header(
    folder: &Path,
    edit: impl FnOnce(&mut Value, &mut String),
) -> std::io::Result<()> {
    let mut header = read(&folder.join("header.json"))?;
    let mut brief = std::fs::read_to_string(folder.join("brief.md"))?;
    edit(&mut header, &mut brief);
    header["briefHash"] = json!(seal_core::canonical::Hash::of(brief.as_bytes()).to_string());
    std::fs::write(folder.join("brief.md"), &brief)?;
    write(&folder.join("header.json"), &header)
}

/// Edits `roll-<roll>/proof-package.json` of a run folder.
pub fn edit_proof(folder: &Path, roll: u8, edit: impl FnOnce(&mut Value)) -> std::io::Result<()> {
    let p = folder.join(format!("roll-{roll}/proof-package.json"));
    let mut proof = read(&p)?;
    edit(&mut proof);
    write(&p, &proof)
}

/// Every number of a proof package's events (data values and times).
pub fn event_numbers(proof: &Value) -> Vec<u64> {
    let mut out = Vec::new();
    for e in proof["events"].as_array().into_iter().flatten() {
        out.extend(e["tMs"].as_u64());
        if let Some(m) = e["data"].as_object() {
            out.extend(m.values().filter_map(Value::as_u64));
        }
    }
    out.retain(|n| *n > 0);
    out
}

/// A run folder with adversarial identity collisions, from an example and `rng`.
pub fn adversarial(folder: &Path, case: u64, rng: &mut impl Rng) -> std::io::Result<()> {
    let run_id = format!("run-prop-{case:05}-x{}", rng.gen_range(100..999));
    let design = format!("{:032x}", rng.gen::<u128>());
    let trace = format!("trace-{:x}-{:x}", rng.gen::<u32>(), rng.gen::<u32>());
    let first = read(&folder.join("roll-1/proof-package.json"))?;
    let numbers = event_numbers(&first);
    let task: Value = match rng.gen_range(0..3) {
        0 => json!(numbers.choose(rng).copied().unwrap_or(4800).to_string()),
        1 => json!(numbers.choose(rng).copied().unwrap_or(4800)),
        _ => json!(format!("task-{}", rng.gen_range(1000..99999))),
    };
    let planted_in_brief = rng.gen_bool(0.5);
    let (d2, t2) = (design.clone(), trace.clone());
    edit_header(folder, |h, brief| {
        h["runId"] = json!(run_id);
        h["acceptanceMode"] = json!("v3_shadow");
        h["_designId"] = json!(d2);
        h["_taskId"] = task.clone();
        h["_traceId"] = json!(t2);
        if planted_in_brief {
            brief.push_str(&format!("\n\nDesign {d2}, trace {t2}, task {task}.\n"));
        }
        for o in h["proofObligations"].as_array_mut().into_iter().flatten() {
            if let (Some(d), true) = (o["description"].as_str(), o["id"] == "core.loop-reached") {
                o["description"] = json!(format!("{d} (for {run_id})"));
            }
        }
    })?;
    let rolls = if folder.join("roll-2").is_dir() { 2 } else { 1 };
    for roll in 1..=rolls {
        let kinds: Vec<u8> = (0..rng.gen_range(1..4))
            .map(|_| rng.gen_range(0..7))
            .collect();
        let (design, trace, task) = (design.clone(), trace.clone(), task.clone());
        let look_alike = run_id.replace('-', "\u{2010}");
        let block_seed = rng.gen_bool(0.2);
        let pick = rng.gen_range(0..1000usize);
        edit_proof(folder, roll, move |p| {
            let n = p["events"].as_array().map_or(0, Vec::len);
            let raw = p["actions"][0]["request"]["raw"].clone();
            let seed = p["actualGameSeed"].clone();
            let Some(events) = p["events"].as_array_mut().filter(|_| n > 0) else {
                return;
            };
            let e = pick % n;
            for k in &kinds {
                match k {
                    // A numeric id occurring in the events as a number and in text.
                    0 => {
                        events[e]["data"]["echo"] = task.clone();
                        events[e]["data"]["note"] = json!(format!("task {task} done"));
                    }
                    1 => events[e]["data"]["msg"] = json!(format!("by {design}")),
                    2 => events[e]["data"]["who"] = json!(look_alike),
                    // An id split across two events.
                    3 => {
                        let (a, b) = trace.split_at(trace.len() / 2);
                        events[e]["data"]["part"] = json!(a);
                        events[(e + 1) % n]["data"]["part"] = json!(b);
                    }
                    4 => events[e]["name"] = json!(format!("trace:{trace}")),
                    5 => events[e]["data"][design.as_str()] = json!(true),
                    _ => events[e]["data"]["said"] = raw.clone(),
                }
            }
            // A seed the scrub cannot reach: the last event's time (times stay in order).
            if block_seed {
                events[e]["data"]["level"] = json!(format!("level {seed}"));
                events[n - 1]["tMs"] = seed;
            }
        })?;
    }
    Ok(())
}
