//! Run-folder reading (`seal judge`'s input): a folder assembled from fuzzed files, with real
//! names, hostile names and links, read with the document limit. Never panics.
#![no_main]
use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Name {
    Header,
    Brief,
    PlaySpec,
    Roll(u8),
    Blob(Vec<u8>),
    Other(String),
}

#[derive(Arbitrary, Debug)]
struct File {
    name: Name,
    bytes: Vec<u8>,
    link: bool,
}

fuzz_target!(|files: Vec<File>| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let root = dir.path();
    for f in files.iter().take(16) {
        let rel = match &f.name {
            Name::Header => "header.json".to_string(),
            Name::Brief => "brief.md".to_string(),
            Name::PlaySpec => "play-spec.json".to_string(),
            Name::Roll(n) => format!("roll-{}/proof-package.json", n % 4),
            Name::Blob(h) => format!("blobs/{}.png", seal_core::canonical::Hash::of(h)),
            Name::Other(s) => s.chars().filter(|c| *c != '\0').take(40).collect(),
        };
        let path = root.join(&rel);
        if !path.starts_with(root) {
            continue;
        }
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if f.link {
            let _ = std::os::unix::fs::symlink("/etc/hostname", &path);
        } else {
            let _ = std::fs::write(&path, &f.bytes);
        }
    }
    let _ = seal_fs::runfolder::RunFolder::read(root, 1 << 20);
});
