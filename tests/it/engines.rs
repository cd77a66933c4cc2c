//! The extra Engines the fleet tests start: one answers over loopback mutual TLS, refuses a client
//! of another CA with an error naming the host, and leaves nothing behind when dropped.

use crate::common;

use common::dockerd::ExtraEngine;
use parkbench::engine::{Containers, Endpoint, Engine, TlsFiles};

fn storage_driver() -> String {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        Engine::connect()
            .await
            .unwrap()
            .facts()
            .await
            .unwrap()
            .storage_driver
    })
}

#[test]
fn an_extra_engine_answers_over_mutual_tls_and_refuses_a_stranger() {
    let extra = ExtraEngine::start(&storage_driver());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let good = Endpoint::from_url(&extra.url, Some(TlsFiles::in_dir(&extra.certs))).unwrap();
        let engine = Engine::connect_to("extra", &good).await.unwrap();
        let facts = engine.facts().await.unwrap();
        assert!(facts.ncpu > 0, "{facts:?}");
        let wrong =
            Endpoint::from_url(&extra.url, Some(TlsFiles::in_dir(&extra.wrong_certs))).unwrap();
        let err = Engine::connect_to("stranger", &wrong)
            .await
            .err()
            .expect("a client of another CA must be refused")
            .to_string();
        assert!(
            err.contains("stranger") && err.contains(&extra.url),
            "{err}"
        );
    });
    let dir_gone = std::path::PathBuf::from(&extra.certs)
        .parent()
        .unwrap()
        .to_path_buf();
    drop(extra);
    assert!(!dir_gone.exists(), "the extra Engine's folder stays");
}
