//! Which vector stores the end-to-end tests run on.

/// The vector stores a test runs on, each as extra flags: the embedded engine always, and a
/// Qdrant server when `QDRANT_URL` names one and the `qdrant` feature is built (`.ci/run` starts
/// one where a Qdrant binary is found). `test` names the server collection, so tests running
/// at once never share one.
pub fn stores(test: &str) -> Vec<Vec<String>> {
    let mut stores = vec![Vec::new()];
    if let (true, Ok(url)) = (cfg!(feature = "qdrant"), std::env::var("QDRANT_URL")) {
        stores.push(vec![
            "--qdrant-url".into(),
            url,
            "--collection".into(),
            format!("{test}-{}", std::process::id()),
        ]);
    }
    stores
}
