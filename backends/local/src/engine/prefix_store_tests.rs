use candle_core::Device;

use super::*;
use crate::model::ModelFiles;
use crate::model::tiny::{self, TinySpec};

/// The tiny model, its tokenizer, and a store for it under a directory of its own.
struct Fixture {
    model: Model,
    tokenizer: TextTokenizer,
    model_path: PathBuf,
    root: PathBuf,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let model_path = tiny::write(&TinySpec::qwen2(), dir.path(), "tiny");
    let files = ModelFiles::at(&model_path);
    let tokenizer = files.header().unwrap().tokenizer;
    let model = files.load(&Device::Cpu, &mut |_| Ok(())).unwrap();
    Fixture {
        model,
        tokenizer,
        model_path,
        root: dir.path().join("prefixes"),
        _dir: dir,
    }
}

impl Fixture {
    fn store(&self, budget: u64) -> PrefixStore {
        PrefixStore::open(
            &self.root,
            &self.model_path,
            &self.model,
            &self.tokenizer,
            budget,
        )
        .unwrap()
    }

    /// A ChatML prompt: a system turn of about `system` tokens (the tiny vocabulary has a
    /// token per byte), then `user`'s turn.
    fn prompt(&self, system: usize, user: &str) -> Vec<u32> {
        self.prompt_of("You are a careful coding agent. ", system, user)
    }

    /// [`Self::prompt`] with the system turn made of `phrase`, repeated.
    fn prompt_of(&self, phrase: &str, system: usize, user: &str) -> Vec<u32> {
        let text = format!(
            "<|im_start|>system\n{}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n\
             <|im_start|>assistant\n",
            phrase.repeat(system.div_ceil(phrase.len()))
        );
        self.tokenizer.encode(&text).unwrap()
    }

    /// A sequence holding `tokens`, read in chunks of 7.
    fn prefilled(&self, tokens: &[u32]) -> Sequence {
        let mut seq = Sequence::new(self.model.new_cache());
        for chunk in tokens.chunks(7) {
            self.model.forward(chunk, &mut seq.cache).unwrap();
            seq.tokens.extend_from_slice(chunk);
        }
        seq
    }

    /// Saves `prompt`'s system turn through a store of its own; the turn's length.
    fn saved(&self, prompt: &[u32]) -> usize {
        let mut store = self.store(DEFAULT_BUDGET_BYTES);
        let turn = store.system_turn(prompt).unwrap();
        store.save(&self.prefilled(&prompt[..turn]), turn);
        turn
    }

    fn logits(&self, seq: &mut Sequence, tokens: &[u32]) -> Vec<f32> {
        let logits = self.model.forward(tokens, &mut seq.cache).unwrap();
        seq.tokens.extend_from_slice(tokens);
        logits.to_vec1::<f32>().unwrap()
    }

    fn entries(&self) -> Vec<PathBuf> {
        let mut all = Vec::new();
        for dir in fs::read_dir(&self.root).into_iter().flatten().flatten() {
            for file in fs::read_dir(dir.path()).unwrap().flatten() {
                all.push(file.path());
            }
        }
        all.sort();
        all
    }
}

#[test]
fn a_saved_system_turn_continues_to_the_same_bits_as_the_cache_it_came_from() {
    let f = fixture();
    let prompt = f.prompt(200, "write fizzbuzz");
    let mut store = f.store(DEFAULT_BUDGET_BYTES);
    let turn = store.system_turn(&prompt).unwrap();
    assert!(turn >= 200 && turn < prompt.len());
    assert_eq!(
        prompt[turn - 1],
        f.tokenizer.encode("<|im_end|>").unwrap()[0]
    );

    let mut original = f.prefilled(&prompt[..turn]);
    store.save(&original, turn);
    assert_eq!(f.entries().len(), 1);

    // Another process: a store of its own, the same model file and build.
    let mut later = f.store(DEFAULT_BUDGET_BYTES);
    let other = f.prompt(200, "explain this error");
    assert_eq!(later.system_turn(&other), Some(turn));
    let mut loaded = later
        .load(&other, turn, 0, f.model.new_cache(), 64)
        .expect("the saved turn");
    assert_eq!(loaded.tokens, prompt[..turn]);
    assert_eq!(loaded.cache.len(), turn);
    let tail = &other[turn..];
    assert_eq!(f.logits(&mut loaded, tail), f.logits(&mut original, tail));
}

#[test]
fn only_a_leading_system_turn_of_some_length_with_more_after_it_is_kept() {
    let f = fixture();
    let store = f.store(DEFAULT_BUDGET_BYTES);
    assert_eq!(store.system_turn(&f.prompt(10, "hi")), None, "too short");
    let user_first = f
        .tokenizer
        .encode(&format!(
            "<|im_start|>user\n{}<|im_end|>\n",
            "x".repeat(300)
        ))
        .unwrap();
    assert_eq!(store.system_turn(&user_first), None, "a user's turn");
    let prompt = f.prompt(200, "hi");
    let turn = store.system_turn(&prompt).unwrap();
    assert_eq!(store.system_turn(&prompt[..turn]), None, "nothing after it");
    assert_eq!(store.system_turn(&prompt[..turn - 1]), None, "unterminated");
}

/// Something done to a saved file's bytes.
type Damage = Box<dyn Fn(&mut Vec<u8>)>;

#[test]
fn a_damaged_or_foreign_entry_is_refused_and_removed_and_the_miss_is_quiet() {
    let f = fixture();
    let prompt = f.prompt(200, "hi");
    let mut store = f.store(DEFAULT_BUDGET_BYTES);
    let turn = store.system_turn(&prompt).unwrap();
    assert!(
        store
            .load(&prompt, turn, 0, f.model.new_cache(), 0)
            .is_none()
    );
    store.save(&f.prefilled(&prompt[..turn]), turn);
    let path = f.entries().pop().unwrap();
    let good = fs::read(&path).unwrap();

    let damaged: [(&str, Damage); 5] = [
        (
            "one bit of a value",
            Box::new(|b| {
                let middle = b.len() / 2;
                b[middle] ^= 1;
            }),
        ),
        // The hundredth token: the first hundred still match, so the entry is chosen.
        ("a token", Box::new(|b| b[64 + 4 * 100] ^= 1)),
        ("the magic", Box::new(|b| b[0] = b'X')),
        ("the identity", Box::new(|b| b[20] ^= 0xff)),
        ("cut short", Box::new(|b| b.truncate(b.len() - 1))),
    ];
    for (what, damage) in damaged {
        let mut bytes = good.clone();
        damage(&mut bytes);
        fs::write(&path, &bytes).unwrap();
        let mut fresh = f.store(DEFAULT_BUDGET_BYTES);
        assert!(
            fresh
                .load(&prompt, turn, 0, f.model.new_cache(), 0)
                .is_none(),
            "{what}"
        );
        assert!(!path.exists(), "{what}: removed");
    }

    // Another system turn's entry, as long, under this one's name: it shares too little.
    let other = f.prompt_of("You are a careful coding ghost. ", 200, "hi");
    let other_turn = store.system_turn(&other).unwrap();
    store.save(&f.prefilled(&other[..other_turn]), other_turn);
    let other_path = f.entries().pop().unwrap();
    fs::write(&path, fs::read(&other_path).unwrap()).unwrap();
    assert_eq!(other_turn, turn);
    let mut fresh = f.store(DEFAULT_BUDGET_BYTES);
    assert!(
        fresh
            .load(&prompt, turn, 0, f.model.new_cache(), 0)
            .is_none()
    );
}

#[test]
fn another_projects_turn_gives_all_it_shares_and_no_more_than_the_pool_has() {
    let f = fixture();
    let turn_of = |project: &str| {
        let text = format!(
            "<|im_start|>system\n{}The project is at {project}.<|im_end|>\n\
             <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
            "You are a careful coding agent. ".repeat(8)
        );
        f.tokenizer.encode(&text).unwrap()
    };
    let (a, b) = (turn_of("/home/me/a"), turn_of("/srv/b"));
    let mut store = f.store(DEFAULT_BUDGET_BYTES);
    let (turn_a, turn_b) = (
        store.system_turn(&a).unwrap(),
        store.system_turn(&b).unwrap(),
    );
    let mut original = f.prefilled(&a[..turn_a]);
    store.save(&original, turn_a);
    let shared = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    assert!(shared > MIN_TOKENS && shared < turn_b);

    let mut later = f.store(DEFAULT_BUDGET_BYTES);
    let mut loaded = later.load(&b, turn_b, 0, f.model.new_cache(), 64).unwrap();
    assert_eq!(loaded.tokens, b[..shared]);
    assert_eq!(loaded.cache.len(), shared);
    original.truncate(shared).unwrap();
    let rest = &b[shared..];
    assert_eq!(f.logits(&mut loaded, rest), f.logits(&mut original, rest));
    // All but its last few tokens came from disk: not saved again as a turn of its own.
    assert!(turn_b - shared < MIN_TOKENS);
    later.save(&loaded, turn_b);
    assert_eq!(f.entries().len(), 1);
    // A cached sequence holding as much already: the disk is not read.
    assert!(
        later
            .load(&b, turn_b, turn_b, f.model.new_cache(), 0)
            .is_none()
    );
    assert!(
        later
            .load(&b, turn_b, shared, f.model.new_cache(), 0)
            .is_none()
    );
    assert!(
        later
            .load(&b, turn_b, shared - 1, f.model.new_cache(), 0)
            .is_some()
    );
    // A turn that differs for longer is worth a file of its own.
    let c = turn_of(&"/a-rather-deep/project-path".repeat(4));
    let turn_c = later.system_turn(&c).unwrap();
    let mut loaded = later.load(&c, turn_c, 0, f.model.new_cache(), 64).unwrap();
    assert!(turn_c - loaded.tokens.len() >= MIN_TOKENS);
    let rest = c[loaded.tokens.len()..].to_vec();
    f.logits(&mut loaded, &rest);
    later.save(&loaded, turn_c);
    assert_eq!(f.entries().len(), 2);
}

#[cfg(unix)]
#[test]
fn a_link_or_a_fifo_under_an_entry_name_is_not_read() {
    let f = fixture();
    let prompt = f.prompt(200, "hi");
    let turn = f.saved(&prompt);
    let path = f.entries().pop().unwrap();
    let real = path.with_extension("real");
    fs::rename(&path, &real).unwrap();
    std::os::unix::fs::symlink(&real, &path).unwrap();
    let mut fresh = f.store(DEFAULT_BUDGET_BYTES);
    assert!(
        fresh
            .load(&prompt, turn, 0, f.model.new_cache(), 0)
            .is_none()
    );
    fs::remove_file(&path).unwrap();
    let fifo = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid, NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    // Would block for ever if it were opened for reading without a writer.
    assert!(
        fresh
            .load(&prompt, turn, 0, f.model.new_cache(), 0)
            .is_none()
    );
    assert!(path.exists(), "what hearth did not write is left alone");
}

#[test]
fn the_store_keeps_to_its_budget_least_recently_used_first() {
    let f = fixture();
    // Turns that share too little to stand in for one another.
    let prompts: Vec<Vec<u32>> = [
        ("Alpha writes Rust with care. ", 200),
        ("Beta reviews every patch twice. ", 230),
        ("Gamma keeps the tests green. ", 260),
    ]
    .iter()
    .map(|&(phrase, n)| f.prompt_of(phrase, n, "hi"))
    .collect();
    let probe = f.store(DEFAULT_BUDGET_BYTES);
    let turns: Vec<usize> = prompts
        .iter()
        .map(|p| probe.system_turn(p).unwrap())
        .collect();
    let sizes: Vec<u64> = prompts
        .iter()
        .zip(&turns)
        .map(|(p, &t)| {
            let seq = f.prefilled(&p[..t]);
            probe.shape(&seq.cache, t).unwrap().file_bytes()
        })
        .collect();
    // Room for the two largest, not all three.
    let mut store = f.store(sizes[1] + sizes[2]);
    store.save(&f.prefilled(&prompts[0][..turns[0]]), turns[0]);
    store.save(&f.prefilled(&prompts[1][..turns[1]]), turns[1]);
    // The first is used again, so the second is the least recently used.
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        store
            .load(&prompts[0], turns[0], 0, f.model.new_cache(), 0)
            .is_some()
    );
    std::thread::sleep(Duration::from_millis(20));
    store.save(&f.prefilled(&prompts[2][..turns[2]]), turns[2]);
    let mut fresh = f.store(DEFAULT_BUDGET_BYTES);
    let kept: Vec<bool> = prompts
        .iter()
        .zip(&turns)
        .map(|(p, &t)| fresh.load(p, t, 0, f.model.new_cache(), 0).is_some())
        .collect();
    assert_eq!(kept, [true, false, true]);
}

#[test]
fn another_model_file_does_not_read_this_ones_entries() {
    let f = fixture();
    let prompt = f.prompt(200, "hi");
    let turn = f.saved(&prompt);
    // The same weights rewritten: a new modification time is a new identity.
    std::thread::sleep(Duration::from_millis(20));
    let bytes = fs::read(&f.model_path).unwrap();
    fs::write(&f.model_path, bytes).unwrap();
    let mut after = f.store(DEFAULT_BUDGET_BYTES);
    assert!(
        after
            .load(&prompt, turn, 0, f.model.new_cache(), 0)
            .is_none()
    );
    assert_eq!(f.entries().len(), 1, "the old entry is left to the budget");
}

#[test]
fn a_store_that_cannot_be_written_costs_one_warning_and_loses_nothing() {
    let f = fixture();
    // The store's directory cannot be made: a file stands where it would go.
    fs::write(&f.root, b"not a directory").unwrap();
    let prompt = f.prompt(200, "hi");
    let mut store = f.store(DEFAULT_BUDGET_BYTES);
    let turn = store.system_turn(&prompt).unwrap();
    let seq = f.prefilled(&prompt[..turn]);
    store.save(&seq, turn);
    assert!(
        store.known.contains(&entry_name(&prompt[..turn])),
        "not tried again"
    );
    assert!(
        store
            .load(&prompt, turn, 0, f.model.new_cache(), 0)
            .is_none()
    );
    assert_eq!(seq.cache.len(), turn, "the sequence is untouched");
    assert_eq!(fs::read(&f.root).unwrap(), b"not a directory");
}
