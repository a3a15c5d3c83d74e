mod common;

use common::*;
use seal::loopback::Loopback;
use seal::runfolder::{judge, RunFolder};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scratch_dump() {
    let Ok(out) = std::env::var("SCRATCH_DUMP") else {
        return;
    };
    let lb = Loopback::start(Duration::from_millis(5)).await.unwrap();
    personas(&lb);
    let engine = engine_with(&lb, &format!("file://{out}/store"), &[]).await;
    engine
        .key
        .as_ref()
        .unwrap()
        .write_pair(std::path::Path::new(&format!("{out}/key")))
        .unwrap();
    for name in EXAMPLES {
        let folder = RunFolder::read(&example(name), 1 << 26).unwrap();
        judge(&engine, &folder).await.unwrap();
    }
}
