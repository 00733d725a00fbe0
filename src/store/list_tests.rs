use std::time::{Duration, SystemTime};

use super::super::record::Record;
use super::super::sessions::Store;
use super::super::test_support::{Fixture, simple_round, write_session};
use super::*;

/// Sets a session file's modification time to `base + secs`.
fn touch(store: &Store, id: &SessionId, secs: u64) {
    let path = store.find(id).unwrap();
    let file = std::fs::File::options().append(true).open(path).unwrap();
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    file.set_modified(base + Duration::from_secs(secs)).unwrap();
}

/// `n` sessions in `cwd`, the i-th (0-based) modified at `base + i` seconds.
async fn sessions(fx: &Fixture, cwd: &Path, n: u64, offset: u64) -> Vec<SessionId> {
    let mut ids = Vec::new();
    for i in 0..n {
        let rounds = (1..=i + 1)
            .map(|r| {
                Record::Round(simple_round(
                    r,
                    &format!("task {} in {}", i + offset, cwd.display()),
                ))
            })
            .collect();
        let id = write_session(fx, cwd, rounds).await;
        touch(&fx.store, &id, i + offset);
        ids.push(id);
    }
    ids
}

fn ids(page: &Page) -> Vec<SessionId> {
    page.sessions.iter().map(|s| s.id.clone()).collect()
}

/// Every page of a listing.
fn all_pages(store: &Store, cwd: Option<&Path>, limit: usize) -> Vec<Page> {
    let mut pages = vec![store.list(cwd, None, limit).unwrap()];
    while let Some(cursor) = pages.last().unwrap().next_cursor.clone() {
        pages.push(store.list(cwd, Some(&cursor), limit).unwrap());
    }
    pages
}

#[tokio::test]
async fn newest_first_in_pages_with_summaries() {
    let fx = Fixture::new();
    let created = sessions(&fx, &fx.cwd, 7, 0).await;

    let pages = all_pages(&fx.store, Some(&fx.cwd), 3);
    assert_eq!(
        pages.iter().map(|p| p.sessions.len()).collect::<Vec<_>>(),
        vec![3, 3, 1]
    );
    let listed: Vec<SessionId> = pages.iter().flat_map(ids).collect();
    let newest_first: Vec<SessionId> = created.iter().rev().cloned().collect();
    assert_eq!(listed, newest_first);

    let newest = &pages[0].sessions[0];
    assert_eq!(newest.rounds, 7);
    assert_eq!(newest.cwd, std::fs::canonicalize(&fx.cwd).unwrap());
    assert_eq!(
        newest.title.as_deref().map(|t| t.starts_with("task 6 in")),
        Some(true)
    );
    assert_eq!(newest.updated_at.timestamp(), 1_800_000_006);
    assert!(
        newest
            .updated_at
            .to_rfc3339()
            .starts_with("2027-01-15T08:00:06")
    );
}

#[tokio::test]
async fn paging_is_stable_when_a_session_changes_meanwhile() {
    let fx = Fixture::new();
    let created = sessions(&fx, &fx.cwd, 6, 0).await;
    let first = fx.store.list(Some(&fx.cwd), None, 2).unwrap();
    assert_eq!(ids(&first), vec![created[5].clone(), created[4].clone()]);

    // Session 1 (due on the last page) is appended to: it moves to the front.
    touch(&fx.store, &created[1], 100);
    let mut rest = Vec::new();
    let mut cursor = first.next_cursor.clone();
    while let Some(c) = cursor {
        let page = fx.store.list(Some(&fx.cwd), Some(&c), 2).unwrap();
        rest.extend(ids(&page));
        cursor = page.next_cursor;
    }
    // Nothing repeated, nothing unchanged skipped; the moved one is on the next fresh list.
    assert_eq!(
        rest,
        vec![created[3].clone(), created[2].clone(), created[0].clone()]
    );
    assert_eq!(
        ids(&fx.store.list(Some(&fx.cwd), None, 1).unwrap()),
        vec![created[1].clone()]
    );
}

#[tokio::test]
async fn cwd_filter_and_all_projects() {
    let fx = Fixture::new();
    let other = fx.project("other");
    let here = sessions(&fx, &fx.cwd, 2, 0).await;
    let there = sessions(&fx, &other, 3, 10).await;

    let mine: Vec<SessionId> = all_pages(&fx.store, Some(&fx.cwd), 10)
        .iter()
        .flat_map(ids)
        .collect();
    assert_eq!(mine, vec![here[1].clone(), here[0].clone()]);
    // The filter is canonicalized: a path with `..` names the same project.
    let roundabout = other.join("..").join("other");
    let theirs: Vec<SessionId> = all_pages(&fx.store, Some(&roundabout), 10)
        .iter()
        .flat_map(ids)
        .collect();
    assert_eq!(theirs, there.iter().rev().cloned().collect::<Vec<_>>());

    let everything: Vec<SessionId> = all_pages(&fx.store, None, 2).iter().flat_map(ids).collect();
    let mut expected: Vec<SessionId> = there.iter().rev().cloned().collect();
    expected.extend(here.iter().rev().cloned());
    assert_eq!(everything, expected);

    // A project without sessions, and a store that was never written to.
    assert_eq!(
        fx.store
            .list(Some(&fx.project("empty")), None, 5)
            .unwrap()
            .sessions,
        vec![]
    );
    let blank = Store::new(fx.dir.path().join("nowhere"));
    assert_eq!(
        blank.list(None, None, 5).unwrap(),
        Page {
            sessions: vec![],
            next_cursor: None
        }
    );
}

#[tokio::test]
async fn stored_title_wins_and_damaged_files_are_left_out() {
    let fx = Fixture::new();
    let titled = write_session(
        &fx,
        &fx.cwd,
        vec![
            Record::Round(simple_round(1, "first prompt")),
            Record::Title {
                title: "Named".into(),
            },
        ],
    )
    .await;
    let broken = write_session(&fx, &fx.cwd, vec![Record::Round(simple_round(1, "x"))]).await;
    std::fs::write(fx.store.find(&broken).unwrap(), "garbage\n").unwrap();
    let mut silent = simple_round(1, "x");
    silent.user = Vec::new();
    let untitled = write_session(&fx, &fx.cwd, vec![Record::Round(silent)]).await;
    // Opened and never prompted: resumable by its id, but no history to list.
    let unused = write_session(
        &fx,
        &fx.cwd,
        vec![Record::Settings(super::super::SettingsRecord {
            mode: hearth_conversation::Mode::Plan,
            model: None,
        })],
    )
    .await;

    let page = fx.store.list(Some(&fx.cwd), None, 10).unwrap();
    let by_id = |id: &SessionId| page.sessions.iter().find(|s| &s.id == id).cloned();
    assert_eq!(by_id(&titled).unwrap().title.as_deref(), Some("Named"));
    assert_eq!(by_id(&untitled).unwrap().title, None);
    assert_eq!(by_id(&untitled).unwrap().rounds, 1);
    assert_eq!(by_id(&broken), None);
    assert_eq!(by_id(&unused), None);
    assert!(fx.store.load(&unused).is_ok());
    assert_eq!(page.sessions.len(), 2);
}

#[test]
fn cursors_are_checked() {
    let fx = Fixture::new();
    for bad in [
        "",
        "x",
        "c1.",
        "c1.12",
        "c1.abc.id",
        "c1.5.../etc",
        "c2.5.id",
    ] {
        assert!(
            matches!(
                fx.store.list(None, Some(bad), 5),
                Err(StoreError::InvalidCursor(_))
            ),
            "{bad:?}"
        );
    }
    let key = SortKey {
        modified_nanos: -5,
        id: SessionId::new("a-b"),
    };
    assert_eq!(SortKey::parse_cursor(&key.cursor()).unwrap(), key);
}
