use super::{HUGE_PAGE, LINE, WeightArena};

/// A tile-like value that needs a cache line's alignment.
#[derive(Clone, Copy, PartialEq, Debug)]
#[repr(C, align(64))]
struct Wide([u8; 80]);

fn address<T>(values: &[T]) -> usize {
    values.as_ptr() as usize
}

#[test]
fn placed_values_read_back_aligned_and_apart() {
    let arena = WeightArena::new();
    let mut a = arena.filled(Wide([1; 80]), 300).unwrap();
    let b = arena.filled(7u16, 5).unwrap();
    let c = arena.filled(Wide([3; 80]), 2).unwrap();
    assert!(a.iter().all(|v| *v == Wide([1; 80])));
    assert_eq!(&b[..], &[7; 5]);
    for values in [address(&a), address(&c)] {
        assert_eq!(values % 64, 0, "a line-aligned type lies on a line");
    }
    a.iter_mut().for_each(|v| *v = Wide([9; 80]));
    assert_eq!(&b[..], &[7; 5], "writing one slice leaves the next alone");
    assert!(c.iter().all(|v| *v == Wide([3; 80])));
}

#[test]
fn matrices_lie_one_after_another_in_a_shared_run() {
    let arena = WeightArena::with_runs(1 << 20);
    let a = arena.filled(1u8, 100).unwrap();
    let b = arena.filled(2u8, 1000).unwrap();
    let c = arena.filled(3u8, 64).unwrap();
    assert_eq!(
        address(&b),
        address(&a) + 128,
        "the next line after a's 100 bytes"
    );
    assert_eq!(address(&c), address(&b) + 1024);
}

#[test]
fn a_matrix_as_large_as_a_run_gets_its_own_and_the_open_run_goes_on() {
    let arena = WeightArena::with_runs(4096);
    let a = arena.filled(1u8, 100).unwrap();
    let big = arena.filled(2u8, 4096).unwrap();
    let b = arena.filled(3u8, 100).unwrap();
    assert_eq!(address(&b), address(&a) + 128);
    assert!(big.iter().all(|&v| v == 2) && a.iter().all(|&v| v == 1));
}

#[test]
fn a_full_run_gives_way_to_a_fresh_one() {
    let arena = WeightArena::with_runs(4096);
    let a = arena.filled(1u8, 4000).unwrap();
    let b = arena.filled(2u8, 200).unwrap();
    let after_a = address(&a) + 4032;
    assert!(address(&b) != after_a, "b would cross the run's end there");
    let c = arena.filled(3u8, 100).unwrap();
    assert_eq!(
        address(&c),
        address(&b) + 256,
        "the fresh run is the open one now"
    );
}

#[test]
fn slices_outlive_the_arena_they_came_from() {
    let arena = WeightArena::new();
    let a = arena.filled(5u32, 1000).unwrap();
    let b = arena.filled(6u32, 10).unwrap();
    drop(arena);
    assert!(a.iter().all(|&v| v == 5) && b.iter().all(|&v| v == 6));
    drop(a);
    assert!(
        b.iter().all(|&v| v == 6),
        "the run lives while any slice does"
    );
}

#[test]
fn packed_alone_a_matrix_takes_only_its_own_size() {
    let arena = WeightArena::one_run_each();
    let a = arena.filled(1u8, 100).unwrap();
    let b = arena.filled(2u8, 100).unwrap();
    assert_ne!(address(&b), address(&a) + 128, "no run is shared");
    let none = arena.filled(3u8, 0).unwrap();
    assert!(none.is_empty());
    assert_eq!(address(&none) % LINE, 0);
}

/// The `VmFlags` of the mapping that holds `addr`, from `/proc/self/smaps`.
#[cfg(target_os = "linux")]
fn vm_flags(addr: usize) -> Option<String> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ')
            && let Some((start, end)) = range.split_once('-')
            && let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            )
        {
            inside = (start..end).contains(&addr);
        } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
            return Some(flags.trim().to_string());
        }
    }
    None
}

/// Each whole 2 MiB page of a run is advised for huge pages (`hg` in the mapping's flags), and
/// a matrix's partial last page is not: advised, the kernel would fault in all 2 MiB of it.
#[cfg(target_os = "linux")]
#[test]
fn whole_huge_pages_are_advised_and_a_partial_one_is_not() {
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
        eprintln!("this kernel has no transparent huge pages; nothing to check");
        return;
    }
    let hugepage = |addr| vm_flags(addr).is_some_and(|f| f.split(' ').any(|f| f == "hg"));
    let shared = WeightArena::new();
    let a = shared.filled(1u8, 3 << 20).unwrap();
    assert!(hugepage(address(&a)) && hugepage(address(&a) + a.len() - 1));
    let alone = WeightArena::one_run_each()
        .filled(2u8, HUGE_PAGE + (1 << 20))
        .unwrap();
    assert_eq!(address(&alone) % HUGE_PAGE, 0);
    assert!(hugepage(address(&alone)), "the first 2 MiB");
    assert!(
        !hugepage(address(&alone) + alone.len() - 1),
        "the last 1 MiB"
    );
}

/// Sizes past the address space are refused, not wrapped to a small allocation or aborted on.
#[test]
fn a_size_past_the_address_space_is_refused() {
    let arena = WeightArena::new();
    assert!(
        arena.filled(0u64, usize::MAX / 4).is_none(),
        "bytes overflow"
    );
    assert!(
        arena.filled(0u8, usize::MAX - 3).is_none(),
        "rounding overflows"
    );
    assert!(
        arena.filled(0u8, isize::MAX as usize).is_none(),
        "no layout"
    );
    assert_eq!(
        &arena.filled(4u8, 3).unwrap()[..],
        &[4; 3],
        "the arena goes on"
    );
}
