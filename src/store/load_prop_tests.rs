//! Property test of the session loader: a real session file, damaged at random (cut, bytes
//! overwritten, garbage spliced in, lines duplicated), never panics the loader; it loads
//! with warnings or fails with a typed error, and a file whose header survived still loads.

use proptest::prelude::*;

use super::super::blob::BlobStore;
use super::super::record::Record;
use super::super::test_support::{Fixture, rich_round, simple_round, write_session};
use super::load_file;

/// A session with a few rich rounds, written by the real writer; returns its bytes.
fn session_bytes() -> (Fixture, Vec<u8>, std::path::PathBuf) {
    let fx = Fixture::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let records = vec![
        Record::Round(simple_round(1, "hello")),
        Record::Round(rich_round(2)),
        Record::Round(simple_round(3, "more")),
    ];
    let id = runtime.block_on(write_session(&fx, &fx.cwd, records));
    let path = fx.store.find(&id).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    (fx, bytes, path)
}

#[derive(Debug, Clone)]
enum Damage {
    Cut(usize),
    Overwrite(usize, Vec<u8>),
    Splice(usize, Vec<u8>),
    DuplicateLine(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    let bytes = proptest::collection::vec(
        prop_oneof![any::<u8>(), Just(b'\n'), Just(b'{'), Just(b'"')],
        1..40,
    );
    prop_oneof![
        any::<usize>().prop_map(Damage::Cut),
        (any::<usize>(), bytes.clone()).prop_map(|(at, b)| Damage::Overwrite(at, b)),
        (any::<usize>(), bytes).prop_map(|(at, b)| Damage::Splice(at, b)),
        any::<usize>().prop_map(Damage::DuplicateLine),
    ]
}

fn apply(bytes: &mut Vec<u8>, damage: &Damage) {
    let len = bytes.len().max(1);
    match damage {
        Damage::Cut(at) => bytes.truncate(at % len),
        Damage::Overwrite(at, with) => {
            for (i, b) in with.iter().enumerate() {
                if let Some(slot) = bytes.get_mut((at % len) + i) {
                    *slot = *b;
                }
            }
        }
        Damage::Splice(at, with) => {
            let at = (at % len).min(bytes.len());
            bytes.splice(at..at, with.iter().copied());
        }
        Damage::DuplicateLine(n) => {
            let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
            let line = lines[n % lines.len()].to_vec();
            bytes.extend_from_slice(&line);
            bytes.push(b'\n');
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn damaged_session_files_never_panic_the_loader(
        damages in proptest::collection::vec(damage(), 1..4),
    ) {
        let (fx, mut bytes, path) = session_bytes();
        let header_len = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        let header = bytes[..header_len].to_vec();
        for d in &damages {
            apply(&mut bytes, d);
        }
        std::fs::write(&path, &bytes).unwrap();
        let blobs = BlobStore::new(fx.dir.path().join("blobs"));
        let loaded = load_file(&path, None, &blobs);
        if bytes.starts_with(&header) {
            prop_assert!(loaded.is_ok(), "{:?}", loaded.err());
        }
    }
}
