//! A folder seal made, swapped for a link to a folder outside the store (issue 44, hole 8):
//! every write, read, listing and removal through it is refused and names the link, with
//! `openat2` and with the `openat` walk that stands in for it. Each fails without the
//! resolution beneath the root (`std::fs` paths follow a link on any component but the last).

use super::beneath::without_openat2;
use crate::{Key, Store, StoreError};
use bytes::Bytes;
use std::path::Path;

fn key(s: &str) -> Key {
    Key::parse(s).unwrap()
}

/// A store with `runs/r1/roll-1/a.json` written, then `runs/r1/roll-1` moved outside the
/// store and a link to it left in its place (the outside folder holds `a.json` and a planted
/// `b.json`). Returns the store, its folder and the outside folder.
fn swapped(rt: &tokio::runtime::Runtime) -> (Store, tempfile::TempDir, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let store = rt.block_on(Store::open(&url)).unwrap();
    rt.block_on(store.put(&key("runs/r1/roll-1/a.json"), Bytes::from_static(b"{}")))
        .unwrap();
    let folder = dir.path().join("runs/r1/roll-1");
    let moved = outside.path().join("roll-1");
    std::fs::rename(&folder, &moved).unwrap();
    std::fs::write(moved.join("b.json"), b"{\"planted\":true}").unwrap();
    std::os::unix::fs::symlink(&moved, &folder).unwrap();
    (store, dir, outside)
}

fn outside_names(outside: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(outside.join("roll-1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn assert_link(e: &StoreError, key: &str) {
    match e {
        StoreError::LinkInPath { key: k, at, kind } => {
            assert_eq!(k, key, "{e}");
            assert_eq!(at, "runs/r1/roll-1", "{e}");
            assert_eq!(*kind, "a symbolic link", "{e}");
        }
        other => panic!("{key}: expected a link in the path, got {other}"),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn both_ways(test: impl Fn()) {
    test();
    without_openat2(test);
}

#[test]
fn a_write_through_a_swapped_folder_is_refused_and_nothing_lands_outside() {
    both_ways(|| {
        let rt = runtime();
        let (store, _dir, outside) = swapped(&rt);
        for flush in ["batch", "per-object"] {
            let s = match flush {
                "batch" => store.clone(),
                _ => rt
                    .block_on(Store::open(&format!(
                        "file://{}?flush=per-object",
                        _dir.path().display()
                    )))
                    .unwrap(),
            };
            let k = "runs/r1/roll-1/c.json";
            let e = rt
                .block_on(s.put(&key(k), Bytes::from_static(b"{}")))
                .unwrap_err();
            assert_link(&e, k);
            // A deeper folder that does not exist yet is not made outside either.
            let k = "runs/r1/roll-1/judge-a/parsed.json";
            let e = rt
                .block_on(s.put(&key(k), Bytes::from_static(b"{}")))
                .unwrap_err();
            assert_link(&e, k);
        }
        assert_eq!(outside_names(outside.path()), ["a.json", "b.json"]);
    });
}

#[test]
fn a_large_blob_through_a_swapped_cas_folder_is_refused() {
    both_ways(|| {
        let rt = runtime();
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let store = rt
            .block_on(Store::open(&format!("file://{}", dir.path().display())))
            .unwrap();
        let blob = vec![7u8; 9 * 1024 * 1024];
        let hash = seal_core::canonical::Hash::of(&blob);
        let cas = key(Key::cas(&hash).as_str());
        let folder = dir
            .path()
            .join(cas.as_str())
            .parent()
            .unwrap()
            .to_path_buf();
        std::fs::create_dir_all(folder.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(outside.path(), &folder).unwrap();
        let chunks = futures::stream::iter(
            blob.chunks(1 << 20)
                .map(|c| Ok::<_, std::io::Error>(Bytes::copy_from_slice(c)))
                .collect::<Vec<_>>(),
        );
        let e = rt
            .block_on(store.put_blob(chunks, None, u64::MAX))
            .unwrap_err();
        assert!(
            matches!(&e, StoreError::LinkInPath { key, .. } if key == cas.as_str()),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    });
}

#[test]
fn reads_through_a_swapped_folder_are_refused() {
    both_ways(|| {
        let rt = runtime();
        let (store, _dir, _outside) = swapped(&rt);
        for k in ["runs/r1/roll-1/a.json", "runs/r1/roll-1/b.json"] {
            assert_link(&rt.block_on(store.get(&key(k))).unwrap_err(), k);
            assert_link(&rt.block_on(store.hash(&key(k))).unwrap_err(), k);
            assert_link(&rt.block_on(store.exists(&key(k))).unwrap_err(), k);
            let direct = store.clone().with_direct_io();
            assert_link(&rt.block_on(direct.get(&key(k))).unwrap_err(), k);
            match rt.block_on(store.backend.stream(&key(k))) {
                Err(e) => assert_link(&e, k),
                Ok(_) => panic!("{k}: streamed through a link"),
            }
        }
    });
}

#[test]
fn listings_do_not_follow_a_swapped_folder() {
    both_ways(|| {
        let rt = runtime();
        let (store, dir, outside) = swapped(&rt);
        // The link inside a listed folder is named, and nothing behind it is listed.
        let listing = rt.block_on(store.list("runs/r1")).unwrap();
        assert!(listing.keys.is_empty(), "{:?}", listing.keys);
        assert_eq!(listing.foreign, ["runs/r1/roll-1 (a symbolic link)"]);
        // The folder listed itself a link: refused.
        let e = rt.block_on(store.list("runs/r1/roll-1")).unwrap_err();
        assert!(
            matches!(&e, StoreError::LinkInPath { at, .. } if at == "runs/r1/roll-1"),
            "{e}"
        );
        // A log folder swapped for a link to a folder of log-number names.
        std::fs::create_dir_all(dir.path().join("log")).unwrap();
        let numbers = outside.path().join("numbers");
        std::fs::create_dir(&numbers).unwrap();
        std::fs::write(numbers.join("00000000000000000000"), b"{}").unwrap();
        std::os::unix::fs::symlink(&numbers, dir.path().join("log/entries")).unwrap();
        let e = rt.block_on(store.numbered("log/entries")).unwrap_err();
        assert!(
            matches!(&e, StoreError::LinkInPath { at, .. } if at == "log/entries"),
            "{e}"
        );
        // Removing a log object through it removes nothing outside.
        let e = rt
            .block_on(store.remove_copied(&crate::CopiedAside::unchecked(key(
                "log/entries/00000000000000000000",
            ))))
            .unwrap_err();
        assert!(matches!(&e, StoreError::LinkInPath { .. }), "{e}");
        assert!(numbers.join("00000000000000000000").exists());
        // The runs folder itself swapped: the run listing refuses it.
        std::fs::rename(dir.path().join("runs"), outside.path().join("runs")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("runs"), dir.path().join("runs")).unwrap();
        let e = rt.block_on(store.runs()).unwrap_err();
        assert!(
            matches!(&e, StoreError::LinkInPath { at, .. } if at == "runs"),
            "{e}"
        );
    });
}
