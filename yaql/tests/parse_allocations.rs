//! Parsing allocates a few blocks per expression, whatever its size: the tree is one vector of
//! nodes and call arguments, names are ranges of the expression's own copy of its
//! text. A counting allocator checks it over the benchmark's 1,000 distinct texts (a count, not a
//! time: it does not depend on the machine).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use plinth_yaql::{ExprCache, Expression};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout (see `alloc` and `realloc`).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `realloc` is passed on as it is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The benchmark's expressions (`common/benches/expr.rs`), each made distinct as it does.
const EXPRESSIONS: [&str; 7] = [
    "$.nodes.where($.status = 'ready' and 'controller' in $.roles).len()",
    "changed($.nodes.where($.status = 'ready' and 'controller' in $.roles))",
    "$.uid in added($.network_metadata.nodes.values()).uid",
    "switch($.get('deployed_before', {}).get('value') => 1, true => 6)",
    "($.storage.objects_ceph or $.storage.images_ceph or $.storage.volumes_ceph or $.storage.ephemeral_ceph) and changedAny($.storage, $.get('use_syslog'), $.network_scheme, $.network_metadata.nodes.values().where( $.node_roles.any($.matches('(primary-)?controller'))))",
    "changed($.network_metadata.nodes)",
    "$.network_metadata.nodes.values().where($.uid = new($.uid)).name.first()",
];

fn texts() -> Vec<String> {
    (0..1000)
        .map(|i| format!("{} and {i} > 0", EXPRESSIONS[i % EXPRESSIONS.len()]))
        .collect()
}

fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    f();
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

#[test]
fn parsing_allocates_a_few_blocks_per_expression() {
    let texts = texts();
    // Warm up whatever a thread keeps between parses.
    assert!(Expression::parse(&texts[0]).is_ok());
    let mut parsed = Vec::with_capacity(texts.len());
    let n = allocations(|| {
        for t in &texts {
            parsed.push(Expression::parse(t).expect("the benchmark's texts parse"));
        }
    });
    let per = n as f64 / texts.len() as f64;
    eprintln!("{per} allocations per expression");
    // The text, the nodes with the arguments; a folded constant or a vector grown now and then.
    assert!(per <= 3.0, "{per} allocations per parsed expression");
    // Each text gives back the tree it was parsed into.
    for (t, e) in texts.iter().zip(&parsed) {
        assert_eq!(e.source(), t);
        assert_eq!(Expression::parse(&e.to_string()).as_ref(), Ok(e));
    }

    let cache = ExprCache::new();
    let n = allocations(|| {
        for t in &texts {
            cache.get_or_parse(t).expect("the benchmark's texts parse");
        }
    });
    let per = n as f64 / texts.len() as f64;
    eprintln!("{per} allocations per expression");
    // Parsing, the shared handle, and the table growing now and then.
    assert!(per <= 4.0, "{per} allocations per cached expression");
    assert_eq!(cache.len(), texts.len());
}
