//! Store URLs: which backend, where, and the one rule about plain http.

use object_store::aws::{AmazonS3Builder, S3CopyIfNotExists};
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::prefix::PrefixStore;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::backend::Backend;
use crate::file::durable::Flush;
use crate::file::FileBackend;
use crate::StoreError;

/// A parsed store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `file://PATH[?flush=batch|per-object]` (relative paths are relative to the working
    /// directory; `?` starts the options, so a path with `?` in it cannot be a store).
    File(PathBuf, Flush),
    /// `memory://`: one private in-memory store per open.
    Memory,
    /// `s3://BUCKET[/PREFIX][?endpoint=URL&region=R&listing=on|off]`.
    S3 {
        bucket: String,
        prefix: String,
        endpoint: Option<String>,
        region: Option<String>,
        /// Whether a run's state is learnt from one listing of its folder (the default) or an
        /// object at a time (`listing=off`): a LIST is billed like a PUT, about twelve GETs
        /// (docs/BENCHMARKS.md, "S3 requests per run"); see [`crate::Store::keys_within`].
        listing: bool,
    },
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::File(p, Flush::Batch) => write!(f, "file://{}", p.display()),
            StoreUrl::File(p, Flush::PerObject) => {
                write!(f, "file://{}?flush=per-object", p.display())
            }
            StoreUrl::Memory => f.write_str("memory://"),
            StoreUrl::S3 {
                bucket,
                prefix,
                endpoint,
                listing,
                ..
            } => {
                write!(f, "s3://{bucket}")?;
                if !prefix.is_empty() {
                    write!(f, "/{prefix}")?;
                }
                if let Some(e) = endpoint {
                    write!(f, " (endpoint {e})")?;
                }
                if !listing {
                    f.write_str(" (listing off)")?;
                }
                Ok(())
            }
        }
    }
}

fn bad(url: &str, reason: impl Into<String>) -> StoreError {
    StoreError::Url {
        url: url.chars().take(200).collect(),
        reason: reason.into(),
    }
}

pub use seal_core::net::is_loopback_host;

impl StoreUrl {
    pub fn parse(s: &str) -> Result<StoreUrl, StoreError> {
        if let Some(rest) = s.strip_prefix("file://") {
            let (p, options) = match rest.split_once('?') {
                Some((p, o)) => (p, Some(o)),
                None => (rest, None),
            };
            if p.is_empty() || p.contains('\0') {
                return Err(bad(s, "file:// needs a folder path"));
            }
            let flush = match options {
                None | Some("flush=batch") => Flush::Batch,
                Some("flush=per-object") => Flush::PerObject,
                Some(o) => {
                    return Err(bad(
                        s,
                        format!(
                            "unknown file:// option {:?}: the one option is flush=batch (the default) or flush=per-object",
                            o.chars().take(80).collect::<String>()
                        ),
                    ))
                }
            };
            return Ok(StoreUrl::File(PathBuf::from(p), flush));
        }
        if s == "memory://" || s == "memory:" {
            return Ok(StoreUrl::Memory);
        }
        if let Some(rest) = s.strip_prefix("s3://") {
            // Checked on the raw text: URL parsing would resolve `..` away silently.
            let path_part = rest.split('?').next().unwrap_or("");
            if path_part.split('/').any(|seg| seg == ".." || seg == ".") {
                return Err(bad(
                    s,
                    "the bucket prefix must not contain . or .. segments",
                ));
            }
            let u = url::Url::parse(s).map_err(|e| bad(s, e.to_string()))?;
            let bucket = u.host_str().unwrap_or("").to_string();
            if bucket.is_empty() {
                return Err(bad(s, "s3:// needs a bucket name"));
            }
            let prefix = u.path().trim_matches('/').to_string();
            if !prefix.is_empty() {
                crate::Key::parse(&prefix).map_err(|e| bad(s, format!("prefix: {e}")))?;
            }
            let mut endpoint = None;
            let mut region = None;
            let mut listing = true;
            for (k, v) in u.query_pairs() {
                match k.as_ref() {
                    "endpoint" => endpoint = Some(v.into_owned()),
                    "region" => region = Some(v.into_owned()),
                    "listing" => {
                        listing = match v.as_ref() {
                            "on" => true,
                            "off" => false,
                            other => {
                                return Err(bad(
                                    s,
                                    format!("listing must be on or off, not {other:?}"),
                                ))
                            }
                        }
                    }
                    other => return Err(bad(s, format!("unknown parameter {other:?}"))),
                }
            }
            return Ok(StoreUrl::S3 {
                bucket,
                prefix,
                endpoint,
                region,
                listing,
            });
        }
        Err(bad(s, "scheme must be file://, memory:// or s3://"))
    }

    /// The backend this URL names, created if it is a missing `file://` folder.
    pub(crate) async fn backend(&self) -> Result<Backend, StoreError> {
        let shown = self.to_string();
        match self {
            StoreUrl::Memory => Ok(Backend::Object(Arc::new(InMemory::new()))),
            StoreUrl::File(p, flush) => {
                std::fs::create_dir_all(p)
                    .map_err(|e| bad(&shown, format!("cannot create folder: {e}")))?;
                let fs = LocalFileSystem::new_with_prefix(p)
                    .map_err(|e| bad(&shown, e.to_string()))?
                    .with_fsync(true);
                let backend = FileBackend::new(p, *flush, Arc::new(fs))
                    .map_err(|e| bad(&shown, format!("cannot open folder: {e}")))?;
                Ok(Backend::File(backend))
            }
            StoreUrl::S3 {
                bucket,
                prefix,
                endpoint,
                region,
                ..
            } => {
                let mut b = AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .with_copy_if_not_exists(S3CopyIfNotExists::Multipart);
                let endpoint = endpoint
                    .clone()
                    .or_else(|| std::env::var("AWS_ENDPOINT_URL").ok());
                if let Some(e) = &endpoint {
                    let u = url::Url::parse(e)
                        .map_err(|err| bad(&shown, format!("endpoint: {err}")))?;
                    let host = u.host_str().unwrap_or("");
                    match u.scheme() {
                        "https" => {}
                        "http" if is_loopback_host(host) => b = b.with_allow_http(true),
                        "http" => {
                            return Err(bad(
                                &shown,
                                format!(
                                "plain http is allowed only for a loopback endpoint, not {host:?}"
                            ),
                            ))
                        }
                        other => return Err(bad(&shown, format!("endpoint scheme {other:?}"))),
                    }
                    b = b
                        .with_endpoint(e.trim_end_matches('/'))
                        .with_virtual_hosted_style_request(false);
                }
                if let Some(r) = region.clone().or_else(|| std::env::var("AWS_REGION").ok()) {
                    b = b.with_region(r);
                } else if endpoint.is_some() {
                    b = b.with_region("us-east-1");
                }
                let s3 = b.build().map_err(|e| bad(&shown, e.to_string()))?;
                if prefix.is_empty() {
                    Ok(Backend::Object(Arc::new(s3)))
                } else {
                    Ok(Backend::Object(Arc::new(PrefixStore::new(
                        s3,
                        prefix.as_str(),
                    ))))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file store's one option: how writes are flushed; anything else is refused by name.
    #[test]
    fn a_file_store_takes_its_flush_mode_and_nothing_else() {
        for (url, flush, shown) in [
            ("file://./s?flush=batch", Flush::Batch, "file://./s"),
            (
                "file://./s?flush=per-object",
                Flush::PerObject,
                "file://./s?flush=per-object",
            ),
        ] {
            let parsed = StoreUrl::parse(url).unwrap();
            assert_eq!(parsed, StoreUrl::File("./s".into(), flush));
            // What is shown opens the same store again.
            assert_eq!(parsed.to_string(), shown);
            assert_eq!(StoreUrl::parse(shown).unwrap(), parsed);
        }
        for bad in [
            "file://./s?flush=never",
            "file://./s?flush=batch&x=1",
            "file://?flush=batch",
            "file://./s?\u{1b}[31mred",
        ] {
            let err = StoreUrl::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains("flush=batch") || err.contains("needs a folder path"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn parses_the_three_schemes() {
        assert_eq!(
            StoreUrl::parse("file://./var/store").unwrap(),
            StoreUrl::File("./var/store".into(), Flush::Batch)
        );
        assert_eq!(StoreUrl::parse("memory://").unwrap(), StoreUrl::Memory);
        match StoreUrl::parse("s3://bkt/pre/fix?endpoint=http://127.0.0.1:9000&region=eu").unwrap()
        {
            StoreUrl::S3 {
                bucket,
                prefix,
                endpoint,
                region,
                listing,
            } => {
                assert_eq!(bucket, "bkt");
                assert_eq!(prefix, "pre/fix");
                assert_eq!(endpoint.as_deref(), Some("http://127.0.0.1:9000"));
                assert_eq!(region.as_deref(), Some("eu"));
                assert!(listing, "listing is on by default");
            }
            other => panic!("{other}"),
        }
        for (url, want) in [("s3://b?listing=off", false), ("s3://b?listing=on", true)] {
            match StoreUrl::parse(url).unwrap() {
                StoreUrl::S3 { listing, .. } => assert_eq!(listing, want, "{url}"),
                other => panic!("{other}"),
            }
        }
        assert_eq!(
            StoreUrl::parse("s3://b/p?listing=off").unwrap().to_string(),
            "s3://b/p (listing off)"
        );
        for bad in [
            "",
            "ftp://x",
            "file://",
            "s3://",
            "s3://b/../x",
            "s3://b?colour=red",
            "s3://b?listing=maybe",
        ] {
            assert!(StoreUrl::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[tokio::test]
    async fn plain_http_only_for_loopback() {
        let u = StoreUrl::parse("s3://b?endpoint=http://example.com:9000").unwrap();
        let err = u
            .backend()
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("loopback"), "{err}");
        assert!(
            is_loopback_host("127.0.0.1")
                && is_loopback_host("[::1]")
                && is_loopback_host("localhost")
        );
        assert!(!is_loopback_host("10.0.0.1"));
    }
}
